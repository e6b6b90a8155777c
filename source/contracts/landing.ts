import { z } from 'zod';
import { codedEnum, codedString, collectIssues, GOAL_ID_PATTERN, lazySchema, PLANT_NAME_PATTERN, RUN_ID_PATTERN, timestamp, type ValidationIssue } from './common.js';

/**
 * Landing states (docs/landing/level2.md):
 * - `queued`: waiting its turn in the merge queue (FIFO by `queued_at`);
 * - `awaiting_review`: `[merge] mode = "review"`: held until the operator accepts (`pak2 land`) or rejects it;
 * - `verifying`: merged onto the base tip in a scratch worktree, verify running;
 * - `waiting`: merged and verified, but the operator's checkout holds uncommitted changes to files the landing changes; it lands once they are committed or set aside;
 * - `landed`: the base branch moved to the merged result;
 * - `conflict`: the merge conflicted (`conflict.paths`); nothing moved;
 * - `rejected`: the operator discarded the work;
 * - `failed`: verify failed on the merged result (`landing_verify_failed`) or pak2 could not land it (`landing_error`).
 */
export const LANDING_STATES = ['queued', 'awaiting_review', 'verifying', 'waiting', 'landed', 'conflict', 'rejected', 'failed'] as const;
export type LandingState = (typeof LANDING_STATES)[number];
/** States a landing never leaves. */
export const TERMINAL_LANDING_STATES = ['landed', 'conflict', 'rejected', 'failed'] as const satisfies readonly LandingState[];

/**
 * Why a landing did not land (docs/landing/level2.md):
 * - `landing_conflict`: merging the run's branch onto the base tip conflicted;
 * - `landing_verify_failed`: verify passed (or was not asked) in the run's worktree but failed on the merged result, or ran past its limit;
 * - `landing_rejected`: the operator rejected the work;
 * - `landing_error`: git failed in a way pak2 could not resolve (the branch is gone, the base branch is missing); `message` says how.
 */
export const LANDING_FAILURE_REASONS = ['landing_conflict', 'landing_verify_failed', 'landing_rejected', 'landing_error'] as const;
export type LandingFailureReason = (typeof LANDING_FAILURE_REASONS)[number];

/** The verify run on a merged result: the command, its outcome, its duration (ms) and the tail of its output. */
export const LandingVerifySchema = lazySchema(() =>
  z.looseObject({
    command: z.string(),
    ok: z.boolean(),
    exit_code: z.number().int().nullable(),
    timed_out: z.boolean(),
    duration_ms: z.number().min(0),
    output_tail: z.string(),
  }),
);
export type LandingVerify = z.infer<typeof LandingVerifySchema>;

/** A git commit id: 40 (sha-1) or 64 (sha-256) lower-case hex digits. */
export const COMMIT_PATTERN = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

const commit = () => codedString(COMMIT_PATTERN, 'INVALID_COMMIT');

/**
 * A landing record, `<runtime-root>/landings/<run-id>.json` (docs/landing/level2.md):
 * what became of a successful worktree run's work on its way onto the base
 * branch. The run record stays immutable; this is a separate record about
 * it. Times are ISO 8601 UTC; commits are full git object ids.
 */
export const LandingSchema = lazySchema(() =>
  z.looseObject({
    run: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT'),
    goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'),
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    state: codedEnum(LANDING_STATES, 'INVALID_LANDING_STATE'),
    /** The run's branch (`pak2/<run-id>`), and the tip pak2 committed the run's changes at. */
    branch: z.string().min(1),
    head_commit: commit(),
    /** The base branch and the commit the run's worktree started from. */
    base_branch: z.string().min(1),
    base_commit: commit(),
    queued_at: timestamp(),
    updated_at: timestamp(),
    /** The base tip the branch was merged onto, and the merged result. */
    onto_commit: commit().optional(),
    result_commit: commit().optional(),
    landed_at: timestamp().optional(),
    /** The files the run changed against its base (path and git status letter), for review. */
    files: z.array(z.looseObject({ path: z.string(), status: z.string() })).optional(),
    verify: LandingVerifySchema.optional(),
    conflict: z.looseObject({ paths: z.array(z.string()) }).optional(),
    failure_reason: codedEnum(LANDING_FAILURE_REASONS, 'INVALID_LANDING_REASON').optional(),
    /** What happened or what the operator can do, in words (a waiting landing names the files and the way on). */
    message: z.string().optional(),
    /** The operator's review: accepted or rejected, by whom, when, with an optional comment; a rejection with `requeue` sends the goal back to the queue. */
    review: z.looseObject({ decision: z.enum(['accepted', 'rejected']), by: z.string(), at: timestamp(), comment: z.string().optional(), requeue: z.boolean().optional() }).optional(),
    /** When the run's branch was deleted, `[worktree] keep_days` after the landing ended. */
    branch_pruned_at: timestamp().optional(),
    /** How many times the queue began landing it (a base that moved under a verify is merged again). */
    attempts: z.number().int().min(0),
  }),
);
export type LandingRecord = z.infer<typeof LandingSchema>;

/**
 * Validates a landing record (docs/landing/level2.md). Never throws.
 *
 * @returns every issue, `[]` when valid. Codes: MISSING_REQUIRED_FIELD,
 *   INVALID_ID_FORMAT, INVALID_GOAL_FORMAT, INVALID_PLANT_NAME,
 *   INVALID_LANDING_STATE, INVALID_COMMIT, INVALID_TIMESTAMP,
 *   INVALID_LANDING_REASON, MISSING_FAILURE_REASON (conflict, rejected or
 *   failed without one), INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateLanding(data: unknown): ValidationIssue[] {
  const issues = collectIssues(LandingSchema, data);
  if (issues.some((i) => i.code === 'INVALID_SHAPE')) return issues;
  const record = data as Record<string, unknown>;
  if ((record.state === 'conflict' || record.state === 'rejected' || record.state === 'failed') && (record.failure_reason === undefined || record.failure_reason === null)) {
    issues.push({ code: 'MISSING_FAILURE_REASON', field: 'failure_reason', message: `a ${String(record.state)} landing names why (failure_reason)` });
  }
  if (record.state === 'landed' && typeof record.result_commit !== 'string') issues.push({ code: 'MISSING_REQUIRED_FIELD', field: 'result_commit', message: 'a landed landing names the commit the base branch moved to (result_commit)' });
  return issues;
}

/** True for a state a landing never leaves. */
export function isTerminalLandingState(state: string): boolean {
  return (TERMINAL_LANDING_STATES as readonly string[]).includes(state);
}
