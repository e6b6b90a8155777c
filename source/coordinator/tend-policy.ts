import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GoalRecord, RunRecord } from '../contracts/index.js';
import { runDir, type Garden, type GardenPaths } from '../garden/index.js';
import { createGoal, GARDEN_KEY, inStoreTransaction, readPlant, storeOf } from '../store/index.js';
import { TEND_TRIGGERS, tendMetadataOf, type TendMetadata, type TendOrigin, type TendTrigger } from '../contracts/index.js';

export { TEND_TRIGGERS, tendMetadataOf, type TendMetadata, type TendOrigin, type TendTrigger } from '../contracts/index.js';
export { renderTendContext } from '../driver/context-blocks.js';

/**
 * Automatic tend submission (seed 002, "The reconcile loop"; docs/automatic-tend/level2.md):
 * a pure decision ({@link decideTends}: what the pass saw in, tends to queue
 * out) and a small effect step ({@link queueTends}) the reconcile pass runs.
 */

/** The two automatic triggers. */
/** The plant automatic tends are assigned to; no active gardener, no automatic tend. */
export const TEND_PLANT = 'gardener';
/** Priority of an automatic tend: above ordinary work (50), below operator chat (80). */
export const TEND_PRIORITY = 70;
/** At most this many automatic tends are queued by one reconcile pass. */
export const MAX_TENDS_PER_PASS = 3;
/** Run statuses that trigger `run_failure` (a watchdog kill is `killed` with failure_reason `killed`). */
export const RUN_FAILURE_STATUSES = ['failure', 'zero_output', 'timeout'] as const;

/** A tend the policy decided to queue. */
export interface TendRequest extends TendMetadata {
  body: string;
}

/** A trigger that fired but queued no tend, with why. */
export interface WithheldTend {
  key: string;
  reason: 'duplicate_open_tend' | 'per_pass_limit' | 'gardener_unavailable';
  detail?: string;
}

/** A goal the pass closed, with its latest run. */
export interface ClosedGoalInput {
  goal: Pick<GoalRecord, 'id' | 'type'>;
  run: Pick<RunRecord, 'id' | 'status' | 'failure_reason' | 'outputs'>;
}

/** Everything {@link decideTends} looks at; no I/O behind it. */
export interface TendPolicyInput {
  /** Goals closed by this pass's close phase (phase 3), in closing order. */
  closed: ClosedGoalInput[];
  /** Queued non-tend goals this pass could not dispatch: rolled back, or without assigned_to. */
  stuck: { goal: string; reason: string }[];
  /** Open (not closed) goals, to find open tends and their keys. */
  open: { id: string; type: GoalRecord['type']; status: GoalRecord['status']; tend?: unknown }[];
  /** Stuck goal ids an earlier queued_attention_needed tend already covered. */
  attentionCovered: string[];
  /** Why the gardener cannot take a tend, or undefined when it is active. */
  gardenerProblem?: string;
  maxPerPass?: number;
}

/** What {@link decideTends} returns. */
export interface TendDecision {
  queue: TendRequest[];
  withheld: WithheldTend[];
  /** The new covered set for queued_attention_needed: ids still queued (or stuck) and covered, plus the newly covered. */
  attentionCovered: string[];
}


/** True when a closed run is a `run_failure` trigger: failure / zero_output / timeout, or a watchdog kill. */
export function isRunFailure(run: ClosedGoalInput['run']): boolean {
  if ((RUN_FAILURE_STATUSES as readonly string[]).includes(run.status)) return true;
  return run.status === 'killed' && run.failure_reason === 'killed';
}

function runFailureBody(origin: TendOrigin): string {
  return [
    `Automatic tend: run ${origin.run} of goal ${origin.goal} ended ${origin.status}${origin.failure_reason ? ` (${origin.failure_reason})` : ''}.`,
    'Look at the run directory (events.jsonl, stderr.log, prompt.md) and find out why it failed.',
    'If the cause is in the garden (configuration, a plant, a missing tool), fix it or leave the operator a note; do not re-run the failed goal yourself.',
  ].join(' ');
}

function attentionBody(goals: { goal: string; reason: string }[]): string {
  return [
    `Automatic tend: ${goals.length} queued goal${goals.length === 1 ? '' : 's'} cannot dispatch (${goals.map((g) => g.goal).join(', ')}).`,
    'Find out why (unassigned, a missing or archived plant, a driver that cannot launch) and fix the garden or leave the operator a note.',
    'Do not cancel or rewrite the goals yourself.',
  ].join(' ');
}

/**
 * The automatic tend policy, pure: which tends this pass queues.
 *
 * - `run_failure`: each closed non-tend goal whose run is a failure
 *   ({@link isRunFailure}); key `run_failure:<goal id>`. A cancelled goal has
 *   no run and never reaches here; `coordinator_stopped` requeues, never closes.
 * - `queued_attention_needed`: one tend for the set of stuck goals, only
 *   when some stuck goal is not yet covered by an earlier one; key `queued_attention_needed`.
 * - Never: for a tend goal; while an open tend with the same key exists;
 *   beyond `maxPerPass` per pass; when the gardener is not an active plant.
 */
export function decideTends(input: TendPolicyInput): TendDecision {
  const max = input.maxPerPass ?? MAX_TENDS_PER_PASS;
  const openKeys = new Set<string>();
  for (const goal of input.open) {
    if (goal.type !== 'tend' || goal.status === 'closed') continue;
    const meta = tendMetadataOf(goal);
    if (meta) openKeys.add(meta.key);
  }
  const candidates: TendRequest[] = [];
  for (const { goal, run } of input.closed) {
    if (goal.type === 'tend' || !isRunFailure(run)) continue;
    const origin: TendOrigin = {
      goal: goal.id,
      run: run.id,
      status: run.status,
      ...(run.failure_reason ? { failure_reason: run.failure_reason } : {}),
      ...(run.outputs?.error ? { error: run.outputs.error.slice(0, 500) } : {}),
    };
    candidates.push({ trigger: 'run_failure', key: `run_failure:${goal.id}`, origin, body: runFailureBody(origin) });
  }
  const stuckIds = input.stuck.map((s) => s.goal);
  const covered = new Set(input.attentionCovered);
  // A covered goal stays covered while it is still queued (a pass may only have
  // found no free slot for it); once it dispatched or closed it drops out.
  const stillQueued = new Set(input.open.filter((g) => g.status === 'queued').map((g) => g.id));
  let attentionCovered = input.attentionCovered.filter((id) => stillQueued.has(id) || stuckIds.includes(id));
  if (input.stuck.some((s) => !covered.has(s.goal))) {
    const origin: TendOrigin = { goals: input.stuck };
    candidates.push({ trigger: 'queued_attention_needed', key: 'queued_attention_needed', origin, body: attentionBody(input.stuck) });
  }

  const queue: TendRequest[] = [];
  const withheld: WithheldTend[] = [];
  for (const candidate of candidates) {
    if (openKeys.has(candidate.key)) withheld.push({ key: candidate.key, reason: 'duplicate_open_tend' });
    else if (input.gardenerProblem) withheld.push({ key: candidate.key, reason: 'gardener_unavailable', detail: input.gardenerProblem });
    else if (queue.length >= max) withheld.push({ key: candidate.key, reason: 'per_pass_limit', detail: `at most ${max} automatic tends per pass` });
    else {
      queue.push(candidate);
      openKeys.add(candidate.key);
      if (candidate.trigger === 'queued_attention_needed') attentionCovered = [...new Set([...attentionCovered, ...stuckIds])];
    }
  }
  return { queue, withheld, attentionCovered };
}

/** File holding the stuck goal ids the last queued_attention_needed tend covered. */
export function attentionStateFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'coordinator.tend-attention.json');
}

/** Reads the covered set; missing or unreadable reads as empty. */
export async function readAttentionCovered(paths: GardenPaths): Promise<string[]> {
  try {
    const store = storeOf(paths);
    const value = store ? await store.documentRecord('tend-attention', GARDEN_KEY) : (JSON.parse(await fsp.readFile(attentionStateFile(paths), 'utf8')) as unknown);
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

/** Why the gardener cannot take a tend, or undefined when it is an active plant. */
export async function gardenerProblem(paths: GardenPaths): Promise<string | undefined> {
  try {
    const plant = await readPlant(paths, TEND_PLANT);
    return plant.status === 'active' ? undefined : `plant ${TEND_PLANT} is ${plant.status}`;
  } catch (error) {
    return `no active ${TEND_PLANT}: ${(error as Error).message}`;
  }
}

/** What {@link submitTendGoal} takes. */
export interface TendGoalInput {
  trigger: TendTrigger;
  key: string;
  origin: TendOrigin;
  body?: string;
  /** Default {@link TEND_PRIORITY}; genesis's first survey queues at 60. */
  priority?: number;
  /** The slug's source; default `tend <trigger> <origin goal>`. */
  title?: string;
}

/** Queues one tend goal for the gardener, carrying its trigger metadata in `tend` (the one tend goal builder: automatic tends, submitTendGoal, genesis). */
export async function createTendGoal(garden: Garden, input: TendGoalInput, now: Date = new Date()): Promise<GoalRecord> {
  const body = input.body ?? `Automatic tend (${input.trigger}): look after the garden. Trigger key ${input.key}.`;
  return createGoal(
    garden.paths,
    {
      type: 'tend',
      plant: TEND_PLANT,
      body,
      priority: input.priority ?? TEND_PRIORITY,
      title: input.title ?? `tend ${input.trigger.replace(/_/g, ' ')} ${input.origin.goal ?? ''}`.trim(),
      tend: { trigger: input.trigger, key: input.key, origin: input.origin },
    },
    now,
  );
}

/** The effect step: queues the decided tends and saves the covered set (on a store, in one transaction). */
export async function queueTends(garden: Garden, decision: TendDecision, previousCovered: string[], now: Date): Promise<{ goal: string; trigger: string; key: string }[]> {
  return inStoreTransaction(garden.paths, async () => {
    const queued: { goal: string; trigger: string; key: string }[] = [];
    for (const request of decision.queue) {
      const goal = await createTendGoal(garden, request, now);
      queued.push({ goal: goal.id, trigger: request.trigger, key: request.key });
    }
    const same = decision.attentionCovered.length === previousCovered.length && decision.attentionCovered.every((id, i) => id === previousCovered[i]);
    if (same) return queued;
    const store = storeOf(garden.paths);
    if (store) await store.putDocument('tend-attention', GARDEN_KEY, decision.attentionCovered);
    else await fsp.writeFile(attentionStateFile(garden.paths), `${JSON.stringify(decision.attentionCovered)}\n`);
    return queued;
  });
}

