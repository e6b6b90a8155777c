import { describe, expect, it } from 'vitest';
import type { GoalRow } from '../../source/snapshot/index.js';
import { filterRows, matchesFilter } from '../../source/ui/panes/goal-queue.js';
import { goal } from './fixtures.js';

const rows: GoalRow[] = [
  { goal: goal(1, { body: 'Fix the flaky PARSER test' }), run: undefined },
  { goal: goal(2, { body: 'Render the queue' }), run: undefined },
  { goal: goal(3, { body: 'Ünïcode Parsér in the body' }), run: undefined },
  { goal: goal(4, { body: 'ΟΔΟΣ and the parse step', assigned_to: 'Ops' }), run: undefined },
  { goal: goal(5, { body: 'nothing here', type: 'fix' }), run: undefined },
];
const ids = (list: readonly GoalRow[]) => list.map((row) => row.goal.id.split('-')[0]);
const naive = (list: readonly GoalRow[], filter: string) =>
  list.filter((row) => [row.goal.id, row.goal.type, row.goal.assigned_to ?? '', row.goal.status, row.goal.body].some((field) => field.toLowerCase().includes(filter.toLowerCase())));

describe('the goal filter', () => {
  it('matches id, type, plant, status and body without regard to case, as lower-casing both would', () => {
    for (const filter of ['pars', 'PARSER', 'parsé', 'ünï', 'οδος', 'ops', 'FIX', 'queued', '4-goal', '.', '(', 'ς']) {
      expect(ids(rows.filter((row) => matchesFilter(row, filter))), filter).toEqual(ids(naive(rows, filter)));
    }
  });

  it('typing more looks at the last matches; a backspace or a new snapshot filters every row again; no filter is the rows themselves', () => {
    expect(filterRows(rows, '')).toBe(rows);
    let shown = '';
    for (const filter of ['p', 'pa', 'par', 'pars', 'parse', 'pars', 'par', 'x', '', 'ren', 'rend']) {
      expect(ids(filterRows(rows, filter)), `${shown} -> ${filter}`).toEqual(ids(naive(rows, filter)));
      shown = filter;
    }
    const next = rows.slice(1);
    expect(ids(filterRows(rows, 'fix'))).toEqual(['1', '5']);
    expect(ids(filterRows(next, 'fix '))).toEqual(ids(naive(next, 'fix ')));
  });
});
