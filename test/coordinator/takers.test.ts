/**
 * Runners-only gardens (`[coordinator] max_concurrent_runs = 0`;
 * docs/runners/level2.md, "Who runs what"): a goal neither the coordinator
 * nor a runner may take never waits in silence. A conversation reply is
 * refused at submit with the reason; one already queued is reported by the
 * pass (GoalBlocked, reason `nobody`), the attention list
 * (`blocked:<goal>:nobody`) and `pak2 doctor`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nobodyTakes, reconcile } from '../../source/coordinator/index.js';
import { parseConfig } from '../../source/garden/index.js';
import { readAttention } from '../../source/snapshot/index.js';
import { createGoal, listGoalIds, openConversation } from '../../source/store/index.js';
import { sendOperatorMessage, submitGoal } from '../../source/submit/index.js';
import { doctorJson } from '../doctor/support.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function runnersOnly() {
  const g = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 } });
  cleanups.push(g.cleanup);
  return g;
}

const WHY = "this garden's coordinator runs no goals ([coordinator] max_concurrent_runs = 0 in PAK2.toml) and remote runners do not take a conversation reply (its agent session lives on the garden's machine); set max_concurrent_runs to 1 or more";

describe('nobodyTakes', () => {
  const none = parseConfig('[coordinator]\nmax_concurrent_runs = 0\n');
  const one = parseConfig('');
  it.each([
    ['a conversation reply', { type: 'converse', assigned_to: 'gardener', conversation_id: 'c' }, `nobody can take it: ${WHY}`],
    ['a post-reply hop', { type: 'build', assigned_to: 'gardener', conversation_id: 'c', post_reply_hop: true }, `nobody can take it: ${WHY.replace('a conversation reply', 'a post-reply hop')}`],
    ['a guarded goal (a runner runs its guard)', { type: 'fix', assigned_to: 'gardener', guard: { verify: 'true' } }, undefined],
    ['a routed goal', { type: 'fix', assigned_to: 'gardener', task_class: 'code' }, undefined],
    ['a plain goal', { type: 'fix', assigned_to: 'gardener' }, undefined],
    ['an unassigned goal (reported as skipped)', { type: 'converse' }, undefined],
  ])('max_concurrent_runs = 0: %s', (_what, goal, expected) => {
    expect(nobodyTakes(goal as never, none)).toBe(expected);
  });
  it('a coordinator with slots takes a conversation reply', () => {
    expect(nobodyTakes({ type: 'converse', assigned_to: 'gardener' } as never, one)).toBeUndefined();
  });
});

describe('a runners-only garden', () => {
  it('refuses a chat message and a converse goal at submit, with the reason; nothing is queued', async () => {
    const g = await runnersOnly();
    await expect(sendOperatorMessage(g, 'hello?')).rejects.toThrow(`message: not sent; nobody could answer it: ${WHY}`);
    await expect(submitGoal(g, { type: 'converse', plant: 'gardener', body: 'hello?' })).rejects.toThrow(`type converse: not queued; nobody could take it: ${WHY}`);
    expect(await listGoalIds(g.paths)).toEqual([]);
    // A plain goal is queued as ever: runners take it.
    expect((await submitGoal(g, { type: 'fix', plant: 'gardener', body: 'Fix it.' })).status).toBe('queued');
  });

  it('pak2 chat: one line, exit 1', async () => {
    const g = await runnersOnly();
    const r = await runCli(['--garden', g.paths.gardenRoot, 'chat', '-m', 'hello?']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(`pak2: message: not sent; nobody could answer it: ${WHY}`);
  });

  it('a conversation reply already queued: the pass reports it (GoalBlocked, nobody), the attention list and pak2 doctor name it', async () => {
    const g = await runnersOnly();
    const conversation = await openConversation(g.paths, 'operator');
    const reply = await createGoal(g.paths, { type: 'converse', plant: 'gardener', body: 'hello?', conversation_id: conversation.id });
    const summary = await reconcile({ garden: g, dispatch: async () => undefined, awaitDispatch: true });
    expect(summary.blocked).toEqual([{ goal: reply.id, code: 'nobody', reason: `nobody can take it: ${WHY}` }]);
    expect(readEventLog(g).filter((e) => e.type === 'GoalBlocked')).toEqual([expect.objectContaining({ goal: reply.id, reason: 'nobody', detail: `cannot dispatch: nobody can take it: ${WHY}; it waits in the queue` })]);

    const attention = await readAttention(g);
    expect(attention.items).toContainEqual(expect.objectContaining({ id: `blocked:${reply.id}:nobody`, kind: 'blocked', goal: reply.id, summary: expect.stringContaining(`${reply.id} cannot dispatch: nobody can take it:`) }));

    const { code, findings } = await doctorJson(g.paths.gardenRoot);
    expect(code).toBe(1);
    expect(findings).toContainEqual({
      check: 'goals',
      file: path.join(g.paths.goalsDir, `${reply.id}.json`),
      field: 'status',
      message: `queued converse goal, waits forever: nobody can take it: ${WHY} and restart the coordinator, or \`pak2 cancel ${reply.id}\``,
    });
  });

  it('the attention list names such a goal even when no coordinator pass ran', async () => {
    const g = await runnersOnly();
    const reply = await createGoal(g.paths, { type: 'converse', plant: 'gardener', body: 'hello?', conversation_id: 'c1' });
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'coordinator.blocked.json'))).toBe(false);
    expect((await readAttention(g)).items.map((i) => i.id)).toEqual([`blocked:${reply.id}:nobody`]);
  });
});
