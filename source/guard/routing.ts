import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateExecutionEnvelope, type ExecutionEnvelope, type GoalRecord, type RoutingAttempt, type RoutingStopReason } from '../contracts/index.js';
import { runDir, type GardenConfig, type GardenPaths } from '../garden/index.js';
import { runIdsForGoal } from '../store/index.js';
import { GUARD_RECORD_FILES } from './read.js';

/** One tier of `[routing.<task_class>]`. */
export interface RoutingTier {
  driver: string;
  model?: string;
  effort?: string;
}

/**
 * Where a goal with a task_class stands in its routing (seed 001, routing):
 * the tier this attempt runs on, the attempts before it (from the previous
 * attempt's envelope), and whether the goal pins its model (then it runs on
 * its own settings and is never escalated).
 */
export interface RoutePlan {
  taskClass: string;
  tierIndex: number;
  tier: RoutingTier;
  attempts: RoutingAttempt[];
  escalations: number;
  pinned: boolean;
  tiers: RoutingTier[];
  maxEscalations: number;
  budgetUsd?: number;
}

/** Reads a run's envelope; undefined when absent or invalid. */
export async function readEnvelope(paths: GardenPaths, runId: string): Promise<ExecutionEnvelope | undefined> {
  try {
    const data: unknown = JSON.parse(await fsp.readFile(path.join(runDir(paths, runId), GUARD_RECORD_FILES.envelope), 'utf8'));
    return validateExecutionEnvelope(data).length === 0 ? (data as ExecutionEnvelope) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The routing plan of the goal's next attempt, or undefined when the goal
 * has no task_class or PAK2.toml has no `[routing.<task_class>]`. The tier
 * is the previous attempt's `next_tier_index` (an escalation, or the same
 * tier again after an interrupted attempt), else 0.
 */
export async function planRoute(paths: GardenPaths, config: GardenConfig, goal: GoalRecord): Promise<RoutePlan | undefined> {
  if (!goal.task_class) return undefined;
  const table = config.routing[goal.task_class];
  if (!table) return undefined;
  let attempts: RoutingAttempt[] = [];
  let tierIndex = 0;
  let escalations = 0;
  const ids = await runIdsForGoal(paths, goal.id);
  for (const id of ids.reverse()) {
    const envelope = await readEnvelope(paths, id);
    const routing = envelope?.routing as (ExecutionEnvelope['routing'] & { next_tier_index?: number }) | undefined;
    if (!routing) continue;
    attempts = routing.attempts;
    escalations = routing.escalations;
    if (typeof routing.next_tier_index === 'number') {
      if (routing.next_tier_index > routing.tier_index) escalations += 1;
      tierIndex = routing.next_tier_index;
    } else tierIndex = routing.tier_index;
    break;
  }
  tierIndex = Math.min(tierIndex, table.tiers.length - 1);
  return {
    taskClass: goal.task_class,
    tierIndex,
    tier: table.tiers[tierIndex]!,
    attempts,
    escalations,
    pinned: Boolean(goal.model),
    tiers: table.tiers,
    maxEscalations: table.maxEscalations,
    ...(table.budgetUsd !== undefined ? { budgetUsd: table.budgetUsd } : {}),
  };
}

/**
 * The goal as its attempt runs it (seed 001, routing): the plan's tier's
 * driver, model and effort over the goal's, unless the goal pins its model
 * (then it runs on its own settings). Without a plan, the goal itself.
 */
export function routedGoal(goal: GoalRecord, plan: RoutePlan | undefined): GoalRecord {
  if (!plan || plan.pinned) return goal;
  return { ...goal, driver: plan.tier.driver, ...(plan.tier.model ? { model: plan.tier.model } : {}), ...(plan.tier.effort ? { reasoning_effort: plan.tier.effort } : {}) };
}

/**
 * The event an attempt's routing writes (RoutingStopped with the stop
 * reason, or RoutingEscalated with the tier it goes on at), from the
 * envelope's `routing` and the attempt's diagnostic code.
 */
export function routingEventOf(routing: { task_class: string; tier_index: number; stop_reason?: string; next_tier_index?: number; attempts: readonly unknown[] }, diagnostic: string): { type: 'RoutingStopped' | 'RoutingEscalated'; detail: string } {
  if (routing.stop_reason !== undefined || typeof routing.next_tier_index !== 'number') {
    return { type: 'RoutingStopped', detail: `${routing.task_class}: ${routing.stop_reason ?? 'stopped'} after ${routing.attempts.length} attempt(s)` };
  }
  const next = routing.next_tier_index;
  return { type: 'RoutingEscalated', detail: `${routing.task_class}: ${next > routing.tier_index ? `escalating to tier ${next}` : `running tier ${next} again`} after ${diagnostic}` };
}

/** Diagnostics a stronger tier may fix: the work was done but did not prove itself. */
export const RETRYABLE_DIAGNOSTICS = ['verify_failed', 'verify_timeout'] as const;

/** What the routing does after an attempt: stop (with the seed's reason) or go on at `nextTierIndex`. */
export type RouteStep = { stop: RoutingStopReason } | { nextTierIndex: number; why: 'escalate' | 'retry' };

/**
 * Decides the routing step after an attempt (seed 001 stop reasons):
 * `kept` when the work was kept; an interrupted attempt (coordinator
 * shutdown, operator stop with requeue) runs the same tier again; a
 * retryable diagnostic escalates unless the model is pinned
 * (`non_retryable`), there is no next tier (`last_tier`), the escalations
 * are used up (`max_escalations`) or the attempts' cost reached the budget
 * (`budget`, USD; an attempt that never reached the model counts 0); a
 * blocked attempt after an escalation is `blocked_after_escalation`; any
 * other failure is `non_retryable`.
 */
export function decideRouteStep(plan: RoutePlan, attempt: { state: 'ready' | 'degraded' | 'blocked'; diagnostic: string; interrupted: boolean }, attempts: RoutingAttempt[]): RouteStep {
  if (attempt.state === 'ready') return { stop: 'kept' };
  if (attempt.interrupted) return { nextTierIndex: plan.tierIndex, why: 'retry' };
  if (attempt.state === 'blocked') return { stop: plan.escalations > 0 ? 'blocked_after_escalation' : 'non_retryable' };
  if (!(RETRYABLE_DIAGNOSTICS as readonly string[]).includes(attempt.diagnostic) || plan.pinned) return { stop: 'non_retryable' };
  if (plan.tierIndex + 1 >= plan.tiers.length) return { stop: 'last_tier' };
  if (plan.escalations >= plan.maxEscalations) return { stop: 'max_escalations' };
  const spent = attempts.reduce((sum, a) => sum + (a.cost_usd ?? 0), 0);
  if (plan.budgetUsd !== undefined && spent >= plan.budgetUsd) return { stop: 'budget' };
  return { nextTierIndex: plan.tierIndex + 1, why: 'escalate' };
}

/** True when a closed attempt's envelope says the goal goes on (escalation or retry) rather than closing. */
export async function routingContinues(paths: GardenPaths, runId: string): Promise<boolean> {
  const routing = (await readEnvelope(paths, runId))?.routing as { stop_reason?: string; next_tier_index?: number } | undefined;
  return Boolean(routing && routing.stop_reason === undefined && typeof routing.next_tier_index === 'number');
}
