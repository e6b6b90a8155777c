/**
 * Store contract: the operator's control of automatic tends
 * (docs/automatic-tend/level2.md, "Operator control") — the pause
 * (tend.json), the TendWithheld trace and the noted set, and today's count
 * of automatic tends from the goal records, open and closed — the same on
 * the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { automaticTendsToday, createTendGoal, decideTends, queueTends, readAttentionNoted, readTendControl } from '../../../source/coordinator/index.js';
import { createGoal, readEvents, readGoal, readTendState, transitionGoal } from '../../../source/store/index.js';
import { setTendsPaused } from '../../../source/submit/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: tend control (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('pause and resume are kept (tend.json) with their events; pausing twice writes nothing; a damaged record is never written over', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const at = new Date('2026-05-01T10:00:00.000Z');
    expect(await readTendState(paths)).toBeUndefined();
    expect(await setTendsPaused(garden, true, 'ops', at)).toEqual({ paused: true, changed: true, woke: false });
    expect(await setTendsPaused(garden, true, 'ops', at)).toMatchObject({ changed: false });
    expect(await readTendState(paths)).toEqual({ paused: true, updated_at: at.toISOString(), by: 'ops' });
    expect((await readTendControl(garden, [], at)).paused).toBe('paused by ops at 2026-05-01T10:00:00.000Z');
    await setTendsPaused(garden, false, 'ops', at);
    expect((await readTendControl(garden, [], at)).paused).toBeUndefined();
    expect((await readEvents(paths)).events.filter((e) => e.type.startsWith('Tends')).map((e) => [e.type, e.detail])).toEqual([
      ['TendsPaused', 'automatic tends paused by ops'],
      ['TendsResumed', 'automatic tends resumed by ops'],
    ]);
    await putRaw(garden, { kind: 'tend', key: 'garden', file: 'tend.json' }, { paused: 'yes' });
    expect((await readTendControl(garden, [], at)).paused).toMatch(/^tend\.json cannot be read: /);
    await expect(setTendsPaused(garden, true)).rejects.toThrow(/^tend\.json cannot be read/);
  });

  it('a withheld tend is one TendWithheld event, and the noted set is saved with it', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const open = [{ id: '4-d', type: 'build' as const, status: 'queued' as const }];
    const control = { triggers: { run_failure: true, queued_attention_needed: true }, priority: 70, today: 0, paused: 'paused by ops at x' };
    const decision = decideTends({
      closed: [{ goal: { id: '3-c', type: 'build' }, run: { id: '3-c-r1', status: 'failure', failure_reason: 'agent_error' as never } }],
      stuck: [{ goal: '4-d', reason: 'no assigned_to' }],
      open,
      attentionCovered: [],
      control,
    });
    expect(await queueTends(garden, decision, [], new Date('2026-05-01T10:00:00.000Z'), [])).toEqual([]);
    expect((await readEvents(paths)).events.filter((e) => e.type === 'TendWithheld').map((e) => [e.goal ?? null, e.run ?? null, e.reason])).toEqual([
      ['3-c', '3-c-r1', 'paused'],
      [null, null, 'paused'],
    ]);
    expect(await readAttentionNoted(paths)).toEqual(['4-d']);
    await putRaw(garden, { kind: 'tend-withheld', key: 'garden', file: 'coordinator.tend-withheld.json' }, { not: 'a list' });
    expect(await readAttentionNoted(paths)).toEqual([]);
  });

  it("today's automatic tends are counted from the goals, open and closed (a fresh cache: as after a restart)", async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const now = new Date();
    const first = await createTendGoal(garden, { trigger: 'run_failure', key: 'run_failure:1-a', origin: { goal: '1-a' } }, now);
    const second = await createTendGoal(garden, { trigger: 'queued_attention_needed', key: 'queued_attention_needed', origin: { goals: [] } }, now);
    // A tend without automatic metadata, and an ordinary goal: not counted.
    await createGoal(paths, { type: 'tend', plant: 'gardener', body: 'a survey by hand' }, now);
    await createGoal(paths, { type: 'build', plant: 'gardener', body: 'work' }, now);
    await transitionGoal(paths, first.id, 'closed', { closedReason: 'cancelled', now });
    const open = [second];
    expect(await automaticTendsToday(paths, open, now, 'UTC')).toBe(2);
    const cache = new Map();
    expect(await automaticTendsToday(paths, open, now, 'UTC', cache)).toBe(2);
    expect(cache.get(first.id)).toBe(now.toISOString().slice(0, 10));
    expect(await automaticTendsToday(paths, open, new Date(now.getTime() + 86_400_000), 'UTC')).toBe(0);
    // The closed goals a caller holds (the queue's shown ones, newest first) count the same, whole records or ledger summaries.
    const closed = await readGoal(paths, first.id);
    expect(await automaticTendsToday(paths, open, now, 'UTC', new Map(), [closed])).toBe(2);
    expect(await automaticTendsToday(paths, open, now, 'UTC', new Map(), [{ ...closed, body: '', tend: undefined }])).toBe(2);
  });
});
