import { z } from 'zod';
import { codedEnum, codedString, collectIssues, GOAL_ID_PATTERN, PLANT_NAME_PATTERN, RUN_ID_PATTERN, timestamp, type ValidationIssue, lazySchema} from './common.js';
import { SCHEDULE_NAME_PATTERN } from './schedule.js';

/**
 * Coordinator event types (docs/events/level2.md). Every goal or run state
 * change appends one of these to `<runtime-root>/events/coordinator.jsonl`.
 */
export const EVENT_TYPES = [
  'GoalSubmitted',
  'GoalTransitioned',
  'GoalClosed',
  'RunStarted',
  'RunClosed',
  'ReflectionRequested',
  'ReflectionRecorded',
  'WatchdogKilled',
  'RunRecordTampered',
  'RunLeftovers',
  'GoalBlocked',
  'RunRolledBack',
  'RoutingEscalated',
  'RoutingStopped',
  'AgentEnvironmentCleaned',
  'PlantCommissioned',
  'PlantArchived',
  'CoordinatorStarted',
  'CoordinatorStopped',
  'GardenGenesis',
  'DashboardStarted',
  'DashboardFinished',
  // remote runners (seed 004, docs/runners/level2.md)
  'LeaseClaimed',
  'LeaseExpired',
  'LeaseRefused',
  'CommentPosted',
  'ArtifactAttached',
  'DocumentUpserted',
  // worktrees and landing (docs/landing/level2.md)
  'WorktreeCreated',
  'WorktreeRemoved',
  'LandingQueued',
  'LandingAccepted',
  'LandingVerified',
  'Landed',
  'LandingConflict',
  'LandingRejected',
  'LandingFailed',
  'LandingWaiting',
  // budgets (docs/budget/level2.md)
  'BudgetWarning',
  'BudgetChanged',
  // goal dependencies (docs/goal/level2.md, "Dependencies")
  'GoalDependencyChanged',
  // schedules (docs/schedules/level2.md)
  'ScheduleFired',
  // the needs-you list (docs/attention/level2.md)
  'AttentionAcknowledged',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The event types a filter names, as every door takes them (`pak2 events
 * --type`, `?type=` on `GET /events` and the event stream, a webhook's
 * `--events`; docs/events/level2.md): each value may name several types
 * separated by commas (`GoalClosed,RunClosed`) and values may repeat;
 * spaces around a type are trimmed, empty pieces and repeats dropped.
 * `extra` are words taken besides the types (a webhook's `*`). Pure; never throws.
 *
 * @returns the types in the order first named, or `unknown`: the first word that is neither a type nor in `extra`.
 */
export function parseEventTypes<E extends string = never>(values: readonly string[], extra: readonly E[] = []): { types: (EventType | E)[] } | { unknown: string } {
  const types: (EventType | E)[] = [];
  for (const word of values.flatMap((value) => value.split(','))) {
    const type = word.trim();
    if (!type) continue;
    if (!(EVENT_TYPES as readonly string[]).includes(type) && !(extra as readonly string[]).includes(type)) return { unknown: type };
    if (!types.includes(type as EventType | E)) types.push(type as EventType | E);
  }
  return { types };
}

/** A ULID: 26 Crockford base-32 characters, the first 10 the time in ms. */
export const ULID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * One line of the coordinator event log. `ts` is ISO 8601 UTC; the optional
 * fields name what the event concerns. Unknown fields are kept.
 */
export const EventSchema = lazySchema(() =>
  z.looseObject({
    /** A ULID (seed 004, "Event"): sortable, so sorting ids sorts time. Lines written before ids existed have none. */
    id: codedString(ULID_PATTERN, 'INVALID_EVENT_ID').optional(),
    ts: timestamp(),
    type: codedEnum(EVENT_TYPES, 'INVALID_EVENT_TYPE'),
    goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT').optional(),
    run: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT').optional(),
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME').optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    status: z.string().optional(),
    reason: z.string().optional(),
    detail: z.string().optional(),
    /** RunClosed: the run's cost source and amount in USD, so cost totals need no run reads. */
    cost_source: z.string().optional(),
    cost_usd: z.number().min(0).optional(),
    /** An event a call over HTTP wrote: the name and role (operator, runner, read) of the server token it came with (docs/server/level2.md, "Tokens and roles"). */
    token_name: z.string().optional(),
    token_role: z.string().optional(),
    /** ScheduleFired (docs/schedules/level2.md): the schedule, the due time the firing stands for, and how many earlier due times it covers (missed while no coordinator ran). */
    schedule: z.string().regex(SCHEDULE_NAME_PATTERN).optional(),
    due_at: timestamp().optional(),
    missed: z.number().int().min(0).optional(),
  }),
);
export type EventRecord = z.infer<typeof EventSchema>;

/**
 * Validates one coordinator event (docs/events/level2.md). Never throws.
 *
 * @returns issues with codes MISSING_REQUIRED_FIELD, INVALID_EVENT_ID, INVALID_TIMESTAMP,
 *   INVALID_EVENT_TYPE, INVALID_GOAL_FORMAT, INVALID_ID_FORMAT,
 *   INVALID_PLANT_NAME, INVALID_FIELD_TYPE, INVALID_SHAPE.
 */
export function validateEvent(data: unknown): ValidationIssue[] {
  return collectIssues(EventSchema, data);
}
