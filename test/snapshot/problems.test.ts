/**
 * The problems surface (issue 14): a malformed goal file is a problem in
 * the snapshot and drops out once fixed (the loader re-reads it);
 * coordinator errors reach the snapshot through `reportProblem`, deduped
 * and capped, until the source restarts or the line is reported fixed;
 * the workbench's session feeds its coordinator errors there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Session } from '../../source/session/index.js';
import { REPORTED_PROBLEMS_MAX, SnapshotSource } from '../../source/snapshot/index.js';
import { createGoal } from '../../source/store/index.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

async function source(g: Awaited<ReturnType<typeof garden>>) {
  const s = new SnapshotSource({ garden: g, coalesceMs: 20, tailPollMs: 50 });
  cleanups.push(() => s.stop());
  await s.start();
  return s;
}

describe('problems in the snapshot', () => {
  it('a malformed goal file appears as a problem naming the file, and disappears once fixed', async () => {
    const g = await garden();
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'will be broken' });
    const s = await source(g);
    expect(s.getSnapshot().problems).toEqual([]);
    const file = path.join(g.paths.goalsDir, `${goal.id}.json`);
    const good = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, '{not json');
    await waitFor(() => s.getSnapshot().problems.length === 1, 5_000);
    expect(s.getSnapshot().problems[0]).toContain(file);
    fs.writeFileSync(file, good);
    await waitFor(() => s.getSnapshot().problems.length === 0, 5_000);
    expect(s.getSnapshot().goals.map((r) => r.goal.id)).toContain(goal.id);
  });

  it('reportProblem: published at once, once per line, after the files’ problems, until reported fixed; capped at the newest', async () => {
    const g = await garden();
    fs.mkdirSync(g.paths.goalsDir, { recursive: true });
    const s = await source(g);
    const before = s.getSnapshot().version;
    s.reportProblem('coordinator: EACCES on goals/');
    s.reportProblem('coordinator: EACCES on goals/');
    expect(s.getSnapshot().problems).toEqual(['coordinator: EACCES on goals/']);
    expect(s.getSnapshot().version).toBe(before + 1);
    // A reload keeps it, after what the files say.
    fs.writeFileSync(path.join(g.paths.goalsDir, 'not-a-goal.json'), '{}');
    await waitFor(() => s.getSnapshot().problems.length === 2, 5_000);
    expect(s.getSnapshot().problems[0]).toContain('not-a-goal.json');
    expect(s.getSnapshot().problems[1]).toBe('coordinator: EACCES on goals/');
    s.reportProblem('coordinator: EACCES on goals/', { fixed: true });
    expect(s.getSnapshot().problems).toHaveLength(1);
    s.reportProblem('coordinator: never reported', { fixed: true });
    expect(s.getSnapshot().problems).toHaveLength(1);
    for (let i = 0; i < REPORTED_PROBLEMS_MAX + 5; i++) s.reportProblem(`coordinator: error ${i}`);
    const reported = s.getSnapshot().problems.filter((p) => p.startsWith('coordinator: '));
    expect(reported).toHaveLength(REPORTED_PROBLEMS_MAX);
    expect(reported.at(-1)).toBe(`coordinator: error ${REPORTED_PROBLEMS_MAX + 4}`);
    // A new source (a restart) starts with none.
    await s.stop();
    const again = await source(g);
    expect(again.getSnapshot().problems.filter((p) => p.startsWith('coordinator: '))).toEqual([]);
  });

  it('the workbench session feeds coordinator errors to its snapshot source', async () => {
    const g = await garden();
    // The startup note cannot be delivered: where the conversations directory belongs, a file.
    fs.mkdirSync(path.dirname(g.paths.conversationsDir), { recursive: true });
    fs.writeFileSync(g.paths.conversationsDir, 'not a directory');
    const errors: string[] = [];
    const session = new Session({ garden: g, command: 'test workbench', onStderr: () => undefined, onError: (e) => errors.push(e.message) });
    cleanups.push(() => session.close());
    await session.open();
    await waitFor(() => session.source!.getSnapshot().problems.some((p) => p.startsWith('coordinator: startup note not delivered')), 5_000);
    expect(errors.some((e) => e.startsWith('startup note not delivered'))).toBe(true);
  });
});
