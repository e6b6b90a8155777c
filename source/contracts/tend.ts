import { z } from 'zod';
import { collectIssues, timestamp, type ValidationIssue } from './common.js';

/**
 * `<runtime-root>/tend.json` (docs/automatic-tend/level2.md, "Operator
 * control"): whether the operator paused automatic tends (`pak2 tend
 * pause|resume`, `t` in the workbench, `POST /api/v1/tend/pause|resume`),
 * when (`updated_at`, ISO 8601 UTC) and by whom (`by`: `operator`, or an
 * HTTP token's name). Absent: not paused.
 */
export const TendStateSchema = z.looseObject({
  paused: z.boolean(),
  updated_at: timestamp(),
  by: z.string().min(1),
});
export type TendState = z.infer<typeof TendStateSchema>;

/** Validates tend.json. Never throws. @returns issues (INVALID_SHAPE, MISSING_REQUIRED_FIELD, INVALID_FIELD_TYPE, INVALID_TIMESTAMP). */
export function validateTendState(data: unknown): ValidationIssue[] {
  return collectIssues(TendStateSchema, data);
}

/**
 * Why an automatic tend the operator's `[tend]` or pause held back was not
 * queued: the `reason` of its `TendWithheld` event (docs/events/level2.md).
 * `trigger_off`: its trigger is `false` in `[tend]`; `paused`: tends are
 * paused (or tend.json cannot be read); `daily_cap`: `[tend] daily_cap`
 * automatic tends were already queued today.
 */
export const TEND_WITHHELD_REASONS = ['trigger_off', 'paused', 'daily_cap'] as const;
export type TendWithheldReason = (typeof TEND_WITHHELD_REASONS)[number];
