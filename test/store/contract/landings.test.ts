/**
 * Store contract (issue 27): landing records (`landings/<run-id>.json`) —
 * written validated, never rewritten once ended, listed oldest queued
 * first, a damaged one reported — the same on the files and on PostgreSQL;
 * and a landing's record and its event commit together on a store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LandingRecord } from '../../../source/contracts/index.js';
import { appendEvent, inStoreTransaction, listLandings, readEvents, readLanding, withLandingLock, writeLanding } from '../../../source/store/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

function landing(run: string, queuedAt: string, patch: Partial<LandingRecord> = {}): LandingRecord {
  const goal = run.replace(/-r\d+$/, '');
  return { run, goal, plant: 'gardener', state: 'queued', branch: `pak2/${run}`, head_commit: A, base_branch: 'main', base_commit: B, queued_at: queuedAt, updated_at: queuedAt, attempts: 0, ...patch };
}

describe.each(STORE_KINDS)('store contract: landings (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('a landing is written and read back whole, listed oldest queued first (then by run), and an ended one is never rewritten', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await readLanding(paths, '1-a-r1')).toBeUndefined();
    expect(await listLandings(paths)).toEqual({ landings: [], problems: [] });
    const late = await writeLanding(paths, landing('3-c-r1', '2026-05-01T10:00:02.000Z'));
    await writeLanding(paths, landing('2-b-r1', '2026-05-01T10:00:01.000Z'));
    await writeLanding(paths, landing('1-a-r2', '2026-05-01T10:00:01.000Z'));
    expect(await readLanding(paths, '3-c-r1')).toEqual(late);
    expect((await listLandings(paths)).landings.map((l) => l.run)).toEqual(['1-a-r2', '2-b-r1', '3-c-r1']);

    const landed = await writeLanding(paths, { ...late, state: 'landed', onto_commit: B, result_commit: A, landed_at: '2026-05-01T10:01:00.000Z', updated_at: '2026-05-01T10:01:00.000Z' });
    await writeLanding(paths, { ...landed, branch_pruned_at: '2026-05-09T10:00:00.000Z' }); // the same ended state: a prune's note
    await expect(writeLanding(paths, { ...landed, state: 'rejected', failure_reason: 'landing_rejected' })).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });
    expect((await readLanding(paths, '3-c-r1'))?.state).toBe('landed');
    await expect(writeLanding(paths, { ...landed, head_commit: 'nope' })).rejects.toMatchObject({ code: 'INVALID_RECORD' });
  });

  it('a damaged landing is INVALID_RECORD naming its file when read, and one problem in the listing, the others listed', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    await writeLanding(paths, landing('1-a-r1', '2026-05-01T10:00:00.000Z'));
    await putRaw(garden, { kind: 'landing', key: '2-b-r1', file: 'landings/2-b-r1.json' }, { ...landing('2-b-r1', '2026-05-01T10:00:00.000Z'), state: 'flying' });
    await expect(readLanding(paths, '2-b-r1')).rejects.toMatchObject({ code: 'INVALID_RECORD', message: expect.stringContaining('landings/2-b-r1.json') });
    const { landings, problems } = await listLandings(paths);
    expect(landings.map((l) => l.run)).toEqual(['1-a-r1']);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.file).toContain('landings/2-b-r1.json');
  });

  it('under the landing lock, a reject and the queue never interleave: each reads what the other wrote', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    await writeLanding(paths, landing('1-a-r1', '2026-05-01T10:00:00.000Z'));
    const order: string[] = [];
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = withLandingLock(paths, '1-a-r1', async () => {
      entered();
      await held;
      const current = (await readLanding(paths, '1-a-r1'))!;
      await writeLanding(paths, { ...current, state: 'landed', onto_commit: B, result_commit: A, landed_at: '2026-05-01T10:01:00.000Z' });
      order.push('landed');
    });
    await inside;
    const second = withLandingLock(paths, '1-a-r1', async () => {
      order.push(`reject saw ${(await readLanding(paths, '1-a-r1'))!.state}`);
    });
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['landed', 'reject saw landed']);
  });

  it('a landing and its event are written together: on a store a failure after both leaves neither; the files keep the record-then-event order', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    await expect(
      inStoreTransaction(paths, async () => {
        const written = await writeLanding(paths, landing('1-a-r1', '2026-05-01T10:00:00.000Z'));
        await appendEvent(paths, { type: 'LandingQueued', run: written.run, goal: written.goal, plant: written.plant, status: written.state, detail: 'queued' });
        throw new Error('power cut');
      }),
    ).rejects.toThrow('power cut');
    const queued = (await readEvents(paths)).events.filter((e) => e.type === 'LandingQueued');
    if (kind === 'postgres') {
      expect(await readLanding(paths, '1-a-r1')).toBeUndefined();
      expect(queued).toEqual([]);
    } else {
      expect((await readLanding(paths, '1-a-r1'))?.state).toBe('queued');
      expect(queued).toHaveLength(1);
    }
  });
});
