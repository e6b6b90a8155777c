import { afterEach, describe, expect, it } from 'vitest';
import {
  appendComment,
  createGoal,
  closeRun,
  listGoals,
  listRuns,
  OpenGoalScanner,
  openRun,
  readComments,
  readEvents,
  readGoal,
  readRun,
  recentClosedIds,
  runIdsForGoal,
  StoreError,
  transitionGoal,
} from '../../../source/store/index.js';
import { gardenOn, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: records (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('a goal is created with the next N and GoalSubmitted, read back whole, and moves along its state machine with its events', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const a = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'first goal', priority: 60 });
    const b = await createGoal(paths, { type: 'fix', body: 'second goal' });
    expect(a.id).toBe('1-first-goal');
    expect(b.id).toBe('2-second-goal');
    expect(await readGoal(paths, a.id)).toEqual(a);
    await transitionGoal(paths, a.id, 'dispatched');
    await expect(transitionGoal(paths, a.id, 'completed')).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });
    await expect(readGoal(paths, '99-none')).rejects.toMatchObject({ code: 'GOAL_NOT_FOUND' });
    await expect(transitionGoal(paths, b.id, 'closed')).rejects.toMatchObject({ code: 'MISSING_CLOSED_REASON' });
    await transitionGoal(paths, b.id, 'closed', { closedReason: 'cancelled' });
    const { goals } = await listGoals(paths);
    expect(goals.map((g) => [g.id, g.status])).toEqual([
      ['1-first-goal', 'dispatched'],
      ['2-second-goal', 'closed'],
    ]);
    const open = await new OpenGoalScanner(paths).scan();
    expect(open.goals.map((g) => g.id)).toEqual(['1-first-goal']);
    expect(await recentClosedIds(paths, 5)).toEqual(['2-second-goal']);
    const { events } = await readEvents(paths);
    expect(events.filter((e) => e.goal).map((e) => [e.type, e.goal, e.to ?? e.reason ?? null])).toEqual([
      ['GoalSubmitted', '1-first-goal', null],
      ['GoalSubmitted', '2-second-goal', null],
      ['GoalTransitioned', '1-first-goal', 'dispatched'],
      ['GoalTransitioned', '2-second-goal', 'closed'],
      ['GoalClosed', '2-second-goal', 'cancelled'],
    ]);
    const ids = events.map((e) => e.id);
    expect([...ids].sort()).toEqual(ids);
  });

  it('a run opens as the next attempt with RunStarted, closes once with RunClosed, and its terminal record is never rewritten', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const goal = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'run me' });
    const r1 = await openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'm' });
    const r2 = await openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'm' });
    expect([r1.id, r2.id]).toEqual(['1-run-me-r1', '1-run-me-r2']);
    expect(await runIdsForGoal(paths, goal.id)).toEqual([r1.id, r2.id]);
    const closed = await closeRun(paths, r1.id, 'build', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' }, exitCode: 3 });
    expect(await readRun(paths, r1.id)).toEqual(closed);
    await expect(closeRun(paths, r1.id, 'build', { status: 'success', cost: { source: 'unknown' }, reflection: 'x' })).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });
    expect((await readRun(paths, r1.id)).status).toBe('failure');
    await expect(readRun(paths, '1-run-me-r9')).rejects.toBeInstanceOf(StoreError);
    const { runs } = await listRuns(paths);
    expect(runs.map((r) => [r.id, r.status])).toEqual([
      [r1.id, 'failure'],
      [r2.id, 'running'],
    ]);
    const { events } = await readEvents(paths);
    expect(events.filter((e) => e.run).map((e) => [e.type, e.run, e.status ?? null])).toEqual([
      ['RunStarted', r1.id, null],
      ['RunStarted', r2.id, null],
      ['RunClosed', r1.id, 'failure'],
    ]);
  });

  it('comments are kept in the order written', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const goal = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'talk' });
    const q = await appendComment(paths, { goal: goal.id, author: 'agent', body: 'which way?', blocking: true });
    await appendComment(paths, { goal: goal.id, author: 'operator', body: 'left', blocking: false, answers: q.id });
    expect((await readComments(paths, goal.id)).map((c) => c.body)).toEqual(['which way?', 'left']);
    expect(await readComments(paths, '9-nothing')).toEqual([]);
  });
});

describe.each(STORE_KINDS)('store contract: server tokens (%s)', (kind) => {
  it('a token made on one server is accepted by another of the same garden, and a revoke ends it on both', async () => {
    const { createToken, revokeToken, TokenBook } = await import('../../../source/server/tokens.js');
    const garden = await gardenOn(kind);
    try {
      const made = await createToken(garden.paths, { role: 'runner', name: 'box-1' });
      // Two servers' books: the same garden (on the files, the same runtime root).
      const a = new TokenBook(garden.paths, 'file-token-a');
      const b = new TokenBook(garden.paths, 'file-token-b');
      expect(await a.callerOf(`Bearer ${made.token}`)).toEqual({ name: 'box-1', role: 'runner' });
      expect(await b.callerOf(`Bearer ${made.token}`)).toEqual({ name: 'box-1', role: 'runner' });
      await revokeToken(garden.paths, 'box-1');
      const fresh = new TokenBook(garden.paths, 'file-token-c');
      expect(await fresh.callerOf(`Bearer ${made.token}`)).toBeUndefined();
      await expect(revokeToken(garden.paths, 'box-1')).rejects.toThrow(/already revoked/);
    } finally {
      await garden.cleanup();
    }
  });
});
