import { createRequire } from 'node:module';
import type { Cron as CronClass } from 'croner';
import { z } from 'zod';
import { codedString, collectIssues, GOAL_ID_PATTERN, lazySchema, timestamp, type ValidationIssue } from './common.js';

/** A schedule's `name`: lower-case letters, digits and inner hyphens, 1–64 characters (docs/schedules/level2.md). */
export const SCHEDULE_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/** `[[schedule]]`'s `overlap`: `skip` (no new goal while the schedule's last goal is open) or `allow`. */
export const SCHEDULE_OVERLAPS = ['skip', 'allow'] as const;
export type ScheduleOverlap = (typeof SCHEDULE_OVERLAPS)[number];

/** The timezone a schedule's cron line is read in when it names none. */
export const SCHEDULE_DEFAULT_TIMEZONE = 'UTC';

let cronClass: typeof CronClass | undefined;
/** croner's Cron, loaded on first use: a command that reads no schedule does not load the parser. */
export function loadCron(): typeof CronClass {
  return (cronClass ??= (createRequire(import.meta.url)('croner') as { Cron: typeof CronClass }).Cron);
}

/**
 * Why `timezone` is no IANA timezone Node knows (`Europe/Paris`, `UTC`), or
 * undefined when it is one. Pure; never throws.
 */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return 'an IANA timezone such as "UTC" or "Europe/Paris"';
  }
}

/**
 * Why `cron` is no cron line croner reads (five fields, or six with
 * seconds first), or undefined when it is one. Pure; never throws.
 */
export function cronProblem(cron: string): string | undefined {
  try {
    const Cron = loadCron();
    const parsed = new Cron(cron, { paused: true, timezone: SCHEDULE_DEFAULT_TIMEZONE });
    if (parsed.nextRun(new Date(0)) === null) return 'a cron line that fires at least once';
    return undefined;
  } catch (error) {
    return `a cron line such as "*/15 * * * *" (${(error as Error).message.replace(/^CronPattern: /, '')})`;
  }
}

/** What the coordinator keeps about one schedule (docs/schedules/level2.md, "State"). */
export const ScheduleStateSchema = lazySchema(() =>
  z.looseObject({
    /** When a coordinator first saw the schedule: it counts due times after this, never from the epoch. */
    since: timestamp(),
    /** The latest due time handled (a goal submitted, skipped, refused, or passed over while disabled). */
    last_due_at: timestamp().optional(),
    /** When the schedule last submitted a goal. */
    last_fired_at: timestamp().optional(),
    /** The goal it last submitted. */
    last_goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT').optional(),
  }),
);
export type ScheduleState = z.infer<typeof ScheduleStateSchema>;

/** `<runtime-root>/schedules.json`: each schedule's state by its name. */
export const SchedulesStateSchema = lazySchema(() =>
  z.looseObject({
    schedules: z.record(z.string().regex(SCHEDULE_NAME_PATTERN, { error: 'INVALID_FIELD_TYPE' }), ScheduleStateSchema),
  }),
);
export type SchedulesState = z.infer<typeof SchedulesStateSchema>;

/**
 * Validates `<runtime-root>/schedules.json` (docs/schedules/level2.md). Never throws.
 *
 * @returns issues with codes MISSING_REQUIRED_FIELD, INVALID_TIMESTAMP,
 *   INVALID_GOAL_FORMAT, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateSchedulesState(data: unknown): ValidationIssue[] {
  return collectIssues(SchedulesStateSchema, data);
}
