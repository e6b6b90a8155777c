/**
 * A PostgreSQL outage under `pak2 serve` is "try again", never "who are
 * you?" (issue 27's fresh-user check): tokens read before the outage keep
 * their standing, unknown ones and store-backed calls get 503 (a runner
 * retries a 503 and gives up on a 401), open event streams stay open, and
 * a token known revoked is still refused. The outage is a TCP proxy in
 * front of the run's cluster, closed and opened again: connections are
 * cut and new ones refused, as when the database host goes away.
 */
import net from 'node:net';
import { createClient, type ExecutionResult } from 'graphql-sse';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { attachStore, detachStore } from '../../../source/store/index.js';
import { openPostgresStore } from '../../../source/store/postgres/store.js';
import { createToken, revokeToken } from '../../../source/server/tokens.js';
import { makeTestGarden } from '../../support/garden.js';
import { testDatabase } from '../../support/pg-test.js';
import { api, serve, sseConnect, until } from '../../server/support.js';

/** A proxy to `target` on 127.0.0.1 that can be cut (every connection ended, new ones refused) and restored on the same port. */
async function cuttableProxy(target: { host: string; port: number }): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });
  await listen();
  return { port, cut: stop, restore: listen, close: stop };
}

const RUNNER = { 'pak2-runner': 'box-1', 'pak2-runner-host': 'test-host' };

describe('pak2 serve while its PostgreSQL store is unreachable', () => {
  const cleanups: (() => unknown)[] = [];
  let db: Awaited<ReturnType<typeof testDatabase>> | undefined;
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });
  afterAll(() => db?.drop());

  it('answers 503 (not 401) for valid tokens, keeps event streams open, refuses a revoked token, and answers again after', async () => {
    db = await testDatabase('pak2_outage');
    const target = new URL(db.url);
    const proxy = await cuttableProxy({ host: target.hostname, port: Number(target.port) });
    cleanups.push(() => proxy.close());
    const proxied = new URL(db.url);
    proxied.port = String(proxy.port);
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const store = await openPostgresStore(proxied.toString());
    attachStore(garden.paths, store);
    cleanups.push(async () => {
      detachStore(garden.paths);
      await store.close();
    });
    const runner = await createToken(garden.paths, { role: 'runner', name: 'box-1' });
    const reader = await createToken(garden.paths, { role: 'read', name: 'watcher' });
    const gone = await createToken(garden.paths, { role: 'read', name: 'gone' });
    await revokeToken(garden.paths, 'gone');
    const notices: string[] = [];
    const server = await serve(garden, cleanups, { streamTokenCheckMs: 50, onNotice: (line) => notices.push(line) });

    // Standing read while the store answers.
    expect((await api(server, '/whoami', { token: runner.token, headers: RUNNER })).status).toBe(200);
    expect((await api(server, '/goals', { token: reader.token })).status).toBe(200);
    expect((await api(server, '/goals', { token: gone.token })).status).toBe(401);
    const stream = sseConnect(`${server.url}/events/stream`, reader.token);
    cleanups.push(() => stream.close());
    let streamClosed = false;
    void stream.closed.then(() => (streamClosed = true));
    expect((await stream.ready).status).toBe(200);
    // The GraphQL subscription (graphql-sse) lives through it too.
    const client = createClient({ url: `${server.url}/graphql`, headers: { authorization: `Bearer ${reader.token}` }, retryAttempts: 0 });
    cleanups.push(() => client.dispose());
    const added: ExecutionResult<any, any>[] = [];
    let subscriptionEnded = false;
    let subscribed = false;
    cleanups.push(
      client.subscribe(
        { query: 'subscription { eventAdded { type goal } }' },
        { next: (r) => void added.push(r), error: () => void (subscriptionEnded = true), complete: () => void (subscriptionEnded = true) },
        { connected: () => void (subscribed = true) } as never,
      ),
    );
    await until(() => subscribed, 20_000, 'the subscription connected');

    await proxy.cut();
    // The stream's own token check is the first to meet the outage: it must not read it as a revoke.
    await until(() => notices.some((n) => n.includes('store cannot be reached')), 20_000, 'the server noticing the outage');
    // A token read before the outage keeps its standing: whoami needs no store, and answers.
    expect((await api(server, '/whoami', { token: runner.token, headers: RUNNER })).status).toBe(200);
    const leases = await api(server, '/leases?runner=box-1', { token: runner.token, headers: RUNNER });
    expect(leases.status).toBe(503);
    expect(leases.headers.get('retry-after')).toBe('5');
    const body = (await leases.json()) as { error: string };
    expect(body.error).toMatch(/store cannot be reached/);
    expect(body.error).not.toMatch(/\/|127\.0\.0\.1/);
    expect((await api(server, '/goals', { token: reader.token })).status).toBe(503);
    expect((await api(server, '/goals', { token: server.token })).status).toBe(503);
    // Unknown while the store is down: not refused for good either.
    expect((await api(server, '/goals', { token: 'pak2_not_a_token_anyone_made' })).status).toBe(503);
    // Known revoked: refused whether the store answers or not.
    expect((await api(server, '/goals', { token: gone.token })).status).toBe(401);
    expect(streamClosed).toBe(false);
    expect(notices.filter((n) => n.includes('revoked'))).toEqual([]);
    // A GraphQL query is the same "try again": 503, UNAVAILABLE, no machine path.
    const query = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${reader.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ goals { total } }' }) });
    expect(query.status).toBe(503);
    const answer = (await query.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect(answer.errors[0]!.extensions.code).toBe('UNAVAILABLE');
    expect(answer.errors[0]!.message).not.toMatch(/\/|127\.0\.0\.1/);
    expect(subscriptionEnded).toBe(false);

    await proxy.restore();
    await until(async () => (await api(server, '/whoami', { token: runner.token, headers: RUNNER })).status === 200, 30_000, 'whoami answered again');
    expect((await api(server, '/goals', { token: reader.token })).status).toBe(200);
    // The stream that lived through the outage carries what happens after it.
    const before = stream.messages.length;
    const submitted = await api(server, '/goals', { method: 'POST', body: JSON.stringify({ type: 'fix', plant: 'gardener', body: 'after the outage' }) });
    expect(submitted.status).toBe(201);
    await until(() => stream.messages.slice(before).some((m) => m.event === 'GoalSubmitted' || m.data.includes('GoalSubmitted')), 20_000, 'the submit on the old stream');
    expect(streamClosed).toBe(false);
    await until(() => added.some((r) => r.data?.eventAdded?.type === 'GoalSubmitted'), 20_000, 'the submit on the subscription');
    expect(subscriptionEnded).toBe(false);
  });
});
