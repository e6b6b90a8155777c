import http from 'node:http';
import type { Garden } from '../../source/garden/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../../source/server/index.js';
import { operatorActions } from '../../source/session/index.js';

/** Starts a server on 127.0.0.1 with a free port; `cleanups` stops it in afterEach. */
export async function serve(garden: Garden, cleanups: (() => unknown)[], options: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const server = await startServer({ garden, actions: operatorActions(garden), host: '127.0.0.1', port: 0, ...options });
  cleanups.push(() => server.close());
  return server;
}

/** One server-sent event as a client sees it. */
export interface SseMessage {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** A raw SSE client over node:http: every message, every comment, and a close. */
export interface SseClient {
  messages: SseMessage[];
  comments: string[];
  /** Resolves with the status code once headers came. */
  ready: Promise<{ status: number; body?: string }>;
  close(): void;
  closed: Promise<void>;
  /** Stops and restarts reading the socket (a slow client). */
  pause(): void;
  resume(): void;
}

/** Connects to `url` (the stream) with the token and extra headers; `onMessage` sees each event as it is parsed. */
export function sseConnect(url: string, token: string | undefined, headers: Record<string, string> = {}, onMessage?: (m: SseMessage, client: SseClient) => void): SseClient {
  let resolveReady!: (v: { status: number; body?: string }) => void;
  let resolveClosed!: () => void;
  const client: SseClient = {
    messages: [],
    comments: [],
    ready: new Promise((r) => (resolveReady = r)),
    closed: new Promise((r) => (resolveClosed = r)),
    close: () => request.destroy(),
    pause: () => response?.pause(),
    resume: () => response?.resume(),
  };
  let response: http.IncomingMessage | undefined;
  const request = http.get(url, { headers: { accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } }, (res) => {
    response = res;
    response.setEncoding('utf8');
    if (response.statusCode !== 200) {
      let body = '';
      response.on('data', (d: string) => (body += d));
      response.on('end', () => resolveReady({ status: res.statusCode!, body }));
      return;
    }
    resolveReady({ status: 200 });
    let buffer = '';
    response.on('data', (chunk: string) => {
      buffer += chunk;
      for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const message: SseMessage = { id: undefined, event: undefined, data: '' };
        let isEvent = false;
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) client.comments.push(line.slice(1).trim());
          else if (line.startsWith('id: ')) message.id = line.slice(4);
          else if (line.startsWith('event: ')) message.event = line.slice(7);
          else if (line.startsWith('data: ')) {
            message.data += line.slice(6);
            isEvent = true;
          }
        }
        if (isEvent) {
          client.messages.push(message);
          onMessage?.(message, client);
        }
      }
    });
  });
  request.on('error', () => undefined);
  request.on('close', () => resolveClosed());
  return client;
}

/** Polls until `check` holds. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${what} not met within ${timeoutMs} ms`);
}

/** fetch with the bearer token. */
export function api(server: RunningServer, route: string, init: RequestInit & { token?: string | null } = {}): Promise<Response> {
  const { token, ...rest } = init;
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token ?? server.token}`;
  if (rest.body) headers['content-type'] = 'application/json';
  Object.assign(headers, rest.headers as Record<string, string> | undefined);
  return fetch(`${server.url}${route}`, { ...rest, headers });
}
