/**
 * Claims, leases and the event cursor on both stores (issue 27, scope 2):
 * concurrent claimers never take one goal twice; a late call from a runner
 * whose lease was taken from it is refused, recorded, and changes nothing;
 * an event committed after another never hides behind a cursor.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { claimTask, expireLeases, finishRemoteRun, heartbeat, RemoteRefusal } from '../../../source/coordinator/remote.js';
import { appendEvent, createGoal, findEventsAfter, readEvents, readGoal, readRun, streamEvents, withGoalLock } from '../../../source/store/index.js';
import { gardenOn, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: claims, fencing, cursors (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('eight claimers racing over twenty goals take each goal exactly once', async () => {
    const garden = await gardenOn(kind, { coordinator: { max_concurrent_runs: 0 } });
    cleanup = garden.cleanup;
    for (let i = 0; i < 20; i++) await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: `race ${i}` });
    const taken: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, n) => {
        for (;;) {
          const claim = await claimTask(garden, { name: `runner-${n}`, host: 'test-host' });
          if (!claim) return;
          taken.push(claim.goal.id);
        }
      }),
    );
    expect(taken).toHaveLength(20);
    expect(new Set(taken).size).toBe(20);
    const { events } = await readEvents(garden.paths);
    const claims = events.filter((e) => e.type === 'LeaseClaimed');
    expect(claims).toHaveLength(20);
    expect(new Set(claims.map((e) => e.goal)).size).toBe(20);
  });

  it('a runner fenced off by an expired lease: its heartbeat and late finish are refused (409), LeaseRefused is recorded, the abandoned run stays as it is', async () => {
    const garden = await gardenOn(kind, { coordinator: { max_concurrent_runs: 0 }, extraToml: '[runners]\nlease_ttl_seconds = 30\n' });
    cleanup = garden.cleanup;
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fenced work' });
    const who = { name: 'slow', host: 'test-host' };
    const t0 = new Date();
    const claim = await claimTask(garden, who, {}, () => t0);
    expect(claim).toBeDefined();
    const { lease, run } = claim!;
    await heartbeat(garden, run.id, { lease: lease.id, progress: 10 }, who, () => new Date(t0.getTime() + 1000));
    // The runner goes quiet past its TTL: the reaper abandons the run and requeues the goal.
    const later = new Date(t0.getTime() + 60_000);
    expect(await expireLeases(garden, () => later)).toEqual([run.id]);
    expect((await readRun(garden.paths, run.id)).status).toBe('abandoned');
    expect((await readGoal(garden.paths, run.goal)).status).toBe('queued');
    // It comes back and reports: refused, recorded, nothing changed.
    await expect(heartbeat(garden, run.id, { lease: lease.id }, who, () => later)).rejects.toMatchObject({ status: 409 });
    const late = finishRemoteRun(garden, run.id, { lease: lease.id, status: 'success', cost: { source: 'provider', usd: 0.5 }, final_text: 'done late', reflection: 'late' }, who, () => later);
    await expect(late).rejects.toBeInstanceOf(RemoteRefusal);
    await expect(late).rejects.toMatchObject({ status: 409 });
    const record = await readRun(garden.paths, run.id);
    expect(record).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect(record.outputs?.final_text).toBeUndefined();
    expect((await readGoal(garden.paths, run.goal)).status).toBe('queued');
    const { events } = await readEvents(garden.paths);
    const refused = events.filter((e) => e.type === 'LeaseRefused' && e.run === run.id);
    expect(refused.map((e) => e.detail)).toEqual([expect.stringMatching(/^heartbeat from slow@test-host refused: the lease expired/), expect.stringMatching(/^finish from slow@test-host refused: the lease expired/)]);
  });

  it('an event written in a transaction that began first but committed last is not hidden behind a cursor taken in between', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'cursor' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const inside = new Promise<void>((resolve) => (appended = resolve));
    // A: appends an event early, with an early timestamp, and commits only when told.
    const slow = withGoalLock(garden.paths, goal.id, async () => {
      await appendEvent(garden.paths, { type: 'GoalDependencyChanged', goal: goal.id, detail: 'slow writer' }, new Date(Date.now() - 5000));
      appended();
      await held;
    });
    await inside;
    // B: commits meanwhile; a reader takes its cursor there.
    const quick = await appendEvent(garden.paths, { type: 'GoalDependencyChanged', goal: goal.id, detail: 'quick writer' });
    const cursor = quick.id!;
    release();
    await slow;
    // From B's cursor the reader still gets A's event if A committed after B (the store), and nothing twice.
    const after: string[] = [];
    await streamEvents(garden.paths, (await findEventsAfter(garden.paths, cursor)).offset, (e) => void after.push(e.detail ?? ''));
    const { events } = await readEvents(garden.paths);
    const order = events.filter((e) => e.detail === 'slow writer' || e.detail === 'quick writer').map((e) => e.detail);
    if (order[0] === 'quick writer') expect(after).toContain('slow writer');
    else expect(after).not.toContain('slow writer');
    expect(order).toHaveLength(2);
    // Ids follow the order the log gives.
    const ids = events.map((e) => e.id!);
    expect([...ids].sort()).toEqual(ids);
  });
});
