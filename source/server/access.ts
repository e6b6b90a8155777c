import type { TokenRole } from '../contracts/index.js';
import type { Caller } from './tokens.js';

/**
 * The routes a runner token may write to beyond the GET routes (method and
 * fastify route pattern under `/api/v1`): the runner protocol. Comments and
 * documents take a runner token only with a lease its runner holds (checked
 * by the route: runner-routes.ts).
 */
export const RUNNER_WRITE_ROUTES: readonly string[] = [
  'POST /tasks/claim',
  'POST /runs/:id/heartbeat',
  'POST /runs/:id/log',
  'POST /runs/:id/artifacts',
  'POST /runs/:id/finish',
  'POST /goals/:id/comments',
  'PUT /plants/:name/documents',
];

/**
 * The GraphQL door's route under `/api/v1` (docs/server/level2.md,
 * "GraphQL"): every role may call it; each operation is then decided as
 * the REST routes it stands for (`decideOperation`,
 * source/server/graphql/prepare.ts, asks {@link decideAccess} about each
 * mutation's route).
 */
export const GRAPHQL_ROUTE = '/graphql';

/** What each role may call, in words (the 403's message and docs/server/level2.md). */
const ROLE_SCOPE: Record<TokenRole, string> = {
  operator: 'every route',
  runner: 'the GET routes, the event stream, GraphQL queries and the runner protocol for its own leases',
  read: 'the GET routes, the event stream and GraphQL queries only',
};

/** The answer of {@link decideAccess}: allowed, or refused with a 403's one-line message. */
export type AccessDecision = { allowed: true } | { allowed: false; error: string; field: 'Authorization' };

/**
 * Whether `caller` may call `method` on the route `route` (the fastify
 * pattern under the prefix, e.g. `/runs/:id/finish`; undefined for a
 * request that matched no route, which everyone may make: it is answered
 * 404). Pure. Operators may call everything; the read role GET routes only;
 * the runner role GET routes and {@link RUNNER_WRITE_ROUTES}; every role
 * {@link GRAPHQL_ROUTE}, whose operations are decided one by one as their
 * REST routes. Every other
 * write (a new route too) is the operator's alone: deny by default. The
 * refusal names the token's name and role, never the token.
 */
export function decideAccess(caller: Caller, method: string, route: string | undefined): AccessDecision {
  if (caller.role === 'operator' || route === undefined || method === 'GET' || route === GRAPHQL_ROUTE) return { allowed: true };
  if (caller.role === 'runner' && RUNNER_WRITE_ROUTES.includes(`${method} ${route}`)) return { allowed: true };
  return {
    allowed: false,
    error: `${method} ${route}: the ${caller.role} token ${caller.name} may call ${ROLE_SCOPE[caller.role]}; this needs an operator token`,
    field: 'Authorization',
  };
}
