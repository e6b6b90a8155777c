import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from 'graphql';
import type { GardenPaths } from '../../garden/index.js';
import { storeUnavailable } from '../../store/index.js';
import { publicText } from '../public-text.js';

/** The `extensions.code` of a GraphQL error for each HTTP status it stands for (docs/server/level2.md, "GraphQL"). */
export const ERROR_CODES: Readonly<Record<number, string>> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** `extensions` of a pak2 GraphQL error: the HTTP status the REST route answered (or would), its code, and the field at fault. */
export interface ErrorExtensions {
  code: string;
  status: number;
  field?: string;
}

/**
 * A GraphQL error carrying an HTTP status: `extensions` `{code, status,
 * field?}`, `field` as REST names it (a JSON pointer into the mutation's
 * input, or an argument's name).
 */
export function statusError(status: number, message: string, field?: string): GraphQLError {
  const extensions: ErrorExtensions = { code: ERROR_CODES[status] ?? (status >= 500 ? 'INTERNAL' : 'BAD_REQUEST'), status, ...(field ? { field } : {}) };
  return new GraphQLError(message, { extensions: { ...extensions } });
}

/** A refusal before anything ran: the HTTP status and the errors of the answer. */
export interface Refusal {
  status: number;
  errors: GraphQLFormattedError[];
}

/** A {@link Refusal} of one error. */
export function refusalOf(status: number, message: string, field?: string, extra: Partial<GraphQLFormattedError> = {}): Refusal {
  return { status, errors: [{ message, ...extra, extensions: { ...statusError(status, message, field).extensions } }] };
}

/**
 * An execution result as it leaves the server: every message through
 * {@link publicText} (no machine path); an unreachable store (the
 * `storeUnavailable` errors) said as REST says it, status 503; and any
 * other error a resolver threw that is no GraphQL error of pak2's (a bug,
 * a failed read) said as `internal error: …` with status 500, the whole
 * error told to `onInternal` (the server's notice line).
 */
export function formatResult(result: ExecutionResult, paths: GardenPaths, onInternal: (error: Error) => void): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((error) => {
    const original = error.originalError;
    // An outage of the garden's store is "try again" (503), as REST answers it, never an internal error.
    if (original && storeUnavailable(original)) {
      return new GraphQLError("the garden's store cannot be reached just now; try again shortly", { nodes: error.nodes, path: error.path, extensions: { code: 'UNAVAILABLE', status: 503 } });
    }
    if (original && !(original instanceof GraphQLError)) {
      onInternal(original);
      return new GraphQLError(publicText(`internal error: ${original.message}`, paths), { nodes: error.nodes, path: error.path, extensions: { code: 'INTERNAL', status: 500 } });
    }
    return new GraphQLError(publicText(error.message, paths), { nodes: error.nodes, path: error.path, extensions: error.extensions });
  });
  return { ...result, errors };
}

/**
 * The HTTP status of an executed operation's answer (docs/server/level2.md,
 * "GraphQL"): 200 when it has no error or some root field has data; when
 * every root field failed, the first error's status (404 for an unknown
 * goal, 409 for a refused action, 403 for a runner token's comment without
 * a lease), as the REST route would have answered; else 200.
 */
export function statusOf(result: ExecutionResult): number {
  if (!result.errors?.length) return 200;
  if (result.data && Object.values(result.data).some((value) => value !== null && value !== undefined)) return 200;
  const status = result.errors[0]?.extensions?.status;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 200;
}
