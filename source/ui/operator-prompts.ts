import type { RunRecord } from '../contracts/index.js';
import type { GoalRow, Snapshot } from '../snapshot/types.js';
import { keyOf } from './keymap.js';
import { holderText } from './status-line.js';

/** An operator action waiting for a yes. */
export type PendingAction =
  | { kind: 'cancel'; goalId: string; runId?: string }
  | { kind: 'retry'; goalId: string }
  | { kind: 'stop'; goalId: string; runId: string; requeue: boolean }
  | { kind: 'accept'; goalId: string; runId: string }
  | { kind: 'takeOver' };

/** A y / n question before an action: what will happen, in the core's words. */
export interface ActionPrompt {
  title: string;
  lines: string[];
  question: string;
  action: PendingAction;
}

/** Why an action does not apply to what is selected (a one-line notice instead of a question). */
export interface Refusal {
  refusal: string;
}

const yesNo = () => `${keyOf('confirm.yes')} / ${keyOf('confirm.no')}`;
const closedText = (row: GoalRow) => `${row.goal.status}${row.goal.closed_reason ? ` (${row.goal.closed_reason})` : ''}`;

/**
 * The question before cancelling a goal (`pak2 cancel`): a queued goal
 * closes cancelled at once; a dispatched or running goal has its run
 * stopped (killed, operator_stopped) and closes cancelled.
 */
export function cancelPrompt(row: GoalRow | undefined): ActionPrompt | Refusal {
  if (!row) return { refusal: 'no goal selected' };
  const g = row.goal;
  if (g.status === 'closed' || g.status === 'completed') return { refusal: `goal ${g.id} is already ${closedText(row)}: nothing to cancel` };
  if (g.status === 'queued') {
    return {
      title: 'Cancel goal?',
      lines: [`${g.id} (${g.type}, ${g.assigned_to ?? 'no plant'}) is queued.`, 'Cancelling closes it cancelled; it never runs.'],
      question: `Cancel ${g.id}? ${yesNo()}`,
      action: { kind: 'cancel', goalId: g.id },
    };
  }
  const run = row.run?.status === 'running' ? row.run : undefined;
  return {
    title: 'Cancel goal?',
    lines: [
      run ? `${g.id} is ${g.status}: its run ${run.id} is live.` : `${g.id} is ${g.status}: its run is starting.`,
      'Cancelling stops the run (its whole process group): the run closes killed, failure_reason operator_stopped, and the goal closes cancelled. No automatic tend follows.',
    ],
    question: `Cancel ${g.id}? ${yesNo()}`,
    action: { kind: 'cancel', goalId: g.id, ...(run ? { runId: run.id } : {}) },
  };
}

/**
 * The question before retrying a goal (`pak2 retry`; docs/goal/level2.md,
 * "Retry"): only a goal that closed failure or cancelled, with no retry of
 * it still open among `rows`; the retry is a new goal, this one stays closed.
 */
export function retryPrompt(row: GoalRow | undefined, rows: readonly GoalRow[] = []): ActionPrompt | Refusal {
  if (!row) return { refusal: 'no goal selected' };
  const g = row.goal;
  if (g.status !== 'closed') return { refusal: `goal ${g.id} is ${g.status}: only a goal that closed failure or cancelled is retried` };
  if (g.closed_reason === 'success') return { refusal: `goal ${g.id} closed success: nothing to retry` };
  const open = rows.find((r) => r.goal.retry_of === g.id && r.goal.status !== 'closed');
  if (open) return { refusal: `goal ${g.id}: its retry ${open.goal.id} is still open (${open.goal.status})` };
  const run = row.run;
  const ended = run ? `; its run ${run.id} ended ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}` : '';
  const waiting = rows.filter((r) => r.goal.status !== 'closed' && r.goal.depends_on?.includes(g.id)).map((r) => r.goal.id);
  return {
    title: 'Retry goal?',
    lines: [
      `${g.id} (${g.type}, ${g.assigned_to ?? 'no plant'}) closed ${g.closed_reason ?? 'failure'}${ended}.`,
      `Retrying queues a new goal with its body, plant, priority, driver, model and dependencies; retry_of names ${g.id}, which stays closed.${waiting.length ? ` ${waiting.join(', ')} will wait for the new goal.` : ''} Another driver or model: pak2 retry ${g.id} --driver D --model M.`,
    ],
    question: `Retry ${g.id}? ${yesNo()}`,
    action: { kind: 'retry', goalId: g.id },
  };
}

/**
 * The question before stopping a live run (`pak2 stop`): it closes killed,
 * failure_reason operator_stopped; its goal closes cancelled, or goes back
 * to the queue with `requeue`.
 */
export function stopPrompt(row: GoalRow | undefined, run: RunRecord | undefined, requeue: boolean): ActionPrompt | Refusal {
  if (!run) {
    if (row?.goal.status === 'queued') return { refusal: `goal ${row.goal.id} is queued: no live run to stop (${keyOf('goal.cancel')} cancels it)` };
    return { refusal: row ? `goal ${row.goal.id} has no live run` : 'no run selected' };
  }
  if (run.status !== 'running') return { refusal: `run ${run.id} is already ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}: nothing to stop` };
  const after = requeue
    ? `goal ${run.goal} goes back to the queue for a new attempt.`
    : `goal ${run.goal} closes cancelled (${keyOf('run.stopRequeue')} puts it back in the queue instead).`;
  return {
    title: requeue ? 'Stop run and requeue?' : 'Stop run?',
    lines: [
      `Run ${run.id} of goal ${run.goal} is live (${run.driver}/${run.model}).`,
      `Stopping kills it (its whole process group): it closes killed, failure_reason operator_stopped, and ${after} No automatic tend follows.`,
    ],
    question: `Stop ${run.id}? ${yesNo()}`,
    action: { kind: 'stop', goalId: run.goal, runId: run.id, requeue },
  };
}

/** Whether a supplement may be written for the goal: it must be queued (the core checks the rest: a goal from the chat). */
export function supplementRefusal(row: GoalRow | undefined): Refusal | undefined {
  if (!row) return { refusal: 'no goal selected' };
  if (row.goal.status !== 'queued') return { refusal: `goal ${row.goal.id} is ${closedText(row)}: supplements are added before dispatch` };
  return undefined;
}

/** At most this many files are named in the accept question. */
const FILES_NAMED = 5;

/**
 * The question before accepting a run's work from the queue (`pak2 land`):
 * its files, and what accepting does (the merge queue merges the branch
 * onto the base's tip, verifies the result when `[merge] verify` says how,
 * and moves the base). From the diff overlay, which shows the work, `a`
 * accepts without asking.
 */
export function acceptPrompt(row: GoalRow | undefined): ActionPrompt | Refusal {
  const landing = row?.landing;
  if (!row?.run || !landing) return { refusal: row ? `goal ${row.goal.id}: its latest run has no landing to accept` : 'no goal selected' };
  if (landing.state !== 'awaiting_review') return { refusal: `${row.run.id}: its landing is ${landing.state.replace('_', ' ')}, not awaiting review` };
  const files = landing.files ?? [];
  const named = files.slice(0, FILES_NAMED).map((f) => `${f.status} ${f.path}`).join(', ');
  return {
    title: 'Accept the work?',
    lines: [
      `${row.run.id} changed ${files.length} file${files.length === 1 ? '' : 's'}${named ? `: ${named}${files.length > FILES_NAMED ? `, and ${files.length - FILES_NAMED} more` : ''}` : ''}.`,
      `Accepting queues it to land: the merge queue merges ${landing.branch} onto ${landing.base_branch}'s tip, runs the verify of [merge] on the result when one is set, and moves ${landing.base_branch}; then ${row.goal.id} closes success. To read the diff first: ${keyOf('confirm.no')}, then ${keyOf('run.diff')}.`,
    ],
    question: `Accept ${row.run.id}? ${yesNo()}`,
    action: { kind: 'accept', goalId: row.goal.id, runId: row.run.id },
  };
}

/**
 * The question before taking over (docs/workbench/level2.md, "Attached"):
 * only once the coordinator this workbench attached to has stopped; then
 * this workbench starts its own, which runs the garden until it quits.
 */
export function takeOverPrompt(snapshot: Snapshot, canTakeOver: boolean): ActionPrompt | Refusal {
  const attached = snapshot.coordinator.attached;
  if (!canTakeOver) return { refusal: 'read-only dashboard: run the garden with pak2 (the workbench) or pak2 cycle' };
  if (!attached) return { refusal: 'this workbench runs the coordinator: nothing to take over' };
  if (!attached.goneAt) return { refusal: `attached to ${holderText(attached.holder)}: that coordinator runs the garden; nothing to take over` };
  return {
    title: 'Take over?',
    lines: [
      `The coordinator this workbench was attached to (${holderText(attached.holder)}, ${attached.holder.command}) has stopped.`,
      'Taking over starts this workbench\'s own coordinator: it dispatches the queued goals and runs them in this process, and quitting the workbench stops it (live runs are killed, their goals go back to the queue). While it runs, a coordinator started elsewhere on this garden is refused.',
      `Not taking over: the workbench stays attached, says "no coordinator", and attaches again to the next coordinator that starts.`,
    ],
    question: `Take over? ${yesNo()}`,
    action: { kind: 'takeOver' },
  };
}
