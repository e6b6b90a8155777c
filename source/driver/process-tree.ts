import fs from 'node:fs';
import { commandOf, fileHolders, openFiles, otherProcesses } from '../proc.js';
import { span } from '../timing.js';

export { commandOf, fileHolders } from '../proc.js';

/**
 * The environment variable every agent process of a run inherits, with a
 * value unique to one launch. Agent CLIs start tool commands in new sessions
 * (claude's Bash tool uses setsid; codex's sandbox too), out of reach of a
 * process-group kill, and orphans lose their parent link; the inherited mark
 * finds them all. Its name avoids KEY/SECRET/TOKEN, which codex strips.
 */
export const RUN_MARK_ENV = 'PAK2_RUN_MARK';

/**
 * Pids of live processes whose environment carries `PAK2_RUN_MARK=<mark>`
 * (Linux `/proc`; elsewhere an empty list, and the group kill is all there is).
 */
export function markedProcesses(mark: string): number[] {
  const needle = `${RUN_MARK_ENV}=${mark}\0`;
  const pids: number[] = [];
  for (const name of otherProcesses()) {
    try {
      if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').includes(needle)) pids.push(Number(name));
    } catch {
      // exited meanwhile, or not readable
    }
  }
  return pids;
}

/**
 * True when a live process other than this one is in process group `pgid`.
 * A group with no member left frees its id for the next process the kernel
 * starts: signalling it after that could reach someone else's group.
 */
export function groupHasMembers(pgid: number): boolean {
  for (const name of otherProcesses()) {
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
      // Fields after the command (which may hold spaces and parentheses): state, ppid, pgrp.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
    } catch {
      // exited meanwhile
    }
  }
  return false;
}

/** Sends `signal` to a process group (negative pid); quiet when it is gone. */
export function signalGroup(pgid: number | undefined, signal: NodeJS.Signals): void {
  if (!pgid) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is already gone
  }
}


/** A process the sweep could not end, named for the one-line report. */
export interface Survivor {
  pid: number;
  command: string;
}

/** What one sweep looks for in a scan of `/proc`. */
interface SweepQuery {
  pgid: number | undefined;
  /** `PAK2_RUN_MARK=<mark>\0`, as it stands in /proc/<pid>/environ. */
  needle: string;
  /** The real paths of the run's output files. */
  files: Set<string>;
  /**
   * Seconds since boot just before the run's agent was started, when known:
   * a process started before it is not one of the run's (it can neither
   * have inherited the agent's output files nor carry the fresh mark), so
   * only its group is looked at, not its environment or descriptors.
   */
  bornAfter?: number;
}

/** Slack on {@link SweepQuery.bornAfter}: the kernel counts start times in clock ticks (10 ms), /proc/uptime in hundredths. */
const BORN_SLACK_SECONDS = 1;

let clockTicks: number | null | undefined;

/**
 * The clock ticks per second of /proc/<pid>/stat's start time (USER_HZ,
 * 100 on Linux), measured once from this process's own start time and age;
 * null where /proc cannot tell (then every process's descriptors are read).
 */
function ticksPerSecond(): number | null {
  if (clockTicks !== undefined) return clockTicks;
  clockTicks = null;
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'latin1');
    const started = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const age = secondsSinceBoot()! - process.uptime();
    const hz = started / age;
    // USER_HZ is 100 on every Linux architecture but a few (1024, 1200); anything else is a misreading.
    const known = [100, 250, 300, 1000, 1024, 1200].find((h) => Math.abs(hz - h) / h < 0.05);
    if (known) clockTicks = known;
  } catch {
    // no /proc
  }
  return clockTicks;
}

/** Seconds since boot (/proc/uptime), or undefined where there is none. */
export function secondsSinceBoot(): number | undefined {
  try {
    const seconds = Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
    return Number.isFinite(seconds) ? seconds : undefined;
  } catch {
    return undefined;
  }
}

/** What a scan found for one sweep: whether its group still has a live member, and the pids to end (marked, or holding an output file). */
interface SweepFound {
  groupAlive: boolean;
  targets: number[];
}

/** PF_KTHREAD in /proc/<pid>/stat's flags: a kernel thread holds no file and carries no environment. */
const PF_KTHREAD = 0x00200000;

/**
 * One pass over `/proc` that answers several sweeps at once: for each
 * process (this one, zombies and kernel threads aside), its group from
 * `stat`, its run mark from `environ`, and, unless the mark already named it
 * for every sweep, the files its descriptors point at (`fd/`). Each file is
 * read once per pass, whatever the number of sweeps. The environment and
 * descriptors of a process that started before a sweep's agent
 * (`bornAfter`, less a second) are not read for that sweep: every process
 * of a run, a `setsid env -i` descendant too, was started after its agent
 * (the mark is new with each launch, and only the agent's descendants
 * inherit it or its files), and the long-lived rest (shells, editors,
 * daemons) is most of what a scan would read.
 */
export function scanForSweeps(queries: readonly SweepQuery[]): SweepFound[] {
  const found = queries.map(() => ({ groupAlive: false, targets: [] as number[] }));
  const anyFiles = queries.some((q) => q.files.size > 0);
  const hz = queries.some((q) => q.bornAfter !== undefined) ? ticksPerSecond() : null;
  for (const name of otherProcesses()) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue; // exited meanwhile
    }
    // Fields after the command (which may hold spaces and parentheses): state, ppid, pgrp, session, tty_nr, tpgid, flags.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X' || (Number(fields[6]) & PF_KTHREAD) !== 0) continue;
    const pgrp = Number(fields[2]);
    const pid = Number(name);
    // When it started, in seconds since boot (field 22, in clock ticks).
    const born = hz ? Number(fields[19]) / hz : undefined;
    // The sweeps it could belong to: it started after their agent did (or when is not known).
    const young: number[] = [];
    queries.forEach((q, i) => {
      if (q.pgid !== undefined && pgrp === q.pgid) found[i]!.groupAlive = true;
      if (q.bornAfter === undefined || born === undefined || !(born < q.bornAfter - BORN_SLACK_SECONDS)) young.push(i);
    });
    if (young.length === 0) continue;
    let environ = '';
    try {
      environ = fs.readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      // exited meanwhile, or not readable
    }
    // The sweeps whose mark it does not carry, and whose files it might hold.
    const unnamed: number[] = [];
    for (const i of young) {
      const q = queries[i]!;
      if (environ.includes(q.needle)) found[i]!.targets.push(pid);
      else if (q.files.size > 0) unnamed.push(i);
    }
    if (!anyFiles || unnamed.length === 0) continue;
    const open = openFiles(name);
    if (!open) continue;
    let left = unnamed;
    for (const target of open) {
      const holding = left.filter((i) => queries[i]!.files.has(target));
      if (holding.length === 0) continue;
      for (const i of holding) found[i]!.targets.push(pid);
      left = left.filter((i) => !holding.includes(i));
      if (left.length === 0) break;
    }
  }
  return found;
}

/** Sweeps waiting for the next shared scan. */
let waiting: { query: SweepQuery; resolve: (found: SweepFound) => void; reject: (error: unknown) => void }[] = [];

/**
 * A scan of `/proc` for one sweep, shared with every other sweep that asks
 * in the same turn of the event loop (runs that end together: one pass over
 * /proc for all of them).
 */
function sharedScan(query: SweepQuery): Promise<SweepFound> {
  return new Promise((resolve, reject) => {
    waiting.push({ query, resolve, reject });
    if (waiting.length > 1) return;
    setImmediate(() => {
      const batch = waiting;
      waiting = [];
      const end = span('sweep: /proc scan');
      try {
        const found = scanForSweeps(batch.map((w) => w.query));
        batch.forEach((w, i) => w.resolve(found[i]!));
      } catch (error) {
        for (const w of batch) w.reject(error);
      } finally {
        end();
      }
    });
  });
}

function realpathOrUndefined(file: string): string | undefined {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Ends what a run left behind: SIGKILL to its process group, to every
 * process carrying its mark, and to every process still holding one of its
 * output files. Then waits up to `settleMs` for them to go and returns the
 * ones still there (a process in another pid namespace, one pak2 may not
 * signal). Never waits longer than `settleMs`.
 *
 * One scan of `/proc` finds the group's members, the marked processes and
 * the holders together, shared with the other sweeps asking at the same
 * moment ({@link scanForSweeps}); when it finds none of them, the sweep is
 * done. Otherwise it scans again every 25 ms until they are gone, ending any
 * new one it meets (a child forked just before its parent was killed).
 * `bornAfter` ({@link secondsSinceBoot} just before the agent started)
 * spares the descriptors of processes older than the run; without it every
 * process's are read (an orphan of an earlier coordinator).
 */
export async function sweepRun(pgid: number | undefined, mark: string, files: string[], settleMs = 2000, bornAfter?: number): Promise<Survivor[]> {
  const procfs = fs.existsSync('/proc/self/stat');
  const query: SweepQuery = {
    pgid,
    needle: `${RUN_MARK_ENV}=${mark}\0`,
    files: new Set(files.map(realpathOrUndefined).filter((file): file is string => Boolean(file))),
    ...(bornAfter !== undefined ? { bornAfter } : {}),
  };
  const kill = (pids: number[]) => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone, or not ours to signal: reported below if it stays
      }
    }
  };
  let found = procfs ? await sharedScan(query) : { groupAlive: false, targets: [] };
  // Its leader is gone: the group is signalled only while a member still holds its id.
  if (pgid && (!procfs || found.groupAlive)) signalGroup(pgid, 'SIGKILL');
  kill(found.targets);
  if (!found.groupAlive && found.targets.length === 0) return [];
  const until = Date.now() + settleMs;
  found = await sharedScan(query);
  while (found.targets.length > 0 && Date.now() < until) {
    kill(found.targets);
    await new Promise((resolve) => setTimeout(resolve, 25));
    found = await sharedScan(query);
  }
  return found.targets.map((pid) => ({ pid, command: commandOf(pid) }));
}
