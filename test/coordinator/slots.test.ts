/**
 * Conversation slots (docs/coordinator/level2.md, "Conversation slots"): a
 * chat reply does not wait behind a long run; when it must wait, the chat
 * says for what (docs/conversation/level2.md, "Waiting for a reply").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, isConversationReply, reconcile, replyWaitWords, slotFree, type DispatchFn } from '../../source/coordinator/index.js';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { createGoal, latestRun, readGoal, readRun } from '../../source/store/index.js';
import { readReplyWait, replyWaitOf } from '../../source/snapshot/reply-wait.js';
import { sendOperatorMessage } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

let garden: (Garden & { cleanup: () => void }) | undefined;
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  garden?.cleanup();
  garden = undefined;
});

/** A dispatch that leaves every run open (its agent "works" until the test ends). */
const never: DispatchFn = () => new Promise(() => undefined);

describe('slot rules (pure)', () => {
  const limits = { maxConcurrentRuns: 1, conversationSlots: 1 };
  it('a reply takes a conversation slot first, then an ordinary one; ordinary work never takes a conversation slot', () => {
    expect(slotFree(true, { replies: 0, ordinary: 1 }, limits)).toBe(true);
    expect(slotFree(false, { replies: 0, ordinary: 1 }, limits)).toBe(false);
    expect(slotFree(false, { replies: 1, ordinary: 0 }, limits)).toBe(true);
    // A second reply spills into the free ordinary slot, and then holds it.
    expect(slotFree(true, { replies: 1, ordinary: 0 }, limits)).toBe(true);
    expect(slotFree(false, { replies: 2, ordinary: 0 }, limits)).toBe(false);
    expect(slotFree(true, { replies: 1, ordinary: 1 }, limits)).toBe(false);
    // conversation_slots = 0: the seeds' one run at a time, replies included.
    expect(slotFree(true, { replies: 0, ordinary: 1 }, { maxConcurrentRuns: 1, conversationSlots: 0 })).toBe(false);
    // max_concurrent_runs = 0: nothing runs here.
    expect(slotFree(true, { replies: 0, ordinary: 0 }, { maxConcurrentRuns: 0, conversationSlots: 1 })).toBe(false);
  });

  it('a reply is a converse goal of a conversation, not a post-reply hop', () => {
    expect(isConversationReply({ type: 'converse', conversation_id: 'c-1' })).toBe(true);
    expect(isConversationReply({ type: 'converse', conversation_id: 'c-1', post_reply_hop: true })).toBe(false);
    expect(isConversationReply({ type: 'converse' })).toBe(false);
    expect(isConversationReply({ type: 'build', conversation_id: 'c-1' })).toBe(false);
  });

  it('says what a queued reply waits for', () => {
    const base = { coordinator: true, limits, live: [] };
    expect(replyWaitWords({ ...base, coordinator: false })).toBe('waiting for a coordinator: start `pak2` or `pak2 cycle` in another terminal');
    expect(replyWaitWords({ ...base, blocked: 'plant gardener is archived' })).toBe('waiting: plant gardener is archived');
    expect(replyWaitWords({ ...base, waitingFor: ['3-a'] })).toBe('waiting for 3-a to close');
    expect(replyWaitWords({ ...base, limits: { maxConcurrentRuns: 0, conversationSlots: 1 } })).toBe('waiting for a remote runner: max_concurrent_runs = 0 runs nothing on this machine');
    expect(replyWaitWords({ ...base, live: [{ run: '2-b-r1', reply: false }, { run: '7-reply-r1', reply: true }] })).toBe('waiting: 1 conversation slot busy (run 7-reply-r1) and 1 run slot busy (run 2-b-r1)');
    expect(replyWaitWords({ ...base, limits: { maxConcurrentRuns: 1, conversationSlots: 0 }, live: [{ run: '2-b-r1', reply: false }] })).toBe('waiting: 1 run slot busy (run 2-b-r1)');
    expect(replyWaitWords({ ...base, live: [{ run: '7-reply-r1', reply: true }, { run: '8-reply-r1', reply: true }] })).toBe('waiting: 1 conversation slot busy (run 7-reply-r1) and 1 run slot busy (run 8-reply-r1)');
    expect(replyWaitWords({ ...base, tree: true, live: [{ run: '2-b-r1', reply: false, guarded: true }], limits: { maxConcurrentRuns: 2, conversationSlots: 1 } })).toBe('waiting: the guarded run 2-b-r1 has the work tree to itself');
    expect(replyWaitWords(base)).toBe("waiting for the coordinator's next pass");
  });
});

describe('conversation slots in a pass', () => {
  it('with max_concurrent_runs = 1 and a long run live, a chat reply is dispatched in its own slot; ordinary work still waits', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 1 } });
    const long = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'an hour of work' });
    const first = await reconcile({ garden, dispatch: never });
    expect(first.dispatched).toEqual([`${long.id}-r1`]);
    const next = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'more work' });
    const { goal: reply } = await sendOperatorMessage(garden, 'are you there?');
    const second = await reconcile({ garden, dispatch: never });
    expect(second.dispatched).toEqual([`${reply.id}-r1`]);
    expect((await readGoal(garden.paths, next.id)).status).toBe('queued');
    expect(second.queued).toBe(1);
    // The conversation slot is taken now: the next reply waits, and says why.
    const { goal: again } = await sendOperatorMessage(garden, 'and now?');
    expect((await reconcile({ garden, dispatch: never })).dispatched).toEqual([]);
    // No process holds the garden here (the passes above are this test's): the CLI says so; with a coordinator, the busy slots.
    expect(await readReplyWait(garden, again.id)).toBe('waiting for a coordinator: start `pak2` or `pak2 cycle` in another terminal');
    const rows = await Promise.all([long.id, reply.id, next.id, again.id].map(async (id) => ({ goal: await readGoal(garden!.paths, id), run: await latestRun(garden!.paths, id) })));
    expect(replyWaitOf(garden, again.id, rows, {}, true)).toBe(`waiting: 1 conversation slot busy (run ${reply.id}-r1) and 1 run slot busy (run ${long.id}-r1)`);
  });

  it('conversation_slots = 0: a reply shares max_concurrent_runs (the seeds\' one run at a time)', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 1, conversation_slots: 0 } });
    const long = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'an hour of work' });
    await reconcile({ garden, dispatch: never });
    const { goal: reply } = await sendOperatorMessage(garden, 'are you there?');
    const second = await reconcile({ garden, dispatch: never });
    expect(second.dispatched).toEqual([]);
    expect(second.queued).toBe(1);
    expect((await readGoal(garden.paths, reply.id)).status).toBe('queued');
    expect((await readRun(garden.paths, `${long.id}-r1`)).status).toBe('running');
  });
});

describe('pak2 chat while a long run is live', () => {
  /** A coordinator in this process on `g`, stopped after the test; resolves once the long goal's run is live. */
  async function coordinatorWithLongRun(g: Garden): Promise<{ coordinator: Coordinator; runId: string }> {
    const long = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'talk forever', driver: 'chatty-stall' });
    const coordinator = new Coordinator({ garden: loadGarden(g.paths.gardenRoot), onStderr: () => undefined });
    await coordinator.start();
    stops.push(() => coordinator.stop());
    await waitFor(async () => (await readGoal(g.paths, long.id)).status === 'running' && coordinator.live.ids().includes(`${long.id}-r1`), 30_000);
    return { coordinator, runId: `${long.id}-r1` };
  }

  it('max_concurrent_runs = 1: pak2 chat -m is answered while the long run goes on', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 1 } });
    const { coordinator, runId } = await coordinatorWithLongRun(garden);
    const r = await runCli(['chat', '--garden', garden.paths.gardenRoot, '-m', 'are you there?', '--timeout', '60']);
    expect(r.stderr).toMatch(/pak2: queued \d+-reply-are-you-there in conversation c-/);
    expect(r.stdout).toMatch(/garden: done/);
    expect(r.code).toBe(0);
    expect((await readRun(garden.paths, runId)).status).toBe('running');
    expect(coordinator.live.ids()).toContain(runId);
  }, 90_000);

  it('conversation_slots = 0: pak2 chat says what the reply waits for (the run slot and its run)', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 1, conversation_slots: 0 } });
    const { runId } = await coordinatorWithLongRun(garden);
    const r = await runCli(['chat', '--garden', garden.paths.gardenRoot, '-m', 'are you there?', '--timeout', '3']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`waiting: 1 run slot busy (run ${runId})`);
    expect(r.stderr).toMatch(/no reply within 3 s; the goal \d+-reply-are-you-there is still open/);
  }, 90_000);

  it('no coordinator: pak2 chat says it waits for one', async () => {
    garden = await makeTestGarden();
    const r = await runCli(['chat', '--garden', garden.paths.gardenRoot, '-m', 'hello?', '--timeout', '2']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/pak2: \d+-reply-hello waiting for a coordinator: start `pak2` or `pak2 cycle` in another terminal\n/);
  }, 30_000);
});
