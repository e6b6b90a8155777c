/**
 * The write and its event are one (issue 11, item 2; docs/coordinator/level2.md,
 * "Crash recovery"): the coordinator is killed with SIGKILL at each step
 * between a record's write and its event — every goal transition, a run's
 * open and close — then restarted; every state on disk then has its event,
 * and no event describes a write that did not happen.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createGoal } from '../../source/store/index.js';
import { checkWorld, makeCrashGarden } from './crash-harness.js';

const PAK2_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/pak2.js');

const POINTS = [
  'goal:dispatched:after-write',
  'run:running:after-seal',
  'run:running:after-meta',
  'goal:running:after-write',
  'run:success:after-seal',
  'run:success:after-meta',
  'run:closed:after-event',
  'goal:completed:after-write',
  'goal:closed:after-write',
  'goal:closed:after-event',
  'goal:closed:after-ledger',
];

function cycle(root: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [PAK2_BIN, 'cycle', '--garden', root, '--no-ui', '--until-idle'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
}

describe('kill -9 between a write and its event, at every step', () => {
  it.each(POINTS.map((p) => [p]))('%s: after a restart every state has its event and every event its state', async (point) => {
    const garden = await makeCrashGarden();
    try {
      const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `crash at ${point}` });
      const crashed = cycle(garden.root, { PAK2_CRASH_AT: point });
      expect(crashed.signal).toBe('SIGKILL');
      const restarted = cycle(garden.root);
      expect(restarted.status, restarted.stderr).toBe(0);
      const world = await checkWorld(garden);
      expect(world.violations).toEqual([]);
      // Every event about the goal describes a state the files hold: its transitions end where the file is.
      const events = fs.readFileSync(garden.paths.coordinatorLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
      const recovered = events.filter((e) => e.detail?.startsWith('recovered:'));
      const goalFile = JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, `${goal.id}.json`), 'utf8')) as { status: string };
      expect(goalFile.status).toBe('closed');
      for (const e of events) expect(e.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      if (point.endsWith('after-write') || point === 'goal:closed:after-ledger' || point === 'run:running:after-meta' || point === 'run:success:after-meta' || point === 'run:success:after-seal') expect(recovered.length).toBeGreaterThan(0);
    } finally {
      fs.rmSync(garden.root, { recursive: true, force: true });
    }
  }, 120_000);
});
