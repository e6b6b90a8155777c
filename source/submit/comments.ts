import { isTerminalRunStatus, type CommentRecord, type GoalRecord } from '../contracts/index.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { appendComment, appendEvent, latestRun, openQuestions, readComments, readGoal, StoreError, withGoalLock, writeGoalRecord } from '../store/index.js';

/** What a new comment carries (`pak2 comment`, the workbench, `POST /goals/:id/comments`, a runner relaying its agent). */
export interface CommentInput {
  body: string;
  /** A question the goal cannot go on without: the goal waits `blocked` until it is answered. */
  blocking?: boolean;
  /** `operator` (default), a person's name, or `agent:<run-id>`. */
  author?: string;
  /** The run the comment comes from (an agent's). */
  run?: string;
}

/** What posting a comment did. */
export interface CommentResult {
  comment: CommentRecord;
  goal: GoalRecord;
}

const MAX_COMMENT_BYTES = 64 * 1024;

async function goalOf(garden: Garden, id: string): Promise<GoalRecord> {
  try {
    return await readGoal(garden.paths, id);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new UserError(/not of the form/.test(error.message) ? `GOAL ${id}: not a goal id (N-slug)` : `GOAL ${id}: no such goal`);
    throw error;
  }
}

function checkBody(body: string): string {
  const text = body.replace(/\s+$/, '');
  if (!text.trim()) throw new UserError('TEXT: the comment is empty');
  if (Buffer.byteLength(text) > MAX_COMMENT_BYTES) throw new UserError(`TEXT: the comment is ${Buffer.byteLength(text)} bytes; at most ${MAX_COMMENT_BYTES}`);
  return text;
}

/**
 * Posts a comment on a goal's thread (seed 004, "Comments"; docs/runners/level2.md).
 * A blocking comment on a queued or running goal moves it to `blocked`
 * (GoalTransitioned, with `blocked_on` naming the comment and the status it
 * left); on a goal already blocked it is one more open question. Appends
 * CommentPosted.
 *
 * @throws UserError `GOAL …` for an unknown id; `TEXT …` for an empty or
 *   over-long body; (exit 1) a blocking question on a closed or completed goal.
 */
export async function postComment(garden: Garden, goalId: string, input: CommentInput, now: Date = new Date()): Promise<CommentResult> {
  const { paths } = garden;
  const body = checkBody(input.body);
  let goal = await goalOf(garden, goalId);
  if (input.blocking && (goal.status === 'closed' || goal.status === 'completed')) {
    throw new UserError(`GOAL ${goalId}: the goal is ${goal.status}; a blocking question needs an open goal (post it without --blocking)`, { exitCode: 1 });
  }
  return withGoalLock(paths, goalId, async () => {
    goal = await readGoal(paths, goalId);
    const comment = await appendComment(paths, { goal: goalId, author: input.author ?? 'operator', body, blocking: Boolean(input.blocking), ...(input.run ? { run: input.run } : {}) }, now);
    await appendEvent(paths, { type: 'CommentPosted', goal: goalId, ...(input.run ? { run: input.run } : {}), ...(goal.assigned_to ? { plant: goal.assigned_to } : {}), detail: `${comment.id} by ${comment.author}${comment.blocking ? ' (blocking)' : ''}` }, now);
    if (comment.blocking && (goal.status === 'queued' || goal.status === 'running')) goal = await setBlocked(garden, goal, comment, now);
    return { comment, goal };
  });
}

/** queued/running → blocked, under the goal's lock (held by the caller). */
async function setBlocked(garden: Garden, goal: GoalRecord, comment: CommentRecord, now: Date): Promise<GoalRecord> {
  const next: GoalRecord = { ...goal, status: 'blocked', updated_at: now.toISOString(), blocked_on: { comment: comment.id, from: goal.status as 'queued' | 'running', since: now.toISOString() } };
  await writeGoalRecord(garden.paths, next);
  await appendEvent(garden.paths, { type: 'GoalTransitioned', goal: goal.id, from: goal.status, to: 'blocked', detail: `blocking comment ${comment.id}` }, now);
  return next;
}

/**
 * Answers a goal's open blocking question (`pak2 comment GOAL --answer [ID]`,
 * the workbench inbox and chat, `POST /goals/:id/comments` with `answers`):
 * the question `questionId`, else the oldest open one. When no open
 * question remains the goal leaves `blocked`: back to `running` when it was
 * running and its run is still live, else to `queued` (its run ended while it
 * waited, or it was queued), so the next run has the answer in its thread.
 *
 * @throws UserError `GOAL …` unknown; `ID …` not an open question of that
 *   goal; (exit 1) the goal has no open question, or is closed.
 */
export async function answerQuestion(garden: Garden, goalId: string, body: string, options: { questionId?: string; author?: string } = {}, now: Date = new Date()): Promise<CommentResult> {
  const { paths } = garden;
  const text = checkBody(body);
  await goalOf(garden, goalId);
  return withGoalLock(paths, goalId, async () => {
    let goal = await readGoal(paths, goalId);
    if (goal.status === 'closed') throw new UserError(`GOAL ${goalId}: the goal is closed (${goal.closed_reason ?? 'closed'}); its questions need no answer (post a comment without --answer)`, { exitCode: 1 });
    const open = openQuestions(await readComments(paths, goalId));
    if (open.length === 0) throw new UserError(`GOAL ${goalId}: no open question to answer (post a comment without --answer)`, { exitCode: 1 });
    const question = options.questionId ? open.find((q) => q.id === options.questionId) : open[0];
    if (!question) throw new UserError(`ID ${options.questionId}: not an open question of goal ${goalId} (open: ${open.map((q) => q.id).join(', ')})`);
    const comment = await appendComment(paths, { goal: goalId, author: options.author ?? 'operator', body: text, blocking: false, answers: question.id }, now);
    await appendEvent(paths, { type: 'CommentPosted', goal: goalId, ...(goal.assigned_to ? { plant: goal.assigned_to } : {}), detail: `${comment.id} by ${comment.author} answers ${question.id}` }, now);
    if (goal.status === 'blocked' && open.length === 1) goal = await unblock(garden, goal, now);
    return { comment, goal };
  });
}

/** blocked → where it was (running while its run is live, else queued), under the goal's lock. */
async function unblock(garden: Garden, goal: GoalRecord, now: Date): Promise<GoalRecord> {
  const run = await latestRun(garden.paths, goal.id).catch(() => undefined);
  const to = goal.blocked_on?.from === 'running' && run && !isTerminalRunStatus(run.status) ? 'running' : 'queued';
  const { blocked_on: _left, ...rest } = goal;
  const next: GoalRecord = { ...rest, status: to, updated_at: now.toISOString() };
  await writeGoalRecord(garden.paths, next);
  await appendEvent(garden.paths, { type: 'GoalTransitioned', goal: goal.id, from: 'blocked', to, detail: 'answered' }, now);
  return next;
}

/** A goal's thread and its open questions. @throws UserError for an unknown goal. */
export async function goalComments(garden: Garden, goalId: string): Promise<{ comments: CommentRecord[]; open: CommentRecord[] }> {
  await goalOf(garden, goalId);
  const comments = await readComments(garden.paths, goalId);
  return { comments, open: openQuestions(comments) };
}
