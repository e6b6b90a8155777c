/**
 * The manual retrospective submission contract (docs/retrospective/level2.md;
 * seed 002, retrospective.py): constants and `submitRetrospectiveGoal`, which
 * gathers a window's closed goals and their runs from disk and queues one
 * `retrospective` goal that asks a plant to review them and write a reply note.
 */
import type { GoalRecord, RunRecord } from '../contracts/index.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { createGoal, listPlants, OpenGoalScanner, readGoal, readPlant, readRun, recentClosedIds, replyDir, runIdsForGoal, StoreError } from '../store/index.js';

/** The plant that writes the retrospective unless told otherwise. */
export const RETROSPECTIVE_PLANT = 'gardener';
/** The window when `since` is not given. */
export const RETROSPECTIVE_DEFAULT_SINCE = '7d';
/** Priority of a retrospective goal: above ordinary work (50), below chat (80). */
export const RETROSPECTIVE_PRIORITY = 60;
/** At most this many closed goals (newest first) are read from the closed ledger. */
export const RETROSPECTIVE_MAX_GOALS = 200;
/** A run's reflection is cut to this many characters in the goal body. */
export const RETROSPECTIVE_REFLECTION_CHARS = 400;
/** The longest focus text accepted. */
export const RETROSPECTIVE_MAX_FOCUS_CHARS = 2000;
/** A duration for `since`: a whole number of hours, days or weeks. */
export const RETROSPECTIVE_DURATION_PATTERN = /^(\d+)([hdw])$/;

const UNIT_MS: Record<string, number> = { h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** What {@link submitRetrospectiveGoal} takes. */
export interface RetrospectiveGoalInput {
  /** Start of the window: an ISO date/time, or a duration back from now (`7d`, `12h`, `2w`). Default `7d`. */
  since?: string;
  /** The plant that writes it. Default `gardener`. */
  plant?: string;
  /** What to look at especially. */
  focus?: string;
}

/** The `retrospective` field of a retrospective goal record. */
export interface RetrospectiveMetadata {
  since: string;
  until: string;
  goals: string[];
  focus?: string;
}

/** One run, as the retrospective shows it. */
export interface RetrospectiveRunFact {
  id: string;
  status: string;
  usd?: number;
  failure_reason?: string;
  reflection?: string;
}

/** One closed goal in the window, with its runs. */
export interface RetrospectiveGoalFact {
  id: string;
  type: string;
  plant?: string;
  closed_reason?: string;
  closed_at: string;
  runs: RetrospectiveRunFact[];
}

/** What the window holds. */
export interface RetrospectiveFacts {
  since: string;
  until: string;
  goals: RetrospectiveGoalFact[];
  totals: { goals: number; success: number; failure: number; cancelled: number; runs: number; usd: number; runsWithoutCost: number };
}

/**
 * Parses `since` into an instant before `now`.
 *
 * @throws UserError `since ...` for a value that is neither a duration nor an ISO date, or lies in the future.
 */
export function parseSince(since: string, now: Date): Date {
  const value = since.trim();
  const duration = RETROSPECTIVE_DURATION_PATTERN.exec(value);
  if (duration) {
    const n = Number(duration[1]);
    if (n <= 0) throw new UserError(`since ${JSON.stringify(since)}: the duration must be more than zero`);
    return new Date(now.getTime() - n * UNIT_MS[duration[2]!]!);
  }
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new UserError(`since ${JSON.stringify(since)}: must be an ISO date (2026-01-31, 2026-01-31T09:00:00Z) or a duration (12h, 7d, 2w)`);
  }
  const at = new Date(value);
  if (at.getTime() >= now.getTime()) throw new UserError(`since ${JSON.stringify(since)}: the window must start before now (${now.toISOString()})`);
  return at;
}

function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function runFact(run: RunRecord): RetrospectiveRunFact {
  return {
    id: run.id,
    status: run.status,
    ...(typeof run.cost?.usd === 'number' ? { usd: run.cost.usd } : {}),
    ...(run.failure_reason ? { failure_reason: run.failure_reason } : {}),
    ...(run.reflection?.trim() ? { reflection: cut(run.reflection, RETROSPECTIVE_REFLECTION_CHARS) } : {}),
  };
}

/**
 * Reads the window's facts from disk: the goals closed in [since, until]
 * (newest first, from the closed ledger), each with its runs' status, cost,
 * failure reason and reflection (cut), and the totals. Unreadable goals or
 * runs are skipped.
 */
export async function gatherRetrospectiveFacts(garden: Garden, since: Date, until: Date): Promise<RetrospectiveFacts> {
  const goals: RetrospectiveGoalFact[] = [];
  for (const id of await recentClosedIds(garden.paths, RETROSPECTIVE_MAX_GOALS)) {
    let goal: GoalRecord;
    try {
      goal = await readGoal(garden.paths, id);
    } catch {
      continue;
    }
    if (!goal.closed_at) continue;
    const closed = Date.parse(goal.closed_at);
    if (closed > until.getTime()) continue;
    if (closed < since.getTime()) break; // the ledger is in close order: everything older is out of the window
    const runs: RetrospectiveRunFact[] = [];
    for (const runId of await runIdsForGoal(garden.paths, id)) {
      try {
        runs.push(runFact(await readRun(garden.paths, runId)));
      } catch {
        // an unreadable run is left out
      }
    }
    goals.push({ id, type: goal.type, ...(goal.assigned_to ? { plant: goal.assigned_to } : {}), ...(goal.closed_reason ? { closed_reason: goal.closed_reason } : {}), closed_at: goal.closed_at, runs });
  }
  const allRuns = goals.flatMap((g) => g.runs);
  const usd = allRuns.reduce((sum, r) => sum + (r.usd ?? 0), 0);
  return {
    since: since.toISOString(),
    until: until.toISOString(),
    goals,
    totals: {
      goals: goals.length,
      success: goals.filter((g) => g.closed_reason === 'success').length,
      failure: goals.filter((g) => g.closed_reason === 'failure').length,
      cancelled: goals.filter((g) => g.closed_reason === 'cancelled').length,
      runs: allRuns.length,
      usd: Math.round(usd * 1e6) / 1e6,
      runsWithoutCost: allRuns.filter((r) => r.usd === undefined).length,
    },
  };
}

/** The retrospective goal's body: the scope, the facts, what to write, and where. */
export function renderRetrospectiveBody(facts: RetrospectiveFacts, replyDirectory: string, focus?: string): string {
  const t = facts.totals;
  const lines = [
    `Retrospective of the garden from ${facts.since} to ${facts.until}.`,
    '',
    'Review the goals closed in this window (below; read their goal files and run directories for more) and write a retrospective:',
    '- what went well;',
    '- what failed and why (the failure reasons, and what caused them);',
    '- patterns in the reflections;',
    '- cost: where the money went, and what was expensive for what it achieved;',
    '- the goals you would queue next, each with a type and a one-paragraph task (do not queue them yourself).',
    '',
    `Write your report as a reply note: one Markdown file in the reply directory ${replyDirectory} (for example retrospective-<date>.md). Do not change code in this goal.`,
  ];
  if (focus) lines.push('', `Focus: ${focus}`);
  lines.push(
    '',
    '## Totals',
    '',
    `Goals closed: ${t.goals} (success ${t.success}, failure ${t.failure}, cancelled ${t.cancelled}); runs: ${t.runs}; cost: $${t.usd.toFixed(4)}${t.runsWithoutCost ? ` (${t.runsWithoutCost} runs without a known cost)` : ''}.`,
    '',
    '## Goals closed in the window',
    '',
  );
  if (facts.goals.length === 0) lines.push('None. Say so, and look at what is queued or stuck instead.');
  for (const g of facts.goals) {
    lines.push(`- ${g.id} (${g.type}${g.plant ? `, ${g.plant}` : ''}): closed ${g.closed_reason ?? '?'} at ${g.closed_at}`);
    for (const r of g.runs) {
      const parts = [r.status, r.usd !== undefined ? `$${r.usd.toFixed(4)}` : 'cost unknown', ...(r.failure_reason ? [`failure_reason ${r.failure_reason}`] : [])];
      lines.push(`  - run ${r.id}: ${parts.join(', ')}`);
      if (r.reflection) lines.push(`    reflection: ${r.reflection}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Queues a manual retrospective (seed 002, submit.py
 * `submit_retrospective_goal`): checks the input, gathers the window's facts
 * from disk, and creates a `retrospective` goal for the plant with a
 * `retrospective: { since, until, goals, focus? }` field and a body asking
 * for the review, written as a reply note. One open retrospective per plant.
 *
 * @throws UserError naming the field: `since` (not a date or duration, or in
 *   the future), `plant` (unknown, archived, not a valid name, or it already
 *   has an open retrospective — exit 1), `focus` (empty or too long).
 */
export async function submitRetrospectiveGoal(garden: Garden, input: RetrospectiveGoalInput = {}, now: Date = new Date()): Promise<GoalRecord> {
  const sinceText = input.since ?? RETROSPECTIVE_DEFAULT_SINCE;
  const since = parseSince(sinceText, now);
  const focus = input.focus?.trim();
  if (input.focus !== undefined && !focus) throw new UserError('focus: empty');
  if (focus && focus.length > RETROSPECTIVE_MAX_FOCUS_CHARS) throw new UserError(`focus: ${focus.length} characters; at most ${RETROSPECTIVE_MAX_FOCUS_CHARS}`);
  const plant = input.plant ?? RETROSPECTIVE_PLANT;
  try {
    const record = await readPlant(garden.paths, plant);
    if (record.status !== 'active') throw new UserError(`plant ${plant}: the plant is ${record.status}`);
  } catch (error) {
    if (error instanceof StoreError && (error.code === 'PLANT_NOT_FOUND' || error.code === 'INVALID_PLANT_NAME')) {
      const names = (await listPlants(garden.paths)).plants.map((p) => p.name);
      const why = error.code === 'INVALID_PLANT_NAME' ? 'not a valid plant name' : 'no such plant in this garden';
      throw new UserError(`plant ${plant}: ${why} (plants: ${names.join(', ') || 'none; run pak2 genesis'})`);
    }
    throw error;
  }
  const open = (await new OpenGoalScanner(garden.paths).scan()).goals.find((g) => g.type === 'retrospective' && g.assigned_to === plant);
  if (open) throw new UserError(`plant ${plant}: retrospective ${open.id} is still ${open.status}; one at a time`, { exitCode: 1, hint: `wait for it, or pak2 cancel ${open.id} while it is queued` });

  const facts = await gatherRetrospectiveFacts(garden, since, now);
  const metadata: RetrospectiveMetadata = { since: facts.since, until: facts.until, goals: facts.goals.map((g) => g.id), ...(focus ? { focus } : {}) };
  return createGoal(
    garden.paths,
    {
      type: 'retrospective',
      plant,
      body: renderRetrospectiveBody(facts, replyDir(garden.paths, garden.config), focus),
      priority: RETROSPECTIVE_PRIORITY,
      title: `retrospective since ${facts.since.slice(0, 10)}`,
      retrospective: metadata,
    },
    now,
  );
}
