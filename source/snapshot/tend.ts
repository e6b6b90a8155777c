import { periodOf } from '../budget/index.js';
import { automaticTendsToday, type ClosedTendDays } from '../coordinator/tend-control.js';
import { TEND_TRIGGERS, type GoalRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import type { TendView } from './tend-words.js';

export { tendWords, type TendView } from './tend-words.js';
import { OpenGoalScanner, readTendState } from '../store/index.js';

/**
 * Reads the tend view: `[tend]` of the garden's config, tend.json, and when
 * a daily cap is set, today's automatic tends from the goal records (`open`:
 * the open goals when the caller has them, `closed` the closed ones it
 * holds, newest first; `cache` keeps closed tends' answers across calls).
 */
export async function tendView(garden: Garden, options: { now?: Date; open?: readonly GoalRecord[]; closed?: readonly GoalRecord[]; cache?: ClosedTendDays } = {}): Promise<TendView> {
  const { paths, config } = garden;
  const now = options.now ?? new Date();
  const tend = config.tend;
  let paused: TendView['paused'];
  let problem: string | undefined;
  try {
    const state = await readTendState(paths);
    if (state?.paused) paused = { by: state.by, at: state.updated_at };
  } catch (error) {
    problem = (error as Error).message;
  }
  let today: number | null = null;
  if (tend.dailyCap !== undefined) {
    const open = options.open ?? (await new OpenGoalScanner(paths).scan()).goals;
    today = await automaticTendsToday(paths, open, now, config.budget.timezone, options.cache, options.closed);
  }
  const on = TEND_TRIGGERS.filter((t) => tend.triggers[t]);
  const state: TendView['state'] =
    on.length === 0 ? 'off' : paused || problem ? 'paused' : today !== null && today >= tend.dailyCap! ? 'capped' : on.length < TEND_TRIGGERS.length ? 'partial' : 'on';
  return {
    state,
    triggers: { ...tend.triggers },
    priority: tend.priority,
    daily_cap: tend.dailyCap ?? null,
    today,
    day: periodOf(now, config.budget.timezone).day,
    timezone: config.budget.timezone,
    ...(paused ? { paused } : {}),
    ...(problem ? { problem } : {}),
  };
}

