/**
 * Budget decisions (docs/budget/level2.md), pure functions over observed
 * spend: which caps apply to a goal, whether a run may start, whether a live
 * run must stop, and which caps have crossed their warning share. Amounts
 * are USD; times are `Date`s read in the budget's time zone.
 */
import type { BudgetConfig } from '../garden/index.js';

/** The caps pak2 keeps: per run, per goal (all its attempts), per plant per day, per garden per day and per month. */
export const BUDGET_CAPS = ['run', 'goal', 'plant_day', 'garden_day', 'garden_month'] as const;
export type BudgetCapName = (typeof BUDGET_CAPS)[number];

/** The config key of each cap (`[budget]` in PAK2.toml, `pak2 budget set`). */
export const CAP_KEYS: Readonly<Record<BudgetCapName, string>> = {
  run: 'run_usd',
  goal: 'goal_usd',
  plant_day: 'plant_day_usd',
  garden_day: 'garden_day_usd',
  garden_month: 'garden_month_usd',
};

/** One cap that applies, in USD; `from` says where it was set. */
export interface Cap {
  name: BudgetCapName;
  usd: number;
  from: 'config' | 'set' | 'goal' | 'routing';
}

/** Spend of one closed run as the ledger counts it. */
export interface SpendEntry {
  run: string;
  goal: string;
  plant: string;
  /** When it closed (ISO 8601): the day and month it counts in. */
  at: string;
  /** USD counted: the run's cost, or `unknown_run_usd` when its cost is unknown. */
  usd: number;
  /** The run's cost was unknown, so `usd` is the documented stand-in. */
  unknown: boolean;
}

/** A live run's spend so far (USD), followed from its stream. */
export interface LiveSpend {
  run: string;
  goal: string;
  plant: string;
  usd: number;
}

/** What the decisions read: closed runs' spend and live runs' spend so far. */
export interface SpendFacts {
  closed: readonly SpendEntry[];
  live: readonly LiveSpend[];
}

const DAY_FORMATS = new Map<string, Intl.DateTimeFormat>();

/** The day (`YYYY-MM-DD`) and month (`YYYY-MM`) of `at` in `timezone` (an IANA name; throws RangeError for an unknown one). */
export function periodOf(at: Date, timezone: string): { day: string; month: string } {
  let format = DAY_FORMATS.get(timezone);
  // One formatter per zone: building one costs far more than using it, and this runs per ledger entry.
  if (!format) DAY_FORMATS.set(timezone, (format = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' })));
  const parts = format.formatToParts(at);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '00';
  const month = `${get('year')}-${get('month')}`;
  return { day: `${month}-${get('day')}`, month };
}

/**
 * The caps that apply to a goal's runs: the config's (overlaid by `pak2
 * budget set`), the goal's own `budget_usd` and its routing class's
 * `budget_usd` as goal caps (the tightest goal cap wins).
 */
export function capsFor(config: BudgetConfig, overrides: Partial<Record<BudgetCapName, number | null>>, goal?: { budget_usd?: number | undefined }, routingBudgetUsd?: number): Cap[] {
  const fromConfig: Record<BudgetCapName, number | undefined> = {
    run: config.runUsd,
    goal: config.goalUsd,
    plant_day: config.plantDayUsd,
    garden_day: config.gardenDayUsd,
    garden_month: config.gardenMonthUsd,
  };
  const caps: Cap[] = [];
  for (const name of BUDGET_CAPS) {
    const set = overrides[name];
    // null: the cap was lifted with `pak2 budget set <cap> off`.
    const usd = set === null ? undefined : (set ?? fromConfig[name]);
    if (usd !== undefined) caps.push({ name, usd, from: set !== undefined ? 'set' : 'config' });
  }
  const goalCaps: Cap[] = [...caps.filter((c) => c.name === 'goal')];
  if (goal?.budget_usd !== undefined) goalCaps.push({ name: 'goal', usd: goal.budget_usd, from: 'goal' });
  if (routingBudgetUsd !== undefined) goalCaps.push({ name: 'goal', usd: routingBudgetUsd, from: 'routing' });
  const tightest = goalCaps.sort((a, b) => a.usd - b.usd)[0];
  return [...caps.filter((c) => c.name !== 'goal'), ...(tightest ? [tightest] : [])];
}

/** What has been spent against a cap (USD): closed runs in its scope and period, plus live runs' spend so far (`except` one of them left out). */
export function spentAgainst(cap: BudgetCapName, facts: SpendFacts, scope: { goal: string; plant: string }, now: Date, timezone: string, except?: string): number {
  const period = periodOf(now, timezone);
  const inScope = (e: { goal: string; plant: string }) =>
    cap === 'goal' ? e.goal === scope.goal : cap === 'plant_day' ? e.plant === scope.plant : cap === 'run' ? false : true;
  const inPeriod = (at: string) => {
    if (cap === 'goal') return true;
    const p = periodOf(new Date(at), timezone);
    return cap === 'garden_month' ? p.month === period.month : p.day === period.day;
  };
  let usd = 0;
  for (const e of facts.closed) if (inScope(e) && inPeriod(e.at)) usd += e.usd;
  // Live runs spend now: they count in the current period.
  for (const l of facts.live) if (l.run !== except && inScope(l)) usd += l.usd;
  return Math.round(usd * 1e8) / 1e8;
}

/** A cap that holds a goal back or stops a run: which, its amount, what was spent and reserved against it, and what is left (USD). */
export interface CapVerdict {
  cap: BudgetCapName;
  cap_usd: number;
  spent_usd: number;
  reserved_usd: number;
  left_usd: number;
  from: Cap['from'];
}

/**
 * Whether a goal's next run may start (docs/budget/level2.md, "Before a
 * run"): it may not when any cap of the goal, its plant's day or the
 * garden's day or month has no room left, counting what closed runs spent,
 * what live runs have spent so far, and what they may still spend up to the
 * run cap (`reserved`). The per-run cap never holds a run back: a new run
 * has spent nothing.
 *
 * @returns undefined when it may start, else the first cap that holds it (in {@link BUDGET_CAPS} order).
 */
export function decideDispatch(caps: readonly Cap[], facts: SpendFacts, goal: { id: string; plant: string }, now: Date, timezone: string): CapVerdict | undefined {
  const runCap = caps.find((c) => c.name === 'run')?.usd;
  for (const cap of caps) {
    if (cap.name === 'run') continue;
    const scope = { goal: goal.id, plant: goal.plant };
    const spent = spentAgainst(cap.name, facts, scope, now, timezone);
    const live = facts.live.filter((l) => (cap.name === 'goal' ? l.goal === goal.id : cap.name === 'plant_day' ? l.plant === goal.plant : true));
    const reserved = runCap === undefined ? 0 : live.reduce((sum, l) => sum + Math.max(0, runCap - l.usd), 0);
    if (spent + reserved >= cap.usd) return verdict(cap, spent, reserved);
  }
  return undefined;
}

/**
 * Whether a live run must stop now (docs/budget/level2.md, "During a run"):
 * its own spend crossed the run cap, or with it the goal's, the plant's day
 * or the garden's day or month cap is reached.
 *
 * @returns undefined to go on, else the cap crossed (first in {@link BUDGET_CAPS} order).
 */
export function decideRunStop(caps: readonly Cap[], facts: SpendFacts, run: LiveSpend, now: Date, timezone: string): CapVerdict | undefined {
  for (const cap of caps) {
    const others = cap.name === 'run' ? 0 : spentAgainst(cap.name, facts, run, now, timezone, run.run);
    if (others + run.usd >= cap.usd) return verdict(cap, others + run.usd, 0);
  }
  return undefined;
}

function verdict(cap: Cap, spent: number, reserved: number): CapVerdict {
  const round = (n: number) => Math.round(n * 1e8) / 1e8;
  return { cap: cap.name, cap_usd: cap.usd, spent_usd: round(spent), reserved_usd: round(reserved), left_usd: round(Math.max(0, cap.usd - spent - reserved)), from: cap.from };
}

/** A cap that crossed its warning share: `key` names the cap, its scope and period, so each warns once. */
export interface BudgetWarningItem {
  key: string;
  cap: BudgetCapName;
  scope?: string;
  cap_usd: number;
  spent_usd: number;
}

/**
 * The caps at or past `warnRatio` of their amount (docs/budget/level2.md,
 * "Warnings"), each keyed by cap, scope (goal, plant, run) and period, less
 * those in `warned`. Goal and plant caps are looked at for the goals and
 * plants that spent; the run cap for live runs.
 */
export function decideWarnings(config: BudgetConfig, overrides: Partial<Record<BudgetCapName, number | null>>, facts: SpendFacts, goals: ReadonlyMap<string, { budget_usd?: number | undefined; routingBudgetUsd?: number }>, now: Date, warned: ReadonlySet<string>): BudgetWarningItem[] {
  const period = periodOf(now, config.timezone);
  const out: BudgetWarningItem[] = [];
  const check = (cap: Cap, spent: number, key: string, scope?: string) => {
    if (warned.has(key) || spent < cap.usd * config.warnRatio) return;
    out.push({ key, cap: cap.name, ...(scope ? { scope } : {}), cap_usd: cap.usd, spent_usd: Math.round(spent * 1e8) / 1e8 });
  };
  const base = capsFor(config, overrides);
  const anyScope = { goal: '', plant: '' };
  for (const cap of base) {
    if (cap.name === 'garden_day') check(cap, spentAgainst('garden_day', facts, anyScope, now, config.timezone), `garden_day:${period.day}`);
    if (cap.name === 'garden_month') check(cap, spentAgainst('garden_month', facts, anyScope, now, config.timezone), `garden_month:${period.month}`);
    if (cap.name === 'plant_day') {
      const plants = new Set([...facts.closed.filter((e) => periodOf(new Date(e.at), config.timezone).day === period.day).map((e) => e.plant), ...facts.live.map((l) => l.plant)]);
      for (const plant of plants) check(cap, spentAgainst('plant_day', facts, { goal: '', plant }, now, config.timezone), `plant_day:${plant}:${period.day}`, plant);
    }
    if (cap.name === 'run') for (const l of facts.live) check(cap, l.usd, `run:${l.run}`, l.run);
  }
  const spenders = new Set([...facts.closed.map((e) => e.goal), ...facts.live.map((l) => l.goal)]);
  for (const goal of spenders) {
    const g = goals.get(goal);
    if (!g) continue;
    const cap = capsFor(config, overrides, g, g.routingBudgetUsd).find((c) => c.name === 'goal');
    if (cap) check(cap, spentAgainst('goal', facts, { goal, plant: '' }, now, config.timezone), `goal:${goal}`, goal);
  }
  return out;
}

/** A verdict in words: `garden_day cap $10.00 reached ($10.12 spent, $0.00 left)`. */
export function describeVerdict(v: CapVerdict): string {
  const usd = (n: number) => `$${n.toFixed(2)}`;
  const reserved = v.reserved_usd > 0 ? `, ${usd(v.reserved_usd)} reserved by live runs` : '';
  return `${v.cap} cap ${usd(v.cap_usd)} reached (${usd(v.spent_usd)} spent${reserved}, ${usd(v.left_usd)} left)`;
}
