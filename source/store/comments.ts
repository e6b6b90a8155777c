import path from 'node:path';
import { monotonicFactory } from 'ulid';
import { formatIssue, validateComment, type CommentRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { appendJsonLine, readJsonLines, StoreError } from './files.js';
import { goalFile } from './goals.js';
import { storeOf } from './backend.js';

const nextId = monotonicFactory();

/** `<runtime-root>/comments/<goal-id>.jsonl`: a goal's comment thread, append-only (seed 004, "Comments"). */
export function commentsFile(paths: GardenPaths, goalId: string): string {
  goalFile(paths, goalId); // refuses a malformed id
  return path.join(paths.runtimeRoot, 'comments', `${goalId}.jsonl`);
}

/** A goal's comments in the order written; a missing thread is empty, torn or foreign lines are skipped. */
export async function readComments(paths: GardenPaths, goalId: string): Promise<CommentRecord[]> {
  const store = storeOf(paths);
  if (store) {
    goalFile(paths, goalId); // refuses a malformed id
    return (await store.commentRecords(goalId)).filter((value) => validateComment(value).length === 0) as CommentRecord[];
  }
  return readJsonLines<CommentRecord>(commentsFile(paths, goalId), (value) => validateComment(value).length === 0);
}

/** What a new comment carries; `id` and `created_at` are made here. */
export interface CommentInput {
  goal: string;
  run?: string;
  author: string;
  body: string;
  blocking: boolean;
  answers?: string;
}

/**
 * Appends one validated comment with a ULID id (monotonic in this process).
 * The goal's state is the caller's (source/submit/comments.ts).
 *
 * @throws StoreError INVALID_RECORD (with the first issue), IO_ERROR.
 */
export async function appendComment(paths: GardenPaths, input: CommentInput, now: Date = new Date()): Promise<CommentRecord> {
  const comment = { id: nextId(now.getTime()), ...input, created_at: now.toISOString() } as CommentRecord;
  const issues = validateComment(comment);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `comment on ${input.goal}: ${formatIssue(issues[0]!)}`, commentsFile(paths, input.goal));
  const store = storeOf(paths);
  if (store) await store.insertComment(comment);
  else await appendJsonLine(commentsFile(paths, input.goal), comment);
  return comment;
}

/** The blocking comments of a thread that no later comment answers, oldest first. */
export function openQuestions(comments: readonly CommentRecord[]): CommentRecord[] {
  const answered = new Set(comments.filter((c) => c.answers).map((c) => c.answers!));
  return comments.filter((c) => c.blocking && !answered.has(c.id));
}
