/**
 * The record and its event are one, on both stores (issue 27, acceptance 1:
 * "every crash point of the record-then-event tests"): the coordinator is
 * killed with SIGKILL at each step where a record is written and its event
 * not yet (the files), or everything is written and nothing committed (a
 * store's transaction); after a restart every goal is closed, every state
 * has its event, every event its state, and no task ran twice.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { validateGoal, type EventRecord, type GoalRecord } from '../../../source/contracts/index.js';
import { loadGarden } from '../../../source/garden/index.js';
import { attachStore, createGoal, detachStore, listGoals, listRuns, readEvents } from '../../../source/store/index.js';
import { openPostgresStore, type PostgresStore } from '../../../source/store/postgres/store.js';
import { makeCrashGarden } from '../../reliability/crash-harness.js';
import { testDatabase } from '../../support/pg-test.js';

const PAK2_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../bin/pak2.js');

/** Where each store can die between a write and its event (the files) or before its commit (a store). */
const POINTS = {
  file: ['goal:dispatched:after-write', 'run:running:after-meta', 'run:success:after-seal', 'run:closed:after-event', 'goal:completed:after-write', 'goal:closed:after-write', 'goal:closed:after-ledger'],
  postgres: ['commit:RunStarted', 'commit:RunClosed', 'commit:GoalClosed', 'goal:dispatched:after-write', 'goal:completed:after-write', 'run:closed:after-event', 'goal:closed:after-event'],
} as const;

function cycle(root: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [PAK2_BIN, 'cycle', '--garden', root, '--no-ui', '--until-idle'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 90_000 });
}

/** Violations of "every state has its event, every event its state" in what the garden's store holds. */
async function violations(garden: ReturnType<typeof loadGarden>): Promise<string[]> {
  const found: string[] = [];
  const { events } = await readEvents(garden.paths);
  const { goals } = await listGoals(garden.paths);
  const { runs } = await listRuns(garden.paths);
  for (const goal of goals as GoalRecord[]) {
    if (validateGoal(goal).length) found.push(`goal ${goal.id} does not validate`);
    if (goal.status !== 'closed') found.push(`goal ${goal.id} is stuck ${goal.status}`);
    const chain = events.filter((e: EventRecord) => e.type === 'GoalTransitioned' && e.goal === goal.id);
    if ((chain.at(-1)?.to ?? 'queued') !== goal.status) found.push(`goal ${goal.id}: its last transition event says ${chain.at(-1)?.to}, the record ${goal.status}`);
    if (!events.some((e) => e.type === 'GoalSubmitted' && e.goal === goal.id)) found.push(`goal ${goal.id} has no GoalSubmitted`);
    if (goal.status === 'closed' && !events.some((e) => e.type === 'GoalClosed' && e.goal === goal.id)) found.push(`goal ${goal.id} has no GoalClosed`);
  }
  for (const run of runs) {
    if (!events.some((e) => e.type === 'RunStarted' && e.run === run.id)) found.push(`run ${run.id} has no RunStarted`);
    const closes = events.filter((e) => e.type === 'RunClosed' && e.run === run.id);
    if (run.status === 'running') found.push(`run ${run.id} is left running`);
    else if (closes.length !== 1) found.push(`run ${run.id} is ${run.status} with ${closes.length} RunClosed`);
  }
  for (const e of events) {
    if (e.type === 'RunStarted' && !runs.some((r) => r.id === e.run)) found.push(`RunStarted of ${e.run}, a run that does not exist`);
    if (!/^[0-9A-HJKMNP-TV-Z]{26}$/.test(e.id ?? '')) found.push(`event ${e.type} has no ULID`);
  }
  const ids = events.map((e) => e.id ?? '');
  if (ids.some((id, i) => i > 0 && id <= ids[i - 1]! && garden.config.storeUrl)) found.push('a store\'s event ids are out of commit order');
  return found;
}

describe.each(['file', 'postgres'] as const)('kill -9 between a write and its event, every crash point (%s)', (kind) => {
  it.each(POINTS[kind].map((p) => [p]))('%s: after a restart every state has its event and every event its state', async (point) => {
    const base = await makeCrashGarden();
    let store: PostgresStore | undefined;
    // Each point a database of its own: the checks read the whole garden.
    let pointDb: Awaited<ReturnType<typeof testDatabase>> | undefined;
    try {
      if (kind === 'postgres') {
        pointDb = await testDatabase('pak2_crash_point');
        fs.appendFileSync(path.join(base.root, 'PAK2.toml'), `\n[store]\nurl = ${JSON.stringify(pointDb.url)}\n`);
      }
      const garden = loadGarden(base.root);
      if (pointDb) {
        store = await openPostgresStore(pointDb.url);
        attachStore(garden.paths, store);
      }
      const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `crash at ${point}` });
      const crashed = cycle(base.root, { PAK2_CRASH_AT: point });
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      const restarted = cycle(base.root);
      expect(restarted.status, restarted.stderr).toBe(0);
      expect(await violations(garden)).toEqual([]);
      const { goals } = await listGoals(garden.paths);
      expect(goals.find((g) => g.id === goal.id)?.status).toBe('closed');
      // The task ran to a success once, whatever the crash cut.
      const { runs } = await listRuns(garden.paths);
      expect(runs.filter((r) => r.goal === goal.id && r.status === 'success').length).toBeLessThanOrEqual(1);
    } finally {
      if (store) {
        detachStore(loadGarden(base.root).paths);
        await store.close();
      }
      await pointDb?.drop();
      fs.rmSync(base.root, { recursive: true, force: true });
    }
  }, 180_000);
});
