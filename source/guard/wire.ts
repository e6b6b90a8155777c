import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import { collectIssues, formatIssue, PhaseEventSchema, validateExecutionEnvelope, validateTaskOutcome, type GoalRecord, type RoutingAttempt } from '../contracts/index.js';
import { runDir, type GardenConfig, type GardenPaths } from '../garden/index.js';
import { writeJsonAtomic } from '../store/index.js';
import { GUARD_RECORD_FILES } from './read.js';
import { planRoute, type RoutePlan, type RoutingTier } from './routing.js';
import { effectiveGuard, isGuarded, type EffectiveGuard } from './run-guard.js';

/**
 * A guarded goal's guard as a runner's claim carries it
 * (docs/runners/level2.md, "Guarded and routed goals"): the guard the
 * garden decided (the goal's over the garden's `[guard]`) and, for a goal
 * with a task_class, the routing plan of this attempt. Snake case on the
 * wire; times in seconds, USD for the budget.
 */
export interface GuardContext {
  verify: string | null;
  allowed_files: string[];
  forbidden_paths: string[];
  timeout_seconds: number;
  env_passthrough: string[];
  contract_id: string | null;
  redact: boolean;
  routing: {
    task_class: string;
    tier_index: number;
    tier: RoutingTier;
    attempts: RoutingAttempt[];
    escalations: number;
    pinned: boolean;
    tiers: RoutingTier[];
    max_escalations: number;
    budget_usd: number | null;
  } | null;
}

/** The guard context of a claim of `goal`, or undefined for a goal that is not guarded. `plan` is the attempt's routing plan (planRoute). */
export function guardContextOf(goal: GoalRecord, config: GardenConfig, plan: RoutePlan | undefined): GuardContext | undefined {
  if (!isGuarded(goal)) return undefined;
  const g = effectiveGuard(goal, config);
  return {
    verify: g.verify ?? null,
    allowed_files: g.allowedFiles,
    forbidden_paths: g.forbiddenPaths,
    timeout_seconds: g.timeoutSeconds,
    env_passthrough: g.envPassthrough,
    contract_id: g.contractId ?? null,
    redact: g.redact,
    routing: plan
      ? {
          task_class: plan.taskClass,
          tier_index: plan.tierIndex,
          tier: plan.tier,
          attempts: plan.attempts,
          escalations: plan.escalations,
          pinned: plan.pinned,
          tiers: plan.tiers,
          max_escalations: plan.maxEscalations,
          budget_usd: plan.budgetUsd ?? null,
        }
      : null,
  };
}

/** The plan of a goal's next attempt as a claim carries it: planRoute over the garden's runs (undefined without a task_class or its table). */
export function claimRoutePlan(paths: GardenPaths, config: GardenConfig, goal: GoalRecord): Promise<RoutePlan | undefined> {
  return goal.task_class ? planRoute(paths, config, goal) : Promise.resolve(undefined);
}

/** The guard and plan a runner runs under, from its claim's guard context. */
export function guardFromContext(context: GuardContext): { guard: EffectiveGuard; plan?: RoutePlan } {
  const guard: EffectiveGuard = {
    ...(context.verify ? { verify: context.verify } : {}),
    allowedFiles: context.allowed_files,
    forbiddenPaths: context.forbidden_paths,
    timeoutSeconds: context.timeout_seconds,
    envPassthrough: context.env_passthrough,
    ...(context.contract_id ? { contractId: context.contract_id } : {}),
    redact: context.redact,
  };
  const r = context.routing;
  if (!r) return { guard };
  return {
    guard,
    plan: {
      taskClass: r.task_class,
      tierIndex: r.tier_index,
      tier: r.tier,
      attempts: r.attempts,
      escalations: r.escalations,
      pinned: r.pinned,
      tiers: r.tiers,
      maxEscalations: r.max_escalations,
      ...(r.budget_usd !== null ? { budgetUsd: r.budget_usd } : {}),
    },
  };
}

/**
 * A guarded run's records as a runner's finish carries them to the garden
 * (docs/runners/level2.md, "Guarded and routed goals"): the envelope and
 * the outcome as JSON, the phase log's text, and the rejected patch and the
 * prompt bundle when the run wrote them. The garden writes them into its
 * run directory under seed 001's names ({@link GUARD_RECORD_FILES}).
 */
export interface GuardRecordsWire {
  envelope: unknown;
  outcome: unknown;
  phases: string;
  rejected_patch?: string | null;
  prompt_bundle?: string | null;
}

/** The wire field of each record, with its file name in the run directory. */
export const GUARD_WIRE_FILES = {
  phases: GUARD_RECORD_FILES.phases,
  rejected_patch: GUARD_RECORD_FILES.patch,
  prompt_bundle: GUARD_RECORD_FILES.promptBundle,
} as const;

/** The most bytes of the phase log, the patch or the prompt bundle a finish may carry, each (the artifact limit). */
export const MAX_GUARD_RECORD_BYTES = 10 * 1024 * 1024;

/**
 * What is wrong with a finish's guard records for run `runId`, first thing
 * found (a JSON pointer into the finish body, and one line), or undefined:
 * the envelope and the outcome must validate (seed 001's fields) and name
 * the run; each phase line must be a phase event of the run; the texts must
 * be strings within {@link MAX_GUARD_RECORD_BYTES}. Pure.
 */
export function guardRecordsProblem(runId: string, records: GuardRecordsWire): { field: string; message: string } | undefined {
  if (typeof records !== 'object' || records === null) return { field: '/guard', message: 'guard: an object {envelope, outcome, phases, rejected_patch?, prompt_bundle?}' };
  const envelopeIssue = validateExecutionEnvelope(records.envelope)[0];
  if (envelopeIssue) return { field: `/guard/envelope${envelopeIssue.field ? `/${envelopeIssue.field.replace(/\./g, '/')}` : ''}`, message: `guard.envelope: ${formatIssue(envelopeIssue)}` };
  if ((records.envelope as { run_id: string }).run_id !== runId) return { field: '/guard/envelope/run_id', message: `guard.envelope.run_id ${JSON.stringify((records.envelope as { run_id: string }).run_id)}: not run ${runId}` };
  const outcomeIssue = validateTaskOutcome(records.outcome)[0];
  if (outcomeIssue) return { field: `/guard/outcome${outcomeIssue.field ? `/${outcomeIssue.field.replace(/\./g, '/')}` : ''}`, message: `guard.outcome: ${formatIssue(outcomeIssue)}` };
  const outcomeRun = (records.outcome as { run_id?: string }).run_id;
  if (outcomeRun !== undefined && outcomeRun !== runId) return { field: '/guard/outcome/run_id', message: `guard.outcome.run_id ${JSON.stringify(outcomeRun)}: not run ${runId}` };
  for (const key of ['phases', 'rejected_patch', 'prompt_bundle'] as const) {
    const text = records[key];
    if (text === undefined || text === null) {
      if (key === 'phases') return { field: '/guard/phases', message: 'guard.phases: required, the text of phase_events.jsonl' };
      continue;
    }
    if (typeof text !== 'string') return { field: `/guard/${key}`, message: `guard.${key}: a string` };
    if (Buffer.byteLength(text, 'utf8') > MAX_GUARD_RECORD_BYTES) return { field: `/guard/${key}`, message: `guard.${key}: more than ${MAX_GUARD_RECORD_BYTES} bytes` };
  }
  const lines = records.phases.split('\n').filter((l) => l.trim() !== '');
  for (const [i, line] of lines.entries()) {
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      return { field: '/guard/phases', message: `guard.phases line ${i + 1}: not JSON` };
    }
    const issue = collectIssues(PhaseEventSchema, event)[0];
    if (issue) return { field: '/guard/phases', message: `guard.phases line ${i + 1}: ${formatIssue(issue)}` };
    if ((event as { run_id: string }).run_id !== runId) return { field: '/guard/phases', message: `guard.phases line ${i + 1}: run_id is not ${runId}` };
  }
  return undefined;
}

/**
 * Writes a checked finish's guard records into the garden's run directory
 * under seed 001's names (atomically, each; a patch or bundle the finish
 * does not carry is not written).
 */
export async function writeGuardRecords(paths: GardenPaths, runId: string, records: GuardRecordsWire): Promise<void> {
  const dir = runDir(paths, runId);
  await fsp.mkdir(dir, { recursive: true });
  await writeJsonAtomic(path.join(dir, GUARD_RECORD_FILES.envelope), records.envelope);
  await writeJsonAtomic(path.join(dir, GUARD_RECORD_FILES.outcome), records.outcome);
  for (const [key, name] of Object.entries(GUARD_WIRE_FILES) as [keyof typeof GUARD_WIRE_FILES, string][]) {
    const text = records[key];
    if (typeof text === 'string') await writeFileAtomic(path.join(dir, name), text);
  }
}
