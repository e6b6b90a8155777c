import { z } from 'zod';
import { codedString, collectIssues, lazySchema, timestamp, type ValidationIssue } from './common.js';

/**
 * A dashboard invocation id (docs/dashboard/level2.md, "Invocation
 * records"): the session's UTC start to the second (`YYYYMMDDTHHMMSS`), a
 * hyphen and eight lower-case hex digits.
 */
export const DASHBOARD_INVOCATION_ID_PATTERN = /^\d{8}T\d{6}-[0-9a-f]{8}$/;

/**
 * One completed dashboard session's measured cost (seed 002, "File layout":
 * `<runtime-root>/dashboard/invocations/<id>.json`, a "dashboard invocation
 * cost record"; docs/dashboard/level2.md). The dashboard calls no model, so
 * its cost is wall time in seconds, `source: "estimated"`. Unknown fields
 * are kept.
 */
export const DashboardInvocationSchema = lazySchema(() =>
  z.looseObject({
    /** The invocation id; also the file's name. */
    id: codedString(DASHBOARD_INVOCATION_ID_PATTERN, 'INVALID_ID_FORMAT'),
    /** The command the operator ran (`pak2 dashboard`). */
    command: z.string({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE') }).min(1, { error: 'MISSING_REQUIRED_FIELD' }),
    /** The dashboard's process id. */
    pid: z.number({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE') }).int({ error: 'INVALID_FIELD_TYPE' }).positive({ error: 'INVALID_FIELD_TYPE' }),
    started_at: timestamp(),
    finished_at: timestamp(),
    /** Wall time, seconds (two decimals), estimated: pak2 measured it itself. */
    cost: z.looseObject({
      source: z.literal('estimated', { error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_COST_SOURCE') }),
      wall_seconds: z.number({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_COST_FIELD') }).min(0, { error: 'INVALID_COST_FIELD' }),
    }),
  }),
);
export type DashboardInvocation = z.infer<typeof DashboardInvocationSchema>;

/**
 * Validates a dashboard invocation record (seed 002: validate.py validates
 * "dashboard invocation records"). Never throws. (A `finished_at` before
 * `started_at` is not refused: the wall clock may step back during a
 * session; `wall_seconds` is what was measured.)
 *
 * @returns every issue, `[]` when valid. Codes: MISSING_REQUIRED_FIELD,
 *   INVALID_ID_FORMAT, INVALID_TIMESTAMP, INVALID_COST_SOURCE (not
 *   `estimated`), INVALID_COST_FIELD, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateDashboardInvocation(data: unknown): ValidationIssue[] {
  return collectIssues(DashboardInvocationSchema, data);
}
