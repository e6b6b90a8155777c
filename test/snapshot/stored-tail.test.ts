/**
 * The readers of a run's agent stream on a PostgreSQL garden (issue 27):
 * the snapshot's run tail and the budget's live spend read the store's
 * copy, so a run of another machine (no events.jsonl here) is shown live.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { budgetReport, SnapshotSource } from '../../source/snapshot/index.js';
import { appendRunStream, createGoal, openRun, runStreamFile, transitionGoal } from '../../source/store/index.js';
import { waitFor } from '../support/garden.js';
import { gardenOn } from '../store/contract/stores.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('stream readers on a PostgreSQL garden', () => {
  it('the run tail follows the store’s copy as it grows, a line split across appends shown whole; the budget meters it', async () => {
    const garden = await gardenOn('postgres');
    cleanups.push(() => garden.cleanup());
    const { paths } = garden;
    const goal = await createGoal(paths, { type: 'spike', plant: 'gardener', body: 'elsewhere' });
    await transitionGoal(paths, goal.id, 'dispatched');
    await transitionGoal(paths, goal.id, 'running');
    const run = await openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'm' });
    let size = 0;
    const append = async (text: string) => {
      size = (await appendRunStream(paths, run.id, 'events', size, Buffer.from(text))).size;
    };
    await append(`${JSON.stringify({ type: 'text', text: 'first from another machine' })}\n{"type":"text","te`);

    const source = new SnapshotSource({ garden, readOnly: true, tailPollMs: 20 });
    cleanups.push(() => source.stop());
    await source.start();
    source.follow(run.id);
    const texts = () => source.getSnapshot().tail?.lines.map((l) => l.text) ?? [];
    await waitFor(() => texts().includes('first from another machine'));
    await append('xt":"second, completed later"}\n');
    await waitFor(() => texts().includes('second, completed later'));
    expect(source.getSnapshot().tail).toMatchObject({ runId: run.id, bytes: size, truncated: false });
    expect(fs.existsSync(runStreamFile(paths, run.id, 'events'))).toBe(false);

    // The budget's live spend of the run, from the same copy (the command driver's meter reads cost_usd).
    await append(`${JSON.stringify({ type: 'result', status: 'success', text: 'done', cost_usd: 0.25 })}\n`);
    const report = await budgetReport(garden);
    expect(report.live).toEqual([{ run: run.id, goal: goal.id, plant: 'gardener', usd: 0.25, source: expect.any(String) }]);
  });
});
