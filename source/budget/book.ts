import type { Garden } from '../garden/index.js';
import type { BudgetCapKey } from '../contracts/index.js';
import { readBudgetOverrides, readEvents } from '../store/index.js';
import { BUDGET_CAPS, CAP_KEYS, type BudgetCapName, type LiveSpend, type SpendEntry, type SpendFacts } from './decide.js';

/**
 * The garden's spend ledger (docs/budget/level2.md, "The ledger"): every
 * closed run's cost from its `RunClosed` event (`cost_usd`; a run of
 * unknown cost counts as `[budget] unknown_run_usd`), read from the event
 * log incrementally, plus the live runs' spend so far as their streams
 * report it. One per coordinator (and one per `pak2 budget`).
 */
export class BudgetBook {
  private offset = 0;
  private readonly closed = new Map<string, SpendEntry>();
  private readonly liveSpend = new Map<string, LiveSpend>();
  private overridesValue: Partial<Record<BudgetCapName, number | null>> = {};
  /** Why budget.json could not be read, if it could not (the caps of PAK2.toml apply meanwhile). */
  problem: string | undefined;

  constructor(private readonly garden: Garden) {}

  /** Reads the events appended since the last call, and budget.json again. */
  async refresh(): Promise<void> {
    const read = await readEvents(this.garden.paths, this.offset);
    this.offset = read.offset;
    for (const event of read.events) {
      if (event.type !== 'RunClosed' || !event.run || !event.goal) continue;
      const unknown = event.cost_usd === undefined;
      this.closed.set(event.run, {
        run: event.run,
        goal: event.goal,
        plant: event.plant ?? 'unknown',
        at: event.ts,
        usd: unknown ? this.garden.config.budget.unknownRunUsd : event.cost_usd!,
        unknown,
      });
      this.liveSpend.delete(event.run);
    }
    try {
      this.overridesValue = toCapNames(await readBudgetOverrides(this.garden.paths));
      this.problem = undefined;
    } catch (error) {
      this.problem = (error as Error).message;
    }
  }

  /** A live run's spend so far (USD); a closed run's record replaces it at its RunClosed. */
  setLive(spend: LiveSpend): void {
    if (!this.closed.has(spend.run)) this.liveSpend.set(spend.run, spend);
  }

  /** Forgets a live run (it ended without a RunClosed this book has read yet: its spend counts again once it is read). */
  dropLive(run: string): void {
    this.liveSpend.delete(run);
  }

  /** The caps set with `pak2 budget set`, by cap name (`null`: lifted). */
  get overrides(): Partial<Record<BudgetCapName, number | null>> {
    return this.overridesValue;
  }

  /** What the decisions read now. */
  facts(): SpendFacts {
    return { closed: [...this.closed.values()], live: [...this.liveSpend.values()] };
  }
}

/** budget.json's keys (`garden_day_usd`) as cap names (`garden_day`). */
function toCapNames(caps: Partial<Record<BudgetCapKey, number | null>>): Partial<Record<BudgetCapName, number | null>> {
  const out: Partial<Record<BudgetCapName, number | null>> = {};
  for (const name of BUDGET_CAPS) {
    const value = caps[CAP_KEYS[name] as BudgetCapKey];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
