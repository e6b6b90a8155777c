/**
 * Store contract (issue 27): the coordinator's runtime state besides goals
 * and runs — the blocked goals reported (coordinator.blocked.json), the
 * stuck goals an automatic tend covered (coordinator.tend-attention.json) —
 * and a dashboard session's invocation record, with their events, the same
 * on the files and on PostgreSQL.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readBlocked, reportBlocked } from '../../../source/coordinator/blocked.js';
import { queueTends, readAttentionCovered } from '../../../source/coordinator/tend-policy.js';
import { startDashboardInvocation } from '../../../source/lifecycle/dashboard-invocations.js';
import { listDashboardInvocations, readDashboardInvocation, readEvents, readGoal, writeDashboardInvocation } from '../../../source/store/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: coordinator state (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('a blocked goal is reported once per reason (GoalBlocked), kept across reads, and drops out when no longer blocked', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const now = new Date('2026-05-01T10:00:00.000Z');
    expect(await readBlocked(paths)).toEqual({});
    await reportBlocked(paths, [{ goal: '1-a', reason: 'budget: garden_day_usd reached' }, { goal: '2-b', reason: 'dependency 1-a is queued' }], now);
    await reportBlocked(paths, [{ goal: '1-a', reason: 'budget: garden_day_usd reached' }, { goal: '2-b', reason: 'dependency 1-a is queued' }], now);
    expect(await readBlocked(paths)).toEqual({ '1-a': 'budget: garden_day_usd reached', '2-b': 'dependency 1-a is queued' });
    await reportBlocked(paths, [{ goal: '1-a', reason: 'plant scout is paused', code: 'plant' }], now);
    expect(await readBlocked(paths)).toEqual({ '1-a': 'plant scout is paused' });
    await reportBlocked(paths, [], now);
    expect(await readBlocked(paths)).toEqual({});
    const blocked = (await readEvents(paths)).events.filter((e) => e.type === 'GoalBlocked');
    expect(blocked.map((e) => [e.goal, e.reason ?? null])).toEqual([
      ['1-a', null],
      ['2-b', 'dependency'],
      ['1-a', 'plant'],
    ]);
  });

  it('a damaged blocked record reads as none, with one problem naming coordinator.blocked.json', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    await putRaw(garden, { kind: 'coordinator-blocked', key: 'garden', file: 'coordinator.blocked.json' }, ['1-a']);
    const problems: string[] = [];
    expect(await readBlocked(garden.paths, problems)).toEqual({});
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('coordinator.blocked.json: not a JSON object');
  });

  it('queued tends and the covered set are saved together; the covered set reads back, empty when absent or damaged', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await readAttentionCovered(paths)).toEqual([]);
    const decision = {
      queue: [{ trigger: 'queued_attention_needed' as const, key: 'queued_attention_needed', origin: {}, body: 'Two goals are stuck.' }],
      withheld: [],
      attentionCovered: ['3-c', '4-d'],
    };
    const queued = await queueTends(garden, decision, [], new Date('2026-05-01T10:00:00.000Z'));
    expect(queued).toHaveLength(1);
    expect((await readGoal(paths, queued[0]!.goal)).tend).toEqual({ trigger: 'queued_attention_needed', key: 'queued_attention_needed', origin: {} });
    expect(await readAttentionCovered(paths)).toEqual(['3-c', '4-d']);
    await putRaw(garden, { kind: 'tend-attention', key: 'garden', file: 'coordinator.tend-attention.json' }, { not: 'a list' });
    expect(await readAttentionCovered(paths)).toEqual([]);
  });

  it('a dashboard session appends DashboardStarted, then its invocation record with DashboardFinished', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const times = [new Date('2026-05-01T10:00:00.000Z'), new Date('2026-05-01T10:00:12.345Z')];
    const finish = await startDashboardInvocation(paths, 'pak2 dashboard', () => times.shift()!);
    const record = await finish();
    expect(record).toMatchObject({ command: 'pak2 dashboard', started_at: '2026-05-01T10:00:00.000Z', finished_at: '2026-05-01T10:00:12.345Z', cost: { source: 'estimated', wall_seconds: 12.35 } });
    const stored = garden.store ? await garden.store.documentRecord('dashboard-invocation', record.id) : JSON.parse(fs.readFileSync(path.join(paths.dashboardDir, 'invocations', `${record.id}.json`), 'utf8'));
    expect(stored).toEqual(record);
    expect((await readEvents(paths)).events.filter((e) => e.type.startsWith('Dashboard')).map((e) => [e.type, e.detail])).toEqual([
      ['DashboardStarted', `invocation ${record.id}`],
      ['DashboardFinished', `invocation ${record.id}, 12.35 s`],
    ]);
  });

  it('a dashboard invocation record is validated when read and written: a damaged one is one line naming the file and field, and the others still list', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const good = { id: '20260501T100000-0a1b2c3d', command: 'pak2 dashboard', pid: 4242, started_at: '2026-05-01T10:00:00.000Z', finished_at: '2026-05-01T10:00:05.000Z', cost: { source: 'estimated' as const, wall_seconds: 5 } };
    await writeDashboardInvocation(paths, good);
    expect(await readDashboardInvocation(paths, good.id)).toEqual(good);
    const where = garden.store ? `${garden.store.where}: dashboard/invocations/20260501T110000-ffffffff.json` : path.join(paths.runtimeRoot, 'dashboard/invocations/20260501T110000-ffffffff.json');
    await putRaw(garden, { kind: 'dashboard-invocation', key: '20260501T110000-ffffffff', file: 'dashboard/invocations/20260501T110000-ffffffff.json' }, { ...good, id: '20260501T110000-ffffffff', cost: { source: 'provider', wall_seconds: 5 } });
    await expect(readDashboardInvocation(paths, '20260501T110000-ffffffff')).rejects.toThrow(`${where}: cost.source: INVALID_COST_SOURCE (cost.source must be provider, estimated or unknown)`);
    const listed = await listDashboardInvocations(paths);
    expect(listed.invocations).toEqual([good]);
    expect(listed.problems).toEqual([{ file: where, message: expect.stringMatching(/: cost\.source: INVALID_COST_SOURCE \(/) }]);
    for (const m of listed.problems.map((p) => p.message)) expect(m).not.toContain('\n');
    // Nothing that does not validate is written.
    await expect(writeDashboardInvocation(paths, { ...good, id: '20260501T120000-00000000', pid: -1 })).rejects.toThrow('dashboard invocation 20260501T120000-00000000: pid: INVALID_FIELD_TYPE');
    expect(await readDashboardInvocation(paths, '20260501T120000-00000000')).toBeUndefined();
  });
});
