/**
 * A slow or hostile client cannot hold the server (issue 25, item 3): a
 * request refused for its token is answered and its connection closed,
 * never left reading a body that trickles in; a request whose body never
 * finishes is cut off by the server's request timeout. Real sockets on
 * loopback; every wait is for the socket's close.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { makeTestGarden } from '../support/garden.js';
import { serve } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Opens a raw connection, writes `head`, and collects what the server says until it closes the socket. */
function rawRequest(url: string, head: string): { said: () => string; closed: Promise<void>; socket: net.Socket } {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
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
});
