import { z } from 'zod';
import {
  codedEnum,
  codedString,
  collectIssues,
  GOAL_ID_PATTERN,
  issue,
  PLANT_NAME_PATTERN,
  requiredString,
  RUN_ID_PATTERN,
  timestamp,
  type ValidationIssue,
  lazySchema,
} from './common.js';

/**
 * Run statuses (seed 000, "Statuses"; seed 004 adds `abandoned`: a remote
 * run whose runner stopped heartbeating past its lease, assumed dead, not
 * done). Only `running` is not terminal.
 */
export const RUN_STATUSES = ['running', 'success', 'failure', 'killed', 'timeout', 'zero_output', 'abandoned'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** The six terminal statuses; a run in one of them is never rewritten. */
export const TERMINAL_RUN_STATUSES = ['success', 'failure', 'killed', 'timeout', 'zero_output', 'abandoned'] as const satisfies readonly RunStatus[];
/** Statuses that require `failure_reason` (seed 000, "Conditionally required fields"). */
export const FAILED_RUN_STATUSES: readonly RunStatus[] = ['failure', 'killed', 'timeout', 'zero_output', 'abandoned'];

/**
 * `failure_reason` codes (docs/run/level2.md): why a run did not succeed.
 * - `killed`: stopped by the watchdog (silence) or by the operator
 * - `timeout`: ran past `[coordinator].run_timeout_seconds`
 * - `zero_output`: the agent exited cleanly but produced nothing
 * - `agent_error`: the agent reported an error result (API error, refusal, …)
 * - `nonzero_exit`: the agent process exited with a non-zero code without an error result
 * - `launch_failed`: the driver plugin is unknown or its CLI could not be started
 * - `reflection_failed`: the task succeeded but the reflection turn produced no text
 * - `coordinator_stopped`: the coordinator shut down while the run was live
 * - `operator_stopped`: the operator stopped the live run (`pak2 stop`)
 * - `driver_error`: pak2 itself failed while finishing a launched run (the agent's stream is kept)
 * - `permission_denied`: the agent reported success but tool calls it made were refused (`permission_denials`)
 * - `verify_failed`: a guarded run's verify command failed or ran past its limit (task_outcome.json)
 * - `scope_violation`: a guarded run changed a forbidden path or one outside allowed_files (rolled back)
 * - `guard_error`: pak2 could not take a guarded run's baseline or check its tree (git failed)
 * - `lease_expired`: a remote run's runner sent no heartbeat within its lease (status `abandoned`; docs/runners/level2.md)
 * - `turn_unfinished`: the agent reported success, but its turn stopped before finishing (claude `stop_reason` `tool_use`, `max_tokens`, …, or a `terminal_reason` other than `completed`)
 * - `background_unfinished`: the agent reported success, but background tasks it started were stopped, failed unseen, or never finished (`background_tasks`)
 * - `worktree_failed`: pak2 could not create the run's git worktree (the agent never started)
 * - `setup_failed`: `[worktree] setup` failed or ran past its limit in the new worktree (the agent never started; `setup.log`)
 * - `budget_exceeded`: the run's spend, followed from its stream, crossed a `[budget]` cap; pak2 stopped it (status `killed`; `budget` names the cap; docs/budget/level2.md)
 */
export const FAILURE_REASONS = [
  'killed',
  'timeout',
  'zero_output',
  'agent_error',
  'nonzero_exit',
  'launch_failed',
  'reflection_failed',
  'coordinator_stopped',
  'operator_stopped',
  'driver_error',
  'permission_denied',
  // guarded runs (seed 001, docs/guarded-runs/level2.md)
  'verify_failed',
  'scope_violation',
  'guard_error',
  // remote runners (seed 004, docs/runners/level2.md)
  'lease_expired',
  // a run ends when the agent's work ends (docs/run/level2.md, "When a run has ended")
  'turn_unfinished',
  'background_unfinished',
  // a worktree per run (docs/landing/level2.md, "Worktrees")
  'worktree_failed',
  'setup_failed',
  // budgets (docs/budget/level2.md)
  'budget_exceeded',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Cost sources (seed 000, "Cost"); `unknown` is a named state, never an absence. */
export const COST_SOURCES = ['provider', 'estimated', 'unknown'] as const;
export type CostSource = (typeof COST_SOURCES)[number];

/** Goal types whose successful runs must carry a reflection (seed 000, "Reflection"). */
export const REFLECTION_REQUIRED_TYPES = ['build', 'fix', 'evaluate', 'tend'] as const;

const nonNegative = () =>
  z.number({ error: (iss) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_COST_FIELD') }).min(0, { error: 'INVALID_COST_FIELD' });

/**
 * Cost of a run. `usd` is US dollars; token counts are whole tokens.
 * `source` is required; with `unknown` the amounts are absent.
 */
export const CostSchema = lazySchema(() =>
  z.looseObject({
    source: codedEnum(COST_SOURCES, 'INVALID_COST_SOURCE'),
    usd: nonNegative().optional(),
    input_tokens: nonNegative().optional(),
    output_tokens: nonNegative().optional(),
    cached_input_tokens: nonNegative().optional(),
    cache_creation_input_tokens: nonNegative().optional(),
    reasoning_output_tokens: nonNegative().optional(),
    pricing: z.string().optional(),
    /** True when a part of the run (e.g. the reflection turn) reported no cost: `usd` is then a lower bound. */
    partial: z.boolean().optional(),
  }),
);
export type Cost = z.infer<typeof CostSchema>;

/** Files dirty before the run began (seed 000, "Run directory"). */
export const WorktreeBaselineSchema = lazySchema(() =>
  z.looseObject({
    tracked_dirty_paths: z.array(z.string()),
    untracked_dirty_count: z.number().int().min(0),
    untracked_dirty_roots: z.array(z.string()),
  }),
);
export type WorktreeBaseline = z.infer<typeof WorktreeBaselineSchema>;

/**
 * A background task of a run (claude `system`/`task_started` …
 * `task_notification`; a command agent's `task` lines): its id, type
 * (`local_agent`, `local_bash`, …), description, final status (`completed`,
 * `failed`, `stopped`, or `running`: never ended before the agent's process
 * did), and `unfinished` when it counts against the run: it never ended, or
 * it ended other than `completed` and the agent took no turn after it.
 */
export const BackgroundTaskSchema = lazySchema(() =>
  z.looseObject({ id: z.string(), type: z.string(), description: z.string(), status: z.string(), unfinished: z.boolean().optional() }),
);
export type BackgroundTask = z.infer<typeof BackgroundTaskSchema>;

/** `runner` of a remote run: who holds it (`name`, `host` as the runner says) and the lease id (a ULID). */
export const RunRunnerSchema = lazySchema(() => z.looseObject({ name: z.string().min(1), host: z.string().min(1), lease: z.string().min(1) }));
export type RunRunner = z.infer<typeof RunRunnerSchema>;

/**
 * How an acceptance criterion came out (docs/goal/level2.md, "Acceptance
 * criteria"): `verified` (its verify command exited 0: `verified: true`),
 * `failed` (the command ran and did not: exit code, timeout or could not
 * start), `unverified` (nothing proved it either way: no verify command, or
 * the run ended before its criteria were checked; the evidence says why).
 */
export const ACCEPTANCE_RESULTS = ['verified', 'failed', 'unverified'] as const;
export type AcceptanceResult = (typeof ACCEPTANCE_RESULTS)[number];

/**
 * The run record, `<runtime-root>/runs/<run-id>/meta.json` (seed 000).
 * Unknown fields are kept (readers ignore them). pak2 adds the optional
 * `reasoning_effort`, `session_id` (the agent's continuity id), `exit_code`,
 * `outputs.final_text` and `outputs.error` (why it failed, in words).
 */
export const RunSchema = lazySchema(() =>
  z.looseObject({
    id: codedString(RUN_ID_PATTERN, 'INVALID_ID_FORMAT'),
    goal: codedString(GOAL_ID_PATTERN, 'INVALID_GOAL_FORMAT'),
    plant: codedString(PLANT_NAME_PATTERN, 'INVALID_PLANT_NAME'),
    status: codedEnum(RUN_STATUSES, 'INVALID_STATUS'),
    started_at: timestamp(),
    driver: requiredString(),
    model: requiredString(),
    reasoning_effort: z.string().optional(),
    completed_at: timestamp().optional(),
    cost: CostSchema.optional(),
    failure_reason: codedEnum(FAILURE_REASONS, 'INVALID_FAILURE_REASON').optional(),
    reflection: z.string().optional(),
    outputs: z.looseObject({ final_text: z.string().optional(), error: z.string().optional() }).optional(),
    num_turns: z.number().int().min(0).optional(),
    session_id: z.string().optional(),
    exit_code: z.number().int().nullable().optional(),
    worktree_baseline: WorktreeBaselineSchema.optional(),
    /**
     * Set at close when meta.json on disk no longer matched the record pak2
     * wrote (an agent or a tool rewrote or damaged it): when pak2 saw it and
     * which top-level fields differed. The close still writes pak2's record.
     */
    record_tampering: z.looseObject({ detected_at: timestamp(), fields: z.array(z.string()) }).optional(),
    /** The watchdog's kill: the limit that applied, the last stream event seen, and the tool calls and background tasks open then. */
    watchdog: z
      .looseObject({ limit: z.string(), limit_seconds: z.number().min(0), silent_seconds: z.number().min(0), last_event: z.string(), open_work: z.array(z.string()).optional() })
      .optional(),
    /** Set when the agent reported its result but did not exit, so pak2 ended it (`linger` says when). */
    lingered: z.boolean().optional(),
    /** How a lingering agent was ended: after the grace with no work open (`grace`), or at the cap (`cap`, with what was still open). */
    linger: z.looseObject({ ended_by: z.enum(['grace', 'cap']), open_work: z.array(z.string()).optional() }).optional(),
    /** The background tasks the agent started in its main turn, each with its final status (docs/run/level2.md, "When a run has ended"). */
    background_tasks: z.array(BackgroundTaskSchema).optional(),
    /** The agent's own words on how its last turn stopped, as claude writes them in its `result` (`end_turn`, `tool_use`, …; `completed`, `max_turns`, …). */
    stop_reason: z.string().optional(),
    terminal_reason: z.string().optional(),
    /** Processes of the run that the sweep could not end: `pid command` each. */
    leftovers: z.array(z.string()).optional(),
    /** An operator stop (`pak2 stop`): whether the goal was to go back to the queue rather than close cancelled. */
    operator_stop: z.looseObject({ requeue: z.boolean() }).optional(),
    /** Tool calls the agent made that were refused (claude `permission_denials`): the tool and the path it touched, if any. */
    permission_denials: z.array(z.looseObject({ tool: z.string(), path: z.string().optional() })).optional(),
    /** A remote run (seed 004): the runner that holds it and its lease id. Its liveness is the lease, not a local process. */
    runner: RunRunnerSchema.optional(),
    /** Where the run worked, when in its own git worktree (docs/landing/level2.md): the worktree's path, its branch, and the base branch and commit it started from. */
    worktree: z.looseObject({ path: z.string().min(1), branch: z.string().min(1), base_branch: z.string().min(1), base_commit: z.string().regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/) }).optional(),
    /** A budget stop (failure_reason `budget_exceeded`; docs/budget/level2.md): the cap crossed (`run`, `goal`, `plant_day`, `garden_day`, `garden_month`), its amount, and what had been spent against it then (USD). */
    budget: z.looseObject({ cap: z.string().min(1), cap_usd: z.number().min(0), spent_usd: z.number().min(0) }).optional(),
    /**
     * What was actually verified (seed 004, `runs_finish`): each item checked
     * or not, with the evidence seen. The goal's acceptance criteria carry
     * `criterion: true`, their `result` and their `verify` command; a
     * runner's own checks (the agent's exit, its result event, the
     * reflection) follow them on a remote run.
     */
    acceptance: z
      .array(
        z.looseObject({
          item: z.string().min(1),
          verified: z.boolean(),
          evidence: z.string().optional(),
          criterion: z.boolean().optional(),
          result: z.enum(ACCEPTANCE_RESULTS).optional(),
          verify: z.string().optional(),
        }),
      )
      .optional(),
  }),
);
export type RunRecord = z.infer<typeof RunSchema>;
/** One item of a run's `acceptance`. */
export type AcceptanceItemRecord = NonNullable<RunRecord['acceptance']>[number];

function has(data: Record<string, unknown>, key: string): boolean {
  return data[key] !== undefined && data[key] !== null;
}

/**
 * Validates a run record (seed 000, `validate_run`). Called at run start and
 * at close. Never throws. Besides the schema and the conditional fields, a
 * well-formed `id` must be its well-formed `goal` plus `-rN` (seed 000, "Run
 * ID format"): `5-other-r1` is not a run of goal `4-thing`.
 *
 * @returns every issue found, `[]` when valid. Codes: MISSING_REQUIRED_FIELD,
 *   INVALID_ID_FORMAT (also for an id of another goal), INVALID_GOAL_FORMAT, INVALID_PLANT_NAME, INVALID_STATUS,
 *   INVALID_TIMESTAMP, MISSING_COMPLETED_AT, MISSING_COST, INVALID_COST_SOURCE,
 *   INVALID_COST_FIELD, MISSING_FAILURE_REASON, INVALID_FAILURE_REASON,
 *   INVALID_SHAPE (plus INVALID_FIELD_TYPE for a value of the wrong JSON type).
 */
export function validateRun(data: unknown): ValidationIssue[] {
  const issues = collectIssues(RunSchema, data);
  if (issues.length === 1 && issues[0]?.code === 'INVALID_SHAPE') return issues;
  const record = data as Record<string, unknown>;
  const idGoal = typeof record.id === 'string' ? RUN_ID_PATTERN.exec(record.id)?.[1] : undefined;
  if (idGoal !== undefined && typeof record.goal === 'string' && GOAL_ID_PATTERN.test(record.goal) && idGoal !== record.goal) {
    issues.push({ code: 'INVALID_ID_FORMAT', field: 'id', message: `id ${record.id} does not belong to goal ${record.goal} (expected ${record.goal}-rN)` });
  }
  const status = record.status;
  if (typeof status === 'string' && (TERMINAL_RUN_STATUSES as readonly string[]).includes(status)) {
    if (!has(record, 'completed_at')) issues.push(issue('MISSING_COMPLETED_AT', 'completed_at'));
    if (!has(record, 'cost')) issues.push(issue('MISSING_COST', 'cost'));
  }
  if (typeof status === 'string' && (FAILED_RUN_STATUSES as readonly string[]).includes(status) && !has(record, 'failure_reason')) {
    issues.push(issue('MISSING_FAILURE_REASON', 'failure_reason'));
  }
  return issues;
}

/**
 * Validates a run at close (seed 000, `validate_run_close`): everything
 * {@link validateRun} checks, plus MISSING_REFLECTION when a `success` run of
 * a goal type in {@link REFLECTION_REQUIRED_TYPES} has no non-empty reflection.
 * Never throws.
 */
export function validateRunClose(run: unknown, goalType: string): ValidationIssue[] {
  const issues = validateRun(run);
  if (issues.some((i) => i.code === 'INVALID_SHAPE')) return issues;
  const record = run as Record<string, unknown>;
  const needsReflection = (REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goalType);
  if (record.status === 'success' && needsReflection) {
    const reflection = record.reflection;
    if (typeof reflection !== 'string' || reflection.trim() === '') issues.push(issue('MISSING_REFLECTION', 'reflection'));
  }
  return issues;
}

/** True for the six terminal statuses. */
export function isTerminalRunStatus(status: string): boolean {
  return (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);
}
