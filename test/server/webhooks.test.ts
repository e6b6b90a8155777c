/**
 * Webhooks (issue 11, item 5; docs/server/level2.md, "Webhooks"): a real
 * receiver on 127.0.0.1 that answers 500 twice and then 200 gets three
 * signed attempts, each in deliveries.jsonl, verified with the verification
 * snippet read from the docs; a worker restarted mid-retry resumes from the
 * persisted cursor and next retry; a subscription that keeps failing gives
 * up on the event, is marked failing and goes on.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerView } from '../../source/snapshot/index.js';
import { addSubscription, readDeliveries, readSubscriptions, webhookPaths } from '../../source/server/index.js';
import { appendEvent } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { serve, until } from './support.js';
import { runCli } from '../support/cli.js';

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/server/level2.md');

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1 answering each POST with the next status of `statuses` (the last one repeats). */
async function receiver(statuses: number[] | ((r: Received) => number)) {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (d: string) => (body += d));
    request.on('end', () => {
      const r = { at: Date.now(), headers: request.headers, body };
      received.push(r);
      const status = typeof statuses === 'function' ? statuses(r) : (statuses[received.length - 1] ?? statuses.at(-1)!);
      response.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hook`, received };
}

/** The verification snippet of docs/server/level2.md, exactly as written there, as a module. */
async function documentedVerifier(): Promise<(secret: string, headers: http.IncomingHttpHeaders, rawBody: string | Buffer, toleranceSeconds?: number) => boolean> {
  const text = fs.readFileSync(DOC, 'utf8');
  const blocks = [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.includes('export function verifyPak2Signature'));
  expect(blocks).toHaveLength(1);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-verify-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'verify.mjs');
  fs.writeFileSync(file, blocks[0]!);
  return ((await import(pathToFileURL(file).href)) as { verifyPak2Signature: never }).verifyPak2Signature;
}

function deliveryLines(g: Awaited<ReturnType<typeof garden>>) {
  const file = webhookPaths(g.paths).deliveries;
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : [];
}

const FAST = { baseDelayMs: 100, maxDelayMs: 1000, jitter: 0, reloadMs: 50 };

describe('webhook delivery', () => {
  it('a receiver that answers 500 twice then 200 gets three signed attempts, each logged, verified with the documented snippet', async () => {
    const g = await garden();
    const hook = await receiver([500, 500, 200]);
    const secret = 'a shared secret';
    const { subscription } = await addSubscription(g.paths, { url: hook.url, events: ['GoalClosed'], secret });
    const statuses: ServerView[] = [];
    await serve(g, cleanups, { webhooks: FAST, onStatus: (view) => statuses.push(view) });
    await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '1-x' });
    const closed = await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-x', reason: 'success' });
    await until(() => hook.received.length >= 3 && deliveryLines(g).length >= 3, 10_000, 'three attempts');
    await new Promise((r) => setTimeout(r, 300));
    expect(hook.received).toHaveLength(3);

    const verify = await documentedVerifier();
    for (const [i, r] of hook.received.entries()) {
      expect(r.headers['x-pak2-event-id']).toBe(closed.id);
      expect(r.headers['x-pak2-event-type']).toBe('GoalClosed');
      expect(r.headers['x-pak2-subscription']).toBe(subscription.id);
      expect(r.headers['x-pak2-attempt']).toBe(String(i + 1));
      expect(r.headers['x-pak2-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
      expect(Math.abs(Number(r.headers['x-pak2-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
      expect(verify(secret, r.headers, r.body)).toBe(true);
      expect(verify(secret, r.headers, Buffer.from(r.body))).toBe(true);
      // Any other secret, body or timestamp fails.
      expect(verify('another secret', r.headers, r.body)).toBe(false);
      expect(verify(secret, r.headers, r.body.replace('success', 'failure'))).toBe(false);
      expect(verify(secret, { ...r.headers, 'x-pak2-timestamp': String(Number(r.headers['x-pak2-timestamp']) - 1) }, r.body)).toBe(false);
      expect(JSON.parse(r.body)).toEqual({ subscription: subscription.id, garden: g.config.gardenName, event: closed });
    }
    // Backoff: the second attempt ≥ 100 ms after the first, the third ≥ 200 ms after the second.
    expect(hook.received[1]!.at - hook.received[0]!.at).toBeGreaterThanOrEqual(90);
    expect(hook.received[2]!.at - hook.received[1]!.at).toBeGreaterThanOrEqual(190);

    const lines = deliveryLines(g);
    expect(lines.map((l) => [l.event, l.attempt, l.status_code, l.outcome])).toEqual([
      [closed.id, 1, 500, 'retry'],
      [closed.id, 2, 500, 'retry'],
      [closed.id, 3, 200, 'delivered'],
    ]);
    for (const line of lines) expect(line.latency_ms).toEqual(expect.any(Number));
    expect(lines[0]!.next_retry_at).toEqual(expect.any(String));
    expect(lines[2]!.next_retry_at).toBeNull();
    expect(await readSubscriptions(g.paths)).toMatchObject([{ id: subscription.id, cursor: closed.id, retry: null, status: 'active', delivered: 1, gave_up: 0 }]);
    // The health went retrying, then back.
    expect(statuses.some((s) => s.webhooks?.retrying === 1)).toBe(true);
    expect(statuses.at(-1)!.webhooks).toEqual({ running: true, subscriptions: 1, failing: 0, retrying: 0 });
  });

  it('a worker restarted mid-retry resumes from the persisted cursor and next retry: no loss, no duplicate beyond the retried attempt', async () => {
    const g = await garden();
    const hook = await receiver([500, 500, 200]);
    await addSubscription(g.paths, { url: hook.url, events: ['GoalClosed', 'RunClosed'], secret: 's' });
    const first = await serve(g, cleanups, { webhooks: { ...FAST, baseDelayMs: 1500 } });
    const e1 = await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-x', reason: 'success' });
    const e2 = await appendEvent(g.paths, { type: 'RunClosed', run: '2-y-r1', goal: '2-y', status: 'success' });
    await until(() => deliveryLines(g).length === 1, 10_000, 'the first attempt logged');
    await first.close();
    // Stopped while the retry waits: it is on disk, not only in memory.
    const [persisted] = await readSubscriptions(g.paths);
    expect(persisted!.retry).toMatchObject({ event: e1.id, attempt: 1, last_status: 500 });
    const nextAt = Date.parse(persisted!.retry!.next_at);
    const e3 = await appendEvent(g.paths, { type: 'GoalClosed', goal: '3-z', reason: 'failure' });
    await serve(g, cleanups, { webhooks: { ...FAST, baseDelayMs: 100 } });
    await until(() => hook.received.length >= 5, 15_000, 'every event delivered');
    await new Promise((r) => setTimeout(r, 300));
    const byEvent = hook.received.map((r) => `${r.headers['x-pak2-event-id'] as string}#${r.headers['x-pak2-attempt'] as string}`);
    expect(byEvent).toEqual([`${e1.id}#1`, `${e1.id}#2`, `${e1.id}#3`, `${e2.id}#1`, `${e3.id}#1`]);
    // The restarted worker waited for the persisted next retry.
    expect(hook.received[1]!.at).toBeGreaterThanOrEqual(nextAt - 5);
    expect(deliveryLines(g).map((l) => `${l.event as string}#${l.attempt as number} ${l.outcome as string}`)).toEqual([
      `${e1.id}#1 retry`,
      `${e1.id}#2 retry`,
      `${e1.id}#3 delivered`,
      `${e2.id}#1 delivered`,
      `${e3.id}#1 delivered`,
    ]);
    expect((await readSubscriptions(g.paths))[0]).toMatchObject({ cursor: e3.id, retry: null, delivered: 3 });
  });

  it('a subscription that keeps failing gives up on the event (gave_up), is marked failing, moves on, and recovers', async () => {
    const g = await garden();
    const hook = await receiver((r) => (JSON.parse(r.body).event.goal === '1-bad' ? 503 : 200));
    const notices: string[] = [];
    const statuses: ServerView[] = [];
    await addSubscription(g.paths, { url: hook.url, events: ['*'], secret: 's' });
    await serve(g, cleanups, { webhooks: { ...FAST, maxAttempts: 2, onNotice: (l) => notices.push(l) }, onStatus: (v) => statuses.push(v) });
    const bad = await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-bad', reason: 'success' });
    await until(() => deliveryLines(g).some((l) => l.outcome === 'gave_up'), 10_000, 'gave up');
    await until(() => statuses.at(-1)?.webhooks?.failing === 1, 5000, 'failing reported');
    expect((await readSubscriptions(g.paths))[0]).toMatchObject({ status: 'failing', cursor: bad.id, retry: null, gave_up: 1 });
    expect(notices.join('\n')).toMatch(/is failing: gave up on event .* after 2 attempts/);
    const good = await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '2-good' });
    await until(async () => (await readSubscriptions(g.paths))[0]!.cursor === good.id, 10_000, 'the next event delivered');
    expect((await readSubscriptions(g.paths))[0]).toMatchObject({ status: 'active', delivered: 1, gave_up: 1 });
    expect((await readDeliveries(g.paths)).map((d) => [d.event, d.attempt, d.status_code, d.outcome])).toEqual([
      [bad.id, 1, 503, 'retry'],
      [bad.id, 2, 503, 'gave_up'],
      [good.id, 1, 200, 'delivered'],
    ]);
    await until(() => statuses.at(-1)?.webhooks?.failing === 0, 5000, 'recovery reported');
  });

  it('a receiver that is down is retried with no status code and the error said', async () => {
    const g = await garden();
    // A port nobody listens on any more.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    await addSubscription(g.paths, { url: `http://127.0.0.1:${port}/hook`, events: ['GoalClosed'], secret: 's' });
    await serve(g, cleanups, { webhooks: { ...FAST, maxAttempts: 1 } });
    await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-x', reason: 'success' });
    await until(() => deliveryLines(g).length === 1, 10_000);
    expect(deliveryLines(g)[0]).toMatchObject({ attempt: 1, status_code: null, outcome: 'gave_up', error: expect.stringMatching(/ECONNREFUSED|fetch failed|connect/) });
  });

  it('a dead receiver does not hold its subscription: once failing, each later event gets one try; pak2 webhook redeliver sends what was given up on when it is back', async () => {
    const g = await garden();
    let up = false;
    const hook = await receiver(() => (up ? 200 : 503));
    const { subscription } = await addSubscription(g.paths, { url: hook.url, events: ['GoalClosed'], secret: 's' });
    const notices: string[] = [];
    await serve(g, cleanups, { webhooks: { ...FAST, maxAttempts: 3, onNotice: (line) => notices.push(line) } });
    const first = await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-a', reason: 'success' });
    await until(async () => (await readSubscriptions(g.paths))[0]!.status === 'failing', 10_000, 'failing');
    const later = [await appendEvent(g.paths, { type: 'GoalClosed', goal: '2-b', reason: 'success' }), await appendEvent(g.paths, { type: 'GoalClosed', goal: '3-c', reason: 'success' })];
    await until(async () => (await readSubscriptions(g.paths))[0]!.cursor === later[1]!.id, 10_000, 'the later events passed');
    expect((await readDeliveries(g.paths)).map((d) => [d.event, d.attempt, d.outcome])).toEqual([
      [first.id, 1, 'retry'],
      [first.id, 2, 'retry'],
      [first.id, 3, 'gave_up'],
      [later[0]!.id, 1, 'gave_up'],
      [later[1]!.id, 1, 'gave_up'],
    ]);
    // Said once, as it started failing: not a line an event.
    expect(notices.filter((n) => n.includes('is failing'))).toHaveLength(1);
    // The receiver is back: the operator resends what was given up on, oldest first, through the CLI.
    up = true;
    const before = hook.received.length;
    const out = await runCli(['webhook', 'redeliver', subscription.id, '--garden', g.paths.gardenRoot]);
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout.trim().split('\n')).toEqual([first, ...later].map((e) => `${e.id} GoalClosed: delivered (200)`));
    // Signed as the worker signs; the attempt counts on from the given-up ones.
    const verify = await documentedVerifier();
    for (const r of hook.received.slice(before)) expect(verify('s', r.headers, r.body)).toBe(true);
    expect(hook.received.slice(before).map((r) => r.headers['x-pak2-attempt'])).toEqual(['4', '2', '2']);
    expect(hook.received.slice(before).map((r) => JSON.parse(r.body).event.goal)).toEqual(['1-a', '2-b', '3-c']);
    expect((await readSubscriptions(g.paths))[0]).toMatchObject({ status: 'active', delivered: 3 });
    // Nothing is left to resend; a second redeliver says so.
    const again = await runCli(['webhook', 'redeliver', subscription.id, '--garden', g.paths.gardenRoot]);
    expect(again).toMatchObject({ code: 0, stdout: `webhook ${subscription.id}: no event given up on to redeliver\n` });
    // Bad input: one line each, non-zero.
    const unknown = await runCli(['webhook', 'redeliver', 'wh-00000000', '--garden', g.paths.gardenRoot]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr.trim()).toBe('pak2: ID wh-00000000: no such webhook (pak2 webhook list shows them)');
    const badEvent = await runCli(['webhook', 'redeliver', subscription.id, '--event', 'nope', '--garden', g.paths.gardenRoot]);
    expect(badEvent.code).not.toBe(0);
    expect(badEvent.stderr).toContain('--event nope: not an event id');
  });
});

describe('where a webhook may point', () => {
  it('refuses credentials in the URL and link-local or metadata addresses, unless [webhooks] allow_link_local', async () => {
    const g = await garden();
    for (const [url, words] of [
      ['https://user:pass@example.invalid/hook', 'a URL with credentials (user:password@) is refused'],
      ['http://169.254.169.254/latest/meta-data', '169.254.169.254 is a link-local or cloud metadata address'],
      ['http://[fe80::1]/hook', 'fe80::1 is a link-local or cloud metadata address'],
      ['http://[fd00:ec2::254]/hook', 'is a link-local or cloud metadata address'],
      ['http://[::ffff:169.254.1.1]/hook', 'is a link-local or cloud metadata address'],
      ['http://[64:ff9b::a9fe:a9fe]/hook', 'is a link-local or cloud metadata address'],
      ['http://[::a9fe:a9fe]/hook', 'is a link-local or cloud metadata address'],
      ['ftp://127.0.0.1/hook', 'only http and https URLs'],
    ] as const) {
      const out = await runCli(['webhook', 'add', url, '--events', 'GoalClosed', '--garden', g.paths.gardenRoot]);
      expect(out.code, url).not.toBe(0);
      expect(out.stderr.trim().split('\n'), url).toHaveLength(1);
      expect(out.stderr, url).toContain(words);
    }
    expect(await readSubscriptions(g.paths)).toEqual([]);
    // Loopback and private receivers are fine.
    expect((await runCli(['webhook', 'add', 'http://127.0.0.1:9/hook', '--events', 'GoalClosed', '--garden', g.paths.gardenRoot])).code).toBe(0);
    // Allowed in config: the metadata address is accepted.
    fs.appendFileSync(path.join(g.paths.gardenRoot, 'PAK2.toml'), '\n[webhooks]\nallow_link_local = true\n');
    expect((await runCli(['webhook', 'add', 'http://169.254.169.254/hook', '--events', 'GoalClosed', '--garden', g.paths.gardenRoot])).code).toBe(0);
    // A bad value in config is named.
    fs.appendFileSync(path.join(g.paths.gardenRoot, 'PAK2.toml'), '');
    const text = fs.readFileSync(path.join(g.paths.gardenRoot, 'PAK2.toml'), 'utf8').replace('allow_link_local = true', 'allow_link_local = "yes"');
    fs.writeFileSync(path.join(g.paths.gardenRoot, 'PAK2.toml'), text);
    const bad = await runCli(['webhook', 'list', '--garden', g.paths.gardenRoot]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('webhooks.allow_link_local');
  });

  it('a subscription whose URL turns bad is not posted to: the attempt is refused and logged, no request leaves', async () => {
    const g = await garden();
    await addSubscription(g.paths, { url: 'http://127.0.0.1:9/hook', events: ['GoalClosed'], secret: 's' });
    // Rewritten behind pak2's back to a metadata address (or a name that now resolves to one).
    const file = webhookPaths(g.paths).subscriptions;
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('http://127.0.0.1:9/hook', 'http://169.254.169.254/latest'));
    await serve(g, cleanups, { webhooks: { ...FAST, maxAttempts: 1 } });
    await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-x', reason: 'success' });
    await until(() => deliveryLines(g).length === 1, 10_000);
    expect(deliveryLines(g)[0]).toMatchObject({ status_code: null, outcome: 'gave_up', latency_ms: 0, error: expect.stringContaining('refused: webhook wh-') });
  });
});
