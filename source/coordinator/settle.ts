import pLimit from 'p-limit';
import { isTerminalRunStatus, type GoalRecord, type RunRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { appendComment, readComments, readGoal, readLanding, runIdsForGoal, StoreError, transitionGoal, transitionGoalLocked, withGoalLock, type TransitionOptions } from '../store/index.js';
import { goalAfterLanding, queueLanding, retireWorktree, workMessage } from '../landing/index.js';
import { commitRunWork, git } from '../worktree/index.js';
import { routingContinues } from '../guard/index.js';
import type { ClosedGoalInput } from './tend-policy.js';
import type { IoFaults } from './io-faults.js';

/**
 * Step 3 of a pass, also run once when the coordinator stops: each running
 * (or completed) goal whose latest run is terminal goes running → completed
 * → closed (closed_reason `success` when the run succeeded, else
 * `failure`); one whose run was interrupted by a coordinator shutdown goes
 * back to the queue (running → queued), as does a remote run abandoned
 * (lease expired) or stopped by the operator with requeue. A goal that
 * someone else settled meanwhile (a runner's finish, the server's lease
 * reaper) is left as its file says, its `status` updated in `goals`.
 */
export async function settleGoals(
  paths: Garden['paths'],
  goals: GoalRecord[],
  loadRun: (goal: GoalRecord) => Promise<RunRecord | undefined>,
  now: () => Date,
  landing?: LandingContext,
): Promise<SettleOut> {
  // Goals settle side by side (a fleet's closes overlap, each its own goal's lock and git work); what each did is gathered in the goals' order.
  const limit = pLimit(SETTLE_CONCURRENCY);
  return mergeOuts(await Promise.all(goals.map((goal) => limit(() => settleGoal(paths, goal, loadRun, now, landing)))));
}

/** How many goals settle at once in one {@link settleGoals} call. */
const SETTLE_CONCURRENCY = 8;

/** One goal of {@link settleGoals}: undefined when it has nothing to settle. */
async function settleGoal(paths: Garden['paths'], goal: GoalRecord, loadRun: (goal: GoalRecord) => Promise<RunRecord | undefined>, now: () => Date, landing?: LandingContext): Promise<SettleOut | undefined> {
  if (goal.status !== 'running' && goal.status !== 'completed') return undefined;
  const run = await loadRun(goal);
  if (!run || !isTerminalRunStatus(run.status)) return undefined;
  const own = emptyOut();
  try {
    if (run.worktree && landing) await settleWorktreeRun(landing, goal, run, own, now);
    else await settleOne(paths, goal, run, own, now);
  } catch (error) {
    // Settled meanwhile by someone else (a runner's finish, the server's lease reaper, an operator stop): the goal file says where it is.
    if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) {
      if (!landing) throw error;
      // A landing step git refused (a locked index, a full disk): said, and taken up again next pass.
      own.problems.push({ file: goal.id, message: `${run.id}: ${(error as Error).message}`, cause: error });
      return own;
    }
    goal.status = (await readGoal(paths, goal.id)).status;
  }
  return own;
}

function emptyOut(): SettleOut {
  return { closed: [], requeued: [], closedRuns: [], problems: [] };
}

function mergeOuts(outs: readonly (SettleOut | undefined)[]): SettleOut {
  const out = emptyOut();
  for (const own of outs) {
    if (!own) continue;
    out.closed.push(...own.closed);
    out.requeued.push(...own.requeued);
    out.closedRuns.push(...own.closedRuns);
    out.problems.push(...own.problems);
  }
  return out;
}

/**
 * The live coordinator's settling (issue 24, "the coordinator is not the
 * bottleneck of a fleet"): each goal's settle runs as work of its own, as a
 * dispatch does, so a pass never waits on one goal's git (a worktree
 * commit, a landing queued, a worktree parked) before it dispatches or
 * lands another's. A goal is settled by one settle at a time; what the
 * settles did is taken by the next pass ({@link Settling.take}), which the
 * end of each settle wakes.
 */
export class Settling {
  private readonly inFlight = new Set<string>();
  private finished: (SettleOut | undefined)[] = [];

  /**
   * `faults`: a goal whose settle failed on I/O (a full disk) is not
   * settled again until its backoff ends (key `settle:<goal>`), so a
   * failing settle's end, which wakes a pass, never starts the next one at
   * once (docs/coordinator/level2.md, "A full disk").
   */
  constructor(private readonly faults?: IoFaults) {}

  /**
   * Starts settling each of `goals` that has something to settle (its
   * latest run ended; for a goal waiting on its landing, the landing
   * ended) and is not already settling. What has nothing to do starts no
   * work, so a settle's end (which wakes a pass) never wakes one for
   * nothing.
   *
   * @returns the work started (the coordinator keeps it pending and wakes a pass when each ends).
   */
  async start(paths: Garden['paths'], goals: GoalRecord[], loadRun: (goal: GoalRecord) => Promise<RunRecord | undefined>, now: () => Date, landing: LandingContext): Promise<Promise<void>[]> {
    const started: Promise<void>[] = [];
    for (const goal of goals) {
      if ((goal.status !== 'running' && goal.status !== 'completed') || this.inFlight.has(goal.id)) continue;
      if (this.faults?.holds(`settle:${goal.id}`, now().getTime())) continue;
      const run = await loadRun(goal);
      if (!run || !isTerminalRunStatus(run.status)) continue;
      if (goal.status === 'completed' && run.worktree && run.status === 'success') {
        const record = await readLanding(paths, run.id).catch(() => undefined);
        if (record && goalAfterLanding(record, landing.garden.config.merge.onConflict) === 'wait') continue;
      }
      this.inFlight.add(goal.id);
      started.push(
        settleGoal(paths, goal, async () => run, now, landing)
          .then(
            (own) => {
              const fault = own?.problems.find((p) => p.cause !== undefined)?.cause;
              if (fault === undefined || !this.faults?.note(`settle:${goal.id}`, fault, now().getTime(), `settling ${goal.id} (run ${run.id}) failed`, '; it is tried again with a growing backoff (at most 60 s)')) this.faults?.clear(`settle:${goal.id}`);
              if (own) this.finished.push(own);
            },
            (error: Error) => void this.finished.push({ ...emptyOut(), problems: [{ file: goal.id, message: error.message }] }),
          )
          .finally(() => this.inFlight.delete(goal.id)),
      );
    }
    return started;
  }

  /** What the settles that ended since the last call did. */
  take(): SettleOut {
    const done = this.finished;
    this.finished = [];
    return mergeOuts(done);
  }
}

/** What settling did. */
export interface SettleOut {
  closed: { goal: string; reason: string }[];
  requeued: string[];
  closedRuns: ClosedGoalInput[];
  /** What failed, named; `cause` the error underneath (an I/O fault backs the goal's settle off). */
  problems: { file: string; message: string; cause?: unknown }[];
}

/** What settling a worktree run needs beyond the paths: the garden's config and the git environment. */
export interface LandingContext {
  garden: Garden;
  env: NodeJS.ProcessEnv;
}

/**
 * A goal whose run worked in its own worktree (docs/landing/level2.md, "The
 * goal"). A success: running → completed, its work queued for landing
 * (`queueLanding`); the goal stays completed until the landing ends, then
 * closes success (landed), or failure, or goes back to the queue (a
 * conflict under `on_conflict = "requeue"`, told of it in a comment the
 * next run's prompt carries; a rejection with requeue). A run that changed
 * nothing closes success at once. A run that did not succeed closes as any
 * other, its changes committed on its branch first (kept, never landed).
 * The worktree is removed once the goal leaves `completed`.
 */
async function settleWorktreeRun(ctx: LandingContext, goal: GoalRecord, run: RunRecord, out: SettleOut, now: () => Date): Promise<void> {
  const { garden, env } = ctx;
  const { paths, config } = garden;
  const close = async (reason: 'success' | 'failure' | 'cancelled') => {
    if (goal.status === 'running') await transitionGoal(paths, goal.id, 'completed', { now: now() });
    await transitionGoal(paths, goal.id, 'closed', { closedReason: reason, now: now() });
    goal.status = 'closed';
    out.closed.push({ goal: goal.id, reason });
    out.closedRuns.push({ goal, run });
    await retireWorktree(garden, run, env, now);
  };
  if (run.status !== 'success') {
    // The attempt's changes stay on its branch, where the operator can look at them; nothing of it lands.
    if (run.worktree) await commitRunWork(run.worktree, `${workMessage(goal, run.id)}\nNot landed: the run ended ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}.\n`, run.plant, config.worktree.copy, env).catch(() => undefined);
    await settleOne(paths, goal, run, out, now);
    if (goal.status !== 'running') await retireWorktree(garden, run, env, now);
    return;
  }
  if (goal.status === 'running') {
    await transitionIfLatest(paths, goal.id, run.id, 'completed', { now: now() });
    goal.status = 'completed';
  }
  let landing = await readLanding(paths, run.id);
  if (!landing) {
    const queued = await queueLanding(garden, goal, run, env, now);
    if (queued.kind === 'empty') {
      await close('success');
      // It holds nothing: its branch goes (its worktree is parked by the close).
      await git(['branch', '-D', run.worktree!.branch], paths.gardenRoot, env, [1]).catch(() => undefined);
      return;
    }
    landing = queued.landing;
  }
  const next = goalAfterLanding(landing, config.merge.onConflict);
  if (next === 'wait') return;
  if (next === 'close_success') return close('success');
  if (next === 'close_failure') return close('failure');
  // Back to the queue: the next attempt starts from the base as it is now, told why its last work did not land.
  if (landing.state === 'conflict') {
    const said = (await readComments(paths, goal.id)).some((c) => c.author === 'pak2' && c.run === run.id);
    if (!said) {
      await appendComment(
        paths,
        { goal: goal.id, run: run.id, author: 'pak2', blocking: false, body: `The work of ${run.id} did not land: ${landing.message ?? 'merging it conflicted'}. Its branch ${landing.branch} is kept. This attempt starts from ${landing.base_branch} as it is now; make the change again on top of what landed meanwhile.` },
        now(),
      );
    }
  }
  await transitionIfLatest(paths, goal.id, run.id, 'queued', { now: now() });
  goal.status = 'queued';
  out.requeued.push(goal.id);
  await retireWorktree(garden, run, env, now);
}

/**
 * A running goal's first settling step, taken only while `runId` is still
 * its latest run (under the goal's lock): a settle decided on a run read
 * before a runner or another coordinator claimed the goal again must not
 * requeue or close the new claim's goal.
 *
 * @throws StoreError INVALID_TRANSITION when a later run began (the caller's "settled meanwhile by someone else").
 */
async function transitionIfLatest(paths: Garden['paths'], goalId: string, runId: string, to: 'queued' | 'completed', options: TransitionOptions): Promise<void> {
  await withGoalLock(paths, goalId, async () => {
    const latest = (await runIdsForGoal(paths, goalId)).at(-1);
    if (latest !== runId) throw new StoreError('INVALID_TRANSITION', `goal ${goalId}: run ${latest ?? '(none)'} began after ${runId}; that run's holder settles it`);
    await transitionGoalLocked(paths, goalId, to, options);
  });
}

/** One goal whose latest run is terminal: requeued, or completed then closed; `out` collects what was done. */
async function settleOne(
  paths: Garden['paths'],
  goal: GoalRecord,
  run: RunRecord,
  out: { closed: { goal: string; reason: string }[]; requeued: string[]; closedRuns: ClosedGoalInput[] },
  now: () => Date,
): Promise<void> {
  // A stop the operator asked for decides over how the run ended (a runner that died before it answered): cancelled stays cancelled.
  const cancelled = run.operator_stop !== undefined && !run.operator_stop.requeue;
  if (goal.status === 'running' && !cancelled && (run.failure_reason === 'coordinator_stopped' || run.status === 'abandoned' || (run.failure_reason === 'operator_stopped' && run.operator_stop?.requeue))) {
    // Interrupted by a shutdown, or its runner vanished (seed 004: abandoned, not done): back to the queue for the next attempt.
    await transitionIfLatest(paths, goal.id, run.id, 'queued', { now: now() });
    goal.status = 'queued';
    out.requeued.push(goal.id);
    return;
  }
  if (goal.status === 'running' && !cancelled && run.status !== 'success' && goal.task_class && (await routingContinues(paths, run.id))) {
    // A routed goal whose attempt escalates (or runs its tier again): back to the queue for the next attempt.
    await transitionIfLatest(paths, goal.id, run.id, 'queued', { now: now() });
    goal.status = 'queued';
    out.requeued.push(goal.id);
    return;
  }
  // An operator stop without requeue is the operator ending the work: cancelled, not failed.
  const reason = run.status === 'success' ? 'success' : run.failure_reason === 'operator_stopped' || (run.status === 'abandoned' && cancelled) ? 'cancelled' : 'failure';
  if (goal.status === 'running') await transitionIfLatest(paths, goal.id, run.id, 'completed', { now: now() });
  await transitionGoal(paths, goal.id, 'closed', { closedReason: reason, now: now() });
  goal.status = 'closed';
  out.closed.push({ goal: goal.id, reason });
  out.closedRuns.push({ goal, run });
}
