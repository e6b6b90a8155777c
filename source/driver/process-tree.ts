import fs from 'node:fs';

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
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').includes(needle)) pids.push(Number(name));
    } catch {
      // exited meanwhile, or not readable
    }
  }
  return pids;
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

/** SIGKILLs the process group and every process carrying the run's mark. */
export function killRunProcesses(pgid: number | undefined, mark: string): void {
  signalGroup(pgid, 'SIGKILL');
  for (const pid of markedProcesses(mark)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/**
 * Pids of live processes (other than this one) holding any of `files` open
 * (Linux `/proc/<pid>/fd`). A descendant that cleared its environment and
 * left the process group (`setsid env -i …`) still holds the run's stdout
 * file; this finds it.
 */
export function fileHolders(files: string[]): number[] {
  const targets = new Set(files.map((file) => safeRealpath(file)).filter((file): file is string => Boolean(file)));
  const pids: number[] = [];
  if (targets.size === 0) return pids;
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${name}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = fs.readlinkSync(`/proc/${name}/fd/${fd}`);
      } catch {
        continue;
      }
      if (targets.has(target)) {
        pids.push(Number(name));
        break;
      }
    }
  }
  return pids;
}

function safeRealpath(file: string): string | undefined {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
}

/** A process the sweep could not end, named for the one-line report. */
export interface Survivor {
  pid: number;
  command: string;
}

/** The command line of a process, for reports (`?` when unreadable). */
export function commandOf(pid: number): string {
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean).join(' ');
    return cmd || '?';
  } catch {
    return '?';
  }
}

/**
 * Ends what a run left behind: SIGKILL to its process group, to every
 * process carrying its mark, and to every process still holding one of its
 * output files. Then waits up to `settleMs` for them to go and returns the
 * ones still there (a process in another pid namespace, one pak2 may not
 * signal). Never waits longer than `settleMs`.
 */
export async function sweepRun(pgid: number | undefined, mark: string, files: string[], settleMs = 2000): Promise<Survivor[]> {
  const targets = () => [...new Set([...markedProcesses(mark), ...fileHolders(files)])];
  signalGroup(pgid, 'SIGKILL');
  for (const pid of targets()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, or not ours to signal: reported below if it stays
    }
  }
  const until = Date.now() + settleMs;
  let left = targets();
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    left = targets();
  }
  return left.map((pid) => ({ pid, command: commandOf(pid) }));
}
