import { z } from 'zod';
import { codedEnum, codedString, collectIssues, GOAL_ID_PATTERN, PLANT_NAME_PATTERN, RUN_ID_PATTERN, timestamp, type ValidationIssue, lazySchema} from './common.js';
import { TERMINAL_RUN_STATUSES } from './run.js';

/**
 * The bounded outcome codes of the runtime-history capture at run close
 * (seed 000, "Run directory"; seed 002, "File layout"), in the order the
 * capture can reach them. Only `committed` means the nested runtime repo
 * advanced; every other code leaves the closed run as it is.
 *
 * - `committed`: record written, runtime tree staged and committed, HEAD read back
 * - `runtime_root_not_split`: legacy unified root; nothing is attempted
 * - `runtime_root_outside_garden`: the runtime root is not under the garden root
 * - `authored_repo_unavailable`: the authored HEAD or clean/dirty probe failed (no git, no repo, no commit)
 * - `record_write_failed`: `history/commits/<run-id>.json` could not be written
 * - `runtime_repo_init_failed`: `<runtime-root>/.git` could not be created, verified or configured
 * - `runtime_repo_stage_failed`: `git add -A -- .` in the runtime root failed
 * - `no_runtime_changes`: staged, but the cached diff was empty
 * - `runtime_repo_diff_failed`: `git diff --cached --quiet --exit-code` failed (exit code other than 0 or 1)
 * - `runtime_repo_commit_failed`: `git commit` failed after changes were staged
 * - `runtime_repo_head_unavailable`: committed, but the runtime HEAD could not be read back
 */
export const RUNTIME_HISTORY_OUTCOMES = [
  'committed',
  'runtime_root_not_split',
  'runtime_root_outside_garden',
  'authored_repo_unavailable',
  'record_write_failed',
  'runtime_repo_init_failed',
  'runtime_repo_stage_failed',
  'no_runtime_changes',
  'runtime_repo_diff_failed',
  'runtime_repo_commit_failed',
  'runtime_repo_head_unavailable',
] as const;
export type RuntimeHistoryOutcome = (typeof RUNTIME_HISTORY_OUTCOMES)[number];

/** Whether the authored paths outside the runtime root matched the authored HEAD at close. */
export const AUTHORED_TREE_STATES = ['clean', 'dirty'] as const;
export type AuthoredTreeState = (typeof AUTHORED_TREE_STATES)[number];

/** A git object name: SHA-1 (40 hex) or SHA-256 (64 hex). */
export const COMMIT_ID_PATTERN = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The runtime provenance record of one closed run,
 * `<runtime-root>/history/commits/<run-id>.json` (docs/runtime-history/level2.md).
 * Everything in it is known at close, so capturing the same closed run twice
 * in the same authored state writes the same bytes. Unknown fields are kept.
 */
export const RuntimeHistoryRecordSchema = lazySchema(() =>
  z.looseObject({
    run_id: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT'),
    goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'),
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    /** The run's terminal status (one of TERMINAL_RUN_STATUSES). */
    status: codedEnum(TERMINAL_RUN_STATUSES, 'INVALID_STATUS'),
    /** The run's completed_at. */
    completed_at: timestamp(),
    /** The authored repo's HEAD commit when the run closed. */
    authored_head: codedString(COMMIT_ID_PATTERN, 'INVALID_FIELD_TYPE'),
    /** `clean` when `git status` showed nothing outside the runtime root, else `dirty`. */
    authored_tree: codedEnum(AUTHORED_TREE_STATES, 'INVALID_FIELD_TYPE'),
    /** The runtime root, relative to the garden root (`.runtime`). */
    runtime_root: z.string().min(1),
  }),
);
export type RuntimeHistoryRecord = z.infer<typeof RuntimeHistoryRecordSchema>;

/**
 * Validates a runtime provenance record. Never throws.
 *
 * @returns issues with codes MISSING_REQUIRED_FIELD, INVALID_ID_FORMAT,
 *   INVALID_GOAL_FORMAT, INVALID_PLANT_NAME, INVALID_STATUS,
 *   INVALID_TIMESTAMP, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateRuntimeHistoryRecord(data: unknown): ValidationIssue[] {
  return collectIssues(RuntimeHistoryRecordSchema, data);
}
