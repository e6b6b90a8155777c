/**
 * What a retry carries (docs/goal/level2.md, "Retry"), on the file store and
 * on PostgreSQL: a conversation-origin goal keeps its conversation and its
 * operator's supplements; a tend its `tend` payload; a driver given alone
 * drops the old driver's model and effort ({@link retrySettings}).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { appendGoalSupplement, createGoal, openConversation, readGoal, readSupplements, transitionGoal } from '../../source/store/index.js';
import { retryGoal, retrySettings } from '../../source/submit/index.js';
import { gardenOn, STORE_KINDS } from '../store/contract/stores.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function close(paths: Parameters<typeof transitionGoal>[0], id: string, reason: 'failure' | 'cancelled') {
  if (reason === 'failure') for (const to of ['dispatched', 'running', 'completed'] as const) await transitionGoal(paths, id, to);
  await transitionGoal(paths, id, 'closed', { closedReason: reason });
}

describe.each(STORE_KINDS)('retryGoal on %s', (kind) => {
  it('a conversation-origin goal: the retry answers the same conversation and carries the supplements, in order, with their times', async () => {
    const garden = await gardenOn(kind);
    cleanups.push(garden.cleanup);
    const conversation = await openConversation(garden.paths, 'operator');
    const old = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build the export', conversation_id: conversation.id });
    await appendGoalSupplement(garden.paths, old.id, 'use CSV', 'operator', new Date('2026-05-01T10:00:00.000Z'));
    await appendGoalSupplement(garden.paths, old.id, 'and UTF-8', 'operator', new Date('2026-05-01T10:01:00.000Z'));
    await close(garden.paths, old.id, 'cancelled');
    const { goal } = await retryGoal(garden, old.id);
    expect(goal).toMatchObject({ conversation_id: conversation.id, retry_of: old.id, status: 'queued' });
    expect((await readSupplements(garden.paths, goal.id)).map((s) => [s.text, s.ts])).toEqual([
      ['use CSV', '2026-05-01T10:00:00.000Z'],
      ['and UTF-8', '2026-05-01T10:01:00.000Z'],
    ]);
    // The old goal's own supplements are as they were.
    expect(await readSupplements(garden.paths, old.id)).toHaveLength(2);
  });

  it('a tend keeps its trigger payload; a failed goal is retried and the old one stays closed failure', async () => {
    const garden = await gardenOn(kind);
    cleanups.push(garden.cleanup);
    const tend = { trigger: 'run_failure', key: 'run_failure:3-fix-r1', origin: { goal: '3-fix', run: '3-fix-r1', status: 'failure' } };
    const old = await createGoal(garden.paths, { type: 'tend', plant: 'gardener', body: 'Look at the failure', priority: 70, tend });
    await close(garden.paths, old.id, 'failure');
    const { goal } = await retryGoal(garden, old.id);
    expect(goal).toMatchObject({ type: 'tend', priority: 70, tend, retry_of: old.id });
    expect(await readGoal(garden.paths, goal.id)).toMatchObject({ tend });
    expect(await readGoal(garden.paths, old.id)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
  });

  it('a goal no one could run (a chat reply in a runners-only garden) is not retried, as submit would not queue it', async () => {
    const garden = await gardenOn(kind, { coordinator: { max_concurrent_runs: 0 } });
    cleanups.push(garden.cleanup);
    const conversation = await openConversation(garden.paths, 'operator');
    const old = await createGoal(garden.paths, { type: 'converse', plant: 'gardener', body: 'hello?', conversation_id: conversation.id });
    await close(garden.paths, old.id, 'cancelled');
    await expect(retryGoal(garden, old.id)).rejects.toThrow(new RegExp(`^goal ${old.id}: not retried; nobody could take it: this garden's coordinator runs no goals`));
  });
});

describe('retrySettings', () => {
  const old = { driver: 'claude', model: 'opus', reasoning_effort: 'high' };
  it.each([
    [{}, { driver: 'claude', model: 'opus', reasoning_effort: 'high' }],
    [{ model: 'sonnet' }, { driver: 'claude', model: 'sonnet', reasoning_effort: 'high' }],
    [{ driver: 'claude' }, { driver: 'claude', model: 'opus', reasoning_effort: 'high' }],
    [{ driver: 'codex' }, { driver: 'codex' }],
    [{ driver: 'codex', model: 'gpt-5.5' }, { driver: 'codex', model: 'gpt-5.5' }],
  ])('%j over claude/opus/high gives %j', (options, expected) => {
    expect(retrySettings(old, options)).toEqual(expected);
  });
  it('a goal on the defaults stays on them; a model alone is kept', () => {
    expect(retrySettings({}, {})).toEqual({});
    expect(retrySettings({ model: 'm' }, { driver: 'codex' })).toEqual({ driver: 'codex' });
  });
});
