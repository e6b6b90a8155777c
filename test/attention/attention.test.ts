/**
 * The needs-you list end to end in one process (docs/attention/level2.md):
 * a question and a failed run appear, the [notify] command receives each new
 * item once as JSON, `ackAttention` hides an item (attention.json, one
 * AttentionAcknowledged event), and the HTTP routes keep their roles.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateAttentionItem, validateAttentionRecord, type AttentionItem } from '../../source/contracts/index.js';
import { Coordinator } from '../../source/coordinator/index.js';
import { createToken } from '../../source/server/index.js';
import { watchAttention, type AttentionWatch } from '../../source/session/index.js';
import { readAttention } from '../../source/snapshot/index.js';
import { createGoal, readRun, attentionFile } from '../../source/store/index.js';
import { ackAttention, postComment } from '../../source/submit/index.js';
import { makeTestGarden, readEventLog, waitFor } from '../support/garden.js';
import { api, serve } from '../server/support.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
let coordinator: Coordinator | undefined;
let watch: AttentionWatch | undefined;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await watch?.stop();
  watch = undefined;
  await coordinator?.stop();
  coordinator = undefined;
  garden?.cleanup();
  garden = undefined;
});

/** A `[notify] command` that appends its stdin to `out` (exit `code`). */
function notifyScript(root: string, out: string, code = 0): string {
  const script = path.join(root, 'notify.mjs');
  fs.writeFileSync(script, `import fs from 'node:fs';\nlet text = '';\nprocess.stdin.on('data', (d) => (text += d));\nprocess.stdin.on('end', () => { fs.appendFileSync(${JSON.stringify(out)}, text); process.exit(${code}); });\n`);
  return `[notify]\ncommand = ${JSON.stringify([process.execPath, script])}\n`;
}

function received(out: string): AttentionItem[] {
  if (!fs.existsSync(out)) return [];
  return fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as AttentionItem);
}

describe('the needs-you list', () => {
  it('fills as a question and a failure arrive; the [notify] command gets each new item once; an ack hides one', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-attn-'));
    const out = path.join(root, 'notified.jsonl');
    garden = await makeTestGarden({ root, extraToml: notifyScript(root, out) });
    const g = garden;
    // Something needed the operator before the process started: it is not notified.
    const before = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'asks early' });
    await postComment(g, before.id, { body: 'Asked before the start?', blocking: true, author: 'agent:early' });
    const problems: string[] = [];
    watch = watchAttention(g, { pollMs: 50, onProblem: (line) => problems.push(line) });
    await watch.ready;
    expect((await readAttention(g)).items.map((i) => i.kind)).toEqual(['question']);

    const asks = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'asks' });
    const { comment } = await postComment(g, asks.id, { body: 'Which port should it listen on?', blocking: true, author: 'agent:x' });
    await waitFor(() => received(out).length === 1);
    expect(received(out)[0]).toMatchObject({ id: `question:${comment.id}`, kind: 'question', goal: asks.id, summary: `${asks.id} asks: Which port should it listen on?` });

    const fails = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'fails', driver: 'exit3' });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readRun(g.paths, `${fails.id}-r1`).catch(() => undefined))?.status === 'failure', 15_000);
    await waitFor(() => received(out).length === 2, 15_000);
    await watch.flush();
    const items = received(out);
    expect(items.map((i) => i.id)).toEqual([`question:${comment.id}`, `run:${fails.id}-r1`]);
    expect(items[1]).toMatchObject({ kind: 'run', goal: fails.id, run: `${fails.id}-r1` });
    for (const item of items) expect(validateAttentionItem(item)).toEqual([]);
    expect(problems).toEqual([]);

    // An ack: the item leaves the list, attention.json says who, one event.
    const ack = await ackAttention(g, [`run:${fails.id}-r1`]);
    expect(ack).toEqual({ acked: [`run:${fails.id}-r1`], already: [] });
    expect((await readAttention(g)).items.map((i) => i.id)).not.toContain(`run:${fails.id}-r1`);
    const record = JSON.parse(fs.readFileSync(attentionFile(g.paths), 'utf8')) as unknown;
    expect(validateAttentionRecord(record)).toEqual([]);
    expect(record).toMatchObject({ acked: [{ id: `run:${fails.id}-r1`, by: 'operator' }] });
    expect(readEventLog(g).filter((e) => e.type === 'AttentionAcknowledged')).toEqual([expect.objectContaining({ goal: fails.id, run: `${fails.id}-r1`, detail: `run:${fails.id}-r1` })]);
    expect(await ackAttention(g, [`run:${fails.id}-r1`])).toEqual({ acked: [], already: [`run:${fails.id}-r1`] });
    await expect(ackAttention(g, ['run:9-nope-r1'])).rejects.toThrow(/^ID run:9-nope-r1: not on the needs-you list \(pak2 attention lists the ids\)$/);
    // Acknowledged, it is never notified again.
    await watch.flush();
    expect(received(out)).toHaveLength(2);
  }, 60_000);

  it('a failing [notify] command is said once and the watch goes on', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-attn-'));
    const out = path.join(root, 'notified.jsonl');
    garden = await makeTestGarden({ root, extraToml: notifyScript(root, out, 3) });
    const g = garden;
    const problems: string[] = [];
    watch = watchAttention(g, { pollMs: 50, onProblem: (line) => problems.push(line) });
    await watch.ready;
    for (const body of ['one', 'two']) {
      const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body });
      await postComment(g, goal.id, { body: `question ${body}`, blocking: true, author: 'agent:x' });
    }
    await waitFor(() => received(out).length === 2);
    await watch.flush();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^\[notify\] command ".*node.*" exited 3 \(for question:/);
  }, 30_000);

  it('GET /attention takes a read token; POST /attention/ack only an operator token', async () => {
    garden = await makeTestGarden();
    const g = garden;
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'asks' });
    const { comment } = await postComment(g, goal.id, { body: 'Which port?', blocking: true, author: 'agent:x' });
    const server = await serve(g, cleanups, { webhooks: false });
    const reader = (await createToken(g.paths, { role: 'read', name: 'dash' })).token;
    const runner = (await createToken(g.paths, { role: 'runner', name: 'r1' })).token;
    const listed = await api(server, '/attention', { token: reader });
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { items: AttentionItem[]; problems: string[] };
    expect(body.items.map((i) => i.id)).toEqual([`question:${comment.id}`]);
    for (const token of [reader, runner]) {
      const refused = await api(server, '/attention/ack', { method: 'POST', token, body: JSON.stringify({ ids: [`question:${comment.id}`] }) });
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: string }).error).toMatch(/^POST \/attention\/ack: the (read|runner) token (dash|r1) may call .*; this needs an operator token$/);
    }
    const unknown = await api(server, '/attention/ack', { method: 'POST', body: JSON.stringify({ ids: ['run:9-nope-r1'] }) });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'ID run:9-nope-r1: not on the needs-you list (pak2 attention lists the ids)', field: '/ids' });
    const neither = await api(server, '/attention/ack', { method: 'POST', body: JSON.stringify({}) });
    expect(neither.status).toBe(400);
    const acked = await api(server, '/attention/ack', { method: 'POST', body: JSON.stringify({ all: true }) });
    expect(acked.status).toBe(200);
    expect(await acked.json()).toEqual({ acked: [`question:${comment.id}`], already: [] });
    expect(((await (await api(server, '/attention', { token: reader })).json()) as { items: unknown[] }).items).toEqual([]);
    expect(readEventLog(g).filter((e) => e.type === 'AttentionAcknowledged')).toEqual([expect.objectContaining({ goal: goal.id, detail: `question:${comment.id}`, token_name: 'operator', token_role: 'operator' })]);
  }, 30_000);
});
