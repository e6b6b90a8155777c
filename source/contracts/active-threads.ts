import { z } from 'zod';
import {
  codedEnum,
  codedString,
  collectIssues,
  GOAL_ID_PATTERN,
  issue,
  PLANT_NAME_PATTERN,
  timestamp,
  type ValidationIssue,
  lazySchema,
} from './common.js';

/**
 * Thread statuses (docs/active-threads/level2.md):
 * - `active`: being worked on now
 * - `waiting`: parked until something else happens (a goal, the operator)
 * - `blocked`: cannot move without outside help
 * - `done`: finished; kept until the plant prunes it
 */
export const THREAD_STATUSES = ['active', 'waiting', 'blocked', 'done'] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];

/** Size bounds of the Active Threads file. Characters are UTF-16 code units. */
export const ACTIVE_THREADS_LIMITS = {
  threads: 100,
  titleChars: 120,
  summaryChars: 2000,
  nextChars: 500,
  goals: 50,
} as const;

/** Thread id: `t-` plus lower-case words joined by hyphens, at most 64 characters (`t-flaky-date-test`). */
export const THREAD_ID_PATTERN = /^(?=.{3,64}$)t-[a-z0-9]+(?:-[a-z0-9]+)*$/;

const typeError = (iss: { input?: unknown }) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE');

/** A non-blank string of at most `max` characters. */
function text(max: number) {
  return z
    .string({ error: typeError })
    .refine((s) => s.trim() !== '', { error: 'MISSING_REQUIRED_FIELD' })
    .refine((s) => s.length <= max, { error: 'VALUE_TOO_LARGE' });
}

/** One thread of current work. Unknown fields are kept and ignored by readers. */
export const ActiveThreadSchema = lazySchema(() =>
  z.looseObject({
    id: codedString(THREAD_ID_PATTERN, 'INVALID_ID_FORMAT'),
    title: text(ACTIVE_THREADS_LIMITS.titleChars).regex(/^[^\u0000-\u001f\u007f\u2028\u2029]*$/, { error: 'INVALID_TITLE' }),
    status: codedEnum(THREAD_STATUSES, 'INVALID_STATUS'),
    summary: text(ACTIVE_THREADS_LIMITS.summaryChars).optional(),
    goals: z
      .array(codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'), { error: typeError })
      .max(ACTIVE_THREADS_LIMITS.goals, { error: 'VALUE_TOO_LARGE' })
      .optional(),
    next: text(ACTIVE_THREADS_LIMITS.nextChars).optional(),
    updated_at: timestamp(),
  }),
);
export type ActiveThread = z.infer<typeof ActiveThreadSchema>;

/** The plant-local Active Threads file, `plants/<plant>/memory/active-threads.json`. */
export const ActiveThreadsSchema = lazySchema(() =>
  z.looseObject({
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    updated_at: timestamp(),
    threads: z.array(ActiveThreadSchema, { error: typeError }).max(ACTIVE_THREADS_LIMITS.threads, { error: 'VALUE_TOO_LARGE' }),
  }),
);
export type ActiveThreads = z.infer<typeof ActiveThreadsSchema>;

/**
 * Validates an Active Threads document (docs/active-threads/level2.md).
 * Never throws. With `options.plant`, the document's `plant` must be that
 * plant (the directory it was read from or is written to).
 *
 * @returns every issue, `[]` when valid. Codes: MISSING_REQUIRED_FIELD,
 *   INVALID_PLANT_NAME (`plant`: not a plant name, or not the owning plant),
 *   INVALID_TIMESTAMP, INVALID_ID_FORMAT (`threads.N.id`), INVALID_TITLE
 *   (`threads.N.title` with a line break or control character),
 *   INVALID_STATUS (`threads.N.status`), INVALID_GOAL_FORMAT
 *   (`threads.N.goals.M`), VALUE_TOO_LARGE (a bound of
 *   {@link ACTIVE_THREADS_LIMITS}), DUPLICATE_THREAD_ID (`threads.N.id`
 *   repeating an earlier id), INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateActiveThreads(data: unknown, options: { plant?: string } = {}): ValidationIssue[] {
  const issues = collectIssues(ActiveThreadsSchema, data);
  if (issues.some((i) => i.code === 'INVALID_SHAPE')) return issues;
  const record = data as Record<string, unknown>;
  if (options.plant !== undefined && typeof record.plant === 'string' && PLANT_NAME_PATTERN.test(record.plant) && record.plant !== options.plant) {
    issues.push({ code: 'INVALID_PLANT_NAME', field: 'plant', message: `plant is ${record.plant}, but the file belongs to plant ${options.plant}` });
  }
  if (Array.isArray(record.threads)) {
    const seen = new Set<string>();
    record.threads.forEach((thread, n) => {
      const id = (thread as { id?: unknown } | null)?.id;
      if (typeof id !== 'string') return;
      if (seen.has(id)) issues.push({ ...issue('DUPLICATE_THREAD_ID', `threads.${n}.id`), message: `thread id ${id} appears more than once` });
      seen.add(id);
    });
  }
  return issues;
}
