import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { formatIssue, isTerminalRunStatus, RUN_ID_PATTERN, validateLease, type LeaseRecord, type RunRecord, type ValidationIssue } from '../contracts/index.js';
import { settleGoals } from '../coordinator/settle.js';
import { isErrno } from '../errors.js';
import { endLease, goalFile, latestRun, leasesDir, readGoal, readJsonFile, readLease, readRun, withLeaseLock } from '../store/index.js';
import type { GoalScan } from './goals.js';
import { gardenServeProcesses } from './presence.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/**
 * How old (since its last refresh) a lease lock directory `leases/<run-id>.lock`
 * must be before doctor calls it stale: 30 s, three times proper-lockfile's
 * 10 s stale time (store/files.ts withLock). A holder refreshes its lock every
 * 5 s, so a lock this old is held by no process.
 */
export const STALE_LEASE_LOCK_MS = 30_000;

/** A lease file that reads and validates, with where it is. */
interface ReadLease {
  file: string;
  lease: LeaseRecord;
}

function strip(message: string, file: string): string {
  return message.startsWith(`${file}: `) ? message.slice(file.length + 2) : message;
}

/** Why a lease file is damaged (and the field), or the lease when it is not. */
async function judgeLease(file: string): Promise<{ lease: LeaseRecord } | { field?: string; why: string } | undefined> {
  const read = await readJsonFile(file);
  if (!read.ok) return read.missing ? undefined : { why: strip(read.message, file) };
  const issues = validateLease(read.value);
  if (issues.length > 0) {
    // The field is the finding's own; the message carries the first issue's code and words, then any others whole.
    const [first, ...rest] = issues as [ValidationIssue, ...ValidationIssue[]];
    const head = first.field ? `${first.code} (${first.message})` : formatIssue(first);
    return { ...(first.field ? { field: first.field } : {}), why: [head, ...rest.map(formatIssue)].join('; ') };
  }
  const lease = read.value as LeaseRecord;
  const runId = path.basename(file, '.json');
  if (lease.run !== runId) return { field: 'run', why: `run ${JSON.stringify(lease.run)} does not match the file name` };
  return { lease };
}

/** The `.json` files of a directory, sorted; none when it does not exist. */
async function jsonFiles(dir: string): Promise<string[]> {
  try {
    return (await fsp.readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isFile() && e.name.endsWith('.json'))
      .map((e) => path.join(dir, e.name))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  } catch {
    return [];
  }
}

/** Runs `fn` under the run's lease lock when the file is named for a run (a stray name has no lock to take). */
function underLeaseLock<T>(ctx: DoctorContext, file: string, fn: () => Promise<T>): Promise<T> {
  const runId = path.basename(file, '.json');
  return RUN_ID_PATTERN.test(runId) ? withLeaseLock(ctx.garden.paths, runId, fn) : fn();
}

/**
 * Remote runners' leases, `<runtime-root>/leases/` (docs/runners/level2.md,
 * "Leases and their timings"), and the goals of remote runs:
 *
 * - a lease file (active, or under `ended/`) that does not parse, fails
 *   validateLease or names another run: every call of its runner is refused
 *   and no reaper closes its run. Fix: move it aside under the lease lock (it
 *   is kept; the run then counts as having no lease file, which the reaper
 *   closes `abandoned` once the TTL has passed since the run started).
 * - an active lease whose run is closed (a finish that died before ending
 *   it). Fix: end it `finished` with endLease under the lease lock, as
 *   pak2 serve's reaper (superviseRemoteRuns) would.
 * - an active lease past `expires_at` while neither a coordinator nor a
 *   `pak2 serve` is running: no fix, the reaper owns it.
 * - a lock directory `leases/<run-id>.lock` not refreshed for
 *   {@link STALE_LEASE_LOCK_MS}: stale by definition. Fix: remove it, if it
 *   is still that old just before.
 * - a goal `running` whose latest run is a closed remote run: the finish
 *   died before settling. Fix: settle it with settleGoals.
 */
export async function checkLeases(ctx: DoctorContext, goals: GoalScan): Promise<Problem[]> {
  const { paths } = ctx.garden;
  const dir = leasesDir(paths);
  const problems: Problem[] = [];
  const now = Date.now();
  let reaper: string | undefined | null = null;
  const reaperRunning = (): string | undefined => {
    if (reaper !== null) return reaper;
    if (ctx.presence.held) reaper = `a coordinator holds the garden (${ctx.presence.heldBy})`;
    else {
      const serving = gardenServeProcesses(paths.gardenRoot);
      reaper = serving.length > 0 ? `pak2 serve is running (pid ${serving.map((p) => p.pid).join(', ')})` : undefined;
    }
    return reaper;
  };

  const active = await jsonFiles(dir);
  const ended = await jsonFiles(path.join(dir, 'ended'));
  for (const file of [...active, ...ended]) {
    const judged = await judgeLease(file);
    if (!judged) continue;
    if ('why' in judged) {
      problems.push(damagedLease(file, judged.why, judged.field, active.includes(file)));
      continue;
    }
    if (!active.includes(file)) continue;
    const { lease } = judged;
    const run = await readRun(paths, lease.run).catch(() => undefined);
    if (run && isTerminalRunStatus(run.status) && lease.state === 'active') {
      problems.push(leaseOfClosedRun({ file, lease }, run));
      continue;
    }
    if (lease.state === 'active' && Date.parse(lease.expires_at) <= now && !reaperRunning()) {
      const silent = Math.round((now - Date.parse(lease.renewed_at)) / 1000);
      problems.push({
        check: 'leases',
        file,
        field: 'expires_at',
        message: `expired, not yet reaped: the next pak2 serve or pak2 cycle will close the run abandoned (lease_expired) and requeue its goal (expired at ${lease.expires_at}; runner ${lease.runner.name}@${lease.runner.host}, no heartbeat for ${silent} s, ttl ${lease.ttl_seconds} s; no coordinator holds the garden and no pak2 serve is running)`,
      });
    }
  }

  problems.push(...(await staleLocks(dir, now)));

  for (const goal of [...goals.goals.values()].sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }))) {
    if (goal.status !== 'running') continue;
    const run = await latestRun(paths, goal.id).catch(() => undefined);
    if (!run?.runner || !isTerminalRunStatus(run.status)) continue;
    problems.push(unsettledGoal(goalFile(paths, goal.id), goal.id, run));
  }
  return problems;
}

function damagedLease(file: string, why: string, field: string | undefined, active: boolean): Problem {
  const effect = active
    ? 'pak2 cannot read this lease: its runner is refused (409) on every call and no reaper closes its run; moved aside, the run has no lease file and is closed abandoned once its lease TTL has passed since it started'
    : 'pak2 cannot read this ended lease: a late call for its run is refused with this error instead of the lease state';
  return {
    check: 'leases',
    file,
    ...(field ? { field } : {}),
    message: `${why}; ${effect}`,
    fix: 'move it aside (the file is kept)',
    repair: async (c) =>
      underLeaseLock(c, file, async () => {
        const again = await judgeLease(file);
        if (!again) return 'it was already gone';
        if (!('why' in again)) throw new NotFixed('it reads as a valid lease now');
        return `moved it aside to ${await c.aside.move(file)}`;
      }),
  };
}

function leaseOfClosedRun({ file, lease }: ReadLease, run: RunRecord): Problem {
  return {
    check: 'leases',
    file,
    field: 'state',
    message: `active, but its run ${run.id} is closed (${run.status}${run.completed_at ? ` at ${run.completed_at}` : ''}): a finish died before ending the lease`,
    fix: "end it finished (moved to leases/ended/, as pak2 serve's lease reaper does)",
    repair: async (c) =>
      withLeaseLock(c.garden.paths, lease.run, async () => {
        const current = await readLease(c.garden.paths, lease.run);
        if (!current || current.state !== 'active') return 'it had already ended';
        const closed = await readRun(c.garden.paths, lease.run);
        if (!isTerminalRunStatus(closed.status)) throw new NotFixed(`the run is ${closed.status} again`);
        await endLease(c.garden.paths, current, 'finished', new Date());
        return 'ended it finished (leases/ended/)';
      }),
  };
}

async function staleLocks(dir: string, now: number): Promise<Problem[]> {
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.lock')).sort();
  } catch {
    return [];
  }
  const problems: Problem[] = [];
  for (const name of names) {
    const lock = path.join(dir, name);
    let mtimeMs: number;
    try {
      mtimeMs = (await fsp.lstat(lock)).mtimeMs;
    } catch {
      continue;
    }
    if (now - mtimeMs < STALE_LEASE_LOCK_MS) continue;
    problems.push({
      check: 'leases',
      file: lock,
      message: `stale lease lock: last refreshed ${Math.round((now - mtimeMs) / 1000)} s ago; a process holding it refreshes it every 5 s and proper-lockfile takes over a lock older than 10 s, so it is stale by definition and no coordinator, pak2 serve or pak2 command holds it`,
      fix: 'remove it (a lock, not a record)',
      repair: async (c) => {
        let stat: fs.Stats;
        try {
          stat = await fsp.lstat(lock);
        } catch (error) {
          if (isErrno(error, 'ENOENT')) return 'it was already gone';
          throw error;
        }
        if (Date.now() - stat.mtimeMs < STALE_LEASE_LOCK_MS) throw new NotFixed('it was refreshed just now: a process holds it');
        if (!stat.isDirectory()) return `moved it aside to ${await c.aside.move(lock)} (not a lock directory)`;
        try {
          await fsp.rmdir(lock);
          return 'removed it';
        } catch (error) {
          if (isErrno(error, 'ENOENT')) return 'it was already gone';
          if (isErrno(error, 'ENOTEMPTY') || isErrno(error, 'EEXIST')) return `moved it aside to ${await c.aside.move(lock)} (it was not empty)`;
          throw error;
        }
      },
    });
  }
  return problems;
}

function unsettledGoal(file: string, goalId: string, run: RunRecord): Problem {
  return {
    check: 'leases',
    file,
    field: 'status',
    message: `running, but its latest run ${run.id} finished on a runner but not settled (run ${run.status}, runner ${run.runner!.name}@${run.runner!.host}): the finish died before settling the goal`,
    fix: 'settle it as the coordinator would (closed, or back to the queue when the run was abandoned or stopped with requeue)',
    repair: async (c) => {
      const { paths } = c.garden;
      const goal = await readGoal(paths, goalId);
      if (goal.status !== 'running') return `it was already settled (${goal.status})`;
      const latest = await latestRun(paths, goalId);
      if (!latest || latest.id !== run.id || !isTerminalRunStatus(latest.status)) throw new NotFixed('its latest run changed or is running again');
      const out = await settleGoals(paths, [goal], async () => latest, () => new Date());
      const closed = out.closed.find((g) => g.goal === goalId);
      if (closed) return `settled it: closed (${closed.reason})`;
      if (out.requeued.includes(goalId)) return 'settled it: back to the queue';
      return `it was settled meanwhile (${goal.status})`;
    },
  };
}
