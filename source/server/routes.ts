import { chainOrder, readDependencyViews, type DependencyFact } from '../coordinator/readiness.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  BUDGET_CAP_KEYS,
  EVENT_TYPES,
  parseEventTypes,
  GOAL_ID_PATTERN,
  GOAL_STATUSES,
  GOAL_TYPES,
  MAX_ACCEPTANCE_CRITERIA,
  MAX_CRITERION_TEXT,
  MAX_CRITERION_VERIFY,
  PLANT_NAME_PATTERN,
  PRIORITY_MAX,
  PRIORITY_MIN,
  RUN_ID_PATTERN,
  ULID_PATTERN,
  type EventRecord,
  type GoalRecord,
  type RunRecord,
} from '../contracts/index.js';
import type { Garden, GardenPaths } from '../garden/index.js';
import type { OperatorActions } from '../session/index.js';
import { gardenLandings, listSchedules, VERIFY_TIMEOUT_MAX, type GuardInput } from '../submit/index.js';
import { budgetReport, readAttention, tendView, type BudgetReport } from '../snapshot/index.js';
import {
  compareGoalIds,
  dispatchOrder,
  eventKey,
  findEventsAfter,
  isEventId,
  closedEntriesNewestFirst,
  goalOfEntry,
  listPlants,
  OpenGoalScanner,
  listRuns,
  matchesEvent,
  readGoal,
  readRun,
  tailRunStream,
  runIdsForGoal,
  StoreError,
  type EventFilter,
} from '../store/index.js';
import { scanEvents, type LogTail } from './log-tail.js';
import { publicText } from './public-text.js';
import { SseConnection, type OpenStream } from './sse.js';

/** What the routes act on. */
export interface RouteContext {
  garden: Garden;
  actions: OperatorActions;
  tail: LogTail;
  keepAliveMs: number;
  /** The server's open streams (event streams, GraphQL subscriptions). */
  streams: Set<OpenStream>;
}

/** A 4xx answer: `{ error, field }`, the field a JSON pointer into the body or the parameter's name. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The prefix of every route. */
export const API_PREFIX = '/api/v1';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const ERROR = { 400: ref('Error'), 401: ref('Error') };
const idParam = (pattern: RegExp, description: string) => ({
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: pattern.source, description } },
});
const eventQuery = {
  since: { type: 'string', pattern: ULID_PATTERN.source, description: 'the last event id already seen: only events after it' },
  type: { type: 'array', items: { type: 'string' }, description: `event types, comma-separated or repeated (${EVENT_TYPES.join(', ')})` },
  goal: { type: 'string', pattern: GOAL_ID_PATTERN.source, description: 'only events of this goal and its runs' },
};

/** The event filter of `?type=&goal=`, each type checked. */
function eventFilter(query: { type?: string[]; goal?: string }): EventFilter {
  const parsed = parseEventTypes(query.type ?? []);
  if ('unknown' in parsed) throw new HttpError(400, `type ${parsed.unknown}: not an event type (${EVENT_TYPES.join(', ')})`, 'type');
  return { ...(parsed.types.length ? { types: parsed.types } : {}), ...(query.goal ? { goal: query.goal } : {}) };
}

/** A store refusal as an HTTP answer: not found → 404 naming `id`; anything else is not the client's fault. */
function storeFailure(error: unknown): never {
  if (error instanceof StoreError && ['GOAL_NOT_FOUND', 'RUN_NOT_FOUND', 'PLANT_NOT_FOUND'].includes(error.code)) throw new HttpError(404, error.message, 'id');
  throw error;
}

/** The field a submit refusal names (its message starts with it: `plant gardener: …`, `body: …`). */
const SUBMIT_FIELDS: Record<string, string> = {
  type: '/type',
  plant: '/plant',
  body: '/body',
  priority: '/priority',
  driver: '/driver',
  model: '/model',
  title: '/title',
  conversation: '/conversation_id',
  verify: '/guard/verify',
  allow: '/guard/allowed_files',
  forbid: '/guard/forbidden_paths',
  'verify-timeout': '/guard/timeout_seconds',
  'pass-env': '/guard/env_passthrough',
  contract: '/guard/contract_id',
  'no-redact': '/guard/redact',
  guard: '/guard',
  'task-class': '/task_class',
  budget: '/budget_usd',
  accept: '/acceptance_criteria',
  'accept-verify': '/acceptance_criteria',
};

/** `POST /goals`' `guard`: the goal record's own field names (docs/guarded-runs/level2.md); `{}` is guarded with the `[guard]` defaults. */
const GUARD_BODY = {
  type: 'object',
  additionalProperties: false,
  description: 'makes the goal a guarded run: only the fields given are kept on the goal; [guard] in PAK2.toml fills the rest at dispatch',
  properties: {
    verify: { type: 'string', minLength: 1, description: 'a shell command run after the agent; exit 0 passes' },
    allowed_files: { type: 'array', items: { type: 'string' }, description: 'globs relative to the garden root the agent may change' },
    forbidden_paths: { type: 'array', items: { type: 'string' }, description: 'globs the agent must not change' },
    timeout_seconds: { type: 'integer', minimum: 1, maximum: VERIFY_TIMEOUT_MAX, description: "the verify command's limit" },
    env_passthrough: { type: 'array', items: { type: 'string' }, description: 'environment variable names passed through (and redacted)' },
    contract_id: { type: 'string', minLength: 1 },
    redact: { type: 'boolean', description: "false keeps secrets in the run's artifacts" },
  },
};

/** The `guard` of a `POST /goals` body as the submit action takes it. */
function guardInputOf(g: GuardBody): GuardInput {
  return {
    ...(g.verify !== undefined ? { verify: g.verify } : {}),
    ...(g.allowed_files !== undefined ? { allowedFiles: g.allowed_files } : {}),
    ...(g.forbidden_paths !== undefined ? { forbiddenPaths: g.forbidden_paths } : {}),
    ...(g.timeout_seconds !== undefined ? { timeoutSeconds: g.timeout_seconds } : {}),
    ...(g.env_passthrough !== undefined ? { envPassthrough: g.env_passthrough } : {}),
    ...(g.contract_id !== undefined ? { contractId: g.contract_id } : {}),
    ...(g.redact !== undefined ? { redact: g.redact } : {}),
  };
}

interface GuardBody {
  verify?: string;
  allowed_files?: string[];
  forbidden_paths?: string[];
  timeout_seconds?: number;
  env_passthrough?: string[];
  contract_id?: string;
  redact?: boolean;
}

/**
 * An operator action's refusal (UserError, its message starting with the
 * word `fields` maps to a field; else `fallback`) as an HTTP answer: 404 for
 * an unknown goal or run, 409 for a UserError of exit code 1 (refused in
 * this state), else 400. Anything but a UserError is rethrown.
 *
 * @throws HttpError always (or the error itself when it is not a UserError).
 */
export function refusal(error: unknown, fields: Record<string, string>, fallback: string): never {
  const e = error as { name?: string; message: string; exitCode?: number };
  if (e?.name !== 'UserError') throw error;
  const word = /^([A-Za-z_-]+)/.exec(e.message)?.[1] ?? '';
  const field = fields[word] ?? (/driver/i.test(e.message) ? (fields.driver ?? fallback) : fallback);
  const status = /no such goal|no such run/.test(e.message) ? 404 : e.exitCode === 1 ? 409 : 400;
  throw new HttpError(status, e.message, field);
}

/**
 * A dependency refusal in HTTP words: the action names the CLI's argument
 * (`after X: no such goal`); the body's key is `key`, and an unknown or
 * cyclic dependency is the request's fault (400), not a missing resource.
 */
function dependencyWords(error: unknown, word: string, key: string): unknown {
  const e = error as { name?: string; message?: string };
  if (e?.name !== 'UserError' || !e.message?.startsWith(`${word} `)) return error;
  throw new HttpError(400, `${key}${e.message.slice(word.length)}`, `/${key}`);
}

function goalSort(a: GoalRecord, b: GoalRecord): number {
  const aOpen = a.status !== 'closed';
  const bOpen = b.status !== 'closed';
  if (aOpen !== bOpen) return aOpen ? -1 : 1;
  if (aOpen) return dispatchOrder(a, b);
  return (b.closed_at ?? b.submitted_at).localeCompare(a.closed_at ?? a.submitted_at) || compareGoalIds(b.id, a.id);
}

/** The last `limit` lines of a run's events.jsonl (the store's copy on a garden with one), each parsed when it is JSON, reading at most `maxBytes` from its end. */
async function runEventsTail(paths: GardenPaths, runId: string, limit: number, maxBytes: number): Promise<{ lines: unknown[]; truncated: boolean; size: number }> {
  const tail = await tailRunStream(paths, runId, 'events', { lines: limit, maxBytes });
  const lines = tail.lines.map((line) => {
    try {
      return JSON.parse(line) as unknown;
    } catch {
      return line;
    }
  });
  return { lines, truncated: tail.truncated, size: tail.size };
}

/** The most a run events tail reads from the end of events.jsonl. */
export const RUN_EVENTS_MAX_BYTES = 1024 * 1024;

/** The most of a goal's body a listing carries, in characters; `GET /goals/:id` has the whole record. */
export const LIST_BODY_CHARS = 4096;

/** `text` cut to {@link LIST_BODY_CHARS} UTF-16 units, one fewer when the cut would split a surrogate pair (an emoji). */
function cutText(text: string): string {
  const end = LIST_BODY_CHARS;
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}

/**
 * A goal as a listing shows it (docs/server/level2.md, "Bounded answers"):
 * the record, its body cut to {@link LIST_BODY_CHARS} characters with
 * `body_truncated: true` and `body_chars` (the whole body's length) when it
 * was longer. A listing of a hundred 1 MB goals is then a few hundred KB.
 */
export function listedGoal(goal: GoalRecord): GoalRecord & { body_truncated?: true; body_chars?: number } {
  if (goal.body.length <= LIST_BODY_CHARS) return goal;
  return { ...goal, body: cutText(goal.body), body_truncated: true, body_chars: goal.body.length };
}

/**
 * A run as a listing shows it: `outputs.final_text` and `outputs.error` cut
 * to {@link LIST_BODY_CHARS} characters each, with `outputs_truncated: true`
 * when either was; `GET /runs/:id` has the whole record.
 */
export function listedRun(run: RunRecord): RunRecord & { outputs_truncated?: true } {
  const outputs = run.outputs;
  if (!outputs) return run;
  const long = (text: string | undefined) => text !== undefined && text.length > LIST_BODY_CHARS;
  if (!long(outputs.final_text) && !long(outputs.error)) return run;
  return {
    ...run,
    outputs: {
      ...outputs,
      ...(outputs.final_text !== undefined ? { final_text: cutText(outputs.final_text) } : {}),
      ...(outputs.error !== undefined ? { error: cutText(outputs.error) } : {}),
    },
    outputs_truncated: true,
  };
}

/** Registers the `/api/v1` routes, each with the schema its input is checked against and the OpenAPI description is made from. */
export function registerRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { paths } = ctx.garden;
  // Shared by every request: a warm scan stats the open goal files and reads only what changed.
  const scanner = new OpenGoalScanner(paths);
  const closedDependencies = new Map<string, DependencyFact>();

  app.get(
    '/goals',
    {
      schema: {
        summary: 'List goals: open ones in dispatch order (a queued goal after the goals it waits for), then closed ones, newest first; a body longer than 4096 characters is cut (body_truncated: true, body_chars: its length; GET /goals/{id} has it whole); a queued goal that depends on others carries `waiting_for` (the ids still open) or `blocked_on` ({goal, closed_reason, via?}: the dependency that closed failure or cancelled)',
        operationId: 'listGoals',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'string', enum: [...GOAL_STATUSES] },
            plant: { type: 'string', pattern: PLANT_NAME_PATTERN.source },
            limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 1000 },
          },
        },
        response: { 200: { type: 'object', properties: { goals: { type: 'array', items: ref('Goal') }, total: { type: 'integer' }, problems: { type: 'array', items: { type: 'string' } } } }, ...ERROR },
      },
    },
    async (request: FastifyRequest<{ Querystring: { status?: string; plant?: string; limit: number } }>) => {
      const q = request.query;
      const matches = (g: GoalRecord) => (!q.status || g.status === q.status) && (!q.plant || g.assigned_to === q.plant);
      // Open goals from their files; closed ones from the ledger's end, a goal file read only for a goal shown.
      const { goals: open, problems } = await scanner.scan();
      // A queued goal's dependencies (docs/goal/level2.md): `waiting_for` or `blocked_on` on its row, listed after what it waits for.
      const views = await readDependencyViews(paths, open, closedDependencies);
      const shown = chainOrder(open.filter(matches).sort(goalSort)).map((g) => (views.has(g.id) ? ({ ...g, ...views.get(g.id) } as GoalRecord) : g));
      const messages = problems.map((p) => p.message);
      let total = shown.length;
      if (!q.status || q.status === 'closed') {
        const openIds = new Set(open.map((g) => g.id));
        const closed: GoalRecord[] = [];
        let slots = q.limit - shown.length; // closed goals whose files are read, for their whole records
        for await (const entry of closedEntriesNewestFirst(paths)) {
          if (openIds.has(entry.id)) continue; // the goal file says open: it wins over the ledger
          // A bare-id entry (an older ledger) names no plant: its goal file says.
          const summary = entry.type === undefined && q.plant ? undefined : goalOfEntry(entry);
          if (summary && q.plant && summary.assigned_to !== q.plant) continue;
          if (summary && slots <= 0) {
            total += 1;
            continue;
          }
          try {
            const goal = await readGoal(paths, entry.id);
            if (!matches(goal)) continue;
            total += 1;
            if (slots > 0) closed.push(goal);
            slots -= 1;
          } catch (error) {
            messages.push((error as Error).message);
            if (summary) {
              total += 1;
              slots -= 1;
            }
          }
        }
        shown.push(...closed.sort(goalSort));
      }
      return { goals: shown.slice(0, q.limit).map(listedGoal), total, problems: messages };
    },
  );

  app.get(
    '/goals/:id',
    {
      schema: {
        summary: 'One goal, with the ids of its runs',
        operationId: 'getGoal',
        params: idParam(GOAL_ID_PATTERN, 'a goal id (N-slug)'),
        response: { 200: { type: 'object', properties: { goal: ref('Goal'), runs: { type: 'array', items: { type: 'string' } } } }, ...ERROR, 404: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => {
      const goal = await readGoal(paths, request.params.id).catch(storeFailure);
      return { goal, runs: await runIdsForGoal(paths, goal.id) };
    },
  );

  app.post(
    '/goals',
    {
      // Before the schema's type coercion: true or "2" is no amount of USD, a string no list of goals.
      preValidation: async (request) => {
        const body = request.body as { budget_usd?: unknown; depends_on?: unknown } | null;
        if (!body || typeof body !== 'object') return;
        if ('budget_usd' in body && typeof body.budget_usd !== 'number') throw new HttpError(400, 'budget_usd: a number of USD greater than 0', '/budget_usd');
        if ('depends_on' in body && !Array.isArray(body.depends_on)) throw new HttpError(400, 'depends_on: a list of goal ids', '/depends_on');
      },
      schema: {
        summary: 'Queue a goal (the same submit the CLI and the workbench use)',
        operationId: 'submitGoal',
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'plant', 'body'],
          properties: {
            type: { type: 'string', enum: [...GOAL_TYPES] },
            plant: { type: 'string', minLength: 1 },
            body: { type: 'string', minLength: 1 },
            priority: { type: 'integer', minimum: PRIORITY_MIN, maximum: PRIORITY_MAX },
            driver: { type: 'string', minLength: 1 },
            model: { type: 'string', minLength: 1 },
            reasoning_effort: { type: 'string', minLength: 1 },
            title: { type: 'string', minLength: 1 },
            conversation_id: { type: 'string', minLength: 1 },
            guard: GUARD_BODY,
            task_class: { type: 'string', minLength: 1, description: 'routes the goal through the tiers of [routing.<task_class>] in PAK2.toml' },
            budget_usd: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000, description: "the goal's own cap in USD across its attempts (docs/budget/level2.md)" },
            depends_on: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 100, description: 'goal ids it waits for: it is not dispatched or claimed until each closed success (docs/goal/level2.md, "Dependencies"); an unknown one is a 400' },
            acceptance_criteria: {
              type: 'array',
              maxItems: MAX_ACCEPTANCE_CRITERIA,
              description: 'what must be true when the work is done (docs/goal/level2.md, "Acceptance criteria"): given to the agent; after the run each is reported verified (its verify command exited 0), failed, or unverified (no command: never verified without evidence)',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['text'],
                properties: {
                  text: { type: 'string', minLength: 1, maxLength: MAX_CRITERION_TEXT, description: 'one line' },
                  verify: { type: 'string', minLength: 1, maxLength: MAX_CRITERION_VERIFY, description: 'a shell command (sh -c) run in the run\'s working directory after the agent; exit 0 verifies the criterion' },
                },
              },
            },
          },
        },
        response: { 201: { type: 'object', properties: { goal: ref('Goal') } }, ...ERROR, 409: ref('Error') },
      },
    },
    async (
      request: FastifyRequest<{
        Body: {
          type: string;
          plant: string;
          body: string;
          priority?: number;
          driver?: string;
          model?: string;
          reasoning_effort?: string;
          title?: string;
          conversation_id?: string;
          guard?: GuardBody;
          task_class?: string;
          budget_usd?: number;
          depends_on?: string[];
          acceptance_criteria?: { text: string; verify?: string }[];
        };
      }>,
      reply: FastifyReply,
    ) => {
      const b = request.body;
      const goal = await ctx.actions
        .submitGoal({
          type: b.type,
          plant: b.plant,
          body: b.body,
          ...(b.priority !== undefined ? { priority: b.priority } : {}),
          ...(b.driver !== undefined ? { driver: b.driver } : {}),
          ...(b.model !== undefined ? { model: b.model } : {}),
          ...(b.reasoning_effort !== undefined ? { reasoningEffort: b.reasoning_effort } : {}),
          ...(b.title !== undefined ? { title: b.title } : {}),
          ...(b.conversation_id !== undefined ? { conversationId: b.conversation_id } : {}),
          ...(b.guard !== undefined ? { guard: guardInputOf(b.guard) } : {}),
          ...(b.task_class !== undefined ? { taskClass: b.task_class } : {}),
          ...(b.budget_usd !== undefined ? { budgetUsd: b.budget_usd } : {}),
          ...(b.depends_on?.length ? { dependsOn: b.depends_on } : {}),
          ...(b.acceptance_criteria?.length ? { acceptanceCriteria: b.acceptance_criteria } : {}),
        })
        .catch((error: unknown) => refusal(dependencyWords(error, 'after', 'depends_on'), SUBMIT_FIELDS, '/body'));
      return reply.code(201).header('location', `${API_PREFIX}/goals/${goal.id}`).send({ goal });
    },
  );

  app.post(
    '/goals/:id/depends',
    {
      schema: {
        summary: "Change what a queued goal waits for: `drop` edges (a goal a failed dependency blocked is released), `add` ones (an unknown goal or a cycle is a 400)",
        operationId: 'changeDependencies',
        params: idParam(GOAL_ID_PATTERN, 'a goal id (N-slug)'),
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            add: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 100 },
            drop: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 100 },
          },
        },
        response: { 200: { type: 'object', properties: { goal: ref('Goal') } }, ...ERROR, 404: ref('Error'), 409: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { add?: string[]; drop?: string[] } }>) => {
      const b = request.body ?? {};
      if (!b.add?.length && !b.drop?.length) throw new HttpError(400, 'add or drop: give at least one goal id', '/add');
      const goal = await ctx.actions
        .changeDependencies(request.params.id, { ...(b.add ? { add: b.add } : {}), ...(b.drop ? { drop: b.drop } : {}) })
        .catch((error: unknown) => refusal(dependencyWords(error, 'add', 'add'), { add: '/add', drop: '/drop', goal: 'id' }, 'id'));
      return { goal };
    },
  );

  app.post(
    '/goals/:id/retry',
    {
      schema: {
        summary: 'Queue a goal that closed failure or cancelled again, as a new goal (`retry_of` names the old one); the open goals that waited for it wait for the new one (`moved`)',
        description:
          'The same action as `pak2 retry` and the workbench\'s `r` (docs/goal/level2.md, "Retry"). A closed goal is never reopened: the retry is a new goal with the old one\'s type, plant, body, priority, settings, guard and dependencies. `driver` and `model` run it on another driver or model (a new driver without `model` drops the old model). Refused: 404 for an unknown goal, 409 for a goal that is open, closed success, or has an open retry, 400 for a driver that is not one or cannot launch.',
        operationId: 'retryGoal',
        params: idParam(GOAL_ID_PATTERN, 'a goal id (N-slug)'),
        body: {
          type: ['object', 'null'],
          additionalProperties: false,
          properties: {
            driver: { type: 'string', minLength: 1, description: 'run the retry on this driver' },
            model: { type: 'string', minLength: 1, description: 'run the retry on this model' },
          },
        },
        response: { 201: { type: 'object', properties: { goal: ref('Goal'), moved: { type: 'array', items: { type: 'string' } } } }, ...ERROR, 404: ref('Error'), 409: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { driver?: string; model?: string } | null }>, reply: FastifyReply) => {
      const b = request.body ?? {};
      const options = { ...(b.driver !== undefined ? { driver: b.driver } : {}), ...(b.model !== undefined ? { model: b.model } : {}) };
      const result = await ctx.actions.retryGoal(request.params.id, options).catch((error: unknown) => refusal(error, { goal: 'id', driver: '/driver', model: '/model' }, 'id'));
      return reply.code(201).header('location', `${API_PREFIX}/goals/${result.goal.id}`).send(result);
    },
  );

  app.post(
    '/goals/:id/cancel',
    {
      schema: {
        summary: 'Cancel a goal: a queued one closes cancelled; a running one has its run stopped, then closes cancelled',
        description:
          '`stopped.by` says who stops the run: `coordinator` (the live coordinator ends it), `orphan` (no coordinator held it: it was swept and closed here), or `runner` (a remote runner holds it under a lease: its next heartbeat answers `stop`, and the run and the goal close when the runner finishes it; docs/runners/level2.md).',
        operationId: 'cancelGoal',
        params: idParam(GOAL_ID_PATTERN, 'a goal id (N-slug)'),
        response: {
          200: {
            type: 'object',
            properties: {
              goal: ref('Goal'),
              stopped: {
                type: 'object',
                description: 'set when the goal had a live run',
                properties: {
                  run: { type: 'string' },
                  by: { type: 'string', enum: ['coordinator', 'orphan', 'runner'], description: 'runner: told at its next heartbeat; the run closes when it finishes' },
                  detail: { type: 'string' },
                },
              },
            },
          },
          ...ERROR,
          404: ref('Error'),
          409: ref('Error'),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => {
      return ctx.actions.cancelGoal(request.params.id).catch((error: unknown) => refusal(error, { ID: 'id' }, 'id'));
    },
  );

  app.get(
    '/budget',
    {
      schema: {
        summary: 'Every budget cap in USD: what it allows, what was spent and reserved against it, what is left; live runs\' spend so far; the goals a cap holds (docs/budget/level2.md)',
        operationId: 'getBudget',
        response: { 200: { type: 'object', additionalProperties: true }, ...ERROR },
      },
    },
    async () => publicBudget(await budgetReport(ctx.garden), ctx.garden),
  );

  app.post(
    '/budget/caps',
    {
      schema: {
        summary: 'Set a budget cap in USD over PAK2.toml, or lift it (`usd: null`); the coordinator looks again (docs/budget/level2.md, "Changing a cap")',
        operationId: 'setBudgetCap',
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['cap', 'usd'],
          properties: {
            cap: { type: 'string', enum: [...BUDGET_CAP_KEYS], description: BUDGET_CAP_KEYS.join(', ') },
            // Any JSON value here: the check is preValidation's (number, null or "config"), before any coercion.
            usd: { description: 'USD greater than 0 (at most 1000000), null to lift the cap, or "config" to go back to PAK2.toml\'s' },
          },
        },
        response: { 200: { type: 'object', properties: { key: { type: 'string' }, before: { type: ['number', 'null'] }, after: { type: ['number', 'null'] }, woke: { type: 'boolean' } } }, ...ERROR },
      },
      // Before the schema's type coercion: "" or true is no amount of USD (never read as null or 1).
      preValidation: async (request) => {
        const body = request.body as { cap?: unknown; usd?: unknown } | null;
        if (!body || typeof body !== 'object') return;
        if (typeof body.cap === 'string' && !(BUDGET_CAP_KEYS as readonly string[]).includes(body.cap)) throw new HttpError(400, `cap ${JSON.stringify(body.cap).slice(0, 80)}: not a budget cap; one of ${BUDGET_CAP_KEYS.join(', ')}`, '/cap');
        if ('usd' in body && body.usd !== null && body.usd !== 'config' && typeof body.usd !== 'number') throw new HttpError(400, 'usd: a number of USD greater than 0, null to lift the cap, or "config"', '/usd');
      },
    },
    async (request: FastifyRequest<{ Body: { cap: string; usd: number | null | 'config' } }>) => {
      const usd = request.body.usd;
      const set = await ctx.actions.setBudgetCap(request.body.cap, usd === null ? 'off' : String(usd), 'operator over HTTP').catch((error: unknown) => refusal(error, { CAP: '/cap', USD: '/usd', 'budget.json': '/body' }, '/body'));
      return { ...set, before: set.before ?? null };
    },
  );

  app.get(
    '/tend',
    {
      schema: {
        summary: 'Automatic tends as the operator controls them: state (on, partial, off, paused, capped), each trigger on or off, priority, the daily cap and today\'s count, the pause (docs/automatic-tend/level2.md, "Operator control")',
        operationId: 'getTend',
        response: { 200: { type: 'object', additionalProperties: true }, ...ERROR },
      },
    },
    async () => {
      const view = await tendView(ctx.garden);
      // tend.json's problem names its file: said without the machine path.
      return view.problem ? { ...view, problem: 'tend.json cannot be read; fix or remove it' } : view;
    },
  );

  for (const [name, paused] of [['pause', true], ['resume', false]] as const) {
    app.post(
      `/tend/${name}`,
      {
        schema: {
          summary: paused
            ? 'Pause automatic tends (operator role): none is queued until resumed, across restarts (tend.json; TendsPaused); each one held back is a TendWithheld event'
            : 'Resume automatic tends (operator role): the coordinator looks again now (TendsResumed)',
          operationId: paused ? 'pauseTends' : 'resumeTends',
          response: { 200: { type: 'object', properties: { paused: { type: 'boolean' }, changed: { type: 'boolean' }, woke: { type: 'boolean' } } }, ...ERROR, 409: ref('Error') },
        },
      },
      async (request: FastifyRequest) => {
        const by = request.caller ? request.caller.name : 'operator over HTTP';
        return ctx.actions.setTendsPaused(paused, by).catch((error: unknown) => {
          // tend.json cannot be read: never written over; said without its machine path.
          if ((error as Error)?.name === 'UserError') throw new HttpError(409, 'tend.json cannot be read; fix or remove it, then try again', '/body');
          throw error;
        });
      },
    );
  }

  app.get(
    '/attention',
    {
      schema: {
        summary: 'What needs the operator, newest first: open questions, landings awaiting review, budget stops, failed runs and blocked goals not acknowledged (docs/attention/level2.md)',
        operationId: 'listAttention',
        response: { 200: { type: 'object', properties: { items: { type: 'array', items: ref('AttentionItem') }, problems: { type: 'array', items: { type: 'string' } } } }, ...ERROR },
      },
    },
    async () => {
      const { items, problems } = await readAttention(ctx.garden);
      return { items, problems };
    },
  );

  app.post(
    '/attention/ack',
    {
      schema: {
        summary: 'Acknowledge needs-you items (operator role): `ids` as GET /attention lists them, or `all: true` for every item listed now; each leaves the list (AttentionAcknowledged)',
        description: 'An id not on the list is 404 and nothing is acknowledged.',
        operationId: 'ackAttention',
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { ids: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 4096 }, minItems: 1, maxItems: 1000 }, all: { type: 'boolean' } },
        },
        response: { 200: { type: 'object', properties: { acked: { type: 'array', items: { type: 'string' } }, already: { type: 'array', items: { type: 'string' } } } }, ...ERROR, 404: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Body: { ids?: string[]; all?: boolean } }>) => {
      const { ids, all } = request.body ?? {};
      if (all && ids) throw new HttpError(400, 'ids: give ids or all, not both', '/ids');
      if (!all && !ids) throw new HttpError(400, 'ids: give the item ids to acknowledge (GET /attention lists them), or all: true', '/ids');
      const by = request.caller ? { name: request.caller.name, role: request.caller.role } : { name: 'operator' };
      return ctx.actions.ackAttention(all ? 'all' : ids!, by).catch((error: unknown) => {
        if ((error as Error)?.name === 'UserError' && /^ID /.test((error as Error).message)) throw new HttpError(404, (error as Error).message, '/ids');
        return refusal(error, {}, '/ids');
      });
    },
  );

  app.get(
    '/schedules',
    {
      schema: {
        summary: 'The [[schedule]] entries of PAK2.toml with their state: next due time, last firing, last goal and whether it is open (docs/schedules/level2.md)',
        operationId: 'listSchedules',
        response: {
          200: {
            type: 'object',
            properties: {
              schedules: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    name: { type: 'string' },
                    cron: { type: 'string' },
                    timezone: { type: 'string' },
                    overlap: { type: 'string', enum: ['skip', 'allow'] },
                    enabled: { type: 'boolean' },
                    next_due_at: { type: ['string', 'null'] },
                    last_fired_at: { type: ['string', 'null'] },
                    last_due_at: { type: ['string', 'null'] },
                    last_goal: { type: ['string', 'null'] },
                    last_goal_status: { type: ['string', 'null'] },
                    last_goal_open: { type: 'boolean' },
                  },
                },
              },
            },
          },
          ...ERROR,
        },
      },
    },
    async () => ({ schedules: await listSchedules(ctx.garden) }),
  );

  app.get(
    '/landings',
    {
      schema: {
        summary: 'The merge queue and what became of each landing, newest queued first (docs/landing/level2.md)',
        operationId: 'listLandings',
        response: { 200: { type: 'object', properties: { landings: { type: 'array', items: ref('Landing') }, problems: { type: 'array', items: { type: 'string' } } } }, ...ERROR },
      },
    },
    async () => {
      const { landings, problems } = await gardenLandings(ctx.garden);
      return { landings, problems: problems.map((p) => p.message) };
    },
  );

  app.get(
    '/runs/:id/diff',
    {
      schema: {
        summary: "A run's work for review: its files and the patch against its base (capped at 4 MiB; `truncatedBytes` says what was left out)",
        operationId: 'getRunDiff',
        params: idParam(RUN_ID_PATTERN, 'a run id (N-slug-rN)'),
        response: {
          200: {
            type: 'object',
            properties: {
              run: { type: 'string' },
              source: { type: 'string', enum: ['landing', 'worktree', 'branch', 'none'] },
              base: { type: 'string' },
              head: { type: 'string' },
              files: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, status: { type: 'string' }, insertions: { type: ['integer', 'null'] }, deletions: { type: ['integer', 'null'] } } } },
              patch: { type: 'string' },
              truncatedBytes: { type: 'integer' },
            },
          },
          ...ERROR,
          404: ref('Error'),
          409: ref('Error'),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => ctx.actions.runDiff(request.params.id).catch((error: unknown) => refusal(error, { RUN: 'id' }, 'id')),
  );

  app.post(
    '/runs/:id/land',
    {
      schema: {
        summary: "Accept a run's landing (review mode): the coordinator lands it, or the server does when no coordinator runs",
        description: '`by` says who lands it: `coordinator` (woken; its merge queue lands it), or `here` (no coordinator runs: landed during this request; `landing.state` says how it ended). A landing that already ended is 409.',
        operationId: 'landRun',
        params: idParam(RUN_ID_PATTERN, 'a run id (N-slug-rN)'),
        response: { 200: { type: 'object', properties: { landing: ref('Landing'), by: { type: 'string', enum: ['coordinator', 'here', 'queued'] }, detail: { type: 'string' } } }, ...ERROR, 404: ref('Error'), 409: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => ctx.actions.landRun(request.params.id, { by: 'operator' }).catch((error: unknown) => refusal(error, { RUN: 'id' }, 'id')),
  );

  app.post(
    '/runs/:id/reject',
    {
      schema: {
        summary: "Reject a run's work: its landing ends rejected; the goal goes back to the queue (`requeue`) or closes failure; `comment` goes to the goal's thread for the next attempt",
        operationId: 'rejectRun',
        params: idParam(RUN_ID_PATTERN, 'a run id (N-slug-rN)'),
        body: { type: ['object', 'null'], additionalProperties: false, properties: { requeue: { type: 'boolean' }, comment: { type: 'string', minLength: 1, maxLength: 65536 } } },
        response: { 200: { type: 'object', properties: { landing: ref('Landing'), goal: { type: 'string', enum: ['queued', 'closed'] } } }, ...ERROR, 404: ref('Error'), 409: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { requeue?: boolean; comment?: string } | null }>) =>
      ctx.actions
        .rejectRun(request.params.id, { ...(request.body?.requeue ? { requeue: true } : {}), ...(request.body?.comment ? { comment: request.body.comment } : {}), by: 'operator' })
        .catch((error: unknown) => refusal(error, { RUN: 'id' }, 'id')),
  );

  app.get(
    '/runs',
    {
      schema: {
        summary: 'List runs, oldest first: the newest `limit` of them; outputs longer than 4096 characters are cut (outputs_truncated: true; GET /runs/{id} has them whole)',
        operationId: 'listRuns',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            goal: { type: 'string', pattern: GOAL_ID_PATTERN.source, description: 'only the runs of this goal' },
            limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 1000, description: 'at most this many, the newest' },
          },
        },
        response: { 200: { type: 'object', properties: { runs: { type: 'array', items: ref('Run') }, total: { type: 'integer' }, problems: { type: 'array', items: { type: 'string' } } } }, ...ERROR, 404: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Querystring: { goal?: string; limit: number } }>) => {
      const { goal, limit } = request.query;
      if (goal === undefined) {
        const { runs, problems } = await listRuns(paths);
        return { runs: runs.slice(-limit).map(listedRun), total: runs.length, problems: problems.map((p) => p.message) };
      }
      await readGoal(paths, goal).catch((error: unknown) => {
        if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new HttpError(404, error.message, 'goal');
        throw error;
      });
      const runs: RunRecord[] = [];
      const problems: string[] = [];
      for (const id of await runIdsForGoal(paths, goal)) {
        try {
          runs.push(await readRun(paths, id));
        } catch (error) {
          problems.push((error as Error).message);
        }
      }
      return { runs: runs.slice(-limit).map(listedRun), total: runs.length, problems };
    },
  );

  app.get(
    '/runs/:id',
    {
      schema: {
        summary: 'One run record',
        operationId: 'getRun',
        params: idParam(RUN_ID_PATTERN, 'a run id (N-slug-rN)'),
        response: { 200: { type: 'object', properties: { run: ref('Run') } }, ...ERROR, 404: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => ({ run: await readRun(paths, request.params.id).catch(storeFailure) }),
  );

  app.get(
    '/runs/:id/events',
    {
      schema: {
        summary: "The tail of a run's agent stream (runs/<id>/events.jsonl): its last lines, each parsed when it is JSON",
        operationId: 'getRunEvents',
        params: idParam(RUN_ID_PATTERN, 'a run id (N-slug-rN)'),
        querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'integer', minimum: 1, maximum: 5000, default: 200, description: 'lines at most (also capped at the last 1 MB of the file)' } } },
        response: {
          200: { type: 'object', properties: { run: { type: 'string' }, lines: { type: 'array', items: {} }, truncated: { type: 'boolean' }, size: { type: 'integer', description: 'bytes in events.jsonl' } } },
          ...ERROR,
          404: ref('Error'),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Querystring: { limit: number } }>) => {
      const run = await readRun(paths, request.params.id).catch(storeFailure);
      return { run: run.id, ...(await runEventsTail(paths, run.id, request.query.limit, RUN_EVENTS_MAX_BYTES)) };
    },
  );

  app.get(
    '/plants',
    {
      schema: {
        summary: 'List plants',
        operationId: 'listPlants',
        response: { 200: { type: 'object', properties: { plants: { type: 'array', items: ref('Plant') }, problems: { type: 'array', items: { type: 'string' } } } }, ...ERROR },
      },
    },
    async () => {
      const { plants, problems } = await listPlants(paths);
      return { plants, problems: problems.map((p) => p.message) };
    },
  );

  app.get(
    '/events',
    {
      schema: {
        summary: 'Events after a cursor, in log order (polling; the stream is preferred)',
        description: 'Finding the cursor seeks (ids are sortable ULIDs); pass `next` back as `since` for the following page.',
        operationId: 'listEvents',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { ...eventQuery, limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 1000 } },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              events: { type: 'array', items: ref('Event') },
              next: { type: ['string', 'null'], description: 'the cursor for the next call: the last event read' },
              more: { type: 'boolean', description: 'true when the limit cut the page: call again with since=next' },
            },
          },
          ...ERROR,
        },
      },
    },
    async (request: FastifyRequest<{ Querystring: { since?: string; type?: string[]; goal?: string; limit: number } }>) => {
      const q = request.query;
      const filter = eventFilter(q);
      const offset = q.since ? (await findEventsAfter(paths, q.since)).offset : 0;
      const events: EventRecord[] = [];
      let next: string | null = q.since ?? null;
      let more = false;
      await scanEvents(paths, offset, (event) => {
        next = eventKey(event) || next;
        if (!matchesEvent(event, filter)) return false;
        events.push(event);
        more = events.length >= q.limit;
        return more;
      });
      return { events, next, more };
    },
  );

  app.get(
    '/events/stream',
    {
      schema: {
        summary: 'Server-sent events: every event after the cursor, then new ones as they are written',
        description:
          'Each event is `id:` its ULID, `event:` its type, `data:` the event as JSON. The cursor is the `Last-Event-ID` header (a reconnecting EventSource sends it) or `?since=`; without either the stream starts at the end of the log. A `: keep-alive` comment comes every 15 s. The stream follows the log by offset after the cursor: across reconnects no event is lost or repeated.',
        operationId: 'streamEvents',
        querystring: { type: 'object', additionalProperties: false, properties: eventQuery },
        headers: { type: 'object', properties: { 'last-event-id': { type: 'string', description: 'the last event id received; wins over ?since=' } } },
        response: { 200: { description: 'an endless text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...ERROR },
      },
    },
    async (request: FastifyRequest<{ Querystring: { since?: string; type?: string[]; goal?: string } }>, reply: FastifyReply) => {
      const header = request.headers['last-event-id'];
      const lastEventId = Array.isArray(header) ? header[0] : header;
      if (lastEventId !== undefined && !isEventId(lastEventId.trim())) throw new HttpError(400, `Last-Event-ID ${lastEventId}: not an event id (a ULID)`, 'Last-Event-ID');
      const cursor = lastEventId?.trim() || request.query.since;
      const filter = eventFilter(request.query);
      let offset = ctx.tail.offset;
      let note: string | undefined;
      if (cursor) {
        const found = await findEventsAfter(paths, cursor);
        offset = found.offset;
        if (!found.exact) note = `event ${cursor} is not in the log: starting at the first event after it`;
      }
      reply.hijack();
      const stream = new SseConnection(reply.raw, { paths, tail: ctx.tail, offset, filter, keepAliveMs: ctx.keepAliveMs, ...(note ? { note } : {}) });
      stream.authorization = request.headers.authorization;
      ctx.streams.add(stream);
      reply.raw.once('close', () => ctx.streams.delete(stream));
    },
  );
}

/** The budget report as HTTP answers it: budget.json's problem without its machine path. */
function publicBudget(report: BudgetReport, garden: Garden): BudgetReport {
  return report.problem ? { ...report, problem: publicText(report.problem, garden.paths) } : report;
}
