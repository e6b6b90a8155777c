/** The startup note says how runs are taken: here, or by remote runners only (docs/runners/level2.md). */
import { afterEach, describe, expect, it } from 'vitest';
import { buildStartupNote } from '../../source/session/startup.js';
import { createGoal, transitionGoal } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('buildStartupNote', () => {
  it('names the runs at a time, or says remote runners take the goals when the garden runs none itself', async () => {
    const local = await makeTestGarden({ coordinator: { max_concurrent_runs: 2 } });
    cleanups.push(local.cleanup);
    expect(await buildStartupNote(local)).toContain('2 run(s) at a time');
    const remote = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 } });
    cleanups.push(remote.cleanup);
    const note = await buildStartupNote(remote);
    expect(note).toContain('no runs here: remote runners (pak2 runner) take the goals');
    expect(note).not.toContain('0 run(s)');
  });

  it('names the blocked chains by the dependency that failed (docs/goal/level2.md, "Dependencies")', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    const a = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build a' });
    const b = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build b', depends_on: [a.id] });
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build c', depends_on: [b.id] });
    expect(await buildStartupNote(garden)).not.toContain('Blocked');
    await transitionGoal(garden.paths, a.id, 'closed', { closedReason: 'cancelled' });
    expect(await buildStartupNote(garden)).toContain(`- Blocked: 2 goals blocked by ${a.id} (cancelled) — pak2 retry ${a.id}, pak2 depends GOAL --drop ${a.id}, or cancel`);
  });
});
