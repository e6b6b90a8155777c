import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { execute, subscribe, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { createHandler, type Request as SseRequest, type Response as SseResponse } from 'graphql-sse';
import type { Garden } from '../../garden/index.js';
import { openLeases } from '../../coordinator/remote.js';
import { findEventsAfter } from '../../store/index.js';
import type { LogTail } from '../log-tail.js';
import { publicText } from '../public-text.js';
import type { OpenStream } from '../sse.js';
import { formatResult, refusalOf, statusError, statusOf, type Refusal } from './errors.js';
import { EventFollower } from './follower.js';
import { decideOperation, isRefusal, prepareRequest, rootFields, type GraphqlParams, type Prepared } from './prepare.js';
import { graphqlSchema, MAX_NESTED_LOOKUPS, type GraphqlContext } from './schema.js';

/** What the GraphQL route works with. */
export interface GraphqlRouteContext {
  garden: Garden;
  tail: LogTail;
  /** The server's open streams: a subscription is one while it lasts (its token is checked again every second; the server's close ends it). */
  streams: Set<OpenStream>;
  /** The server's own `inject` (the root instance's): how a field calls its REST route in-process, through the same hooks. */
  inject: FastifyInstance['inject'];
  /** The prefix the REST routes are under (`/api/v1`). */
  prefix: string;
  /** The server's notice line. */
  onNotice?: (line: string) => void;
}

/** Results produced for a subscription and not yet written, at most: past it the subscription waits for its socket. */
const UNWRITTEN_MAX = 64;

/** The request headers a REST call made for a GraphQL field carries: the caller's token and the runner identity a runner's comment needs. */
const FORWARDED = ['authorization', 'pak2-runner', 'pak2-runner-host', 'pak2-runner-instance'] as const;

/**
 * Paces a subscription by its socket: the operation waits in
 * {@link room} while {@link UNWRITTEN_MAX} results it produced are not yet
 * written, so a client that reads slowly holds the server's work, not its
 * memory.
 */
class Flow {
  private produced = 0;
  private written = 0;
  private closed = false;
  private waiters: (() => void)[] = [];

  /** Resolves once one more result may be produced (at once after close). */
  async room(): Promise<void> {
    while (!this.closed && this.produced - this.written >= UNWRITTEN_MAX) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.produced += 1;
  }

  /** One result was written to the socket. */
  wrote(): void {
    this.written += 1;
    this.release();
  }

  close(): void {
    this.closed = true;
    this.release();
  }

  private release(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** The graphql-sse request context: the fastify request and its stream's pacing. */
interface StreamContext {
  request: FastifyRequest;
  flow: Flow;
}

/** True when the client asks for an event stream (graphql-sse's distinct-connections mode). */
function wantsStream(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream');
}

/** A refusal as graphql-sse answers it. */
function sseRefusal(refusal: Refusal, garden: Garden): SseResponse {
  return [JSON.stringify(scrubbed(refusal, garden)), { status: refusal.status, statusText: String(refusal.status), headers: { 'content-type': 'application/json; charset=utf-8' } }];
}

/** A refusal graphql-sse made itself (its request parsing: `Missing query`, a 415), in pak2's shape: its first message, with `extensions`. Ours pass as they are. */
function ownRefusal(body: string | null, status: number): Refusal {
  let errors: Refusal['errors'] | undefined;
  try {
    errors = body ? (JSON.parse(body) as { errors?: Refusal['errors'] }).errors : undefined;
  } catch {
    errors = undefined;
  }
  if (errors?.length && errors.every((e) => e.extensions?.status)) return { status, errors };
  return refusalOf(status, errors?.[0]?.message ?? (status === 415 ? 'Content-Type: send the request as application/json ({query, variables?, operationName?})' : `the request was refused (${status})`), status === 415 ? 'Content-Type' : 'body');
}

/** A refusal's messages without machine paths. */
function scrubbed(refusal: Refusal, garden: Garden): { errors: Refusal['errors'] } {
  return { errors: refusal.errors.map((e) => ({ ...e, message: publicText(e.message, garden.paths) })) };
}

/**
 * Registers `GET` and `POST /graphql` (docs/server/level2.md, "GraphQL")
 * on the `/api/v1` instance. A request that accepts `text/event-stream` is
 * graphql-sse's (its distinct-connections mode: one operation per
 * connection; `eventAdded` streams there); any other is GraphQL over HTTP
 * with a JSON answer. Both go through {@link prepareRequest} and
 * {@link decideOperation} before anything runs, and their fields through the
 * REST routes as the caller. A subscription by JSON is refused (400).
 */
export function registerGraphql(app: FastifyInstance, ctx: GraphqlRouteContext): void {
  const { garden } = ctx;
  const schema: GraphQLSchema = graphqlSchema();
  const internal = (error: Error) => ctx.onNotice?.(`pak2 serve: graphql: ${error.stack ?? error.message}`);

  /** One request's resolver context: REST calls as its caller. */
  const contextOf = (request: FastifyRequest): GraphqlContext => {
    const headers: Record<string, string> = {};
    for (const name of FORWARDED) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return {
      rest: async (method, path, body) => {
        const response = await ctx.inject({ method, url: `${ctx.prefix}${path}`, headers, ...(body !== undefined ? { payload: body as Record<string, unknown> } : {}) });
        if (response.statusCode === 204) return null;
        let value: { error?: string; field?: string } | undefined;
        try {
          value = JSON.parse(response.body) as typeof value;
        } catch {
          value = undefined;
        }
        if (response.statusCode >= 400) throw statusError(response.statusCode, value?.error ?? `${method} ${path}: answered ${response.statusCode}`, value?.field);
        return value;
      },
      leases: (runner) => openLeases(garden, runner),
      follow: async (since, filter) => {
        const offset = since ? (await findEventsAfter(garden.paths, since)).offset : ctx.tail.offset;
        return new EventFollower({ paths: garden.paths, tail: ctx.tail, offset, filter });
      },
      lookups: { left: MAX_NESTED_LOOKUPS },
    };
  };

  /** Prepared and allowed, or the refusal (a 403 said on the notice line, as REST's). */
  const admit = (request: FastifyRequest, params: GraphqlParams): Prepared | Refusal => {
    const prepared = prepareRequest(schema, params, request.method);
    if (isRefusal(prepared)) return prepared;
    const denied = request.caller ? decideOperation(request.caller, prepared) : refusalOf(401, 'Authorization: a bearer token is required', 'Authorization');
    if (!denied) return prepared;
    const fields = rootFields(prepared.document, prepared.operation).filter((f) => !f.startsWith('__'));
    ctx.onNotice?.(`pak2 serve: refused GraphQL ${prepared.operation.operation} ${fields.join(', ')} from ${request.ip}: token ${request.caller?.name} (role ${request.caller?.role}) may not run it (${denied.status})`);
    return denied;
  };

  const argsOf = (prepared: Prepared, contextValue: GraphqlContext): ExecutionArgs & { contextValue: GraphqlContext } => ({
    schema,
    document: prepared.document,
    ...(prepared.variables ? { variableValues: prepared.variables } : {}),
    ...(prepared.operationName ? { operationName: prepared.operationName } : {}),
    contextValue,
  });

  const sse = createHandler<FastifyRequest, StreamContext, GraphqlContext>({
    schema,
    // Distinct connections only: no reserved stream can buffer results for a client that never connects.
    authenticate: () => null,
    // prepareRequest validated the document already.
    validate: () => [],
    // This module's graphql, not whichever copy graphql-sse resolves (ESM and CJS are two realms to graphql's instanceof checks).
    execute: (args) => execute(args),
    subscribe: (args) => subscribe(args),
    onSubscribe: (req, params) => {
      const admitted = admit(req.context.request, params);
      if (isRefusal(admitted)) return sseRefusal(admitted, garden);
      return argsOf(admitted, contextOf(req.context.request));
    },
    onNext: async (_ctx, req, result) => {
      await req.context.flow.room();
      return formatResult(result as ExecutionResult, garden.paths, internal);
    },
  });

  const stream = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const flow = new Flow();
    const req: SseRequest<FastifyRequest, StreamContext> = {
      method: request.method,
      url: request.url,
      headers: {
        get: (key: string) => {
          if (key.toLowerCase() === 'accept') return 'text/event-stream';
          const value = (request.headers as IncomingHttpHeaders)[key.toLowerCase()];
          return value === undefined ? null : [value].flat().join('\n');
        },
      },
      body: (request.body as Record<string, unknown> | undefined) ?? null,
      raw: request,
      context: { request, flow },
    };
    const [body, init] = await sse(req);
    if (!body || typeof body === 'string') {
      if (init.status < 400) return reply.code(init.status).headers(init.headers ?? {}).send(body ?? '');
      return reply.code(init.status).send(scrubbed(ownRefusal(body, init.status), garden));
    }
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(init.status, { ...init.headers, 'x-accel-buffering': 'no' });
    const end = () => {
      flow.close();
      void body.return(undefined);
    };
    const held: OpenStream = { authorization: request.headers.authorization, close: end };
    ctx.streams.add(held);
    raw.once('close', end);
    try {
      for await (const chunk of body) {
        if (raw.destroyed || !raw.writable) break;
        await new Promise<void>((resolve) => raw.write(chunk, () => resolve()));
        if (chunk.startsWith('event: next')) flow.wrote();
      }
    } finally {
      end();
      ctx.streams.delete(held);
      raw.off('close', end);
      if (!raw.writableEnded) raw.end();
    }
    return reply;
  };

  const json = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    let params: GraphqlParams;
    if (request.method === 'GET') {
      const q = request.query as Record<string, string | undefined>;
      let variables: unknown;
      try {
        variables = q.variables ? JSON.parse(q.variables) : undefined;
      } catch {
        return reply.code(400).send(scrubbed(refusalOf(400, 'variables: not JSON', 'variables'), garden));
      }
      params = { query: q.query, variables, operationName: q.operationName };
    } else {
      params = (request.body ?? {}) as GraphqlParams;
    }
    const admitted = admit(request, params);
    if (isRefusal(admitted)) return reply.code(admitted.status).send(scrubbed(admitted, garden));
    if (admitted.operation.operation === 'subscription') {
      return reply.code(400).send(refusalOf(400, 'a subscription comes over graphql-sse: send Accept: text/event-stream (graphql-sse createClient does)', 'Accept'));
    }
    const result = formatResult(await execute(argsOf(admitted, contextOf(request))), garden.paths, internal);
    return reply.code(statusOf(result)).send(result);
  };

  // fastify's own refusals (a body that is not JSON or too large, another media type, an unknown parameter) in GraphQL's shape.
  const errorHandler = (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
    const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) internal(error);
    const unknown = (error.validation?.[0]?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
    const message = status >= 500 ? `internal error: ${error.message}` : unknown ? `${unknown}: unknown parameter (query, variables, operationName, extensions)` : error.message;
    const field = status >= 500 ? undefined : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'Content-Type' : (unknown ?? 'body');
    return reply.code(status).send(scrubbed(refusalOf(status, message, field), garden));
  };

  const handler = (request: FastifyRequest, reply: FastifyReply) => (wantsStream(request) ? stream(request, reply) : json(request, reply));
  const description =
    'GraphQL over HTTP (a JSON answer), or with `Accept: text/event-stream` graphql-sse (distinct connections): queries, the operator actions as mutations, and the `eventAdded(since:)` subscription. The schema (SDL) is in docs/server/level2.md, "GraphQL". Each field is its REST route, called with the same token.';
  const errors = (description: string) => ({ description, type: 'object' });
  const answer = {
    200: { description: 'the result: {data, errors?}, or an event stream of results', type: 'object' },
    400: errors('a document that does not parse or validate, past a bound, or bad variables: {errors}, each with extensions {code, status, field}'),
    403: errors('a mutation the token’s role may not run (as its REST route), or a runner’s comment without its lease'),
    404: errors('every root field asked for something that does not exist'),
    405: errors('a mutation by GET'),
    409: errors('every root field’s action was refused in this state'),
    413: errors('a body over 1 MiB'),
    415: errors('a body that is not application/json'),
  };
  app.get(
    '/graphql',
    {
      errorHandler,
      schema: {
        summary: 'GraphQL: a query by GET, or a subscription over graphql-sse (Accept: text/event-stream)',
        description,
        operationId: 'graphqlGet',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { query: { type: 'string' }, variables: { type: 'string', description: 'JSON' }, operationName: { type: 'string' }, extensions: { type: 'string' } },
        },
        response: answer,
      },
    },
    handler,
  );
  app.post(
    '/graphql',
    {
      errorHandler,
      // Before the schema's message ("body must be object"): a text body and a batch are said as such.
      preValidation: async (request, reply) => {
        if (typeof request.body === 'string') return reply.code(415).send(refusalOf(415, 'Content-Type: send the request as application/json ({query, variables?, operationName?})', 'Content-Type'));
        if (Array.isArray(request.body)) return reply.code(400).send(refusalOf(400, 'body: one operation per request ({query, variables?, operationName?}); batches are not taken', 'body'));
        return undefined;
      },
      schema: {
        summary: 'GraphQL: queries and mutations with a JSON answer, or with Accept: text/event-stream over graphql-sse (the eventAdded subscription)',
        description,
        operationId: 'graphql',
        body: {
          type: 'object',
          properties: { query: { type: 'string' }, variables: { type: ['object', 'null'] }, operationName: { type: ['string', 'null'] }, extensions: { type: ['object', 'null'] } },
        },
        response: answer,
      },
    },
    handler,
  );
}
