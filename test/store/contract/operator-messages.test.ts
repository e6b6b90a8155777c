/**
 * Store contract (issue 27): operator messages — the run-local record
 * (`operator-messages.jsonl`), its ids, every refusal's reason code, and the
 * delivered note — the same on the files and on PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  closeRun,
  commissionPlant,
  createGoal,
  emitOperatorMessage,
  listInbox,
  listOperatorMessages,
  listOperatorNotes,
  openRun,
  renderOperatorNote,
  type OperatorMessageInput,
} from '../../../source/store/index.js';
import { appendRaw, gardenOn, STORE_KINDS } from './stores.js';

function survey(run: string, overrides: Partial<OperatorMessageInput> = {}): OperatorMessageInput {
  return { run, kind: 'tend_survey', title: 'Tend survey', body: 'All calm.', findings: ['one stale goal'], suggested_goals: [{ type: 'fix', body: 'Unblock 3-fix' }], ...overrides };
}

describe.each(STORE_KINDS)('store contract: operator messages (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  async function gardenWithRun(plant = 'gardener') {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    if (plant !== 'gardener') await commissionPlant(garden.paths, plant, 'gardener');
    const goal = await createGoal(garden.paths, { type: 'tend', plant, body: 'Survey the garden' });
    const run = await openRun(garden.paths, goal, { plant, driver: 'success', model: 'fake' });
    return { garden, run };
  }

  it('emits numbered messages in order, each recorded and delivered as an operator note (not a reply note)', async () => {
    const { garden, run } = await gardenWithRun();
    const now = new Date('2026-05-01T10:00:00.000Z');
    const first = await emitOperatorMessage(garden, survey(run.id), now);
    const second = await emitOperatorMessage(garden, { run: run.id, kind: 'recently_concluded', title: 'Recently concluded', body: 'Two closed.', goals: ['3-fix-login'] }, now);
    expect([first.message.id, second.message.id]).toEqual([`om-${run.id}-1`, `om-${run.id}-2`]);
    expect(first.message).toEqual({ id: `om-${run.id}-1`, run: run.id, plant: 'gardener', kind: 'tend_survey', title: 'Tend survey', body: 'All calm.', emitted_at: now.toISOString(), findings: ['one stale goal'], suggested_goals: [{ type: 'fix', body: 'Unblock 3-fix' }] });
    expect(first.recordFile).toContain(`runs/${run.id}/operator-messages.jsonl`);
    expect(first.notePath).toMatch(new RegExp(`operator/om-${run.id}-1\\.md$`));
    expect(await listOperatorMessages(garden.paths, run.id)).toEqual({ messages: [first.message, second.message], problems: [] });
    const notes = await listOperatorNotes(garden.paths, garden.config);
    expect(notes.map((n) => n.id).sort()).toEqual([first.message.id, second.message.id]);
    expect(notes.find((n) => n.id === first.message.id)).toMatchObject({ title: 'Tend survey', body: renderOperatorNote(first.message), path: first.notePath });
    expect(await listInbox(garden.paths, garden.config)).toEqual([]);
  });

  it('ids go past every recorded one, a foreign line is a problem with its line number, and concurrent emissions never share an id', async () => {
    const { garden, run } = await gardenWithRun();
    await appendRaw(garden, { kind: 'operator-message', parent: run.id, file: `runs/${run.id}/operator-messages.jsonl` }, { id: `om-${run.id}-7`, note: 'written by hand' });
    const next = await emitOperatorMessage(garden, survey(run.id));
    expect(next.message.id).toBe(`om-${run.id}-8`);
    const listed = await listOperatorMessages(garden.paths, run.id);
    expect(listed.messages.map((m) => m.id)).toEqual([`om-${run.id}-8`]);
    expect(listed.problems.map((p) => p.line)).toEqual([1]);
    expect(listed.problems[0]!.message).toContain('operator-messages.jsonl:1: ');
    const burst = await Promise.all(Array.from({ length: 6 }, () => emitOperatorMessage(garden, survey(run.id))));
    expect(new Set(burst.map((b) => b.message.id)).size).toBe(6);
    expect((await listOperatorMessages(garden.paths, run.id)).messages).toHaveLength(7);
  });

  it('refuses with the same reason codes, writing nothing: INVALID_RECORD, RUN_NOT_FOUND, RUN_NOT_RUNNING, NOT_GARDENER_RUN', async () => {
    const { garden, run } = await gardenWithRun();
    const refused = (input: OperatorMessageInput) => emitOperatorMessage(garden, input).then(() => undefined, (e: { code: string; reason: string; issues: unknown[] }) => [e.code, e.reason]);
    expect(await refused(survey(run.id, { kind: 'gossip' }))).toEqual(['INVALID_RECORD', 'INVALID_RECORD']);
    expect(await refused(survey(run.id, { title: '' }))).toEqual(['INVALID_RECORD', 'INVALID_RECORD']);
    expect(await refused(survey('9-nothing-r1'))).toEqual(['RUN_NOT_FOUND', 'RUN_NOT_FOUND']);
    expect(await refused(survey('not a run'))).toEqual(['INVALID_RECORD', 'INVALID_RECORD']);
    await expect(listOperatorMessages(garden.paths, 'not a run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    await closeRun(garden.paths, run.id, 'tend', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' } });
    expect(await refused(survey(run.id))).toEqual(['INVALID_TRANSITION', 'RUN_NOT_RUNNING']);

    const other = await gardenWithRunIn(garden, 'scout');
    expect(await refused(survey(other.id))).toEqual(['INVALID_TRANSITION', 'NOT_GARDENER_RUN']);
    expect((await listOperatorMessages(garden.paths, run.id)).messages).toEqual([]);
    expect(await listOperatorNotes(garden.paths, garden.config)).toEqual([]);
  });
});

async function gardenWithRunIn(garden: Awaited<ReturnType<typeof gardenOn>>, plant: string) {
  await commissionPlant(garden.paths, plant, 'gardener');
  const goal = await createGoal(garden.paths, { type: 'tend', plant, body: 'Survey elsewhere' });
  return openRun(garden.paths, goal, { plant, driver: 'success', model: 'fake' });
}
