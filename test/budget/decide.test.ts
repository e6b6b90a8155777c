import { describe, expect, it } from 'vitest';
import { budgetConfig } from '../../source/garden/index.js';
import { capsFor, decideDispatch, decideRunStop, decideWarnings, describeVerdict, periodOf, spentAgainst, type SpendFacts } from '../../source/budget/index.js';

const NOW = new Date('2026-12-02T10:00:00Z');
const entry = (run: string, goal: string, plant: string, at: string, usd: number, unknown = false) => ({ run, goal, plant, at, usd, unknown });

describe('budget decisions (pure)', () => {
  it('days and months follow the budget timezone', () => {
    expect(periodOf(new Date('2026-12-01T23:30:00Z'), 'UTC')).toEqual({ day: '2026-12-01', month: '2026-12' });
    expect(periodOf(new Date('2026-12-01T23:30:00Z'), 'Europe/Berlin')).toEqual({ day: '2026-12-02', month: '2026-12' });
    expect(periodOf(new Date('2026-11-30T23:30:00Z'), 'Asia/Tokyo')).toEqual({ day: '2026-12-01', month: '2026-12' });
  });

  it('the tightest goal cap applies: the config, the goal\'s own --budget, its routing class', () => {
    const config = budgetConfig({ goal_usd: 5, run_usd: 1 });
    expect(capsFor(config, {}, { budget_usd: 2 }, 3).find((c) => c.name === 'goal')).toEqual({ name: 'goal', usd: 2, from: 'goal' });
    expect(capsFor(config, {}, {}, 3).find((c) => c.name === 'goal')).toEqual({ name: 'goal', usd: 3, from: 'routing' });
    // pak2 budget set overrides the config; null lifts a cap.
    expect(capsFor(config, { run: 4, goal: null }, {})).toEqual([{ name: 'run', usd: 4, from: 'set' }]);
  });

  it('a day cap reached holds the next run; yesterday\'s spend and other plants\' spend do not count against today\'s plant cap', () => {
    const config = budgetConfig({ garden_day_usd: 10, plant_day_usd: 4 });
    const facts: SpendFacts = {
      closed: [entry('1-a-r1', '1-a', 'gardener', '2026-12-01T12:00:00Z', 50), entry('2-b-r1', '2-b', 'gardener', '2026-12-02T08:00:00Z', 3), entry('3-c-r1', '3-c', 'other', '2026-12-02T09:00:00Z', 6.5)],
      live: [],
    };
    const caps = capsFor(config, {});
    expect(spentAgainst('garden_day', facts, { goal: 'x', plant: 'gardener' }, NOW, 'UTC')).toBe(9.5);
    expect(decideDispatch(caps, facts, { id: '4-d', plant: 'gardener' }, NOW, 'UTC')).toBeUndefined();
    const more: SpendFacts = { ...facts, live: [{ run: '5-e-r1', goal: '5-e', plant: 'gardener', usd: 1.2 }] };
    const held = decideDispatch(caps, more, { id: '4-d', plant: 'gardener' }, NOW, 'UTC');
    expect(held).toEqual({ cap: 'plant_day', cap_usd: 4, spent_usd: 4.2, reserved_usd: 0, left_usd: 0, from: 'config' });
    expect(describeVerdict(held!)).toBe('plant_day cap $4.00 reached ($4.20 spent, $0.00 left)');
  });

  it('live runs reserve what they may still spend up to the run cap', () => {
    const caps = capsFor(budgetConfig({ run_usd: 2, garden_day_usd: 5 }), {});
    const facts: SpendFacts = { closed: [], live: [{ run: '1-a-r1', goal: '1-a', plant: 'p', usd: 0.5 }, { run: '2-b-r1', goal: '2-b', plant: 'p', usd: 1 }] };
    // 1.5 spent + (1.5 + 1) reserved = 4 < 5: one more may start; with a third live run it may not.
    expect(decideDispatch(caps, facts, { id: '3-c', plant: 'p' }, NOW, 'UTC')).toBeUndefined();
    const third: SpendFacts = { closed: [], live: [...facts.live, { run: '3-c-r1', goal: '3-c', plant: 'p', usd: 0 }] };
    expect(decideDispatch(caps, third, { id: '4-d', plant: 'p' }, NOW, 'UTC')).toMatchObject({ cap: 'garden_day', spent_usd: 1.5, reserved_usd: 4.5, left_usd: 0 });
  });

  it('a run stops when its own spend, or its goal\'s with it, crosses a cap; unknown-cost runs count as documented', () => {
    const caps = capsFor(budgetConfig({ run_usd: 1, goal_usd: 1.5 }), {});
    const facts: SpendFacts = { closed: [entry('1-a-r1', '1-a', 'p', '2026-12-02T01:00:00Z', 1, true)], live: [] };
    expect(decideRunStop(caps, facts, { run: '1-a-r2', goal: '1-a', plant: 'p', usd: 0.4 }, NOW, 'UTC')).toBeUndefined();
    expect(decideRunStop(caps, facts, { run: '1-a-r2', goal: '1-a', plant: 'p', usd: 0.5 }, NOW, 'UTC')).toMatchObject({ cap: 'goal', cap_usd: 1.5, spent_usd: 1.5 });
    expect(decideRunStop(caps, { closed: [], live: [] }, { run: '2-b-r1', goal: '2-b', plant: 'p', usd: 1.01 }, NOW, 'UTC')).toMatchObject({ cap: 'run', spent_usd: 1.01 });
  });

  it('warns once per cap and period at the warning share', () => {
    const config = budgetConfig({ garden_day_usd: 10, garden_month_usd: 100 });
    const facts: SpendFacts = { closed: [entry('1-a-r1', '1-a', 'p', '2026-12-02T01:00:00Z', 8)], live: [] };
    const items = decideWarnings(config, {}, facts, new Map(), NOW, new Set());
    expect(items).toEqual([{ key: 'garden_day:2026-12-02', cap: 'garden_day', cap_usd: 10, spent_usd: 8 }]);
    expect(decideWarnings(config, {}, facts, new Map(), NOW, new Set(['garden_day:2026-12-02']))).toEqual([]);
    // The next day is a new period.
    expect(decideWarnings(config, {}, { closed: [entry('2-b-r1', '2-b', 'p', '2026-12-03T01:00:00Z', 8.5)], live: [] }, new Map(), new Date('2026-12-03T02:00:00Z'), new Set(['garden_day:2026-12-02']))[0]?.key).toBe('garden_day:2026-12-03');
  });
});

describe('the status line says today\'s spend against the day\'s cap', () => {
  it('with and without a cap', async () => {
    const { costSegment } = await import('../../source/ui/status-line.js');
    expect(costSegment({ usd: 3.1, runs: 4, unknown: 0, capUsd: 10 })).toBe('$3.10 of $10.00 today');
    expect(costSegment({ usd: 0.1234, runs: 1, unknown: 1 })).toBe('$0.1234 today (+1 unknown)');
  });
});
