import type { GoalRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { UserError } from '../errors.js';
import { latestRun, OpenGoalScanner, storeOf, type GoalProblem } from '../store/index.js';
import { acquireCoordinatorLock } from './lock.js';
import { reclaimOrphans } from './reclaim.js';
import { recoverInterruptedWrites, repairDispatched, type Recovered } from './recover.js';
import { settleGoals } from './settle.js';
import { tendsForClosed } from './reconcile.js';

/** What {@link repairAtStart} did: `held` (the refusal, in words) when a live coordinator holds the garden and repairs it itself. */
export interface StartRepair {
  held?: string;
  /** The half-done writes completed (recoverInterruptedWrites). */
  recovered: Recovered;
  /** Local runs no live process held, closed killed / coordinator_stopped (reclaimOrphans). */
  reclaimed: string[];
  /** Goals closed, and goals put back in the queue, because their latest run had ended. */
  closed: { goal: string; reason: string }[];
  requeued: string[];
  problems: GoalProblem[];
}

/**
 * The recovery a coordinator runs at its start, for a process that runs
 * none (`pak2 serve` alone; docs/server/level2.md, "Recovery at start";
 * docs/coordinator/level2.md, "Crash recovery"): holding the garden's
 * coordinator lock for the while, it completes the half-done writes
 * ({@link recoverInterruptedWrites}), closes the orphaned local runs
 * ({@link reclaimOrphans}), repairs `dispatched` goals
 * ({@link repairDispatched}) and settles every open goal whose latest run
 * is terminal (running or completed → closed, or back to the queue), with
 * the automatic tends those closes call for, as a coordinator's pass
 * would. Then it lets the lock go. When a live coordinator holds the lock,
 * nothing is done (it ran the same at its own start): `held` says who.
 *
 * @throws StoreError of a store that cannot be read.
 */
export async function repairAtStart(garden: Garden, options: { now?: () => Date; env?: NodeJS.ProcessEnv; command?: string } = {}): Promise<StartRepair> {
  const { paths } = garden;
  const now = options.now ?? (() => new Date());
  const env = options.env ?? process.env;
  const out: StartRepair = { recovered: [], reclaimed: [], closed: [], requeued: [], problems: [] };
  let release: () => Promise<void>;
  try {
    release = await acquireCoordinatorLock(paths, options.command ?? 'pak2 serve (recovery at start)');
  } catch (error) {
    if (error instanceof UserError) return { ...out, held: error.message };
    throw error;
  }
  try {
    const scanner = new OpenGoalScanner(paths);
    if (storeOf(paths)) {
      // A store's writes are whole (nothing half done to complete), and its open goals are settled by their coordinators
      // and the leader (docs/store/level2.md): only this checkout's orphaned local runs are this process's to close.
      out.reclaimed = await reclaimOrphans(garden, now, scanner);
      return out;
    }
    out.recovered = await recoverInterruptedWrites(garden, now, scanner);
    out.reclaimed = await reclaimOrphans(garden, now, scanner);
    const { goals, problems } = await scanner.scan();
    out.problems.push(...problems);
    const loadRun = (goal: GoalRecord) => latestRun(paths, goal.id).catch(() => undefined);
    out.problems.push(...(await repairDispatched(paths, goals, loadRun, now)));
    const settled = await settleGoals(paths, goals, loadRun, now, { garden, env });
    out.closed = settled.closed;
    out.requeued = settled.requeued;
    out.problems.push(...settled.problems);
    await tendsForClosed(garden, goals, settled.closedRuns, now());
  } finally {
    await release();
  }
  return out;
}
