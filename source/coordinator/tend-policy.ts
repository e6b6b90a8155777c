import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GoalRecord, RunRecord } from '../contracts/index.js';
import { runDir, type Garden, type GardenPaths } from '../garden/index.js';
import { appendEvent, createGoal, GARDEN_KEY, inStoreTransaction, readPlant, storeOf } from '../store/index.js';
import { TEND_TRIGGERS, tendMetadataOf, type TendMetadata, type TendOrigin, type AutomaticTendTrigger, type TendTrigger, type TendWithheldReason } from '../contracts/index.js';

export { TEND_TRIGGERS, tendMetadataOf, type TendMetadata, type TendOrigin, type TendTrigger } from '../contracts/index.js';
export { renderTendContext } from '../driver/context-blocks.js';

/**
 * Automatic tend submission (seed 002, "The reconcile loop"; docs/automatic-tend/level2.md):
 * a pure decision ({@link decideTends}: what the pass saw in, tends to queue
 * out) and a small effect step ({@link queueTends}) the reconcile pass runs.
 */

/** The plant automatic tends are assigned to; no active gardener, no automatic tend. */
export const TEND_PLANT = 'gardener';
/** Priority of an automatic tend by default (`[tend] priority`): above ordinary work (50), below operator chat (80). */
export const TEND_PRIORITY = 70;
/** At most this many automatic tends are queued by one reconcile pass. */
export const MAX_TENDS_PER_PASS = 3;
/** Run statuses that trigger `run_failure` (a watchdog kill is `killed` with failure_reason `killed`). */
export const RUN_FAILURE_STATUSES = ['failure', 'zero_output', 'timeout'] as const;

/** A tend the policy decided to queue. */
export interface TendRequest extends TendMetadata {
  body: string;
  /** `[tend] priority`; absent: {@link TEND_PRIORITY}. */
  priority?: number;
}

/** A trigger that fired but queued no tend, with why: a bound of the policy, or the operator's control ({@link TendControl}). */
export interface WithheldTend {
  key: string;
  reason: 'duplicate_open_tend' | 'per_pass_limit' | 'gardener_unavailable' | TendWithheldReason;
  detail?: string;
}

/**
 * What the operator set about automatic tends, as observed at the start of
 * the pass (docs/automatic-tend/level2.md, "Operator control"): `[tend]`'s
 * triggers, priority and daily cap, the pause (tend.json), and how many
 * automatic tends were queued today (counted from the goal records).
 */
export interface TendControl {
  triggers: Record<AutomaticTendTrigger, boolean>;
  priority: number;
  /** Why tends are paused (`paused by operator at …`, or tend.json cannot be read); undefined when they are not. */
  paused?: string;
  /** `[tend] daily_cap`; undefined: no cap. */
  dailyCap?: number;
  /** Automatic tends queued so far today (the day of `[budget].timezone`). */
  today: number;
}

/** A tend the operator's control held back, to be said once as a `TendWithheld` event (docs/events/level2.md). */
export interface TendTrace {
  trigger: TendTrigger;
  key: string;
  reason: TendWithheldReason;
  detail: string;
  origin: TendOrigin;
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
  /** The operator's control; absent: both triggers on, not paused, no cap, priority {@link TEND_PRIORITY}. */
  control?: TendControl;
  /** Stuck goal ids a `TendWithheld` event already named (coordinator.tend-withheld.json), so a held-back attention tend is said once, not once a pass. */
  attentionNoted?: string[];
}

/** What {@link decideTends} returns. */
export interface TendDecision {
  queue: TendRequest[];
  withheld: WithheldTend[];
  /** The new covered set for queued_attention_needed: ids still queued (or stuck) and covered, plus the newly covered. */
  attentionCovered: string[];
  /** The new noted set: ids still queued (or stuck) a `TendWithheld` named, plus those {@link traces} name now. */
  attentionNoted?: string[];
  /** The tends the operator's control held back that are said now, each as one `TendWithheld` event. */
  traces?: TendTrace[];
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
 * - Held back by the operator's `control` (docs/automatic-tend/level2.md,
 *   "Operator control"): a trigger set `false` (`trigger_off`), tends paused
 *   (`paused`), or `[tend] daily_cap` automatic tends already queued today
 *   (`daily_cap`). Each is withheld and said once in `traces` (a stuck set
 *   once until it changes: `attentionNoted`).
 */
export function decideTends(input: TendPolicyInput): TendDecision {
  const max = input.maxPerPass ?? MAX_TENDS_PER_PASS;
  const control = input.control;
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
  const stays = (id: string) => stillQueued.has(id) || stuckIds.includes(id);
  let attentionCovered = input.attentionCovered.filter(stays);
  let attentionNoted = (input.attentionNoted ?? []).filter(stays);
  const uncovered = input.stuck.filter((s) => !covered.has(s.goal));
  if (uncovered.length > 0) {
    const origin: TendOrigin = { goals: input.stuck };
    candidates.push({ trigger: 'queued_attention_needed', key: 'queued_attention_needed', origin, body: attentionBody(input.stuck) });
  }

  const queue: TendRequest[] = [];
  const withheld: WithheldTend[] = [];
  const traces: TendTrace[] = [];
  const hold = (candidate: TendRequest, reason: TendWithheldReason, why: string) => {
    const detail = `${why}: no ${candidate.trigger} tend for ${tendSubject(candidate.origin)}`;
    withheld.push({ key: candidate.key, reason, detail });
    if (candidate.trigger !== 'queued_attention_needed') traces.push({ trigger: candidate.trigger, key: candidate.key, reason, detail, origin: candidate.origin });
    else if (uncovered.some((s) => !attentionNoted.includes(s.goal))) {
      // Said once for a set of stuck goals, not once a pass while they stay stuck.
      traces.push({ trigger: candidate.trigger, key: candidate.key, reason, detail, origin: candidate.origin });
      attentionNoted = [...new Set([...attentionNoted, ...stuckIds])];
    }
  };
  for (const candidate of candidates) {
    // Candidates come from the automatic triggers only (genesis queues its survey itself).
    if (control && !control.triggers[candidate.trigger as AutomaticTendTrigger]) hold(candidate, 'trigger_off', `[tend] ${candidate.trigger} = false`);
    else if (openKeys.has(candidate.key)) withheld.push({ key: candidate.key, reason: 'duplicate_open_tend' });
    else if (input.gardenerProblem) withheld.push({ key: candidate.key, reason: 'gardener_unavailable', detail: input.gardenerProblem });
    else if (control?.paused) hold(candidate, 'paused', `automatic tends are paused (${control.paused}; pak2 tend resume)`);
    else if (control?.dailyCap !== undefined && control.today + queue.length >= control.dailyCap) {
      hold(candidate, 'daily_cap', `[tend] daily_cap reached: ${control.today + queue.length}/${control.dailyCap} automatic tends today`);
    } else if (queue.length >= max) withheld.push({ key: candidate.key, reason: 'per_pass_limit', detail: `at most ${max} automatic tends per pass` });
    else {
      queue.push(control ? { ...candidate, priority: control.priority } : candidate);
      openKeys.add(candidate.key);
      if (candidate.trigger === 'queued_attention_needed') attentionCovered = [...new Set([...attentionCovered, ...stuckIds])];
    }
  }
  return { queue, withheld, attentionCovered, attentionNoted, traces };
}

/** What a tend would have been about, in words: `run 3-a-r1 of 3-a (failure)`, or `2 stuck goals (4-b, 5-c)`. */
function tendSubject(origin: TendOrigin): string {
  if (origin.goals) return `${origin.goals.length} stuck goal${origin.goals.length === 1 ? '' : 's'} (${origin.goals.map((g) => g.goal).join(', ')})`;
  return `run ${origin.run} of ${origin.goal} (${origin.status}${origin.failure_reason ? `, ${origin.failure_reason}` : ''})`;
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

/** File holding the stuck goal ids a `TendWithheld` event already named. */
export function attentionNotedFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'coordinator.tend-withheld.json');
}

/** Reads the noted set; missing or unreadable reads as empty (a trace said twice beats one never said). */
export async function readAttentionNoted(paths: GardenPaths): Promise<string[]> {
  try {
    const store = storeOf(paths);
    const value = store ? await store.documentRecord('tend-withheld', GARDEN_KEY) : (JSON.parse(await fsp.readFile(attentionNotedFile(paths), 'utf8')) as unknown);
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
  /** Default `[tend] priority` (70 when absent); genesis's first survey queues at 60. */
  priority?: number;
  /** The slug's source; default `tend <trigger> <origin goal>`. */
  title?: string;
}

/** Queues one tend goal for the gardener, carrying its trigger metadata in `tend`, at `input.priority` (default `[tend] priority`): the one tend goal builder (automatic tends, submitTendGoal, genesis). */
export async function createTendGoal(garden: Garden, input: TendGoalInput, now: Date = new Date()): Promise<GoalRecord> {
  const body = input.body ?? `Automatic tend (${input.trigger}): look after the garden. Trigger key ${input.key}.`;
  return createGoal(
    garden.paths,
    {
      type: 'tend',
      plant: TEND_PLANT,
      body,
      priority: input.priority ?? garden.config.tend?.priority ?? TEND_PRIORITY,
      title: input.title ?? `tend ${input.trigger.replace(/_/g, ' ')} ${input.origin.goal ?? ''}`.trim(),
      tend: { trigger: input.trigger, key: input.key, origin: input.origin },
    },
    now,
  );
}

/**
 * The effect step: queues the decided tends, appends one `TendWithheld`
 * event per trace, and saves the covered and noted sets when they changed
 * (on a store, all in one transaction).
 */
export async function queueTends(garden: Garden, decision: TendDecision, previousCovered: string[], now: Date, previousNoted: string[] = []): Promise<{ goal: string; trigger: string; key: string }[]> {
  return inStoreTransaction(garden.paths, async () => {
    const queued: { goal: string; trigger: string; key: string }[] = [];
    for (const request of decision.queue) {
      const goal = await createTendGoal(garden, request, now);
      queued.push({ goal: goal.id, trigger: request.trigger, key: request.key });
    }
    for (const trace of decision.traces ?? []) {
      await appendEvent(garden.paths, { type: 'TendWithheld', ...(trace.origin.goal ? { goal: trace.origin.goal } : {}), ...(trace.origin.run ? { run: trace.origin.run } : {}), reason: trace.reason, detail: trace.detail }, now);
    }
    await saveSet(garden.paths, 'tend-attention', attentionStateFile(garden.paths), previousCovered, decision.attentionCovered);
    if (decision.attentionNoted) await saveSet(garden.paths, 'tend-withheld', attentionNotedFile(garden.paths), previousNoted, decision.attentionNoted);
    return queued;
  });
}

/** Writes a set of goal ids as one compact line (or a store document) when it differs from what was read. */
async function saveSet(paths: GardenPaths, kind: 'tend-attention' | 'tend-withheld', file: string, before: string[], after: string[]): Promise<void> {
  if (after.length === before.length && after.every((id, i) => id === before[i])) return;
  const store = storeOf(paths);
  if (store) await store.putDocument(kind, GARDEN_KEY, after);
  else await fsp.writeFile(file, `${JSON.stringify(after)}\n`);
}
