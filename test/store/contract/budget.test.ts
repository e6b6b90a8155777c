/**
 * Store contract (issue 27): the budget's runtime records — budget.json (caps
 * the operator set) and budget.warned.json (warnings said) — read and
 * written the same on the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readBudgetOverrides, readBudgetWarned, writeBudgetOverride, writeBudgetWarned } from '../../../source/store/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: budget (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('caps are set, lifted and dropped one at a time, the others kept; warnings said are kept sorted', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await readBudgetOverrides(paths)).toEqual({});
    expect([...(await readBudgetWarned(paths))]).toEqual([]);
    const now = new Date('2026-05-01T10:00:00.000Z');
    await writeBudgetOverride(paths, 'run_usd', 5, now);
    await writeBudgetOverride(paths, 'garden_month_usd', null, now);
    expect(await readBudgetOverrides(paths)).toEqual({ run_usd: 5, garden_month_usd: null });
    await writeBudgetOverride(paths, 'run_usd', undefined, now);
    expect(await readBudgetOverrides(paths)).toEqual({ garden_month_usd: null });
    // Two servers on one database set two caps at once: neither is lost (the files have one writer, the CLI).
    await Promise.all([writeBudgetOverride(paths, 'run_usd', 1, now), writeBudgetOverride(paths, 'goal_usd', 2, now)]);
    if (kind === 'postgres') expect(await readBudgetOverrides(paths)).toEqual({ garden_month_usd: null, run_usd: 1, goal_usd: 2 });
    await writeBudgetWarned(paths, ['b', 'a']);
    expect([...(await readBudgetWarned(paths))]).toEqual(['a', 'b']);
  });

  it('a damaged budget.json is INVALID_RECORD naming it; a damaged budget.warned.json reads as nothing said', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    await putRaw(garden, { kind: 'budget', key: 'garden', file: 'budget.json' }, { caps: { run_usd: 'five' }, updated_at: '2026-05-01T10:00:00.000Z' });
    await expect(readBudgetOverrides(garden.paths)).rejects.toMatchObject({ code: 'INVALID_RECORD', message: expect.stringContaining('budget.json') });
    await putRaw(garden, { kind: 'budget-warned', key: 'garden', file: 'budget.warned.json' }, { said: 7 });
    expect([...(await readBudgetWarned(garden.paths))]).toEqual([]);
  });
});
