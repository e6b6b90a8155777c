/**
 * Issue 25, item 10: closed goals written into goals/ outside pak2 (a tool,
 * a restore, a copy) with a recent closed_at are adopted into the closed
 * ledger in linear time: the ledger's new bytes are read and parsed once,
 * not once per adopted goal.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { GardenPaths } from '../../source/garden/index.js';
import { adoptionReads } from '../../source/store/closed-index.js';
import { createGoal, forgetClosedLedgers, goalFile, OpenGoalScanner, transitionGoal } from '../../source/store/index.js';
import { cleanupFixtures, makeGarden } from '../helpers/fixtures.js';
import { ledgerIds } from './ledger-support.js';

afterEach(() => cleanupFixtures());

/** Writes `count` closed goal files straight into goals/, closed `closedAt`, numbered from `from`. */
function writeClosedGoals(paths: GardenPaths, from: number, count: number, closedAt: string): string[] {
  const ids: string[] = [];
  for (let n = from; n < from + count; n += 1) {
    const id = `${n}-restored-goal`;
    ids.push(id);
    const record = { id, type: 'fix', status: 'closed', priority: 50, assigned_to: 'gardener', body: `body of ${id}`, submitted_at: '2024-01-01T00:00:00.000Z', closed_at: closedAt, closed_reason: 'success' };
    fs.writeFileSync(goalFile(paths, id), `${JSON.stringify(record, null, 2)}\n`);
  }
  return ids;
}

describe('goals written outside pak2 are adopted in linear time', () => {
  it('3,000 closed goals with a recent closed_at: one read of the ledger, each line parsed once, every goal listed once, none open', async () => {
    const garden = makeGarden();
    const { paths } = garden;
    // A ledger of pak2's own first: one goal closed the ordinary way.
    const own = await createGoal(paths, { type: 'fix', plant: 'gardener', body: 'closed by pak2' });
    await transitionGoal(paths, own.id, 'closed', { closedReason: 'cancelled' });
    forgetClosedLedgers();
    const count = 3000;
    const written = writeClosedGoals(paths, 100, count, new Date().toISOString());
    adoptionReads.reads = 0;
    adoptionReads.linesParsed = 0;

    const { goals, problems } = await new OpenGoalScanner(paths).scan();

    expect(problems).toEqual([]);
    expect(goals).toEqual([]);
    expect(ledgerIds(paths).sort()).toEqual([own.id, ...written].sort());
    // One read of what was appended since the ledger was read; before the fix, one per goal (3,000 reads, ~4.5 million lines).
    expect(adoptionReads.reads).toBe(1);
    expect(adoptionReads.linesParsed).toBeLessThanOrEqual(count);
    // Adopted for good: the next cold scan reads nothing more for them.
    forgetClosedLedgers();
    adoptionReads.reads = 0;
    expect((await new OpenGoalScanner(paths).scan()).goals).toEqual([]);
    expect(adoptionReads.reads).toBe(0);
    expect(ledgerIds(paths)).toHaveLength(count + 1);
  });
});
