import { periodOf } from '../budget/index.js';
import { TEND_TRIGGERS, tendMetadataOf, type GoalRecord } from '../contracts/index.js';
import type { Garden, GardenPaths } from '../garden/index.js';
import { closedEntriesNewestFirst, closedEntryOf, readGoal, readTendState, type ClosedEntry } from '../store/index.js';
import type { TendControl } from './tend-policy.js';

/**
 * The operator's control of automatic tends as observed now
 * (docs/automatic-tend/level2.md, "Operator control"): `[tend]` read from
 * the config object given (so a reloaded config applies at the next pass),
 * the pause read from tend.json, and today's automatic tends counted from
 * the goal records (only when `[tend] daily_cap` is set).
 */

/** Closed goals' answers to "an automatic tend submitted on day D?" (a closed goal never changes): goal id → its day, or null when it is no automatic tend. */
export type ClosedTendDays = Map<string, string | null>;

/** How far before the day's start the closed ledger is still read: writers in different processes append a little out of order. */
const LEDGER_SLACK_MS = 10 * 60_000;

/** True for a goal record that is an automatic tend: type `tend` with `tend` metadata of an automatic trigger. */
export function isAutomaticTend(goal: object): boolean {
  if ((goal as { type?: unknown }).type !== 'tend') return false;
  const meta = tendMetadataOf(goal);
  return meta !== undefined && (TEND_TRIGGERS as readonly string[]).includes(meta.trigger);
}

/**
 * How many automatic tends were submitted on `now`'s day in `timezone`
 * (`[budget].timezone`): the open ones among `open`, and the closed ones
 * from the closed ledger's end back to a little before the day began (a
 * goal submitted today closed today). A closed tend's record is read once
 * and its answer kept in `cache`. `closedNewestFirst`: closed goals the
 * caller already holds, the most recently closed first (the queue's shown
 * ones): when they reach back before the day began, the ledger is not read. Nothing is counted in a file of its own,
 * so the count cannot drift from the goals: it survives a restart and
 * follows an edit of the queue.
 */
export async function automaticTendsToday(
  paths: GardenPaths,
  open: readonly GoalRecord[],
  now: Date,
  timezone: string,
  cache: ClosedTendDays = new Map(),
  closedNewestFirst: readonly GoalRecord[] = [],
): Promise<number> {
  const day = periodOf(now, timezone).day;
  const dayOf = (iso: string | undefined) => (iso && !Number.isNaN(Date.parse(iso)) ? periodOf(new Date(iso), timezone).day : undefined);
  const counted = new Set<string>();
  for (const goal of open) if (goal.status !== 'closed' && dayOf(goal.submitted_at) === day && isAutomaticTend(goal)) counted.add(goal.id);
  const openIds = new Set(open.map((g) => g.id));
  const seen = new Set<string>();
  // One closed goal, newest close first: false once the ledger reaches before the day began (with some slack), or has no times.
  const take = async (entry: ClosedEntry, record?: GoalRecord): Promise<boolean> => {
    const closedMs = entry.closed_at ? Date.parse(entry.closed_at) : NaN;
    if (Number.isNaN(closedMs) || periodOf(new Date(closedMs + LEDGER_SLACK_MS), timezone).day < day) return false;
    seen.add(entry.id);
    if (entry.type !== 'tend' || openIds.has(entry.id) || counted.has(entry.id) || dayOf(entry.submitted_at) !== day) return true;
    let known = cache.get(entry.id);
    if (known === undefined) {
      // A whole record the caller holds (a listing's summary has an empty body and no metadata), else the goal file.
      const goal = record && record.body !== '' ? record : await readGoal(paths, entry.id).catch(() => undefined);
      known = goal && isAutomaticTend(goal) ? (dayOf(goal.submitted_at) ?? null) : null;
      if (goal) cache.set(entry.id, known);
    }
    if (known === day) counted.add(entry.id);
    return true;
  };
  for (const goal of closedNewestFirst) if (!(await take(closedEntryOf(goal), goal))) return counted.size;
  for await (const entry of closedEntriesNewestFirst(paths)) {
    if (seen.has(entry.id)) continue;
    if (!(await take(entry))) break;
  }
  return counted.size;
}

/**
 * Reads the operator's control for one pass: `[tend]` of `garden.config`,
 * the pause (tend.json; one that cannot be read holds tends back as paused,
 * and says why), and today's count when a daily cap is set.
 */
export async function readTendControl(garden: Garden, open: readonly GoalRecord[], now: Date, cache?: ClosedTendDays): Promise<TendControl> {
  const tend = garden.config.tend;
  const paused = await pauseOf(garden.paths);
  const today = tend.dailyCap !== undefined ? await automaticTendsToday(garden.paths, open, now, garden.config.budget.timezone, cache) : 0;
  return { triggers: { ...tend.triggers }, priority: tend.priority, ...(paused ? { paused } : {}), ...(tend.dailyCap !== undefined ? { dailyCap: tend.dailyCap } : {}), today };
}

/**
 * Why automatic tends are paused, in words (`paused by operator at
 * 2026-05-01T10:00:00.000Z`), or undefined when they are not. A tend.json
 * that cannot be read counts as paused: the operator's pause is never
 * dropped because its file was damaged.
 */
export async function pauseOf(paths: GardenPaths): Promise<string | undefined> {
  try {
    const state = await readTendState(paths);
    return state?.paused ? `paused by ${state.by} at ${state.updated_at}` : undefined;
  } catch (error) {
    return `tend.json cannot be read: ${(error as Error).message}`;
  }
}
