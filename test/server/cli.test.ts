/**
 * The commands (issue 11, items 4–5): `pak2 serve` and its one start line,
 * the refusal of an address beyond loopback that did not come from --host,
 * `pak2 webhook add|list|remove|deliveries`, and `pak2 cycle --serve` doing
 * the whole path end to end: a goal queued over HTTP, run by the
 * coordinator, its GoalClosed delivered signed to a webhook.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { until } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

/** Starts a long-running command and waits for its `pak2: serving …` line; stops it with SIGTERM in afterEach. */
async function startServing(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = startCli(args, { env });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });
  await until(() => /pak2: serving (\S+)/.test(stderr) || child.exitCode !== null, 20_000, 'the start line');
  const url = /pak2: serving (\S+)/.exec(stderr)?.[1];
  if (!url) throw new Error(`no start line: ${stderr}`);
  return { child, url, exited, stderr: () => stderr, stdout: () => stdout };
}

describe('pak2 serve', () => {
  it('says the URL and the token file in one stderr line, answers with the token, and stops on SIGTERM', async () => {
    const g = await garden();
    const s = await startServing(['serve', '--garden', g.paths.gardenRoot, '--port', '0']);
    const tokenFile = path.join(g.paths.runtimeRoot, 'serve', 'token');
    expect(s.stderr().trim().split('\n')).toEqual([`pak2: serving ${s.url} · bearer token in ${tokenFile}`]);
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    expect((await fetch(`${s.url}/plants`)).status).toBe(401);
    const plants = await fetch(`${s.url}/plants`, { headers: { authorization: `Bearer ${token}` } });
    expect(await plants.json()).toMatchObject({ plants: [{ name: 'gardener' }] });
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('refuses an address beyond loopback that did not come from --host, in one line, and bad ports', async () => {
    const g = await garden();
    const refused = await runCli(['serve', '--garden', g.paths.gardenRoot, '--port', '0'], { env: { PAK2_SERVE_HOST: '0.0.0.0' } });
    expect(refused.code).toBe(2);
    expect(oneLineError(refused.stderr)).toMatch(/^pak2: PAK2_SERVE_HOST 0\.0\.0\.0: not a loopback address .*--host 0\.0\.0\.0/);
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'serve', 'token'))).toBe(false);
    const port = await runCli(['serve', '--garden', g.paths.gardenRoot, '--port', '70000']);
    expect(port.code).toBe(2);
    expect(oneLineError(port.stderr)).toMatch(/^pak2: --port 70000: must be a port number/);
    const hostWithoutServe = await runCli(['cycle', '--garden', g.paths.gardenRoot, '--no-ui', '--host', '0.0.0.0']);
    expect(hostWithoutServe.code).toBe(2);
    expect(oneLineError(hostWithoutServe.stderr)).toBe('pak2: --host: only with --serve');
  });

  it('a port in use is a one-line refusal naming --port', async () => {
    const g = await garden();
    const blocker = http.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    const { port } = blocker.address() as { port: number };
    const r = await runCli(['serve', '--garden', g.paths.gardenRoot, '--port', String(port)]);
    expect(r.code).toBe(1);
    expect(oneLineError(r.stderr)).toMatch(new RegExp(`^pak2: --port ${port}: the address 127.0.0.1:${port} is in use`));
  });
});

describe('pak2 webhook', () => {
  it('add, list, remove, deliveries; bad input is one line naming the argument', async () => {
    const g = await garden();
    const G = ['--garden', g.paths.gardenRoot];
    const secretFile = path.join(g.paths.gardenRoot, 'secret.txt');
    fs.writeFileSync(secretFile, 'from a file\n');
    const added = await runCli(['webhook', 'add', 'http://127.0.0.1:9/hook', '--events', 'GoalClosed,RunClosed', '--secret-file', secretFile, ...G]);
    expect(added.code).toBe(0);
    const id = added.stdout.trim();
    expect(id).toMatch(/^wh-[0-9a-f]{8}$/);
    const secretPath = path.join(g.paths.runtimeRoot, 'webhooks', 'secrets', id);
    expect(added.stderr).toContain(secretPath);
    expect(fs.readFileSync(secretPath, 'utf8')).toBe('from a file\n');
    expect(fs.statSync(secretPath).mode & 0o777).toBe(0o600);
    const list = await runCli(['webhook', 'list', ...G]);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+http://127.0.0.1:9/hook\\s+GoalClosed,RunClosed\\s+active`));
    const json = JSON.parse((await runCli(['webhook', 'list', '--json', ...G])).stdout) as { id: string; cursor: string | null; events: string[] }[];
    const lastEvent = fs.readFileSync(g.paths.coordinatorLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string }).at(-1)!.id;
    expect(json).toMatchObject([{ id, events: ['GoalClosed', 'RunClosed'], cursor: lastEvent, status: 'active', retry: null }]);
    expect((await runCli(['webhook', 'deliveries', ...G])).stdout).toMatch(/^no deliveries yet/);

    for (const [args, message] of [
      [['webhook', 'add', 'not a url', '--events', 'GoalClosed'], /^pak2: URL not a url: not a URL/],
      [['webhook', 'add', 'ftp://x.test/', '--events', 'GoalClosed'], /^pak2: URL ftp:\/\/x.test\/: only http and https/],
      [['webhook', 'add', 'http://x.test/', '--events', 'GoalClosed,Nope'], /^pak2: --events Nope: not an event type/],
      [['webhook', 'add', 'http://x.test/', '--events', 'GoalClosed', '--secret-file', 'missing.txt'], /^pak2: --secret-file missing.txt: no such file/],
      [['webhook', 'remove', 'wh-00000000'], /^pak2: ID wh-00000000: no such webhook/],
      [['webhook', 'deliveries', 'wh-00000000'], /^pak2: ID wh-00000000: no such webhook/],
      [['webhook', 'deliveries', '--limit', '0'], /^pak2: --limit 0: must be a whole number/],
    ] as const) {
      const r = await runCli([...args, ...G]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(oneLineError(r.stderr), args.join(' ')).toMatch(message);
    }
    const missingEvents = await runCli(['webhook', 'add', 'http://x.test/', ...G]);
    expect(missingEvents.code).toBe(2);
    expect(missingEvents.stderr).toMatch(/--events/);

    const removed = await runCli(['webhook', 'remove', id, ...G]);
    expect(removed).toMatchObject({ code: 0 });
    expect(fs.existsSync(secretPath)).toBe(false);
    expect((await runCli(['webhook', 'list', ...G])).stdout).toMatch(/^no webhooks/);
  });

  it('pak2 cycle --serve: a goal queued over HTTP runs, and its GoalClosed reaches a webhook, signed; deliveries lists it', async () => {
    const g = await garden();
    const G = ['--garden', g.paths.gardenRoot];
    const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const hook = http.createServer((request, response) => {
      let body = '';
      request.on('data', (d: Buffer) => (body += d.toString()));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => hook.close(resolve)));
    const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/in`;
    const id = (await runCli(['webhook', 'add', hookUrl, '--events', 'GoalClosed', ...G])).stdout.trim();
    const s = await startServing(['cycle', '--no-ui', '--serve', '--port', '0', ...G]);
    const token = fs.readFileSync(path.join(g.paths.runtimeRoot, 'serve', 'token'), 'utf8').trim();
    const submitted = await fetch(`${s.url}/goals`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'spike', plant: 'gardener', body: 'over http' }),
    });
    expect(submitted.status).toBe(201);
    const { goal } = (await submitted.json()) as { goal: { id: string } };
    await until(() => received.length >= 1, 30_000, 'the webhook delivery');
    const event = JSON.parse(received[0]!.body) as { subscription: string; event: { type: string; goal: string; reason: string } };
    expect(event).toMatchObject({ subscription: id, event: { type: 'GoalClosed', goal: goal.id, reason: 'success' } });
    const secret = fs.readFileSync(path.join(g.paths.runtimeRoot, 'webhooks', 'secrets', id), 'utf8').trim();
    const { createHmac } = await import('node:crypto');
    expect(received[0]!.headers['x-pak2-signature']).toBe(`v1=${createHmac('sha256', secret).update(`${received[0]!.headers['x-pak2-timestamp'] as string}.${received[0]!.body}`).digest('hex')}`);
    // The headless lines include the goal's events, and the delivery is logged.
    await until(() => s.stdout().includes('GoalClosed'), 10_000);
    await until(async () => (await runCli(['webhook', 'deliveries', id, '--json', ...G])).stdout.includes('"delivered"'), 10_000);
    const lines = (await runCli(['webhook', 'deliveries', id, '--json', ...G])).stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toMatchObject([{ subscription: id, event: received[0]!.headers['x-pak2-event-id'], attempt: 1, status_code: 204, outcome: 'delivered' }]);
    expect((await runCli(['webhook', 'deliveries', ...G])).stdout).toMatch(new RegExp(`${id}\\s+\\S+\\s+GoalClosed\\s+1\\s+204`));
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });
});
