import { buildSchema, GraphQLScalarType, printSchema, Kind, valueFromASTUntyped, type GraphQLFieldResolver, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { BUDGET_CAP_KEYS, EVENT_TYPES, GOAL_STATUSES, GOAL_TYPES, ULID_PATTERN, type EventRecord, type LeaseRecord } from '../../contracts/index.js';
import { eventKey, type EventFilter } from '../../store/index.js';
import { statusError } from './errors.js';

/**
 * What a resolver works with: one request's view of the server. Every
 * query and mutation but `leases` and `eventAdded` is its REST route's
 * answer, called as the request's own caller (same token, same role check,
 * same input checks, same operator action): the GraphQL door adds no
 * second way in.
 */
// A type, not an interface: graphql-sse takes a context that is a plain record.
export type GraphqlContext = {
  /**
   * Calls the REST route `method path` (under `/api/v1`) with `body` as
   * this request's caller.
   *
   * @returns its JSON answer (null for a 204).
   * @throws GraphQLError carrying the route's status, message and field (statusError) for a 4xx or 5xx.
   */
  rest(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any>;
  /** The active leases, all or one runner's (GET /leases without the runner headers a runner's own call sends). */
  leases(runner?: string): Promise<LeaseRecord[]>;
  /**
   * The events after `since` (an event id; without one, from the end of
   * the log) that pass `filter`, as the SSE stream sends them: each once, in
   * log order, then new ones as they are written.
   */
  follow(since: string | undefined, filter: EventFilter): Promise<AsyncIterableIterator<EventRecord>>;
  /** Nested lookups (a goal's runs or comments) this request may still make. */
  lookups: { left: number };
};

/** Nested lookups (a goal's `runs` or `comments`) one request may make: a listing of 1000 goals cannot fan out into 1000 listings of runs. */
export const MAX_NESTED_LOOKUPS = 100;

/** A mutation's REST route (method and fastify pattern under `/api/v1`): what the caller's role is checked against, and what it calls. */
export interface MutationRoute {
  method: 'POST';
  /** The route's pattern, as access.ts names routes: `/goals/:id/cancel`. */
  route: string;
  /** The path to call for these arguments. */
  path(args: Record<string, any>): string;
  /** The REST body for these arguments (absent and null fields left out). */
  body?(args: Record<string, any>): Record<string, unknown> | undefined;
  /** The part of the REST answer the mutation returns. */
  pick?(answer: any): unknown;
}

const at = (id: unknown) => encodeURIComponent(String(id));
const present = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

/**
 * Every mutation and the REST route it is (docs/server/level2.md,
 * "GraphQL"): the role check before anything runs asks `decideAccess`
 * about this route, and the resolver calls it.
 */
export const MUTATION_ROUTES: Readonly<Record<string, MutationRoute>> = {
  submitGoal: { method: 'POST', route: '/goals', path: () => '/goals', body: (a) => present(a.input ?? {}), pick: (r) => r.goal },
  changeDependencies: { method: 'POST', route: '/goals/:id/depends', path: (a) => `/goals/${at(a.id)}/depends`, body: (a) => present({ add: a.add, drop: a.drop }), pick: (r) => r.goal },
  retryGoal: { method: 'POST', route: '/goals/:id/retry', path: (a) => `/goals/${at(a.id)}/retry`, body: (a) => present({ driver: a.driver, model: a.model }) },
  cancelGoal: { method: 'POST', route: '/goals/:id/cancel', path: (a) => `/goals/${at(a.id)}/cancel` },
  postComment: {
    method: 'POST',
    route: '/goals/:id/comments',
    path: (a) => `/goals/${at(a.goal)}/comments`,
    body: (a) => present({ body: a.body, blocking: a.blocking, answers: a.answers, lease: a.lease, author: a.author }),
  },
  landRun: { method: 'POST', route: '/runs/:id/land', path: (a) => `/runs/${at(a.id)}/land` },
  rejectRun: { method: 'POST', route: '/runs/:id/reject', path: (a) => `/runs/${at(a.id)}/reject`, body: (a) => present({ requeue: a.requeue, comment: a.comment }) },
  setBudgetCap: { method: 'POST', route: '/budget/caps', path: () => '/budget/caps', body: (a) => ({ cap: a.cap, usd: budgetUsd(a) }) },
  ackAttention: { method: 'POST', route: '/attention/ack', path: () => '/attention/ack', body: (a) => present({ ids: a.ids, all: a.all }) },
  pauseTends: { method: 'POST', route: '/tend/pause', path: () => '/tend/pause' },
  resumeTends: { method: 'POST', route: '/tend/resume', path: () => '/tend/resume' },
};

/** `setBudgetCap`'s amount as POST /budget/caps takes it: USD, null (lift), or "config". @throws GraphQLError 400 naming `usd` unless exactly one of usd, lift, config is given. */
function budgetUsd(a: Record<string, any>): number | null | 'config' {
  const given = [a.usd !== undefined && a.usd !== null, a.lift === true, a.config === true].filter(Boolean).length;
  if (given !== 1) throw statusError(400, 'usd: give exactly one of usd (USD greater than 0), lift: true or config: true', 'usd');
  return a.lift ? null : a.config ? 'config' : (a.usd as number);
}

const enumOf = (name: string, description: string, values: readonly string[]) => `"${description}"\nenum ${name} {\n${values.map((v) => `  ${v}`).join('\n')}\n}`;

/**
 * The GraphQL schema's SDL (`npm run schema` prints it into
 * docs/server/schema.graphql, {@link graphqlSdl}; test/server/graphql.test.ts
 * compares). Field names
 * are the records' own (snake_case, as REST and the files spell them);
 * operation names are REST's operationIds, and the subscription is seed
 * 004's `eventAdded(since:)`.
 */
export const GRAPHQL_SDL = `
"""
A garden's goals, runs, events, comments and leases, the operator actions, and its event log as a subscription (seed 004, "How events leave the system"; docs/server/level2.md, "GraphQL"). Every query and mutation is its REST route's answer, called with the request's own token.
"""
schema {
  query: Query
  mutation: Mutation
  subscription: Subscription
}

"Any JSON value: a record's nested object as REST answers it."
scalar JSON

"An event cursor: an event id (a ULID, 26 Crockford base-32 characters), the last event already seen."
scalar EventCursor

${enumOf('GoalStatus', 'A goal status (docs/goal/level2.md).', GOAL_STATUSES)}

${enumOf('GoalType', 'A goal type (docs/goal/level2.md).', GOAL_TYPES)}

${enumOf('EventType', 'A coordinator event type (docs/events/level2.md).', EVENT_TYPES)}

${enumOf('BudgetCap', 'A budget cap (docs/budget/level2.md).', BUDGET_CAP_KEYS)}

type Query {
  "GET /goals: open goals in dispatch order, then closed ones newest first; a body past 4096 characters is cut (body_truncated)."
  goals(status: GoalStatus, plant: String, limit: Int = 1000): GoalPage!
  "GET /goals/{id}: one goal, its body whole. An unknown goal is an error with status 404."
  goal(id: ID!): Goal
  "GET /runs: the newest limit runs, oldest first, outputs past 4096 characters cut."
  runs(goal: ID, limit: Int = 1000): RunPage!
  "GET /runs/{id}: one run record. An unknown run is an error with status 404."
  run(id: ID!): Run
  "GET /events: events after the cursor in log order; ask again with since: next while more."
  events(since: EventCursor, type: [EventType!], goal: ID, limit: Int = 1000): EventPage!
  "GET /goals/{id}/comments: a goal's comment thread and its unanswered blocking questions."
  comments(goal: ID!): CommentThread!
  "GET /leases: the active runner leases, all or one runner's."
  leases(runner: String): [Lease!]!
}

type Mutation {
  "POST /goals: queue a goal (the same submit the CLI and the workbench use)."
  submitGoal(input: SubmitGoalInput!): Goal!
  "POST /goals/{id}/depends: change what a queued goal waits for."
  changeDependencies(id: ID!, add: [ID!], drop: [ID!]): Goal!
  "POST /goals/{id}/retry: queue a goal that closed failure or cancelled again, as a new goal (retry_of names it), on another driver or model when given."
  retryGoal(id: ID!, driver: String, model: String): RetryGoalResult!
  "POST /goals/{id}/cancel: cancel a goal; a running one has its run stopped."
  cancelGoal(id: ID!): CancelGoalResult!
  "POST /goals/{id}/comments: a comment, a blocking question, or an answer (answers: the question's id); a runner token posts only under its lease (lease, with the Pak2-Runner headers)."
  postComment(goal: ID!, body: String!, blocking: Boolean, answers: ID, lease: ID, author: String): PostCommentResult!
  "POST /runs/{id}/land: accept a run's landing (review mode)."
  landRun(id: ID!): LandRunResult!
  "POST /runs/{id}/reject: reject a run's work; the goal back to the queue (requeue) or closed failure."
  rejectRun(id: ID!, requeue: Boolean, comment: String): RejectRunResult!
  "POST /budget/caps: set a cap in USD (usd), lift it (lift: true), or go back to PAK2.toml's (config: true); exactly one."
  setBudgetCap(cap: BudgetCap!, usd: Float, lift: Boolean, config: Boolean): SetBudgetCapResult!
  "POST /attention/ack: acknowledge needs-you items, by id or all listed now."
  ackAttention(ids: [String!], all: Boolean): AckAttentionResult!
  "POST /tend/pause: pause automatic tends (kept across restarts) until resumed."
  pauseTends: TendPauseResult!
  "POST /tend/resume: queue automatic tends again."
  resumeTends: TendPauseResult!
}

type Subscription {
  """
  The event log after since, then each new event as it is written: the same events, in the same order, from the same cursor as GET /events/stream?since= (without since, only new events). An id not in the log starts at the first event after it.
  """
  eventAdded(since: EventCursor, type: [EventType!], goal: ID): Event!
}

"POST /goals' body (docs/server/level2.md, Routes)."
input SubmitGoalInput {
  type: GoalType!
  plant: String!
  body: String!
  priority: Int
  driver: String
  model: String
  reasoning_effort: String
  title: String
  conversation_id: String
  guard: GuardInput
  task_class: String
  budget_usd: Float
  depends_on: [ID!]
  "What must be true when the work is done (docs/goal/level2.md, Acceptance criteria)."
  acceptance_criteria: [AcceptanceCriterionInput!]
}

"An acceptance criterion: one line of text, and optionally a shell command whose exit 0 verifies it."
input AcceptanceCriterionInput {
  text: String!
  verify: String
}

"A goal's acceptance criterion (docs/goal/level2.md, Acceptance criteria)."
type AcceptanceCriterion {
  text: String!
  verify: String
}

"A guarded run's settings (docs/guarded-runs/level2.md); {} for the [guard] defaults."
input GuardInput {
  verify: String
  allowed_files: [String!]
  forbidden_paths: [String!]
  timeout_seconds: Int
  env_passthrough: [String!]
  contract_id: String
  redact: Boolean
}

type GoalPage {
  goals: [Goal!]!
  "The goals that match, all of them (the listing holds at most limit)."
  total: Int!
  "Records that could not be read, one line each."
  problems: [String!]!
}

"A goal record (docs/goal/level2.md)."
type Goal {
  id: ID!
  type: String!
  status: String!
  priority: Int!
  assigned_to: String
  body: String!
  "Set in a listing when the body was cut at 4096 characters."
  body_truncated: Boolean
  "The whole body's length, when it was cut."
  body_chars: Int
  submitted_at: String!
  updated_at: String
  closed_at: String
  closed_reason: String
  driver: String
  model: String
  reasoning_effort: String
  conversation_id: String
  task_class: String
  budget_usd: Float
  schedule: String
  depends_on: [ID!]
  retry_of: ID
  acceptance_criteria: [AcceptanceCriterion!]
  "In a listing: the dependencies still open."
  waiting_for: [ID!]
  "A blocking comment that holds it ({comment, from, since}), or in a listing the dependency that closed failure or cancelled ({goal, closed_reason, via?})."
  blocked_on: JSON
  guard: JSON
  "The whole record as REST answers it."
  record: JSON!
  "Its runs, oldest first (GET /runs?goal=); counts as one nested lookup."
  runs(limit: Int = 1000): [Run!]!
  "Its comment thread (GET /goals/{id}/comments); counts as one nested lookup."
  comments: CommentThread!
}

type RunPage {
  runs: [Run!]!
  total: Int!
  problems: [String!]!
}

"A run record (docs/run/level2.md)."
type Run {
  id: ID!
  goal: ID!
  plant: String!
  status: String!
  started_at: String!
  completed_at: String
  driver: String!
  model: String!
  reasoning_effort: String
  failure_reason: String
  exit_code: Int
  num_turns: Int
  session_id: String
  reflection: String
  cost: JSON
  outputs: JSON
  "Set in a listing when outputs were cut at 4096 characters."
  outputs_truncated: Boolean
  runner: JSON
  acceptance: JSON
  "The whole record as REST answers it."
  record: JSON!
}

type EventPage {
  events: [Event!]!
  "The cursor for the next page: the last event read."
  next: EventCursor
  "True when limit cut the page: ask again with since: next."
  more: Boolean!
}

"A coordinator event (docs/events/level2.md)."
type Event {
  "The event's id; a line written before ids existed has none."
  id: ID
  "The cursor to pass back as since: the id (the SSE stream's id: line), or for a line without one a key made from its ts."
  cursor: EventCursor!
  ts: String!
  type: String!
  goal: ID
  run: ID
  plant: String
  from: String
  to: String
  status: String
  reason: String
  detail: String
  cost_source: String
  cost_usd: Float
  token_name: String
  token_role: String
  schedule: String
  due_at: String
  missed: Int
  "The whole event, as the SSE stream's data: line carries it."
  data: JSON!
}

type CommentThread {
  comments: [Comment!]!
  "The ids of the unanswered blocking questions."
  open: [ID!]!
}

"A comment on a goal (seed 004, Comments)."
type Comment {
  id: ID!
  goal: ID!
  run: ID
  author: String!
  body: String!
  blocking: Boolean!
  answers: ID
  created_at: String!
}

"A remote run's lease (docs/runners/level2.md)."
type Lease {
  id: ID!
  run: ID!
  goal: ID!
  plant: String!
  runner: LeaseRunner!
  state: String!
  ttl_seconds: Int!
  claimed_at: String!
  renewed_at: String!
  expires_at: String!
  heartbeats: Int!
  progress: Float
  status_line: String
  ended_at: String
  stop: JSON
}

type LeaseRunner {
  name: String!
  host: String!
  instance: String
}

type RetryGoalResult {
  goal: Goal!
  "The open goals that waited for the old goal and now wait for the new one."
  moved: [ID!]!
}

type CancelGoalResult {
  goal: Goal!
  "Set when the goal had a live run that was stopped."
  stopped: StoppedRun
  "Set when the goal's run had already ended: what settling it did."
  settled: String
}

type StoppedRun {
  run: ID!
  "coordinator, orphan or runner."
  by: String!
  detail: String
}

type PostCommentResult {
  comment: Comment!
  goal: Goal!
}

type LandRunResult {
  landing: JSON!
  "coordinator, here or queued."
  by: String!
  detail: String
}

type RejectRunResult {
  landing: JSON!
  "queued or closed."
  goal: String!
}

type SetBudgetCapResult {
  key: String!
  before: Float
  after: Float
  woke: Boolean
}

type TendPauseResult {
  paused: Boolean!
  changed: Boolean!
  woke: Boolean
}

type AckAttentionResult {
  acked: [String!]!
  already: [String!]!
}
`;

/** A JSON value of a literal (parseLiteral of the JSON scalar). */
const json = new GraphQLScalarType({
  name: 'JSON',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

/** An event id or else a GraphQLError naming `since` (the SSE stream's 400 for `?since=`). */
function cursorOf(value: unknown): string {
  if (typeof value !== 'string' || !ULID_PATTERN.test(value)) throw statusError(400, `since ${JSON.stringify(value).slice(0, 80)}: not an event id (a ULID)`, 'since');
  return value;
}

const cursor = new GraphQLScalarType({
  name: 'EventCursor',
  serialize: (value) => value,
  parseValue: cursorOf,
  parseLiteral: (ast) => cursorOf(ast.kind === Kind.STRING ? ast.value : valueFromASTUntyped(ast)),
});

/** Query string of the defined arguments (lists repeated, as REST takes `type`). */
function query(args: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(args)) {
    if (value === undefined || value === null) continue;
    for (const one of [value].flat()) params.append(key, String(one));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Takes one nested lookup from the request's allowance. @throws GraphQLError 400 past {@link MAX_NESTED_LOOKUPS}. */
function nested(ctx: GraphqlContext, field: string): void {
  if (ctx.lookups.left <= 0) throw statusError(400, `${field}: at most ${MAX_NESTED_LOOKUPS} nested lookups (goals' runs and comments) in one request; ask for fewer goals (limit) or query runs(goal:) and comments(goal:) directly`, field);
  ctx.lookups.left -= 1;
}

type Resolver = GraphQLFieldResolver<any, GraphqlContext, any>;

const RESOLVERS: Record<string, Record<string, Resolver>> = {
  Query: {
    goals: (_root, a, ctx) => ctx.rest('GET', `/goals${query({ status: a.status, plant: a.plant, limit: a.limit })}`),
    goal: async (_root, a, ctx) => (await ctx.rest('GET', `/goals/${at(a.id)}`)).goal,
    runs: (_root, a, ctx) => ctx.rest('GET', `/runs${query({ goal: a.goal, limit: a.limit })}`),
    run: async (_root, a, ctx) => (await ctx.rest('GET', `/runs/${at(a.id)}`)).run,
    events: (_root, a, ctx) => ctx.rest('GET', `/events${query({ since: a.since, type: a.type, goal: a.goal, limit: a.limit })}`),
    comments: (_root, a, ctx) => ctx.rest('GET', `/goals/${at(a.goal)}/comments`),
    leases: (_root, a, ctx) => ctx.leases(a.runner ?? undefined),
  },
  Goal: {
    record: (goal) => goal,
    runs: async (goal, a, ctx) => {
      nested(ctx, 'runs');
      return (await ctx.rest('GET', `/runs${query({ goal: goal.id, limit: a.limit })}`)).runs;
    },
    comments: (goal, _a, ctx) => {
      nested(ctx, 'comments');
      return ctx.rest('GET', `/goals/${at(goal.id)}/comments`);
    },
  },
  Run: { record: (run) => run },
  Event: { cursor: (event) => eventKey(event), data: (event) => event },
};

/**
 * The executable schema of `/api/v1/graphql`: {@link GRAPHQL_SDL} with the
 * resolvers (each REST-backed, over {@link GraphqlContext}), the mutations
 * of {@link MUTATION_ROUTES}, and `eventAdded`'s subscribe.
 */
export function graphqlSchema(): GraphQLSchema {
  const schema = buildSchema(GRAPHQL_SDL);
  // The scalars' behaviour: buildSchema makes them pass-through.
  Object.assign(schema.getType('JSON')!, { serialize: json.serialize, parseValue: json.parseValue, parseLiteral: json.parseLiteral });
  Object.assign(schema.getType('EventCursor')!, { serialize: cursor.serialize, parseValue: cursor.parseValue, parseLiteral: cursor.parseLiteral });
  for (const [type, fields] of Object.entries(RESOLVERS)) {
    const defined = (schema.getType(type) as GraphQLObjectType).getFields();
    for (const [name, resolve] of Object.entries(fields)) defined[name]!.resolve = resolve;
  }
  const mutations = (schema.getType('Mutation') as GraphQLObjectType).getFields();
  for (const [name, route] of Object.entries(MUTATION_ROUTES)) {
    mutations[name]!.resolve = async (_root, args: Record<string, any>, ctx: GraphqlContext) => {
      const answer = await ctx.rest(route.method, route.path(args), route.body?.(args));
      return route.pick ? route.pick(answer) : answer;
    };
  }
  const added = (schema.getType('Subscription') as GraphQLObjectType).getFields().eventAdded!;
  added.subscribe = (_root, a: { since?: string | null; type?: string[] | null; goal?: string | null }, ctx: GraphqlContext) =>
    ctx.follow(a.since ?? undefined, { ...(a.type?.length ? { types: a.type } : {}), ...(a.goal ? { goal: a.goal } : {}) });
  added.resolve = (event: EventRecord) => event;
  return schema;
}

/** The schema as docs/server/schema.graphql holds it: `printSchema` of {@link graphqlSchema}, with a header naming where it comes from. */
export function graphqlSdl(): string {
  return `# pak2's GraphQL schema (/api/v1/graphql; docs/server/level2.md, "GraphQL").\n# Generated by \`npm run schema\` from source/server/graphql/schema.ts; test/server/graphql.test.ts checks it.\n\n${printSchema(graphqlSchema())}\n`;
}
