import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { runDir } from '../../source/garden/index.js';
import { createGoal, listRuns, readRun, transitionGoal } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('a kill between openRun making the attempt directory and writing its record', () => {
  it('leaves an empty directory that the next start removes: the goal runs as r1, no run is unreadable', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const goal = await createGoal(garden.paths, { type: 'spike', body: 'interrupted start', plant: 'gardener' });
    await transitionGoal(garden.paths, goal.id, 'dispatched');
    fs.mkdirSync(runDir(garden.paths, `${goal.id}-r1`), { recursive: true });
    const coordinator = new Coordinator({ garden, onStderr: () => undefined });
    await coordinator.start();
    try {
      await coordinator.untilIdle();
    } finally {
      await coordinator.stop();
    }
    expect((await readRun(garden.paths, `${goal.id}-r1`)).status).toBe('success');
    expect((await listRuns(garden.paths)).problems).toEqual([]);
  });
});
