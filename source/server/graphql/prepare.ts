import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import { decideAccess } from '../access.js';
import type { Caller } from '../tokens.js';
import { refusalOf, type Refusal } from './errors.js';
import { MUTATION_ROUTES } from './schema.js';

/**
 * The bounds of one GraphQL request (docs/server/level2.md, "GraphQL",
 * "Hostile input"). The standard introspection query has depth 15 and 229
 * fields; pak2's own records nest at most 4 deep.
 */
export const GRAPHQL_LIMITS = {
  /** Lexical tokens in the document (`parse`'s maxTokens): a huge document is refused while it is read. */
  tokens: 10_000,
  /** Fields nested in fields, at most. */
  depth: 20,
  /** Fields selected in all, fragments counted at each use. */
  fields: 1000,
  /** Root fields of the operation (aliases count): each is a REST call. */
  rootFields: 10,
} as const;

/** One GraphQL request's parameters, as a POST body or a GET query string carries them. */
export interface GraphqlParams {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

/** A request ready to run: the parsed document, the operation chosen, the variables as given. */
export interface Prepared {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/** A bound passed while measuring a document: carries the refusal. */
class Bounds extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.errors[0]!.message);
  }
}

/**
 * Measures the fields below `set` (at `depth`) into `count`, fragments
 * expanded where they are used (a fragment being expanded is not entered
 * again: a cycle is validation's to report).
 *
 * @throws Bounds as soon as the depth or the field count passes its bound (the work stops there).
 */
function measure(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, depth: number, count: { fields: number }, entered: Set<string>): void {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      count.fields += 1;
      if (count.fields > GRAPHQL_LIMITS.fields) throw new Bounds(refusalOf(400, `query: more than ${GRAPHQL_LIMITS.fields} fields selected (fragments counted where they are used); ask for less`, 'query'));
      if (!selection.selectionSet) continue;
      if (depth + 1 > GRAPHQL_LIMITS.depth) throw new Bounds(refusalOf(400, `query: fields nested more than ${GRAPHQL_LIMITS.depth} deep; ask for less`, 'query', { locations: selection.loc ? [{ line: selection.loc.startToken.line, column: selection.loc.startToken.column }] : [] }));
      measure(selection.selectionSet, fragments, depth + 1, count, entered);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      measure(selection.selectionSet, fragments, depth, count, entered);
    } else {
      const name = selection.name.value;
      const fragment = fragments.get(name);
      // An unknown fragment or a cycle is validation's to report.
      if (!fragment || entered.has(name)) continue;
      entered.add(name);
      measure(fragment.selectionSet, fragments, depth, count, entered);
      entered.delete(name);
    }
  }
}

/** The root field names of `operation` (through fragments), each once. */
export function rootFields(document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const names: string[] = [];
  const walk = (set: SelectionSetNode, entered: Set<string>) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) names.push(selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet, entered);
      else if (!entered.has(selection.name.value) && fragments.has(selection.name.value)) walk(fragments.get(selection.name.value)!.selectionSet, new Set([...entered, selection.name.value]));
    }
  };
  walk(operation.selectionSet, new Set());
  return names;
}

/**
 * Reads, bounds and checks one GraphQL request before anything runs
 * (docs/server/level2.md, "GraphQL"). In order: `query` must be a string,
 * `variables` an object, `operationName` a string; the document parses
 * within {@link GRAPHQL_LIMITS}.tokens; the operation exists; it is within
 * the depth, field and root-field bounds; it validates against the schema;
 * its variables coerce (an event cursor that is no ULID is refused here);
 * a mutation is not sent by GET. Each refusal is `400` (`405` for a
 * mutation by GET) with GraphQL errors carrying `extensions.code`,
 * `status` and `field`. Pure but for the work of parsing.
 *
 * @returns the prepared request, or the refusal to answer.
 */
export function prepareRequest(schema: GraphQLSchema, params: GraphqlParams, method: string): Prepared | Refusal {
  const { query, variables, operationName } = params;
  if (typeof query !== 'string' || !query.trim()) return refusalOf(400, 'query: a GraphQL document is required (a string)', 'query');
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return refusalOf(400, 'variables: an object of variable values', 'variables');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return refusalOf(400, 'operationName: a string', 'operationName');
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: GRAPHQL_LIMITS.tokens });
  } catch (error) {
    const e = error as GraphQLError;
    const tooMany = /Document contains more th\w+ \d+ tokens/.test(e.message);
    return refusalOf(400, tooMany ? `query: more than ${GRAPHQL_LIMITS.tokens} tokens; send a smaller document` : e.message, 'query', e.locations ? { locations: [...e.locations] } : {});
  }
  const name = typeof operationName === 'string' ? operationName : undefined;
  const operation = getOperationAST(document, name);
  if (!operation) return refusalOf(400, name ? `operationName ${name}: no such operation in the document` : 'operationName: the document holds no operation, or several: name the one to run', 'operationName');
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  try {
    measure(operation.selectionSet, fragments, 0, { fields: 0 }, new Set());
  } catch (error) {
    if (error instanceof Bounds) return error.refusal;
    throw error;
  }
  const roots = rootFields(document, operation);
  if (roots.length > GRAPHQL_LIMITS.rootFields) return refusalOf(400, `query: ${roots.length} root fields; at most ${GRAPHQL_LIMITS.rootFields} in one request`, 'query');
  const invalid = validate(schema, document, undefined, { maxErrors: 10 });
  if (invalid.length) return { status: 400, errors: invalid.map((e) => ({ ...e.toJSON(), extensions: { code: 'GRAPHQL_VALIDATION_FAILED', status: 400, field: 'query' } })) };
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], (variables ?? {}) as Record<string, unknown>, { maxErrors: 10 });
  if (coerced.errors) return { status: 400, errors: coerced.errors.map((e) => ({ ...e.toJSON(), extensions: { code: 'BAD_USER_INPUT', status: 400, field: 'variables' } })) };
  if (operation.operation === 'mutation' && method === 'GET') return refusalOf(405, 'a mutation comes by POST, not GET', 'method');
  return { document, operation, variables: (variables ?? undefined) as Record<string, unknown> | undefined, operationName: name };
}

/**
 * Whether `caller` may run the prepared operation: queries and the
 * subscription read (the GET routes and the event stream: every role); a
 * mutation asks {@link decideAccess} about the REST route of each of its
 * root fields ({@link MUTATION_ROUTES}), a field under `@skip` included.
 * Pure.
 *
 * @returns undefined when allowed, else the 403 refusal naming the mutation, its route and the token's name and role.
 */
export function decideOperation(caller: Caller, prepared: Prepared): Refusal | undefined {
  if (prepared.operation.operation !== 'mutation') return undefined;
  for (const field of rootFields(prepared.document, prepared.operation)) {
    const route = MUTATION_ROUTES[field];
    if (!route) continue; // __typename
    const decision = decideAccess(caller, route.method, route.route);
    if (!decision.allowed) return refusalOf(403, `mutation ${field}: ${decision.error}`, 'Authorization');
  }
  return undefined;
}

/** True for a refusal (as against a prepared request). */
export function isRefusal(value: Prepared | Refusal): value is Refusal {
  return 'status' in value && 'errors' in value;
}
