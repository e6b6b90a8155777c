/**
 * A slow or hostile client cannot hold the server (issue 25, item 3): a
 * request refused for its token is answered and its connection closed,
 * never left reading a body that trickles in; a request whose body never
 * finishes is cut off by the server's request timeout. Real sockets on
 * loopback; every wait is for the socket's close.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGoal } from '../../source/store/index.js';
import { LIST_BODY_CHARS } from '../../source/server/routes.js';
import { makeTestGarden } from '../support/garden.js';
import { api, serve, until } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Opens a raw connection, writes `head`, and collects what the server says until it closes the socket. */
function rawRequest(url: string, head: string, localAddress?: string): { said: () => string; closed: Promise<void>; socket: net.Socket } {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ port: Number(port), host: hostname, ...(localAddress ? { localAddress } : {}) });
  let said = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (said += chunk));
  socket.on('error', () => undefined);
  socket.write(head);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  cleanups.push(() => socket.destroy());
  return { said: () => said, closed, socket };
}

describe('a slow or hostile client', () => {
  it('a wrong token with a body still to come: 401 at once and the connection closed, the body never waited for', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false });
    const path = new URL(server.url).pathname;
    // Headers promise a megabyte; only a few bytes ever come.
    const request = rawRequest(server.url, `POST ${path}/goals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{"a":`);
    await request.closed;
    expect(request.said()).toMatch(/^HTTP\/1\.1 401 /);
    expect(request.said().toLowerCase()).toContain('connection: close');
    expect(request.said()).not.toContain(g.paths.gardenRoot);
  });

  it('a body that never finishes, with the right token: the request timeout answers and closes it', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false, requestTimeoutMs: 500 });
    const path = new URL(server.url).pathname;
    const request = rawRequest(server.url, `POST ${path}/goals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{"a":`);
    await request.closed;
    expect(request.said()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a client past its connection cap is answered 429 and closed; its other connections and other clients still work', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const notices: string[] = [];
    const server = await serve(g, cleanups, { webhooks: false, maxConnectionsPerClient: 3, onNotice: (line) => notices.push(line) });
    const { hostname, port } = new URL(server.url);
    // Three idle connections that never show a token: a request with one is still served, the oldest idle one making room.
    const idle = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<net.Socket>((resolve) => {
            const socket = net.connect(Number(port), hostname, () => resolve(socket));
            socket.on('error', () => undefined);
            cleanups.push(() => socket.destroy());
          }),
      ),
    );
    const idleClosed = new Promise<void>((resolve) => idle[0]!.once('close', () => resolve()));
    const served = rawRequest(server.url, `GET ${new URL(server.url).pathname}/goals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nConnection: close\r\n\r\n`);
    await served.closed;
    expect(served.said()).toMatch(/^HTTP\/1\.1 200 /);
    await idleClosed;
    for (const socket of idle) socket.destroy();
    // The server has seen them go (a state, not a time): the next three are the only ones it counts.
    const open = () => new Promise<number>((resolve) => server.app.server.getConnections((_e, n) => resolve(n)));
    await until(async () => (await open()) === 0, 10_000, 'the idle connections closed');
    // Three connections that showed the token and stay open (keep-alive): the cap is reached.
    const held = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<net.Socket>((resolve) => {
            const socket = net.connect(Number(port), hostname, () => socket.write(`GET ${new URL(server.url).pathname}/goals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\n\r\n`));
            socket.setEncoding('utf8');
            let said = '';
            socket.on('data', (chunk: string) => {
              said += chunk;
              if (said.includes('"goals"')) resolve(socket);
            });
            socket.on('error', () => undefined);
            cleanups.push(() => socket.destroy());
          }),
      ),
    );
    const fourth = rawRequest(server.url, `GET ${new URL(server.url).pathname}/goals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\n\r\n`);
    await fourth.closed;
    expect(fourth.said()).toMatch(/^HTTP\/1\.1 429 /);
    expect(fourth.said()).toContain('at most 3 at once');
    expect(notices.filter((n) => n.includes('more are refused (429)'))).toHaveLength(1);
    // Another client address (127.0.0.2 is loopback too) is not held to the first one's cap.
    const other = rawRequest(server.url, `GET ${new URL(server.url).pathname}/goals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nConnection: close\r\n\r\n`, '127.0.0.2');
    await other.closed;
    expect(other.said()).toMatch(/^HTTP\/1\.1 200 /);
    // One of the three closes: a new connection is served again.
    const freed = new Promise<void>((resolve) => held[0]!.once('close', () => resolve()));
    held[0]!.destroy();
    await freed;
    let answer: Response | undefined;
    for (let tries = 0; tries < 200 && answer?.status !== 200; tries += 1) {
      // The server sees the close a moment after the client: a 429 until then is the cap still counting it.
      answer = await api(server, '/goals', { headers: { connection: 'close' } });
      if (answer.status !== 200) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(answer?.status).toBe(200);
  });

  it('GET /goals over a hundred 1 MB goals answers a bounded listing: bodies cut to 4096 characters, named as cut; GET /goals/:id has the whole', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    // An emoji across the cut: the listing never ends in half of it.
    const big = (i: number) => `${'x'.repeat(4095)}😀 goal ${i}\n${'x'.repeat(1_000_000)}`;
    const ids: string[] = [];
    for (let i = 0; i < 100; i += 1) ids.push((await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: big(i) })).id);
    const server = await serve(g, cleanups, { webhooks: false });
    const response = await api(server, '/goals');
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text.length).toBeLessThan(2_000_000);
    const listed = JSON.parse(text) as { goals: { id: string; body: string; body_truncated?: boolean; body_chars?: number }[]; total: number };
    expect(listed.total).toBe(100);
    expect(listed.goals).toHaveLength(100);
    for (const goal of listed.goals) {
      expect(goal.body.length).toBeLessThanOrEqual(LIST_BODY_CHARS);
      expect(goal.body).not.toMatch(/[\ud800-\udbff]$/);
      expect(goal).toMatchObject({ body: 'x'.repeat(4095), body_truncated: true, body_chars: big(ids.indexOf(goal.id)).length });
    }
    const one = (await (await api(server, `/goals/${ids[7]}`)).json()) as { goal: { body: string; body_truncated?: boolean } };
    expect(one.goal.body).toBe(big(7));
    expect(one.goal.body_truncated).toBeUndefined();
  });

  it('no machine path in any answer: a 404 for a run, a listing that skipped an unreadable record, a damaged goal', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'readable' });
    const broken = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'to be damaged' });
    const file = path.join(g.paths.goalsDir, `${broken.id}.json`);
    fs.writeFileSync(file, '{"id": "torn');
    const server = await serve(g, cleanups, { webhooks: false });
    const bodies = await Promise.all(
      [`/runs/${goal.id}-r9`, '/goals', `/goals/${broken.id}`, '/runs', `/runs?goal=${goal.id}`].map(async (route) => {
        const r = await api(server, route);
        return { route, status: r.status, text: await r.text() };
      }),
    );
    const machine = [g.paths.gardenRoot, g.paths.runtimeRoot, fs.realpathSync(g.paths.gardenRoot)];
    for (const { route, status, text } of bodies) {
      for (const root of machine) expect(text, `${route} (${status})`).not.toContain(root);
      expect(text, route).not.toMatch(/"\/(tmp|root|home|var|work)\//);
    }
    expect(bodies[0]).toMatchObject({ status: 404 });
    expect(JSON.parse(bodies[0]!.text).error).toContain('<runtime-root>');
    expect(JSON.parse(bodies[1]!.text).problems.join('\n')).toContain(broken.id);
  });
});
