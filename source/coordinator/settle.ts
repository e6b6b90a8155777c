import { isTerminalRunStatus, type GoalRecord, type RunRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { transitionGoal } from '../store/index.js';
import { routingContinues } from '../guard/index.js';
import type { ClosedGoalInput } from './tend-policy.js';

/**
 * Step 3 of a pass, also run once when the coordinator stops: each running
 * (or completed) goal whose latest run is terminal goes running → completed
 * → closed (closed_reason `success` when the run succeeded, else
 * `failure`); one whose run was interrupted by a coordinator shutdown goes
 * back to the queue (running → queued).
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
    if (goal.status === 'running' && (run.failure_reason === 'coordinator_stopped' || run.status === 'abandoned' || (run.failure_reason === 'operator_stopped' && run.operator_stop?.requeue))) {
      // Interrupted by a shutdown, or its runner vanished (seed 004: abandoned, not done): back to the queue for the next attempt.
      await transitionGoal(paths, goal.id, 'queued', { now: now() });
      goal.status = 'queued';
      out.requeued.push(goal.id);
      continue;
    }
    if (goal.status === 'running' && run.status !== 'success' && goal.task_class && (await routingContinues(paths, run.id))) {
      // A routed goal whose attempt escalates (or runs its tier again): back to the queue for the next attempt.
      await transitionGoal(paths, goal.id, 'queued', { now: now() });
      goal.status = 'queued';
      out.requeued.push(goal.id);
      continue;
    }
    // An operator stop without requeue is the operator ending the work: cancelled, not failed.
    const reason = run.status === 'success' ? 'success' : run.failure_reason === 'operator_stopped' ? 'cancelled' : 'failure';
    if (goal.status === 'running') await transitionGoal(paths, goal.id, 'completed', { now: now() });
    await transitionGoal(paths, goal.id, 'closed', { closedReason: reason, now: now() });
    goal.status = 'closed';
    out.closed.push({ goal: goal.id, reason });
    out.closedRuns.push({ goal, run });
  }
  return out;
}

