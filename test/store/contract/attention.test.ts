/**
 * Store contract (issue 27): attention.json, the acknowledged "needs you"
 * items, and the AttentionAcknowledged events written with it, the same on
 * the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { acknowledgeAttention, readAttentionAcks, readEvents } from '../../../source/store/index.js';
import { gardenOn, putRaw, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: attention (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('acknowledges each id once with one event, and drops acknowledgements of ids no longer current', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect((await readAttentionAcks(paths)).size).toBe(0);
    const now = new Date('2026-05-01T10:00:00.000Z');
    const items = [{ id: 'failed:1-a', goal: '1-a' }, { id: 'question:2-b', goal: '2-b', run: '2-b-r1' }];
    expect(await acknowledgeAttention(paths, items, new Set(['failed:1-a', 'question:2-b']), { name: 'ops', role: 'operator' }, now)).toEqual(['failed:1-a', 'question:2-b']);
    expect(await acknowledgeAttention(paths, items.slice(0, 1), new Set(['failed:1-a', 'question:2-b']), { name: 'ops' }, now)).toEqual([]);
    const acks = await readAttentionAcks(paths);
    expect([...acks.values()]).toEqual([
      { id: 'failed:1-a', at: now.toISOString(), by: 'ops' },
      { id: 'question:2-b', at: now.toISOString(), by: 'ops' },
    ]);
    await acknowledgeAttention(paths, [], new Set(['question:2-b']), { name: 'ops' }, now);
    expect([...(await readAttentionAcks(paths)).keys()]).toEqual(['question:2-b']);
    const { events } = await readEvents(paths);
    expect(events.filter((e) => e.type === 'AttentionAcknowledged').map((e) => [e.detail, e.goal ?? null, e.run ?? null, e.token_name ?? null])).toEqual([
      ['failed:1-a', '1-a', null, 'ops'],
      ['question:2-b', '2-b', '2-b-r1', 'ops'],
    ]);
  });

  it('a damaged attention.json is INVALID_RECORD naming it, for a read and for an acknowledgement (which writes nothing)', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    await putRaw(garden, { kind: 'attention', key: 'garden', file: 'attention.json' }, { acked: [{ id: 3 }] });
    await expect(readAttentionAcks(garden.paths)).rejects.toMatchObject({ code: 'INVALID_RECORD', message: expect.stringContaining('attention.json') });
    await expect(acknowledgeAttention(garden.paths, [{ id: 'x' }], new Set(['x']), { name: 'ops' })).rejects.toMatchObject({ code: 'INVALID_RECORD' });
    expect((await readEvents(garden.paths)).events.filter((e) => e.type === 'AttentionAcknowledged')).toEqual([]);
  });
});
