import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile, type DispatchFn } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import type { Garden } from '../../source/garden/index.js';
import { closeRun, createGoal, OpenGoalScanner, openRun, readGoal, readRun, runEventsFile, transitionGoal } from '../../source/store/index.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
afterEach(() => garden?.cleanup());

const realDispatch = (g: Garden): DispatchFn => (goal, runId) => dispatch(goal, runId, { garden: g });

describe('reconcile: dispatch phase', () => {
  it('dispatches a queued goal through the seed transitions and events, then closes it on the next phase', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Make a thing' });
    const summary = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });

    expect(summary.dispatched).toEqual([`${goal.id}-r1`]);
    expect(summary.closed).toEqual([{ goal: goal.id, reason: 'success' }]);
    const closed = await readGoal(garden.paths, goal.id);
    expect(closed.status).toBe('closed');
    expect(closed.closed_reason).toBe('success');
    const run = await readRun(garden.paths, `${goal.id}-r1`);
    expect(run.status).toBe('success');
    expect(run.reflection).toMatch(/^Learned: the prompt was \d+ characters long\.$/);
    expect(run.cost).toEqual({ source: 'provider', usd: 0.021 });

    const events = readEventLog(garden).map((e) => [e.type, e.from ?? '', e.to ?? '', e.status ?? '']);
    expect(events).toEqual([
      ['PlantCommissioned', '', '', ''],
      ['GoalSubmitted', '', '', ''],
      ['GoalTransitioned', 'queued', 'dispatched', ''],
      ['RunStarted', '', '', ''],
      ['GoalTransitioned', 'dispatched', 'running', ''],
      ['ReflectionRequested', '', '', ''],
      ['ReflectionRecorded', '', '', ''],
      ['RunClosed', '', '', 'success'],
      ['GoalTransitioned', 'running', 'completed', ''],
      ['GoalTransitioned', 'completed', 'closed', ''],
      ['GoalClosed', '', '', ''],
    ]);
  });

  it('dispatches by priority, then age, and respects max_concurrent_runs', async () => {
    garden = await makeTestGarden();
    const low = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'low', priority: 10 }, new Date('2026-01-01T00:00:00Z'));
    const highNew = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'high new', priority: 90 }, new Date('2026-01-03T00:00:00Z'));
    const highOld = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'high old', priority: 90 }, new Date('2026-01-02T00:00:00Z'));
    const order: string[] = [];
    const record: DispatchFn = async (goal) => {
      order.push(goal.id);
    };
    const first = await reconcile({ garden, dispatch: record });
    expect(first.dispatched).toEqual([`${highOld.id}-r1`]);
    expect(first.queued).toBe(2);
    // The run is still `running`: nothing more dispatches while the slot is taken.
    const second = await reconcile({ garden, dispatch: record });
    expect(second.dispatched).toEqual([]);
    await closeRun(garden.paths, `${highOld.id}-r1`, 'spike', { status: 'success', cost: { source: 'unknown' } });
    const third = await reconcile({ garden, dispatch: record });
    expect(third.closed).toEqual([{ goal: highOld.id, reason: 'success' }]);
    expect(third.dispatched).toEqual([`${highNew.id}-r1`]);
    expect(order).toEqual([highOld.id, highNew.id]);
    expect((await readGoal(garden.paths, low.id)).status).toBe('queued');
  });

  it('skips goals without assigned_to and leaves them queued', async () => {
    garden = await makeTestGarden();
    const orphan = await createGoal(garden.paths, { type: 'build', body: 'nobody owns me' });
    const summary = await reconcile({ garden, dispatch: realDispatch(garden) });
    expect(summary.skipped).toEqual([orphan.id]);
    expect(summary.dispatched).toEqual([]);
    expect((await readGoal(garden.paths, orphan.id)).status).toBe('queued');
  });

  it('a goal whose plant does not exist waits untouched: no write, no run, one GoalBlocked event however many passes', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'nobody', body: 'for a plant that does not exist' });
    const goalFile = path.join(garden.paths.goalsDir, `${goal.id}.json`);
    const before = fs.statSync(goalFile).mtimeMs;
    let called = false;
    for (let pass = 0; pass < 3; pass += 1) {
      // The automatic queued_attention_needed tend may dispatch; this goal must not.
      const summary = await reconcile({ garden, dispatch: async (g) => void (called ||= g.id === goal.id) });
      expect(summary.blocked).toEqual([{ goal: goal.id, reason: expect.stringContaining('no plant nobody') }]);
      expect(summary.rolledBack).toEqual([]);
    }
    expect(called).toBe(false);
    expect((await readGoal(garden.paths, goal.id)).status).toBe('queued');
    expect(fs.statSync(goalFile).mtimeMs).toBe(before);
    const log = readEventLog(garden);
    expect(log.filter((e) => e.type === 'GoalTransitioned' && e.goal === goal.id)).toEqual([]);
    expect(log.filter((e) => e.type === 'GoalBlocked').map((e) => e.goal)).toEqual([goal.id]);
    expect(fs.existsSync(path.join(garden.paths.runsDir, `${goal.id}-r1`))).toBe(false);
  });

  it('rolls the goal back to queued when opening the run fails (the runs directory is a file)', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'cannot open a run' });
    fs.rmSync(garden.paths.runsDir, { recursive: true, force: true });
    fs.writeFileSync(garden.paths.runsDir, 'not a directory');
    let called = false;
    const summary = await reconcile({ garden, dispatch: async () => void (called = true) });
    expect(called).toBe(false);
    expect(summary.rolledBack).toEqual([{ goal: goal.id, reason: expect.stringMatching(/EEXIST|ENOTDIR|not a directory/) }]);
    expect((await readGoal(garden.paths, goal.id)).status).toBe('queued');
    const transitions = readEventLog(garden).filter((e) => e.type === 'GoalTransitioned').map((e) => `${e.from}>${e.to}`);
    expect(transitions).toEqual(['queued>dispatched', 'dispatched>queued']);
  });

  it('never reads the contents of closed goals', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'short' });
    await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
    expect((await readGoal(garden.paths, goal.id)).status).toBe('closed');
    // If a pass opened this file it would report it as malformed.
    fs.writeFileSync(path.join(garden.paths.goalsDir, `${goal.id}.json`), '{ not json');
    const cold = await reconcile({ garden, dispatch: realDispatch(garden), scanner: new OpenGoalScanner(garden.paths) });
    expect(cold.problems).toEqual([]);
  });

  it('reports a malformed open goal file by name and goes on with the rest', async () => {
    garden = await makeTestGarden();
    fs.mkdirSync(garden.paths.goalsDir, { recursive: true });
    fs.writeFileSync(path.join(garden.paths.goalsDir, '7-broken.json'), '{"id": "7-broken"');
    const good = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'fine' });
    const summary = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
    expect(summary.problems).toEqual([{ file: path.join(garden.paths.goalsDir, '7-broken.json'), message: expect.stringContaining('malformed JSON') }]);
    expect(summary.closed.map((c) => c.goal)).toEqual([good.id]);
    expect(fs.readFileSync(path.join(garden.paths.goalsDir, '7-broken.json'), 'utf8')).toBe('{"id": "7-broken"');
  });

  it('recovers a goal left dispatched without a run (a crash between writes)', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'crashed' });
    await transitionGoal(garden.paths, goal.id, 'dispatched');
    const summary = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
    expect(summary.dispatched).toEqual([`${goal.id}-r1`]);
    expect((await readGoal(garden.paths, goal.id)).status).toBe('closed');
  });
});

describe('reconcile: watchdog', () => {
  async function runningGoal(g: Garden, startedAt: Date) {
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'silent work' }, startedAt);
    await transitionGoal(g.paths, goal.id, 'dispatched', { now: startedAt });
    const run = await openRun(g.paths, goal, { plant: 'gardener', driver: 'success', model: 'default' }, startedAt);
    await transitionGoal(g.paths, goal.id, 'running', { now: startedAt });
    return { goal, run };
  }

  it('kills a run whose events.jsonl has been silent past watchdog_seconds, and closes the goal as failure', async () => {
    garden = await makeTestGarden({ coordinator: { watchdog_seconds: 300 } });
    const start = new Date('2026-03-01T10:00:00Z');
    const { goal, run } = await runningGoal(garden, start);
    const events = runEventsFile(garden.paths, run.id);
    fs.writeFileSync(events, '{"type":"text","text":"hi"}\n');
    const last = new Date('2026-03-01T10:10:00Z');
    fs.utimesSync(events, last, last);

    const notYet = await reconcile({ garden, dispatch: async () => undefined, now: () => new Date('2026-03-01T10:14:59Z') });
    expect(notYet.killed).toEqual([]);
    // Started 20 minutes ago, but alive 5 min 1 s ago: the file's mtime decides, not started_at.
    const summary = await reconcile({ garden, dispatch: async () => undefined, now: () => new Date('2026-03-01T10:15:01Z') });
    expect(summary.killed).toEqual([run.id]);
    const killed = await readRun(garden.paths, run.id);
    expect(killed).toMatchObject({ status: 'killed', failure_reason: 'killed', cost: { source: 'unknown' } });
    expect(summary.closed).toEqual([{ goal: goal.id, reason: 'failure' }]);
    expect(readEventLog(garden).some((e) => e.type === 'WatchdogKilled' && e.run === run.id)).toBe(true);
  });

  it('falls back to started_at when events.jsonl does not exist yet', async () => {
    garden = await makeTestGarden({ coordinator: { watchdog_seconds: 60 } });
    const start = new Date('2026-03-01T10:00:00Z');
    const { run } = await runningGoal(garden, start);
    expect(fs.existsSync(runEventsFile(garden.paths, run.id))).toBe(false);
    const alive = await reconcile({ garden, dispatch: async () => undefined, now: () => new Date('2026-03-01T10:00:59Z') });
    expect(alive.killed).toEqual([]);
    const dead = await reconcile({ garden, dispatch: async () => undefined, now: () => new Date('2026-03-01T10:01:01Z') });
    expect(dead.killed).toEqual([run.id]);
    expect((await readRun(garden.paths, run.id)).status).toBe('killed');
  });
});
