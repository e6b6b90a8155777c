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
import { GoalGuardSchema, TASK_CLASS_PATTERN } from './guard.js';
import { SCHEDULE_NAME_PATTERN } from './schedule.js';

/** Goal types (DESIGN.md, "Goal record"). */
export const GOAL_TYPES = ['build', 'fix', 'evaluate', 'tend', 'spike', 'research', 'converse', 'retrospective', 'commission'] as const;
export type GoalType = (typeof GOAL_TYPES)[number];

/**
 * Goal statuses in lifecycle order: queued → dispatched → running → completed
 * → closed, and `blocked` (seed 004, "Comments"): an unanswered blocking
 * comment holds the goal until the operator answers.
 */
export const GOAL_STATUSES = ['queued', 'dispatched', 'running', 'completed', 'closed', 'blocked'] as const;
export type GoalStatus = (typeof GOAL_STATUSES)[number];

/** Why a goal closed: its run's outcome, or the operator cancelled it. */
export const CLOSED_REASONS = ['success', 'failure', 'cancelled'] as const;
export type ClosedReason = (typeof CLOSED_REASONS)[number];

/**
 * The goal state machine (seed 002, "The reconcile loop"): allowed `from → to`
 * transitions. `dispatched → queued` is the rollback when opening the run
 * fails; `running → queued` puts a goal back after its run was interrupted by
 * a coordinator shutdown (the next dispatch opens attempt rN+1);
 * `queued → closed` is an operator cancel. A blocking comment moves a queued
 * or running goal to `blocked`; the answer returns it (`blocked → running`
 * while its run is live, else `blocked → queued`); `blocked → closed` is a
 * cancel (docs/runners/level2.md, "Comments"). A goal whose run succeeded in
 * a worktree stays `completed` until its work lands; `completed → queued`
 * takes it back for another attempt when the landing conflicted or the
 * operator rejected it with requeue (docs/landing/level2.md).
 */
export const GOAL_TRANSITIONS: Readonly<Record<GoalStatus, readonly GoalStatus[]>> = {
  queued: ['dispatched', 'closed', 'blocked'],
  dispatched: ['running', 'queued'],
  running: ['completed', 'queued', 'blocked'],
  // A completed goal whose work did not land (a conflict, a rejection with requeue) goes back to the queue.
  completed: ['closed', 'queued'],
  closed: [],
  blocked: ['queued', 'running', 'closed'],
};

/** The most acceptance criteria a goal carries, and the longest criterion text and verify command (characters). */
export const MAX_ACCEPTANCE_CRITERIA = 50;
export const MAX_CRITERION_TEXT = 2000;
export const MAX_CRITERION_VERIFY = 65_536;

/**
 * One acceptance criterion of a goal (seed 004, "The write-back contract"
 * 5: "acceptance criteria checkboxes that reflect what was actually
 * verified"; docs/goal/level2.md, "Acceptance criteria"): what must be true
 * when the work is done (`text`, one line), and optionally a shell command
 * (`verify`, `sh -c` in the run's working directory) whose exit 0 proves it.
 * A criterion without `verify` is given to the agent but is never reported
 * verified: pak2 has no evidence for it.
 */
export const AcceptanceCriterionSchema = lazySchema(() =>
  z.strictObject({
    text: z.string().min(1).max(MAX_CRITERION_TEXT).regex(/^[^\r\n]*\S[^\r\n]*$/),
    verify: z.string().min(1).max(MAX_CRITERION_VERIFY).optional(),
  }),
);
export type AcceptanceCriterion = z.infer<typeof AcceptanceCriterionSchema>;

/** Lowest and highest goal priority; higher dispatches first. Default 50. */
export const PRIORITY_MIN = 0;
export const PRIORITY_MAX = 100;
export const PRIORITY_DEFAULT = 50;

/**
 * The goal record, `<runtime-root>/goals/<id>.json` (docs/goal/level2.md).
 * Unknown fields are kept.
 */
export const GoalSchema = lazySchema(() =>
  z.looseObject({
    id: codedString(GOAL_ID_PATTERN, 'INVALID_ID_FORMAT'),
    type: codedEnum(GOAL_TYPES, 'INVALID_GOAL_TYPE'),
    status: codedEnum(GOAL_STATUSES, 'INVALID_STATUS'),
    priority: z
      .number({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_PRIORITY') })
      .int({ error: 'INVALID_PRIORITY' })
      .min(PRIORITY_MIN, { error: 'INVALID_PRIORITY' })
      .max(PRIORITY_MAX, { error: 'INVALID_PRIORITY' }),
    assigned_to: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME').optional(),
    body: z.string({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_FIELD_TYPE') }),
    submitted_at: timestamp(),
    updated_at: timestamp().optional(),
    closed_at: timestamp().optional(),
    driver: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    reasoning_effort: z.string().min(1).optional(),
    conversation_id: z.string().min(1).optional(),
    post_reply_hop: z.boolean().optional(),
    closed_reason: codedEnum(CLOSED_REASONS, 'INVALID_CLOSED_REASON').optional(),
    /** Guarded run (seed 001, docs/guarded-runs/level2.md): verify, scope, env passthrough, redaction. */
    guard: GoalGuardSchema.optional(),
    /** Routing class: names `[routing.<task_class>]` in PAK2.toml (seed 001, routing tiers). */
    task_class: z.string().regex(TASK_CLASS_PATTERN).optional(),
    /** Its own cap in USD across all its attempts (`pak2 submit --budget`; docs/budget/level2.md); the tighter of it and `[budget] goal_usd` applies. */
    budget_usd: z.number({ error: 'INVALID_BUDGET' }).positive({ error: 'INVALID_BUDGET' }).max(1_000_000, { error: 'INVALID_BUDGET' }).optional(),
    /** A goal a `[[schedule]]` submitted: the schedule's name (docs/schedules/level2.md). */
    schedule: z.string().regex(SCHEDULE_NAME_PATTERN).optional(),
    /** While `blocked`: the blocking comment that holds it, the status it left, and since when. */
    blocked_on: z.looseObject({ comment: z.string().min(1), from: z.enum(['queued', 'running']), since: timestamp() }).optional(),
    /**
     * The goals this one waits for (docs/goal/level2.md, "Dependencies"): it is
     * dispatched or claimed only once every one of them closed success.
     * Goal ids, no duplicates, never its own id.
     */
    depends_on: z.array(codedString(GOAL_ID_PATTERN, 'INVALID_DEPENDENCY'), { error: 'INVALID_FIELD_TYPE' }).optional(),
    /** What must be true when the work is done, each checked after the run and reported in the run's `acceptance` (docs/goal/level2.md, "Acceptance criteria"). */
    acceptance_criteria: z.array(AcceptanceCriterionSchema, { error: 'INVALID_FIELD_TYPE' }).max(MAX_ACCEPTANCE_CRITERIA).optional(),
    /** The goal this one retries (`pak2 retry`): its dependents were moved to wait for this one. */
    retry_of: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT').optional(),
  }),
);
export type GoalRecord = z.infer<typeof GoalSchema>;

/**
 * Validates a goal record (docs/goal/level2.md). Never throws.
 *
 * @returns every issue, `[]` when valid. Codes: MISSING_REQUIRED_FIELD,
 *   INVALID_ID_FORMAT, INVALID_GOAL_TYPE, INVALID_STATUS, INVALID_PRIORITY,
 *   INVALID_PLANT_NAME, INVALID_TIMESTAMP, MISSING_CLOSED_REASON,
 *   INVALID_CLOSED_REASON, INVALID_BUDGET, INVALID_FIELD_TYPE, INVALID_SHAPE, INVALID_GOAL_FORMAT
 *   (`retry_of`), INVALID_DEPENDENCY (a `depends_on` entry that is no goal id,
 *   named twice, or the goal's own id).
 */
export function validateGoal(data: unknown): ValidationIssue[] {
  const issues = collectIssues(GoalSchema, data);
  if (issues.some((i) => i.code === 'INVALID_SHAPE')) return issues;
  const record = data as Record<string, unknown>;
  if (record.status === 'closed' && (record.closed_reason === undefined || record.closed_reason === null)) {
    issues.push(issue('MISSING_CLOSED_REASON', 'closed_reason'));
  }
  if (Array.isArray(record.depends_on)) {
    const seen = new Set<unknown>();
    record.depends_on.forEach((dep, i) => {
      if (dep === record.id) issues.push(issue('INVALID_DEPENDENCY', `depends_on.${i}`));
      else if (seen.has(dep)) issues.push(issue('INVALID_DEPENDENCY', `depends_on.${i}`));
      seen.add(dep);
    });
  }
  return issues;
}
