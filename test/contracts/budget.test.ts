import { describe, expect, it } from 'vitest';
import { validateBudgetOverrides, validateBudgetWarned, validateGoal, validateRun } from '../../source/contracts/index.js';

describe('budget records (docs/budget/level2.md)', () => {
  it('budget.json: caps by key, a number of USD or null (lifted); anything else is named', () => {
    expect(validateBudgetOverrides({ caps: { garden_day_usd: 20, run_usd: null }, updated_at: '2026-12-02T08:00:00.000Z' })).toEqual([]);
    expect(validateBudgetOverrides({ caps: { run_usd: 'x' }, updated_at: '2026-12-02T08:00:00.000Z' })[0]).toMatchObject({ field: 'caps.run_usd' });
    expect(validateBudgetOverrides({ caps: { day_usd: 3 }, updated_at: '2026-12-02T08:00:00.000Z' }).length).toBeGreaterThan(0);
    expect(validateBudgetOverrides({ caps: { run_usd: -1 }, updated_at: '2026-12-02T08:00:00.000Z' }).length).toBeGreaterThan(0);
    expect(validateBudgetOverrides({ caps: {} })[0]).toMatchObject({ field: 'updated_at' });
  });

  it('budget.warned.json: the keys said', () => {
    expect(validateBudgetWarned({ said: ['garden_day:2026-12-02', 'goal:3-a'] })).toEqual([]);
    expect(validateBudgetWarned({ said: ['ok', 3] })[0]).toMatchObject({ field: 'said.1' });
    expect(validateBudgetWarned(['a'])[0]).toMatchObject({ code: 'INVALID_SHAPE' });
    expect(validateBudgetWarned({})[0]).toMatchObject({ code: 'MISSING_REQUIRED_FIELD', field: 'said' });
  });

  it('a goal\'s budget_usd is a positive amount (INVALID_BUDGET); a run\'s budget names the cap', () => {
    const goal = { id: '1-a', type: 'build', status: 'queued', priority: 50, body: 'x', submitted_at: '2026-12-02T08:00:00.000Z' };
    expect(validateGoal({ ...goal, budget_usd: 2.5 })).toEqual([]);
    expect(validateGoal({ ...goal, budget_usd: 0 })).toEqual([expect.objectContaining({ code: 'INVALID_BUDGET', field: 'budget_usd' })]);
    expect(validateGoal({ ...goal, budget_usd: 'lots' })).toEqual([expect.objectContaining({ code: 'INVALID_BUDGET', field: 'budget_usd' })]);
    const run = { id: '1-a-r1', goal: '1-a', plant: 'gardener', status: 'killed', started_at: '2026-12-02T08:00:00.000Z', completed_at: '2026-12-02T08:01:00.000Z', driver: 'claude', model: 'm', cost: { source: 'estimated', usd: 1.5 }, failure_reason: 'budget_exceeded' };
    expect(validateRun({ ...run, budget: { cap: 'run', cap_usd: 1.2, spent_usd: 1.5 } })).toEqual([]);
    expect(validateRun({ ...run, budget: { cap: 'run', cap_usd: -1, spent_usd: 1.5 } }).length).toBeGreaterThan(0);
  });
});
