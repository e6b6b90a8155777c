import { renderSchemas } from '../contracts/json-schema.js';
import { PACKAGE_VERSION } from '../package-root.js';

/** A route as fastify registered it (its `onRoute` options). */
export interface RegisteredRoute {
  method: string | string[];
  url: string;
  schema?: Record<string, unknown>;
}

type Json = Record<string, unknown>;

/** The record schemas in `schema/`, as OpenAPI components (their `$id` dropped). */
function recordSchemas(): Json {
  const files = renderSchemas();
  const pick = (file: string): Json => {
    const { $id: _id, $schema: _schema, ...rest } = JSON.parse(files[file]!) as Json;
    return rest;
  };
  return {
    Goal: pick('goal.schema.json'),
    Run: pick('run.schema.json'),
    Plant: pick('plant.schema.json'),
    Event: pick('event.schema.json'),
    Lease: pick('lease.schema.json'),
    Comment: pick('comment.schema.json'),
    Artifact: pick('artifact.schema.json'),
    Landing: pick('landing.schema.json'),
    AttentionItem: pick('attention-item.schema.json'),
    Error: {
      type: 'object',
      required: ['error'],
      properties: {
        error: { type: 'string', description: 'one line saying what is wrong' },
        field: { type: 'string', description: 'the field at fault: a JSON pointer into the request body (`/priority`), or a parameter or header name (`since`, `Authorization`)' },
        state: { type: 'string', description: 'a runner call naming an ended lease: `expired` or `finished`' },
        size: { description: 'a log upload at the wrong offset: the bytes the garden holds (an integer); a finish whose stream_bytes exceed them: `{events, stderr}`' },
      },
    },
  };
}

function parameters(schema: Json | undefined, where: 'path' | 'query' | 'header'): Json[] {
  if (!schema) return [];
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, s]) => {
    const { description, ...rest } = s;
    return { name, in: where, required: where === 'path' || required.has(name), ...(description ? { description } : {}), schema: rest, ...(rest.type === 'array' ? { style: 'form', explode: true } : {}) };
  });
}

function responses(schema: Json | undefined): Json {
  const out: Json = {};
  // Every route needs the token, so every route can answer 401.
  const all = { ...((schema ?? {}) as Record<string, Json>) };
  all['401'] ??= { $ref: '#/components/schemas/Error' };
  for (const [code, value] of Object.entries(all)) {
    const { description, content, ...rest } = value;
    const what = description ?? (code.startsWith('2') ? 'OK' : code === '401' ? 'missing or wrong bearer token' : code === '404' ? 'not found' : code === '409' ? 'refused in this state' : 'bad input');
    out[code] = { description: what, content: content ?? { 'application/json': { schema: rest } } };
  }
  return out;
}

/**
 * The OpenAPI 3.1 description of the registered routes (served at
 * `/api/v1/openapi.json`), made from the same schemas fastify checks input
 * against, so it cannot drift from what is served. The record schemas are
 * the ones in `schema/`.
 */
export function openApiDocument(routes: RegisteredRoute[]): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const url = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const schema = (route.schema ?? {}) as Json;
    for (const method of [route.method].flat()) {
      const { summary, description, operationId } = schema as { summary?: string; description?: string; operationId?: string };
      const body = schema.body as Json | undefined;
      paths[url] ??= {};
      paths[url]![method.toLowerCase()] = {
        ...(operationId ? { operationId } : {}),
        ...(summary ? { summary } : {}),
        ...(description ? { description } : {}),
        parameters: [...parameters(schema.params as Json, 'path'), ...parameters(schema.querystring as Json, 'query'), ...parameters(schema.headers as Json, 'header')],
        ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
        responses: responses(schema.response as Json),
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'pak2',
      version: PACKAGE_VERSION,
      description: "A garden's goals, runs, plants and events over HTTP (docs/server/level2.md), and the remote-runner protocol (docs/runners/level2.md). Every route needs `Authorization: Bearer <token>`, the token being `<runtime-root>/serve/token`.",
    },
    security: [{ bearer: [] }],
    paths,
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: recordSchemas() },
  };
}
