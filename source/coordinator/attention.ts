import { FAILED_RUN_STATUSES, type AttentionItem, type CommentRecord, type GoalRecord, type LandingRecord, type RunRecord } from '../contracts/index.js';
import { blockKind } from './blocked.js';

/** What the "needs you" list is derived from (docs/attention/level2.md, "Items"), as observed at one moment. */
export interface AttentionFacts {
  /** The goals looked at, each with its latest run and that run's landing: the open goals and the recently closed ones. */
  goals: readonly { goal: GoalRecord; run?: RunRecord | undefined; landing?: LandingRecord | undefined }[];
  /** Open blocking questions (comments no later comment answers) of blocked goals. */
  questions: readonly { goal: string; comment: CommentRecord }[];
  /** `coordinator.blocked.json`: queued goal id → why it cannot dispatch. */
  blocked: Readonly<Record<string, string>>;
  /** Acknowledged item ids (`attention.json`): hidden. */
  acked: ReadonlySet<string>;
}

/** Run endings the operator caused (a stop, a quit): they need no look. */
const OPERATOR_ENDINGS = new Set(['operator_stopped', 'coordinator_stopped']);

/** The first line of `text`, cut to `max` characters. */
function oneLine(text: string, max = 160): string {
  const line = text.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * The "needs you" items (docs/attention/level2.md, "Items"), a pure function
 * of the facts: open questions (`question:<comment-id>`), landings awaiting
 * review (`landing:<run-id>`), a goal's latest run that ended failure,
 * killed, timeout, zero_output or abandoned — except a stop or quit of the
 * operator's own (`operator_stopped`, `coordinator_stopped`) — as `run:<run-id>`
 * (kind `budget` when its failure_reason is `budget_exceeded`, else `run`),
 * and queued goals reported blocked (`blocked:<goal-id>:<budget|dependency|nobody|plant>`; kind
 * `budget` when the reason starts with `budget`, else `blocked`). Acknowledged
 * ids are left out. Newest first (`since`), then by id.
 */
export function attentionItems(facts: AttentionFacts): AttentionItem[] {
  const items: AttentionItem[] = [];
  for (const { goal, comment } of facts.questions) {
    items.push({ id: `question:${comment.id}`, kind: 'question', summary: `${goal} asks: ${oneLine(comment.body)}`, goal, ...(comment.run ? { run: comment.run } : {}), since: comment.created_at });
  }
  for (const { goal, run, landing } of facts.goals) {
    if (landing?.state === 'awaiting_review' && run) {
      items.push({ id: `landing:${run.id}`, kind: 'landing', summary: `${goal.id}: the work of ${run.id} waits for review (land or reject it)`, goal: goal.id, run: run.id, since: landing.updated_at });
    }
    if (run && FAILED_RUN_STATUSES.includes(run.status) && !OPERATOR_ENDINGS.has(String(run.failure_reason))) {
      const budget = String(run.failure_reason) === 'budget_exceeded';
      const summary = budget ? `${goal.id}: ${run.id} was stopped over its budget (budget_exceeded)` : `${goal.id}: ${run.id} ended ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`;
      items.push({ id: `run:${run.id}`, kind: budget ? 'budget' : 'run', summary, goal: goal.id, run: run.id, since: run.completed_at ?? run.started_at });
    }
  }
  const queued = new Map(facts.goals.filter((row) => row.goal.status === 'queued').map((row) => [row.goal.id, row.goal]));
  for (const [goalId, reason] of Object.entries(facts.blocked)) {
    const goal = queued.get(goalId);
    if (!goal) continue; // reported before the goal left the queue
    const kind = blockKind(reason);
    items.push({ id: `blocked:${goalId}:${kind}`, kind: kind === 'budget' ? 'budget' : 'blocked', summary: `${goalId} cannot dispatch: ${oneLine(reason)}`, goal: goalId, since: goal.updated_at ?? goal.submitted_at });
  }
  return items.filter((item) => !facts.acked.has(item.id)).sort((a, b) => b.since.localeCompare(a.since) || a.id.localeCompare(b.id));
}
