import type { GoalType } from './goal.js';

/**
 * The structured payloads some goal records carry beside their body
 * (docs/automatic-tend/level2.md, docs/plant/level2.md): a tend goal's
 * `tend` (trigger, duplicate key, origin) and a commissioning goal's
 * `commission` (target plant, seed, purpose, first goal). Readers here never
 * throw: malformed metadata reads as absent.
 */

/** The automatic tend triggers (docs/automatic-tend/level2.md). */
export const TEND_TRIGGERS = ['run_failure', 'queued_attention_needed'] as const;
export type AutomaticTendTrigger = (typeof TEND_TRIGGERS)[number];
/** The trigger of genesis's first survey (seed 002, "Startup contract": genesis queues the first gardener goal); never automatic. */
export const GENESIS_TEND_TRIGGER = 'genesis' as const;
/** Every trigger a tend goal's `tend` metadata may carry: the automatic ones and genesis's. */
export const ALL_TEND_TRIGGERS = [...TEND_TRIGGERS, GENESIS_TEND_TRIGGER] as const;
export type TendTrigger = AutomaticTendTrigger | typeof GENESIS_TEND_TRIGGER;

/** Where the trigger came from; recorded in the tend goal's `tend.origin`. */
export interface TendOrigin {
  goal?: string;
  run?: string;
  status?: string;
  failure_reason?: string;
  error?: string;
  /** queued_attention_needed: the queued goals that cannot dispatch, each with why. */
  goals?: { goal: string; reason: string }[];
}

/** The `tend` field of a tend goal record. */
export interface TendMetadata {
  trigger: TendTrigger;
  /** Duplicate-guard key: `run_failure:<goal id>`, `queued_attention_needed`, or `genesis`. */
  key: string;
  origin: TendOrigin;
}

/** The `tend` metadata of a goal record, when it has a well-formed one. */
export function tendMetadataOf(goal: object): TendMetadata | undefined {
  const tend = (goal as { tend?: unknown }).tend;
  if (!tend || typeof tend !== 'object') return undefined;
  const t = tend as Partial<TendMetadata>;
  if (typeof t.trigger !== 'string' || typeof t.key !== 'string') return undefined;
  return { trigger: t.trigger as TendTrigger, key: t.key, origin: (t.origin && typeof t.origin === 'object' ? t.origin : {}) as TendOrigin };
}

/** The goal type of a commissioning goal. */
export const COMMISSION_GOAL_TYPE = 'commission' as const;
/** The bounded first goal the gardener queues for the new plant. */
export interface CommissionFirstGoal {
  type: GoalType;
  body: string;
}

/** The `commission` field of a commissioning goal record. */
export interface CommissionMetadata {
  plant: string;
  seed: string;
  purpose: string;
  first_goal: CommissionFirstGoal;
}

/** Reads a goal's `commission` metadata, or undefined when it is missing or malformed. */
export function commissionMetadataOf(goal: object): CommissionMetadata | undefined {
  const c = (goal as { commission?: unknown }).commission;
  if (!c || typeof c !== 'object') return undefined;
  const m = c as Partial<CommissionMetadata>;
  const first = m.first_goal as Partial<CommissionFirstGoal> | undefined;
  if (typeof m.plant !== 'string' || typeof m.seed !== 'string' || !first || typeof first.type !== 'string' || typeof first.body !== 'string') return undefined;
  return { plant: m.plant, seed: m.seed, purpose: typeof m.purpose === 'string' ? m.purpose : '', first_goal: { type: first.type as GoalType, body: first.body } };
}
