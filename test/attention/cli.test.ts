/**
 * `pak2 attention [--json]`, `pak2 ack`, and what a headless `pak2 cycle`
 * does for the operator without `pak2 serve` (docs/attention/level2.md):
 * it runs the [notify] command for each new item and delivers webhooks.
 * Uses dist/ (`npm run build`).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttentionItem } from '../../source/contracts/index.js';
import { addSubscription, readSubscriptions, startWebhookDelivery } from '../../source/server/index.js';
import { appendEvent, createGoal } from '../../source/store/index.js';
import { postComment } from '../../source/submit/index.js';
import { runCli, startCli } from '../support/cli.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(extraToml = '') {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-attn-cli-'));
  const g = await makeTestGarden({ root, extraToml });
  cleanups.push(() => g.cleanup());
  return g;
}

/** A loopback webhook receiver answering 200; the bodies it got, parsed. */
async function receiver() {
  const bodies: { subscription: string; event: { id: string; type: string; goal?: string } }[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (d: string) => (body += d));
    request.on('end', () => {
      bodies.push(JSON.parse(body) as (typeof bodies)[number]);
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, bodies };
}

describe('pak2 attention and pak2 ack', () => {
  it('lists, prints JSON, acknowledges; an unknown id is one line and exit 1', async () => {
    const g = await garden();
    const at = ['--garden', g.paths.gardenRoot];
    expect(await runCli(['attention', ...at])).toMatchObject({ code: 0, stdout: 'nothing needs you\n', stderr: '' });
    expect(JSON.parse((await runCli(['attention', '--json', ...at])).stdout)).toEqual({ items: [] });

    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'asks' });
    const { comment } = await postComment(g, goal.id, { body: 'Which port?', blocking: true, author: 'agent:x' });
    const json = await runCli(['attention', '--json', ...at]);
    expect(json.code).toBe(0);
    const items = (JSON.parse(json.stdout) as { items: AttentionItem[] }).items;
    expect(items).toEqual([{ id: `question:${comment.id}`, kind: 'question', summary: `${goal.id} asks: Which port?`, goal: goal.id, since: comment.created_at }]);
    const text = await runCli(['attention', ...at]);
    expect(text.stdout).toMatch(new RegExp(`^question +question:${comment.id} +\\S+ ago +${goal.id} asks: Which port\\?\\n1 needs you; pak2 ack ID \\(or --all\\) once looked at\\n$`));

    const unknown = await runCli(['ack', 'run:9-nope-r1', ...at]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toEqual(['pak2: ID run:9-nope-r1: not on the needs-you list (pak2 attention lists the ids)']);
    const none = await runCli(['ack', ...at]);
    expect(none.code).toBe(2);
    expect(none.stderr.trim().split('\n')[0]).toMatch(/^pak2: ID: give the item ids to acknowledge/);
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'attention.json'))).toBe(false);

    expect(await runCli(['ack', `question:${comment.id}`, ...at])).toMatchObject({ code: 0, stdout: `acknowledged question:${comment.id}\n` });
    expect((await runCli(['attention', ...at])).stdout).toBe('nothing needs you\n');
    expect((await runCli(['ack', '--all', ...at])).stdout).toBe('nothing needs you\n');
  }, 60_000);
});

describe('a headless pak2 cycle, no pak2 serve', () => {
  it('runs the [notify] command for a failed run and delivers the webhooks', async () => {
    const hook = await receiver();
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-attn-cli-'));
    const out = path.join(root, 'notified.jsonl');
    fs.writeFileSync(path.join(root, 'notify.mjs'), `import fs from 'node:fs';\nlet t = '';\nprocess.stdin.on('data', (d) => (t += d));\nprocess.stdin.on('end', () => fs.appendFileSync(${JSON.stringify(out)}, t));\n`);
    const g = await makeTestGarden({ root, extraToml: `[notify]\ncommand = ${JSON.stringify([process.execPath, path.join(root, 'notify.mjs')])}\n` });
    cleanups.push(() => g.cleanup());
    const { subscription } = await addSubscription(g.paths, { url: hook.url, events: ['GoalClosed', 'RunClosed'] });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'fails', driver: 'exit3' });

    const child = startCli(['cycle', '--no-ui', '--garden', g.paths.gardenRoot]);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (child.exitCode === null && child.pid && isAlive(child.pid)) child.kill('SIGKILL');
      await exited;
    });
    await waitFor(() => hook.bodies.some((b) => b.event.type === 'GoalClosed' && b.event.goal === goal.id), 30_000);
    await waitFor(() => fs.existsSync(out) && fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).length === 1, 15_000);
    const item = JSON.parse(fs.readFileSync(out, 'utf8')) as AttentionItem;
    expect(item).toMatchObject({ id: `run:${goal.id}-r1`, kind: 'run', goal: goal.id, run: `${goal.id}-r1` });
    expect(hook.bodies.filter((b) => b.event.goal === goal.id).map((b) => b.event.type)).toEqual(['RunClosed', 'GoalClosed']);
    expect(hook.bodies.every((b) => b.subscription === subscription.id)).toBe(true);
    await waitFor(async () => (await readSubscriptions(g.paths))[0]!.cursor === hook.bodies.at(-1)!.event.id);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).not.toMatch(/webhooks|notify/);
  }, 60_000);

  it('two delivering processes of one garden deliver each event once (the worker lock)', async () => {
    const hook = await receiver();
    const g = await garden();
    await addSubscription(g.paths, { url: hook.url, events: ['*'] });
    const notices: string[] = [];
    const first = startWebhookDelivery(g, { checkMs: 20, reloadMs: 20, onNotice: (line) => notices.push(`first: ${line}`) });
    cleanups.push(() => first.stop());
    await waitFor(() => first.health()?.running === true);
    const second = startWebhookDelivery(g, { checkMs: 20, reloadMs: 20, onNotice: (line) => notices.push(`second: ${line}`) });
    cleanups.push(() => second.stop());
    await waitFor(() => second.health() !== undefined);
    expect(second.health()!.running).toBe(false);
    expect(notices).toEqual(['second: webhooks: another pak2 process of this garden (serve, cycle or the workbench) delivers them (webhooks/worker.lock is held); this one takes over if it stops']);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await appendEvent(g.paths, { type: 'GardenGenesis', detail: `event ${i}` })).id!);
    await waitFor(() => hook.bodies.length >= 5);
    // The first stops: the second takes over from the persisted cursor, no event twice.
    await first.stop();
    for (let i = 5; i < 8; i += 1) ids.push((await appendEvent(g.paths, { type: 'GardenGenesis', detail: `event ${i}` })).id!);
    await waitFor(() => hook.bodies.length >= 8, 20_000);
    await waitFor(async () => (await readSubscriptions(g.paths))[0]!.cursor === ids.at(-1));
    expect(hook.bodies.map((b) => b.event.id)).toEqual(ids);
  }, 60_000);
});
