/**
 * Store contract (issue 27): conversations — meta.json and messages.jsonl —
 * and a conversation goal's supplements and dispatch packet, the same on
 * the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  appendConversationMessage,
  appendGoalSupplement,
  clearConversationContinuity,
  createGoal,
  freezeDispatchPacket,
  latestConversation,
  listConversations,
  openConversation,
  readConversation,
  readConversationMessages,
  readDispatchPacket,
  readSupplements,
  setConversationContinuity,
  transitionGoal,
} from '../../../source/store/index.js';
import { appendRaw, gardenOn, STORE_KINDS } from './stores.js';

describe.each(STORE_KINDS)('store contract: conversations (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('conversations open, list oldest first, the latest is the last started, and their continuity is set and cleared', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    expect(await latestConversation(paths)).toBeUndefined();
    expect(await listConversations(paths)).toEqual([]);
    const first = await openConversation(paths, 'system', new Date('2026-05-01T10:00:00.000Z'), { startup: true });
    const second = await openConversation(paths, 'operator', new Date('2026-05-01T11:00:00.000Z'));
    expect(first).toMatchObject({ started_by: 'system', startup: true, channel: 'filesystem' });
    expect(await listConversations(paths)).toEqual([first, second]);
    expect(await latestConversation(paths)).toEqual(second);
    expect(await readConversation(paths, first.id)).toEqual(first);

    const usage = { input_tokens: 10, cached_input_tokens: 2, output_tokens: 3 };
    const set = await setConversationContinuity(paths, second.id, 'codex', 'sess-1', new Date('2026-05-01T11:01:00.000Z'), 'gardener', usage);
    expect(set.continuity).toEqual({ driver: 'codex', session_id: 'sess-1', updated_at: '2026-05-01T11:01:00.000Z', plant: 'gardener', thread_usage: usage });
    expect(await readConversation(paths, second.id)).toEqual(set);
    expect(await clearConversationContinuity(paths, second.id)).toEqual(second);
    expect(await readConversation(paths, second.id)).toEqual(second);
  });

  it('an unknown conversation is "no conversation ID"; a malformed id is refused before any read', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    await expect(readConversation(paths, 'c-20260501T100000-0000abcd')).rejects.toThrow('no conversation c-20260501T100000-0000abcd');
    await expect(setConversationContinuity(paths, 'c-20260501T100000-0000abcd', 'codex', 's')).rejects.toThrow('no conversation');
    await expect(readConversation(paths, '../goals')).rejects.toThrow('is not of the form c-<time>-<hex>');
    await expect(appendConversationMessage(paths, '../goals', { sender: 'operator', text: 'x' })).rejects.toThrow('is not of the form');
  });

  it('messages are kept in the order appended; the last `limit` are read, foreign lines skipped', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const c = await openConversation(paths, 'operator');
    expect(await readConversationMessages(paths, c.id)).toEqual([]);
    const now = new Date('2026-05-01T10:00:00.000Z');
    const m1 = await appendConversationMessage(paths, c.id, { sender: 'operator', text: 'hello', goal: '1-hello' }, now);
    await appendRaw(garden, { kind: 'conversation-message', parent: c.id, file: `conversations/${c.id}/messages.jsonl` }, { not: 'a message' });
    const m2 = await appendConversationMessage(paths, c.id, { sender: 'garden', text: 'hi', run: '1-hello-r1', note: 'inbox/x.md' }, now);
    const m3 = await appendConversationMessage(paths, c.id, { sender: 'system', text: 'run started', fact: 'run_started:1-hello-r1', ts: '2026-05-01T10:00:05.000Z' });
    expect(m1).toEqual({ sender: 'operator', text: 'hello', goal: '1-hello', ts: now.toISOString() });
    expect(await readConversationMessages(paths, c.id)).toEqual([m1, m2, m3]);
    expect(await readConversationMessages(paths, c.id, 2)).toEqual([m2, m3]);
    await Promise.all(Array.from({ length: 20 }, (_, i) => appendConversationMessage(paths, c.id, { sender: 'operator', text: `burst ${i}` })));
    expect(await readConversationMessages(paths, c.id)).toHaveLength(23);
  });

  it('a conversation goal takes supplements while queued, oldest first; they are frozen into its run\'s dispatch packet; then refused', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const c = await openConversation(paths, 'operator');
    const goal = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'build it', conversation_id: c.id });
    expect(await readSupplements(paths, goal.id)).toEqual([]);
    const s1 = await appendGoalSupplement(paths, goal.id, '  also this  ', 'operator', new Date('2026-05-01T10:00:00.000Z'));
    const s2 = await appendGoalSupplement(paths, goal.id, 'and that', 'garden', new Date('2026-05-01T10:00:01.000Z'));
    expect(s1).toEqual({ ts: '2026-05-01T10:00:00.000Z', text: 'also this', source: 'operator', conversation_id: c.id });
    expect(await readSupplements(paths, goal.id)).toEqual([s1, s2]);
    await expect(appendGoalSupplement(paths, goal.id, '   ')).rejects.toMatchObject({ code: 'INVALID_RECORD' });

    const packet = await freezeDispatchPacket(paths, goal, `${goal.id}-r1`, new Date('2026-05-01T10:01:00.000Z'));
    expect(packet).toEqual({ goal: goal.id, run: `${goal.id}-r1`, conversation_id: c.id, frozen_at: '2026-05-01T10:01:00.000Z', supplements: [s1, s2] });
    expect(await readDispatchPacket(paths, `${goal.id}-r1`)).toEqual(packet);
    expect(await readDispatchPacket(paths, `${goal.id}-r2`)).toBeUndefined();
    await transitionGoal(paths, goal.id, 'dispatched');
    await expect(appendGoalSupplement(paths, goal.id, 'too late')).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });

    const plain = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'no conversation' });
    await expect(appendGoalSupplement(paths, plain.id, 'x')).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });
    expect(await freezeDispatchPacket(paths, plain, `${plain.id}-r1`)).toBeUndefined();
    await expect(appendGoalSupplement(paths, '99-none', 'x')).rejects.toMatchObject({ code: 'GOAL_NOT_FOUND' });
    await expect(readSupplements(paths, 'not-an-id')).rejects.toMatchObject({ code: 'GOAL_NOT_FOUND' });
  });
});
