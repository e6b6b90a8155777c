import { z } from 'zod';
import { codedEnum, collectIssues, requiredString, timestamp, type ValidationIssue, lazySchema } from './common.js';

/**
 * Kinds of "needs you" items (docs/attention/level2.md, "Items"):
 * - `question`: an open blocking question of a blocked goal
 * - `landing`: a landing waiting for review (`[merge] mode = "review"`)
 * - `budget`: a run stopped over its budget (`budget_exceeded`), or a queued goal held by a budget
 * - `run`: a run that ended failure, killed, timeout, zero_output or abandoned
 * - `blocked`: a queued goal the coordinator cannot dispatch (a failed dependency, a plant it lacks, …)
 */
export const ATTENTION_KINDS = ['question', 'landing', 'budget', 'run', 'blocked'] as const;
export type AttentionKind = (typeof ATTENTION_KINDS)[number];

/**
 * One "needs you" item (docs/attention/level2.md): derived from the garden's
 * records, never stored. `id` is stable while the fact lasts
 * (`question:<comment-id>`, `landing:<run-id>`, `run:<run-id>`,
 * `blocked:<goal-id>:<budget|dependency|nobody|plant>`); `summary` is one line; `since` ISO 8601 UTC.
 * This is the shape of `pak2 attention --json`, `GET /attention` and the
 * `[notify] command`'s stdin.
 */
export const AttentionItemSchema = lazySchema(() =>
  z.object({
    id: requiredString(),
    kind: codedEnum(ATTENTION_KINDS, 'INVALID_FIELD_TYPE'),
    summary: requiredString(),
    goal: z.string().optional(),
    run: z.string().optional(),
    since: timestamp(),
  }),
);
export type AttentionItem = z.infer<typeof AttentionItemSchema>;

/** One acknowledgement: when (ISO 8601 UTC) and by whom (`operator`, or the HTTP token's name). */
export const AttentionAckSchema = lazySchema(() => z.strictObject({ id: requiredString(), at: timestamp(), by: requiredString() }));
export type AttentionAck = z.infer<typeof AttentionAckSchema>;

/**
 * `<runtime-root>/attention.json` (docs/attention/level2.md, "Acknowledging"):
 * the acknowledged item ids. Only ids still derived are kept, so it stays as
 * small as the list itself.
 */
export const AttentionRecordSchema = lazySchema(() => z.strictObject({ acked: z.array(AttentionAckSchema, { error: 'INVALID_FIELD_TYPE' }) }));
export type AttentionRecord = z.infer<typeof AttentionRecordSchema>;

/**
 * Validates `attention.json`. Never throws.
 *
 * @returns issues with codes MISSING_REQUIRED_FIELD, INVALID_TIMESTAMP, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateAttentionRecord(data: unknown): ValidationIssue[] {
  return collectIssues(AttentionRecordSchema, data);
}

/**
 * Validates one attention item (as `pak2 attention --json` prints it). Never throws.
 *
 * @returns issues with codes MISSING_REQUIRED_FIELD, INVALID_TIMESTAMP, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateAttentionItem(data: unknown): ValidationIssue[] {
  return collectIssues(AttentionItemSchema, data);
}
