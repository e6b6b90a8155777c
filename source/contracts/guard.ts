import { z } from 'zod';
import { collectIssues, type ValidationIssue, lazySchema} from './common.js';

/**
 * Guarded runs (seed 001): the guard a goal carries, and the two records a
 * guarded run writes beside meta.json, `execution_envelope.json` and
 * `task_outcome.json`. docs/guarded-runs/level2.md maps every field.
 */

/** The outcome and envelope schema version pak2 writes (seed 001). */
export const GUARD_SCHEMA_VERSION = '1.0';

/** A task class name: it names a `[routing.<task_class>]` table. */
export const TASK_CLASS_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** An environment variable name that may be passed through to a guarded run. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The longest scope glob, characters. */
export const MAX_GLOB_LENGTH = 4096;

const glob = () => z.string().min(1).max(MAX_GLOB_LENGTH);

/**
 * `guard` on a goal record: what the run must prove. Every field is
 * optional; `[guard]` in PAK2.toml fills what the goal leaves out. Times are
 * whole seconds (`timeout_seconds` is the verify command's limit).
 */
export const GoalGuardSchema = lazySchema(() =>
  z.strictObject({
    /** A shell command (`sh -c`) run in the garden root after the agent; exit 0 passes. */
    verify: z.string().min(1).max(65_536).optional(),
    /** Globs (picomatch, relative to the garden root) the agent may change; empty or absent: any path not forbidden. */
    allowed_files: z.array(glob()).max(1000).optional(),
    /** Globs the agent must not change; a change is a scope violation and is rolled back. */
    forbidden_paths: z.array(glob()).max(1000).optional(),
    /** The verify command's limit, seconds. */
    timeout_seconds: z.number().int().min(1).max(2_147_483).optional(),
    /** Environment variable names passed through to the agent and to verify (and redacted in every artifact). */
    env_passthrough: z.array(z.string().regex(ENV_NAME_PATTERN)).max(200).optional(),
    /** The contract this goal's run answers to, when an outside system issued one. */
    contract_id: z.string().min(1).max(200).optional(),
    /** Redaction of artifacts (default true); `pak2 submit --no-redact` sets false. */
    redact: z.boolean().optional(),
  }),
);
export type GoalGuard = z.infer<typeof GoalGuardSchema>;

/** `task_outcome.json` `state` (seed 001). */
export const OUTCOME_STATES = ['ready', 'degraded', 'blocked'] as const;
export type OutcomeState = (typeof OUTCOME_STATES)[number];
/** `task_outcome.json` `status` (seed 001). */
export const OUTCOME_STATUSES = ['success', 'failed', 'blocked'] as const;
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/**
 * `diagnostic_code` values pak2 writes: `ready` (kept), `verify_failed`,
 * `verify_timeout`, `scope_violation`, `executor_failed` (the agent's run
 * itself failed: see meta.json's failure_reason), `executor_timeout`,
 * `executor_killed` (watchdog, operator or shutdown), `launch_failed`,
 * `verify_unavailable` (the verify command could not start: exit 126/127),
 * `baseline_failed` (git could not describe the tree before the run).
 */
export const DIAGNOSTIC_CODES = [
  'ready',
  'verify_failed',
  'verify_timeout',
  'scope_violation',
  'executor_failed',
  'executor_timeout',
  'executor_killed',
  'launch_failed',
  'verify_unavailable',
  'baseline_failed',
] as const;
export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[number];

/** Routing stop reasons (seed 001). */
export const ROUTING_STOP_REASONS = ['kept', 'non_retryable', 'max_escalations', 'last_tier', 'budget', 'blocked_after_escalation'] as const;
export type RoutingStopReason = (typeof ROUTING_STOP_REASONS)[number];

/** Scope violation kinds: a forbidden path changed, or a path outside `allowed_files`. */
export const VIOLATION_KINDS = ['forbidden_path', 'outside_allowed'] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

/** Phase names of `phase_events.jsonl`, in order (seed 001). */
export const GUARD_PHASES = ['baseline', 'executor_start', 'executor_done', 'scope_check', 'verify', 'decision', 'rollback'] as const;
export type GuardPhase = (typeof GUARD_PHASES)[number];

const nullableString = z.string().nullable();

/** One line of `phase_events.jsonl`: `ts` ISO UTC, `outcome` a short word (ok, failed, skipped, violations, kept, rejected…), `detail` free text. */
export const PhaseEventSchema = lazySchema(() =>
  z.looseObject({
    ts: z.string(),
    run_id: z.string(),
    phase: z.enum(GUARD_PHASES),
    outcome: z.string(),
    duration_ms: z.number().nonnegative().optional(),
    detail: z.string().optional(),
  }),
);
export type PhaseEvent = z.infer<typeof PhaseEventSchema>;

/** One attempt in the envelope's `routing.attempts` (seed 001). `cost_usd` in USD, null when unknown. */
export const RoutingAttemptSchema = lazySchema(() =>
  z.looseObject({
    run_id: z.string(),
    tier_index: z.number().int().nonnegative(),
    executor: z.string(),
    model: z.string(),
    diagnostic_code: z.string(),
    cost_usd: z.number().nonnegative().nullable(),
  }),
);
export type RoutingAttempt = z.infer<typeof RoutingAttemptSchema>;

/**
 * The envelope's `routing` (seed 001): present only for a goal with a
 * task_class. `stop_reason` is absent on an attempt that escalated (the
 * next attempt's envelope carries the chain on).
 */
export const RoutingSchema = lazySchema(() =>
  z.looseObject({
    task_class: z.string(),
    tier_index: z.number().int().nonnegative(),
    escalations: z.number().int().nonnegative(),
    stop_reason: z.enum(ROUTING_STOP_REASONS).optional(),
    attempts: z.array(RoutingAttemptSchema),
  }),
);
export type Routing = z.infer<typeof RoutingSchema>;

/** `execution_envelope.json` (seed 001): how the run was set up. Unknown fields are kept. */
export const ExecutionEnvelopeSchema = lazySchema(() =>
  z.looseObject({
    schema_version: z.string(),
    run_id: z.string(),
    guarded: z.boolean(),
    contract_id: nullableString,
    executor: z.looseObject({
      name: z.string(),
      kind: z.string().optional(),
      version: nullableString,
      sandbox: z.boolean(),
      model: nullableString,
    }),
    env_passthrough: z.array(z.string()),
    timeout_seconds: z.number().int().nonnegative(),
    baseline: z.looseObject({ head: nullableString, branch: nullableString }),
    executor_exit_code: z.number().int().nullable(),
    routing: RoutingSchema.optional(),
  }),
);
export type ExecutionEnvelope = z.infer<typeof ExecutionEnvelopeSchema>;

/** A scope violation (seed 001): `kind`, `path` (relative to the garden root) and a sentence. */
export const ScopeViolationSchema = lazySchema(() =>
  z.looseObject({ kind: z.enum(VIOLATION_KINDS), path: z.string(), detail: z.string() }),
);
export type ScopeViolation = z.infer<typeof ScopeViolationSchema>;

/** `task_outcome.json` (seed 001): what happened. Readers ignore unknown fields; routing is never here. */
export const TaskOutcomeSchema = lazySchema(() =>
  z.looseObject({
    schema_version: z.string(),
    guarded: z.boolean(),
    run_id: z.string().optional(),
    state: z.enum(OUTCOME_STATES),
    status: z.enum(OUTCOME_STATUSES),
    diagnostic_code: z.string(),
    next_command: nullableString,
    verify_ok: z.boolean().nullable(),
    verify_exit_code: z.number().int().nullable(),
    verify_stdout: z.string(),
    verify_stderr: z.string(),
    failed_command: nullableString,
    verifier_was_skipped: z.boolean(),
    mutated_files: z.array(z.string()),
    attempted_mutations: z.array(z.string()),
    accepted_mutations: z.array(z.string()),
    blocked_mutations: z.array(z.string()),
    unexpected_mutations: z.array(z.string()),
    rollback_performed: z.boolean(),
    rollback_stdout: z.string(),
    rollback_stderr: z.string(),
    contract_id: nullableString,
    acceptance_state: z.string(),
    allowed_files: z.array(z.string()),
    forbidden_paths: z.array(z.string()),
    executor: z.looseObject({
      name: z.string(),
      version: nullableString,
      exit_code: z.number().int().nullable(),
      timed_out: z.boolean(),
      duration_seconds: z.number().nonnegative(),
      sandbox: z.boolean(),
      self_status: nullableString,
      cost_usd: z.number().nonnegative().nullable(),
      turns: z.number().int().nonnegative().nullable(),
    }),
    wall_time_seconds: z.number().nonnegative(),
    scope_violations: z.array(ScopeViolationSchema),
  }),
);
export type TaskOutcome = z.infer<typeof TaskOutcomeSchema>;

/** The acceptance state of a run without a contract (seed 001). */
export const RAW_RUN_ACCEPTANCE = 'raw_run_not_contract_accepted';

/**
 * Why a glob cannot be a scope glob, or undefined when it can: globs are
 * matched against paths relative to the garden root, so an empty glob, an
 * absolute path and a `..` segment (outside the garden) are refused. A
 * leading `!` (picomatch negation) is allowed.
 */
export function globProblem(glob: string): string | undefined {
  if (!glob.trim()) return 'an empty glob';
  if (/[\0\r\n]/.test(glob)) return 'a glob is one line, without control characters';
  if (glob.length > MAX_GLOB_LENGTH) return `longer than ${MAX_GLOB_LENGTH} characters`;
  const body = glob.replace(/^!+/, '');
  if (/^[/\\~]/.test(body) || /^[A-Za-z]:/.test(body)) return 'an absolute path; globs are relative to the garden root';
  if (body.split(/[/\\]/).includes('..')) return "a '..' segment reaches outside the garden root";
  return undefined;
}

/** Validates a goal's `guard` value. Never throws; codes INVALID_FIELD_TYPE / INVALID_SHAPE, `field` under `guard.`. */
export function validateGoalGuard(data: unknown): ValidationIssue[] {
  return collectIssues(GoalGuardSchema, data).map((i) => ({ ...i, field: i.field ? `guard.${i.field}` : 'guard' }));
}

/** Validates `execution_envelope.json`. Never throws; `[]` when valid. */
export function validateExecutionEnvelope(data: unknown): ValidationIssue[] {
  return collectIssues(ExecutionEnvelopeSchema, data);
}

/** Validates `task_outcome.json`. Never throws; `[]` when valid. */
export function validateTaskOutcome(data: unknown): ValidationIssue[] {
  return collectIssues(TaskOutcomeSchema, data);
}
