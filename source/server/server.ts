import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { reloadConfig, type ConfigStatus, type Garden } from '../garden/index.js';
import { UserError } from '../errors.js';
import { RemoteRefusal } from '../coordinator/remote.js';
import { storeUnavailable } from '../store/index.js';
import type { OperatorActions } from '../session/index.js';
import type { ServerView } from '../snapshot/index.js';
import { decideAccess } from './access.js';
import { checkHost, ensureToken, isLoopbackAddress } from './auth.js';
import { LogTail } from './log-tail.js';
import { Leadership } from '../coordinator/leader.js';
import { scrubPayload } from './public-text.js';
import { openApiDocument, type RegisteredRoute } from './openapi.js';
import { API_PREFIX, HttpError, registerRoutes } from './routes.js';
import { leaseCheckMs, registerRunnerRoutes, startLeaseReaper, type LeaseReaper } from './runner-routes.js';
import type { OpenStream } from './sse.js';
import { registerGraphql } from './graphql/index.js';
import { TokenBook } from './tokens.js';
import { WebhookWorker, type WebhookWorkerOptions } from './webhooks/worker.js';

/** The default port of `pak2 serve`. */
export const DEFAULT_PORT = 7717;

/** The Retry-After of a 503 answered while the garden's store cannot be reached, seconds. */
const STORE_RETRY_AFTER_SECONDS = 5;
/** The default listen address: loopback only. */
export const DEFAULT_HOST = '127.0.0.1';

/** Options of {@link startServer}. */
export interface ServerOptions {
  garden: Garden;
  /** The operator actions the write routes call (the session's, or `operatorActions(garden)`). */
  actions: OperatorActions;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 7717; 0 picks a free port. */
  port?: number;
  /**
   * True when the host was given explicitly (`--host`): only then may it be
   * other than loopback. `hostFrom` names where the host came from in the
   * refusal (default `--host`).
   */
  allowRemote?: boolean;
  hostFrom?: string;
  /** A `: keep-alive` comment on every event stream this often. Default 15 s. */
  keepAliveMs?: number;
  /** How often the log is checked besides file-system notices. Default 500 ms. */
  pollMs?: number;
  /** The webhook delivery worker's tuning, or false for no worker. */
  webhooks?: false | Omit<WebhookWorkerOptions, 'garden' | 'tail' | 'onChange'>;
  /** Told whenever the URL or webhook health changes (the session's status, the status line). */
  onStatus?: (view: ServerView) => void;
  /** Errors inside a route (500s) and worker notices, one line each. */
  onNotice?: (line: string) => void;
  /** Told once per change of PAK2.toml a request finds (each authorized request reads it again when it changed: source/garden/reload.ts). */
  onConfig?: (status: ConfigStatus) => void;
  /**
   * How often expired runner leases are reaped, ms (docs/runners/level2.md):
   * default `min(lease_ttl_seconds / 3, 5 s)`; false for none (a test that
   * expires them itself).
   */
  leaseCheckMs?: number | false;
  /**
   * How long a client has to send a whole request, headers and body, ms
   * (default {@link REQUEST_TIMEOUT_MS}): past it the request is answered
   * 408 and its connection closed. Responses (event streams) are not bound by it.
   */
  requestTimeoutMs?: number;
  /**
   * The most connections one client address may hold open at once (default
   * {@link MAX_CONNECTIONS_PER_CLIENT}); event streams count. Past it, the
   * oldest of that address's connections that never showed a valid token is
   * closed to make room; when all have, one more is answered 429 and closed
   * before anything of it is read.
   */
  maxConnectionsPerClient?: number;
  /** How often open event streams' tokens are checked again, ms (default 1000): a revoked token's stream ends within it. */
  streamTokenCheckMs?: number;
}

/** Default cap of open connections per client address. */
export const MAX_CONNECTIONS_PER_CLIENT = 128;

/** Default time a client has to send a whole request (headers and body), ms: a body that trickles in cannot hold a connection longer. */
export const REQUEST_TIMEOUT_MS = 60_000;
/** How long the request's headers may take, ms. */
export const HEADERS_TIMEOUT_MS = 10_000;

/** A running server. */
export interface RunningServer {
  /** `http://host:port/api/v1`. */
  url: string;
  host: string;
  port: number;
  token: string;
  tokenFile: string;
  /** The fastify instance (for inject in tests). */
  app: FastifyInstance;
  status(): ServerView;
  /** Ends the event streams, stops the lease reaper, the webhook worker and the server. Idempotent. */
  close(): Promise<void>;
}

/** A header's name as it is written (`pak2-runner` → `Pak2-Runner`): fastify sees them lower-cased. */
function headerName(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('-');
}

/** The `{ error, field }` of a request fastify refused before a handler ran (schema, body parsing). */
function fastifyRefusal(error: FastifyError): { status: number; error: string; field?: string } {
  const first = error.validation?.[0];
  if (first) {
    const where = error.validationContext ?? 'body';
    const params = first.params as { missingProperty?: string; additionalProperty?: string };
    const name = params.missingProperty ?? params.additionalProperty;
    if (where === 'headers') {
      const header = headerName(name ?? first.instancePath.replace(/^\//, '').split('/')[0] ?? 'header');
      return { status: 400, error: params.missingProperty ? `${header}: this call needs the ${header} header` : `${header}: ${first.message ?? 'invalid'}`, field: header };
    }
    const pointer = `${first.instancePath}${name ? `/${name}` : ''}`;
    // The body's field as a JSON pointer; a parameter or header by its name.
    const field = where === 'body' ? pointer || 'body' : pointer.replace(/^\//, '').split('/')[0] || where;
    const what = params.additionalProperty ? 'unknown field' : first.message ?? 'invalid';
    return { status: 400, error: `${field}: ${what}`, field };
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { status: 415, error: `Content-Type: ${error.message}; send application/json`, field: 'Content-Type' };
  return { status: error.statusCode ?? 400, error: error.message, field: 'body' };
}

/**
 * Holds each client address to `cap` open connections. Past it, the oldest
 * connection of that address that has not shown a valid token is closed to
 * make room; when every one has, the new one is answered `429` with a JSON
 * error and closed at once (its request never read). One notice per address
 * while it stays over the cap.
 */
function capConnections(server: Server, cap: number, onNotice: (line: string) => void, authenticated: (socket: Socket) => boolean): void {
  const open = new Map<string, Set<Socket>>();
  const noticed = new Set<string>();
  server.on('connection', (socket: Socket) => {
    const who = socket.remoteAddress ?? 'unknown';
    const sockets = open.get(who) ?? new Set<Socket>();
    // Over the cap, the oldest connection that never showed a token gives way: idle sockets without one cannot lock out the operator.
    if (sockets.size >= cap) {
      const idle = [...sockets].find((s) => !authenticated(s));
      if (idle) {
        sockets.delete(idle);
        idle.destroy();
      }
    }
    const count = sockets.size;
    if (count >= cap) {
      const body = JSON.stringify({ error: `too many connections from ${who}: at most ${cap} at once; close some and try again`, field: 'connection' });
      socket.end(`HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      if (!noticed.has(who)) onNotice(`pak2 serve: ${who} holds ${count} connections, the most one client may; more are refused (429)`);
      noticed.add(who);
      return;
    }
    sockets.add(socket);
    open.set(who, sockets);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && open.get(who) === sockets) open.delete(who);
      if (sockets.size < cap) noticed.delete(who);
    });
  });
}

/**
 * Starts `pak2 serve` (docs/server/level2.md): fastify on loopback unless
 * told otherwise, bearer-token auth with roles on every route (operator,
 * runner, read: source/server/access.ts), the `/api/v1` routes,
 * the event stream, the OpenAPI description, the webhook worker, the
 * remote-runner routes (docs/runners/level2.md) and their lease reaper.
 *
 * @throws UserError for a host that is not loopback without `allowRemote`, or a port in use.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { garden } = options;
  const host = options.host ?? DEFAULT_HOST;
  const port = options.port ?? DEFAULT_PORT;
  await checkHost(host, Boolean(options.allowRemote), options.hostFrom ?? '--host');
  const { token, file: tokenFile } = await ensureToken(garden.paths);
  const tail = new LogTail(garden.paths, options.pollMs !== undefined ? { pollMs: options.pollMs } : {});
  await tail.start();
  const streams = new Set<OpenStream>();
  const routes: RegisteredRoute[] = [];
  const app = Fastify({
    logger: false,
    exposeHeadRoutes: false,
    forceCloseConnections: true,
    // A whole request (headers and body) comes within the limit or is answered 408 and closed: a trickling client holds nothing.
    requestTimeout: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
    // Node looks for requests past their time this often (its default, 30 s, would let a short limit run long).
    http: { connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor((options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS) / 2))) },
    ajv: { customOptions: { removeAdditional: false } },
  });
  app.server.headersTimeout = Math.min(HEADERS_TIMEOUT_MS, options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);
  // Sockets that carried a valid token: they keep their place under the per-client cap.
  const authenticated = new WeakSet<Socket>();
  capConnections(app.server, options.maxConnectionsPerClient ?? MAX_CONNECTIONS_PER_CLIENT, (line) => options.onNotice?.(line), (socket) => authenticated.has(socket));
  // Response schemas describe; they do not filter (records keep every field they have).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith(API_PREFIX)) routes.push({ method: route.method, url: route.url, ...(route.schema ? { schema: route.schema as Record<string, unknown> } : {}) });
  });
  const book = new TokenBook(garden.paths, token, (line) => options.onNotice?.(line));
  let configSaid = 0;
  app.decorateRequest('caller', undefined);
  // Every route, the unknown ones too: no token, no answer but 401, and nothing read or written; a role that may not call the route, 403.
  app.addHook('onRequest', async (request, reply) => {
    const caller = await book.callerOf(request.headers.authorization);
    if (caller) {
      authenticated.add(request.raw.socket);
      const route = request.routeOptions.url?.startsWith(API_PREFIX) ? request.routeOptions.url.slice(API_PREFIX.length) : undefined;
      const decision = decideAccess(caller, request.method, route);
      request.caller = caller;
      if (decision.allowed) {
        // PAK2.toml as it is now, for whatever this request does (a driver just added, a lease TTL changed).
        const status = reloadConfig(garden);
        if (status.version !== configSaid) {
          configSaid = status.version;
          options.onConfig?.(status);
        }
        return;
      }
      options.onNotice?.(`pak2 serve: refused ${request.method} ${request.url.split('?')[0]} from ${request.ip}: token ${caller.name} (role ${caller.role}) may not call it (403)`);
      await reply.code(403).header('connection', 'close').send({ error: decision.error, field: decision.field });
      return reply;
    }
    // Answered and closed: a body still to come is never read for a client with no token.
    await reply.code(401).header('www-authenticate', 'Bearer').header('connection', 'close').send({ error: 'Authorization: a bearer token is required (Authorization: Bearer <the token in <runtime-root>/serve/token>, or one pak2 token create made)', field: 'Authorization' });
    return reply;
  });
  // No machine path leaves in a message: errors and listings' problems name files by their place in the garden.
  app.addHook('preSerialization', async (_request, _reply, payload) => scrubPayload(payload, garden.paths));
  let storeDownSaid = false;
  app.addHook('onResponse', async (_request, reply) => {
    if (storeDownSaid && reply.statusCode < 500) storeDownSaid = false;
  });
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof HttpError) return reply.code(error.status).send({ error: error.message, ...(error.field ? { field: error.field } : {}) });
    if (error instanceof RemoteRefusal) return reply.code(error.status).send({ error: error.message, field: error.field, ...error.extra });
    // An outage of the garden's store is "try again", never a refusal or a 500: runners retry a 503, and give up on a 401.
    if (storeUnavailable(error)) {
      if (!storeDownSaid) options.onNotice?.(`pak2 serve: the store cannot be reached (${error.message}); answering 503 until it is back`);
      storeDownSaid = true;
      return reply.code(503).header('retry-after', String(STORE_RETRY_AFTER_SECONDS)).send({ error: "the garden's store cannot be reached just now; try again shortly" });
    }
    if (error.validation || (error.statusCode !== undefined && error.statusCode < 500)) {
      const r = fastifyRefusal(error);
      return reply.code(r.status).send({ error: r.error, ...(r.field ? { field: r.field } : {}) });
    }
    options.onNotice?.(`pak2 serve: ${_request.method} ${_request.url}: ${error.stack ?? error.message}`);
    return reply.code(500).send({ error: `internal error: ${error.message}` });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: `${request.method} ${request.url.split('?')[0]}: no such route (GET ${API_PREFIX}/openapi.json lists them)`, field: 'url' }));
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  await app.register(
    async (api) => {
      registerRoutes(api, { garden, actions: options.actions, tail, keepAliveMs, streams });
      registerRunnerRoutes(api, { garden, actions: options.actions });
      // The GraphQL door (seed 004): each field through the routes above, in-process, as its caller.
      registerGraphql(api, { garden, tail, streams, inject: app.inject.bind(app), prefix: API_PREFIX, onNotice: (line) => options.onNotice?.(line) });
      api.get('/openapi.json', { schema: { summary: 'This description (OpenAPI 3.1)', operationId: 'openapi', response: { 200: { type: 'object' } } } }, async () => openApiDocument(routes));
    },
    { prefix: API_PREFIX },
  );

  let webhookHealth: ServerView['webhooks'];
  let url = '';
  const view = (): ServerView => ({ url, ...(webhookHealth ? { webhooks: webhookHealth } : {}) });
  const worker =
    options.webhooks === false
      ? undefined
      : new WebhookWorker({
          ...options.webhooks,
          garden,
          tail,
          onChange: (health) => {
            webhookHealth = health;
            if (url) options.onStatus?.(view());
          },
          onNotice: (options.webhooks && options.webhooks.onNotice) || ((line) => options.onNotice?.(`pak2: ${line}`)),
        });

  try {
    await app.listen({ host, port });
  } catch (error) {
    await tail.stop();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UserError(`--port ${port}: the address ${host}:${port} is in use (another pak2 serve?); --port 0 picks a free port`, { exitCode: 1 });
    if (code === 'EADDRNOTAVAIL') throw new UserError(`--host ${host}: not an address of this machine`, { exitCode: 1 });
    throw error;
  }
  const address = app.server.address() as AddressInfo;
  // A name that resolved to loopback must have bound loopback too.
  if (!options.allowRemote && !isLoopbackAddress(address.address)) {
    await app.close();
    await tail.stop();
    throw new UserError(`${options.hostFrom ?? '--host'} ${host}: bound ${address.address}, not a loopback address; give --host explicitly to serve beyond this machine`);
  }
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  url = `http://${shown}:${address.port}${API_PREFIX}`;
  await worker?.start();
  webhookHealth = worker?.health();
  // Runner leases past their TTL are reaped here too, not only by a coordinator's pass (a garden whose goals only runners run).
  const checkMs = options.leaseCheckMs ?? leaseCheckMs(garden.config.runners.leaseTtlSeconds);
  // On a garden shared through a store, servers and coordinators elect one leader for the once-per-garden duties.
  const leadership = new Leadership(garden, 'serve');
  await leadership.start();
  const reaper: LeaseReaper | undefined =
    checkMs === false ? undefined : startLeaseReaper(garden, { intervalMs: checkMs, onNotice: (line) => options.onNotice?.(line), ...(leadership.shared ? { leads: () => leadership.leader } : {}) });
  // An open event stream lasts only as long as its token: a revoked one's streams end within a second (the check is a stat of tokens.json).
  const streamCheck = setInterval(() => {
    // One lookup per token, however many streams carry it.
    const byToken = new Map<string | undefined, OpenStream[]>();
    for (const stream of streams) byToken.set(stream.authorization, [...(byToken.get(stream.authorization) ?? []), stream]);
    for (const [authorization, held] of byToken) {
      void book.callerOf(authorization).then((caller) => {
        if (caller) return;
        options.onNotice?.(`pak2 serve: an event stream's token was revoked: ${held.length} stream(s) closed`);
        for (const stream of held) {
          stream.close();
          streams.delete(stream);
        }
        // A token whose standing cannot be read (the store is down) keeps its stream: only a token known revoked ends one.
      }, () => undefined);
    }
  }, options.streamTokenCheckMs ?? 1000);
  streamCheck.unref();
  options.onStatus?.(view());

  let closing: Promise<void> | undefined;
  return {
    url,
    host: address.address,
    port: address.port,
    token,
    tokenFile,
    app,
    status: view,
    close: () =>
      (closing ??= (async () => {
        clearInterval(streamCheck);
        for (const stream of streams) stream.close();
        await reaper?.stop();
        await leadership.stop();
        await worker?.stop();
        await app.close();
        await tail.stop();
      })()),
  };
}
