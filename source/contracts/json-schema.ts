import { z } from 'zod';
import { ActiveThreadsSchema } from './active-threads.js';
import { BudgetOverridesSchema, BudgetWarnedSchema } from './budget.js';
import { AttentionItemSchema, AttentionRecordSchema } from './attention.js';
import { ConfigSchema } from './config.js';
import { DashboardInvocationSchema } from './dashboard-invocation.js';
import { EventSchema } from './event.js';
import { GoalSchema } from './goal.js';
import { LandingSchema } from './landing.js';
import { ExecutionEnvelopeSchema, PhaseEventSchema, TaskOutcomeSchema } from './guard.js';
import { RuntimeHistoryRecordSchema } from './history.js';
import { OperatorMessageSchema } from './operator-message.js';
import { PlantSchema } from './plant.js';
import { FAILED_RUN_STATUSES, RunSchema, TERMINAL_RUN_STATUSES } from './run.js';
import { ArtifactSchema, CommentSchema, LeaseSchema } from './runner.js';
import { SchedulesStateSchema } from './schedule.js';
import { TendStateSchema } from './tend.js';

/**
 * The run record's conditionally required fields (seed 000, "Conditionally
 * required fields"), as JSON Schema `if`/`then` rules: a terminal status
 * requires `completed_at` and `cost`; failure, killed, timeout and
 * zero_output also require `failure_reason`. zod cannot express these, so
 * {@link renderSchemas} adds them to run.schema.json; validateRun checks
 * the same rules (MISSING_COMPLETED_AT, MISSING_COST, MISSING_FAILURE_REASON).
 */
export const RUN_CONDITIONAL_RULES = [
  {
    if: { properties: { status: { enum: [...TERMINAL_RUN_STATUSES] } }, required: ['status'] },
    then: { required: ['completed_at', 'cost'] },
  },
  {
    if: { properties: { status: { enum: [...FAILED_RUN_STATUSES] } }, required: ['status'] },
    then: { required: ['failure_reason'] },
  },
] as const;

/** The records that get a JSON Schema file in `schema/`, by file name. */
export const SCHEMA_FILES = {
  'run.schema.json': { schema: RunSchema, title: 'pak2 run record (runs/<run-id>/meta.json)', allOf: RUN_CONDITIONAL_RULES },
  'goal.schema.json': { schema: GoalSchema, title: 'pak2 goal record (goals/<goal-id>.json)' },
  'event.schema.json': { schema: EventSchema, title: 'pak2 coordinator event (events/coordinator.jsonl line)' },
  'plant.schema.json': { schema: PlantSchema, title: 'pak2 plant record (plants/<name>/meta.json)' },
  'config.schema.json': { schema: ConfigSchema, title: 'pak2 garden configuration (PAK2.toml)' },
  'operator-message.schema.json': { schema: OperatorMessageSchema, title: 'pak2 operator message (runs/<run-id>/operator-messages.jsonl line)' },
  'runtime-history.schema.json': { schema: RuntimeHistoryRecordSchema, title: 'pak2 runtime provenance record (history/commits/<run-id>.json)' },
  'active-threads.schema.json': { schema: ActiveThreadsSchema, title: 'pak2 plant active threads (plants/<name>/memory/active-threads.json)' },
  'execution-envelope.schema.json': { schema: ExecutionEnvelopeSchema, title: 'pak2 guarded run envelope (runs/<run-id>/execution_envelope.json, seed 001)' },
  'task-outcome.schema.json': { schema: TaskOutcomeSchema, title: 'pak2 guarded run outcome (runs/<run-id>/task_outcome.json, seed 001)' },
  'phase-event.schema.json': { schema: PhaseEventSchema, title: 'pak2 guarded run phase (runs/<run-id>/phase_events.jsonl line, seed 001)' },
  'lease.schema.json': { schema: LeaseSchema, title: 'pak2 remote run lease (leases/<run-id>.json, seed 004)' },
  'comment.schema.json': { schema: CommentSchema, title: 'pak2 goal comment (comments/<goal-id>.jsonl line, seed 004)' },
  'artifact.schema.json': { schema: ArtifactSchema, title: 'pak2 run artifact (runs/<run-id>/artifacts.jsonl line, seed 004)' },
  'landing.schema.json': { schema: LandingSchema, title: 'pak2 landing record (landings/<run-id>.json)' },
  'budget.schema.json': { schema: BudgetOverridesSchema, title: 'pak2 budget caps set by the operator (budget.json)' },
  'budget-warned.schema.json': { schema: BudgetWarnedSchema, title: 'pak2 budget warnings already said (budget.warned.json)' },
  'schedules.schema.json': { schema: SchedulesStateSchema, title: 'pak2 schedule state (schedules.json)' },
  'attention.schema.json': { schema: AttentionRecordSchema, title: 'pak2 acknowledged attention items (attention.json)' },
  'tend.schema.json': { schema: TendStateSchema, title: 'pak2 automatic tends paused or not (tend.json)' },
  'dashboard-invocation.schema.json': { schema: DashboardInvocationSchema, title: 'pak2 dashboard invocation cost record (dashboard/invocations/<id>.json, seed 002)' },
  'attention-item.schema.json': { schema: AttentionItemSchema, title: 'pak2 attention item (pak2 attention --json, GET /attention, [notify] command stdin)' },
} as const;

/**
 * Renders every record's JSON Schema (draft 2020-12) from its zod schema, as
 * the exact text written to `schema/`. A record's conditional rules that zod
 * cannot express are added as a top-level `allOf` of `if`/`then` (the run's
 * {@link RUN_CONDITIONAL_RULES}); other cross-field rules (a goal's
 * closed_reason, a run id belonging to its goal, a run's reflection) live in
 * the validators only.
 */
export function renderSchemas(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [file, entry] of Object.entries(SCHEMA_FILES)) {
    const json = z.toJSONSchema(entry.schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
    const allOf = 'allOf' in entry ? { allOf: entry.allOf } : {};
    out[file] = `${JSON.stringify({ $id: `urn:pak2:schema:${file}`, title: entry.title, ...json, ...allOf }, null, 2)}\n`;
  }
  return out;
}
