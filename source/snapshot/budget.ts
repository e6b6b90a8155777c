import { BUDGET_CAPS, BudgetBook, CAP_KEYS, capsFor, periodOf, spentAgainst, type BudgetCapName } from '../budget/index.js';
import { blockKind, readBlocked } from '../coordinator/blocked.js';
import { runStreamSpend } from '../driver/index.js';
import type { Garden } from '../garden/index.js';
import { latestRun, OpenGoalScanner } from '../store/index.js';

/** One cap as `pak2 budget` shows it (USD). `usd` null: no such cap. */
export interface BudgetCapRow {
  cap: BudgetCapName;
  /** Its key in `[budget]` and `pak2 budget set`. `from` `set` with `usd` null: lifted with `off`. */
  key: string;
  usd: number | null;
  from: 'config' | 'set' | 'none';
  /** The plant a plant_day row is about. */
  scope?: string;
  spent_usd: number;
  reserved_usd: number;
  left_usd: number | null;
}

/** What `pak2 budget --json` and `GET /budget` answer (docs/budget/level2.md, "pak2 budget"). */
export interface BudgetReport {
  timezone: string;
  day: string;
  month: string;
  caps: BudgetCapRow[];
  /** Live local runs and their spend so far, followed from their streams. */
  live: { run: string; goal: string; plant: string; usd: number; source: string }[];
  /** Queued goals a cap holds back, as the coordinator last reported them. */
  held: { goal: string; reason: string }[];
  /** Runs of unknown cost this month, and what each counts as (USD). */
  unknown_runs: { count: number; counted_usd_each: number };
  /** Why budget.json could not be read, when it could not. */
  problem?: string;
}

/**
 * Every cap, what was spent and reserved against it and what is left
 * (docs/budget/level2.md): read from the event log, budget.json and the
 * live runs' streams, as the coordinator would decide now. Plant caps are
 * shown for each plant that spent today.
 */
export async function budgetReport(garden: Garden, now = new Date()): Promise<BudgetReport> {
  const { paths, config } = garden;
  const budget = config.budget;
  const book = new BudgetBook(garden);
  await book.refresh();
  const live: BudgetReport['live'] = [];
  const { goals } = await new OpenGoalScanner(paths).scan();
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'blocked') continue;
    const run = await latestRun(paths, goal.id).catch(() => undefined);
    if (!run || run.status !== 'running' || run.runner) continue;
    const spend = await runStreamSpend(paths, run, config);
    live.push({ run: run.id, goal: goal.id, plant: run.plant, usd: spend.usd, source: spend.source });
    book.setLive({ run: run.id, goal: goal.id, plant: run.plant, usd: spend.usd });
  }
  const facts = book.facts();
  const caps = capsFor(budget, book.overrides);
  const period = periodOf(now, budget.timezone);
  const runCap = caps.find((c) => c.name === 'run')?.usd;
  const round = (n: number) => Math.round(n * 1e8) / 1e8;
  const row = (name: BudgetCapName, scope?: string): BudgetCapRow => {
    const cap = caps.find((c) => c.name === name);
    const inScope = facts.live.filter((l) => (name === 'plant_day' ? l.plant === scope : true));
    const spent = name === 'run' || name === 'goal' ? 0 : spentAgainst(name, facts, { goal: '', plant: scope ?? '' }, now, budget.timezone);
    const reserved = runCap === undefined || name === 'run' || name === 'goal' ? 0 : inScope.reduce((sum, l) => sum + Math.max(0, runCap - l.usd), 0);
    return {
      cap: name,
      key: CAP_KEYS[name],
      usd: cap?.usd ?? null,
      // A cap lifted with `pak2 budget set <cap> off` is none, set so (PAK2.toml's does not apply).
      from: cap ? (cap.from === 'set' ? 'set' : 'config') : book.overrides[name] === null ? 'set' : 'none',
      ...(scope ? { scope } : {}),
      spent_usd: round(spent),
      reserved_usd: round(reserved),
      left_usd: cap ? round(Math.max(0, cap.usd - spent - reserved)) : null,
    };
  };
  const plants = new Set([...facts.closed.filter((e) => periodOf(new Date(e.at), budget.timezone).day === period.day).map((e) => e.plant), ...facts.live.map((l) => l.plant)]);
  const rows: BudgetCapRow[] = [];
  for (const name of BUDGET_CAPS) {
    if (name === 'plant_day' && plants.size > 0) for (const plant of [...plants].sort()) rows.push(row(name, plant));
    else rows.push(row(name));
  }
  const held = Object.entries(await readBlocked(paths))
    .filter(([, reason]) => blockKind(reason) === 'budget')
    .map(([goal, reason]) => ({ goal, reason }));
  const unknown = facts.closed.filter((e) => e.unknown && periodOf(new Date(e.at), budget.timezone).month === period.month).length;
  return {
    timezone: budget.timezone,
    day: period.day,
    month: period.month,
    caps: rows,
    live,
    held,
    unknown_runs: { count: unknown, counted_usd_each: budget.unknownRunUsd },
    ...(book.problem ? { problem: book.problem } : {}),
  };
}
