import { isTerminalRunStatus, type GoalRecord, type RunRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { readGoal, StoreError, transitionGoal } from '../store/index.js';
import { routingContinues } from '../guard/index.js';
import type { ClosedGoalInput } from './tend-policy.js';

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
): Promise<{ closed: { goal: string; reason: string }[]; requeued: string[]; closedRuns: ClosedGoalInput[] }> {
  const out = { closed: [] as { goal: string; reason: string }[], requeued: [] as string[], closedRuns: [] as ClosedGoalInput[] };
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'completed') continue;
    const run = await loadRun(goal);
    if (!run || !isTerminalRunStatus(run.status)) continue;
    try {
      await settleOne(paths, goal, run, out, now);
    } catch (error) {
      // Settled meanwhile by someone else (a runner's finish, the server's lease reaper, an operator stop): the goal file says where it is.
      if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) throw error;
      goal.status = (await readGoal(paths, goal.id)).status;
    }
  }
  return out;
}

/** One goal whose latest run is terminal: requeued, or completed then closed; `out` collects what was done. */
async function settleOne(
  paths: Garden['paths'],
  goal: GoalRecord,
  run: RunRecord,
  out: { closed: { goal: string; reason: string }[]; requeued: string[]; closedRuns: ClosedGoalInput[] },
  now: () => Date,
): Promise<void> {
  if (goal.status === 'running' && (run.failure_reason === 'coordinator_stopped' || run.status === 'abandoned' || (run.failure_reason === 'operator_stopped' && run.operator_stop?.requeue))) {
    // Interrupted by a shutdown, or its runner vanished (seed 004: abandoned, not done): back to the queue for the next attempt.
    await transitionGoal(paths, goal.id, 'queued', { now: now() });
    goal.status = 'queued';
    out.requeued.push(goal.id);
    return;
  }
  if (goal.status === 'running' && run.status !== 'success' && goal.task_class && (await routingContinues(paths, run.id))) {
    // A routed goal whose attempt escalates (or runs its tier again): back to the queue for the next attempt.
    await transitionGoal(paths, goal.id, 'queued', { now: now() });
    goal.status = 'queued';
    out.requeued.push(goal.id);
    return;
  }
  // An operator stop without requeue is the operator ending the work: cancelled, not failed.
  const reason = run.status === 'success' ? 'success' : run.failure_reason === 'operator_stopped' ? 'cancelled' : 'failure';
  if (goal.status === 'running') await transitionGoal(paths, goal.id, 'completed', { now: now() });
  await transitionGoal(paths, goal.id, 'closed', { closedReason: reason, now: now() });
  goal.status = 'closed';
  out.closed.push({ goal: goal.id, reason });
  out.closedRuns.push({ goal, run });
}
