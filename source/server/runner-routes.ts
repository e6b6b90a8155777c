import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ARTIFACT_KINDS, GOAL_ID_PATTERN, PLANT_NAME_PATTERN, RUN_ID_PATTERN, ULID_PATTERN } from '../contracts/index.js';
import {
  appendRunLog,
  attachArtifact,
  checkRunner,
  commentLease,
  claimTask,
  superviseRemoteRuns,
  finishRemoteRun,
  getTask,
  heartbeat,
  heartbeatSeconds,
  MAX_ARTIFACT_BYTES,
  MAX_DOCUMENT_BYTES,
  MAX_LOG_CHUNK_BYTES,
  openLeases,
  listArtifacts,
  RemoteRefusal,
  RUNNER_STATUSES,
  upsertDocument,
  type FinishInput,
  type RunnerIdentity,
} from '../coordinator/remote.js';
import type { Garden } from '../garden/index.js';
import { MAX_GUARD_RECORD_BYTES } from '../guard/index.js';
import type { OperatorActions } from '../session/index.js';
import { OpenGoalScanner, readGoal, readRun, StoreError } from '../store/index.js';
import { goalComments } from '../submit/index.js';
import { HttpError, refusal } from './routes.js';

/** What the runner routes act on. */
export interface RunnerRouteContext {
  garden: Garden;
  /** The operator actions: comments and answers go through them, as from the CLI and the workbench. */
  actions: OperatorActions;
}

/**
 * Body limits of the routes that carry data, bytes of JSON. fastify's
 * default (1 MiB) is too small for a log chunk of 1 MB decoded data sent
 * base64 (4/3 of it) or as a JSON-escaped string (up to 6 bytes per byte:
 * `\u0001`), so each limit is the decoded limit's worst escaping plus room
 * for the other fields.
 */
export const RUNNER_BODY_LIMITS = {
  /** `POST /runs/:id/log`: 1 MB of decoded data in either encoding. */
  log: 6 * MAX_LOG_CHUNK_BYTES + 64 * 1024,
  /** `POST /runs/:id/artifacts`: 10 MB of content sent base64 (13.4 MB), or a utf8 string escaped up to 1.5 times. */
  artifact: Math.ceil(1.5 * MAX_ARTIFACT_BYTES) + 64 * 1024,
  /** `PUT /plants/:name/documents`: 1 MB of content, however it is escaped. */
  document: 6 * MAX_DOCUMENT_BYTES + 64 * 1024,
  /** `POST /runs/:id/finish`: the run's facts and a guarded run's records (each text at most 10 MB, escaped up to 1.5 times). */
  finish: Math.ceil(1.5 * 3 * MAX_GUARD_RECORD_BYTES) + 1024 * 1024,
} as const;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const ERRORS = { 400: ref('Error'), 401: ref('Error'), 403: { description: 'the token’s role may not make this call: a runner token naming another runner, or writing a comment or document without a lease', ...ref('Error') } };
const NOT_FOUND = { 404: ref('Error') };
const REFUSED = { 409: { description: 'refused in this state: an ended lease (`state`: expired or finished, a LeaseRefused event is written), another runner, or an upload at the wrong offset (`size`)', ...ref('Error') } };
const leaseField = { type: 'string', pattern: ULID_PATTERN.source, description: 'the lease id the claim answered' };
const runParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: RUN_ID_PATTERN.source, description: 'a run id (N-slug-rN)' } } };
const goalParam = (name: string) => ({ type: 'object', required: [name], properties: { [name]: { type: 'string', pattern: GOAL_ID_PATTERN.source, description: 'a goal id (N-slug)' } } });

/** The runner's identity headers (docs/runners/level2.md, "The protocol"). */
const RUNNER_HEADERS = {
  type: 'object',
  required: ['pak2-runner-host'],
  properties: {
    'pak2-runner': { type: 'string', description: "the runner's name: letters, digits, '.', '_', '-' (at most 64); required with an operator token; with a runner token the token's name (another name is 403)" },
    'pak2-runner-host': { type: 'string', description: "the runner's host name" },
    'pak2-runner-instance': { type: 'string', description: "the runner process's instance id (letters, digits, '.', '_', '-'; at most 64): a lease claimed with one is refused to another instance and to a call without one; required with a runner token on a claim and on calls naming a lease" },
  },
};
const OPTIONAL_RUNNER_HEADERS = {
  type: 'object',
  properties: {
    'pak2-runner': { type: 'string', description: "the runner's name; required with a lease and an operator token (a runner token names its runner)" },
    'pak2-runner-host': { type: 'string', description: "the runner's host name; required with a lease" },
    'pak2-runner-instance': { type: 'string', description: "the runner process's instance id" },
  },
};

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The caller's runner identity (docs/server/level2.md, "Tokens and roles"):
 * with a runner token the name is the token's (a `Pak2-Runner` header that
 * names another is 403; absent, the token's name), with an operator token
 * the `Pak2-Runner` header's; the host from `Pak2-Runner-Host`; the
 * instance from `Pak2-Runner-Instance`, which a runner token must send on
 * a claim and on a call naming a lease (`onLease`), so the instance check
 * cannot be skipped by leaving it out. The token's name and role go with
 * the identity, onto the events the call writes.
 *
 * @throws HttpError 403 for a runner token's Pak2-Runner naming another runner;
 *   RemoteRefusal 400 naming a missing or malformed header.
 */
function runnerOf(request: FastifyRequest, onLease = false): RunnerIdentity {
  const caller = request.caller;
  const asRunner = caller?.role === 'runner';
  const named = header(request, 'pak2-runner');
  if (asRunner && named !== undefined && named !== caller.name) {
    throw new HttpError(403, `Pak2-Runner ${named}: this is runner ${caller.name}'s token; a runner token's runner is named by the token (send Pak2-Runner ${caller.name}, or none)`, 'Pak2-Runner');
  }
  const name = asRunner ? caller.name : named;
  const host = header(request, 'pak2-runner-host');
  if (name === undefined) throw new RemoteRefusal(400, "Pak2-Runner: this call needs the Pak2-Runner header (the runner's name)", 'Pak2-Runner');
  if (host === undefined) throw new RemoteRefusal(400, "Pak2-Runner-Host: this call needs the Pak2-Runner-Host header (the runner's host name)", 'Pak2-Runner-Host');
  const who: RunnerIdentity = { ...checkRunner({ name, host }), ...(caller ? { token: { name: caller.name, role: caller.role } } : {}) };
  const instance = header(request, 'pak2-runner-instance');
  if (instance === undefined) {
    if (asRunner && onLease) throw new RemoteRefusal(400, "Pak2-Runner-Instance: a runner token's claims and lease calls need the Pak2-Runner-Instance header (the runner process's instance id)", 'Pak2-Runner-Instance');
    return who;
  }
  if (!RUNNER_INSTANCE_PATTERN.test(instance)) throw new RemoteRefusal(400, `Pak2-Runner-Instance ${JSON.stringify(instance)}: a runner instance id is letters, digits, '.', '_' and '-' (at most 64)`, 'Pak2-Runner-Instance');
  return { ...who, instance };
}

/**
 * Refuses a runner token's write that names no lease (a comment or a plant
 * document): a runner writes those only under a lease its runner holds.
 *
 * @throws HttpError 403 naming `/lease`.
 */
function leaseRequiredForRunner(request: FastifyRequest, lease: string | undefined, what: string): void {
  if (request.caller?.role === 'runner' && !lease) {
    throw new HttpError(403, `lease: the runner token ${request.caller.name} may write ${what} only under a lease its runner holds; an operator token writes without one`, '/lease');
  }
}

/** A runner instance id (`Pak2-Runner-Instance`; the runner sends a ULID). */
const RUNNER_INSTANCE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The identity when the headers are given (always for a runner token), else undefined. @throws as runnerOf, for a half or malformed identity. */
function optionalRunnerOf(request: FastifyRequest, onLease = false): RunnerIdentity | undefined {
  if (request.caller?.role !== 'runner' && header(request, 'pak2-runner') === undefined && header(request, 'pak2-runner-host') === undefined) return undefined;
  return runnerOf(request, onLease);
}

/** The fields a comment action's refusal names (its message starts with the word). */
const COMMENT_FIELDS: Record<string, string> = { GOAL: 'id', TEXT: '/body', ID: '/answers' };

/** The finish body's schema: the run record's facts as the runner's driver code wrote them (docs/runners/level2.md, "runs_finish"). */
const FINISH_BODY = {
  type: 'object',
  additionalProperties: false,
  required: ['lease', 'status', 'cost'],
  properties: {
    lease: leaseField,
    status: { type: 'string', description: `the run's terminal status as the runner observed it: ${RUNNER_STATUSES.join(', ')} (never abandoned: the garden decides that)` },
    failure_reason: { type: ['string', 'null'], description: 'required with any status but success; never lease_expired' },
    exit_code: { type: ['integer', 'null'], description: "the agent process's exit code; null when it was not observed" },
    cost: { type: 'object', description: "the run record's cost: {source: provider|estimated|unknown, usd?, input_tokens?, output_tokens?, …}" },
    session_id: { type: ['string', 'null'] },
    final_text: { type: ['string', 'null'] },
    error: { type: ['string', 'null'] },
    num_turns: { type: ['integer', 'null'], minimum: 0 },
    reflection: { type: ['string', 'null'], description: 'required for success of a build, fix, evaluate or tend goal (MISSING_REFLECTION)' },
    stream_bytes: {
      type: 'object',
      additionalProperties: false,
      description: 'bytes of events.jsonl and stderr.log the runner holds; more than the garden holds is refused 409 {size}',
      properties: { events: { type: 'integer', minimum: 0 }, stderr: { type: 'integer', minimum: 0 } },
    },
    acceptance: {
      type: 'array',
      description: "what was verified, each with its evidence: the goal's acceptance criteria (criterion: true, result verified|failed|unverified, verify: the command), then the runner's own checks; a criterion the runner leaves out is recorded unverified (not reported by the runner)",
      items: {
        type: 'object',
        required: ['item', 'verified'],
        properties: {
          item: { type: 'string' },
          verified: { type: 'boolean' },
          evidence: { type: 'string' },
          criterion: { type: 'boolean' },
          result: { type: 'string', enum: ['verified', 'failed', 'unverified'] },
          verify: { type: 'string' },
        },
      },
    },
    lingered: { type: ['boolean', 'null'] },
    leftovers: { type: ['array', 'null'], items: { type: 'string' } },
    watchdog: { type: ['object', 'null'] },
    permission_denials: { type: ['array', 'null'] },
    operator_stop: { type: ['object', 'null'], properties: { requeue: { type: 'boolean' } } },
    linger: { type: ['object', 'null'], description: 'how a lingering agent was ended: {ended_by: grace|cap, open_work?: [string]}' },
    background_tasks: { type: ['array', 'null'], description: 'the background tasks of the main turn: {id, type, description, status, unfinished?}', items: { type: 'object' } },
    stop_reason: { type: ['string', 'null'] },
    terminal_reason: { type: ['string', 'null'] },
    guard: {
      type: ['object', 'null'],
      additionalProperties: false,
      required: ['envelope', 'outcome', 'phases'],
      description: 'a guarded run’s records (seed 001), written into the garden’s run directory: execution_envelope.json, task_outcome.json, phase_events.jsonl, rejected.patch, prompt_bundle.md; required for success of a guarded goal, refused for any other',
      properties: {
        envelope: { type: 'object' },
        outcome: { type: 'object' },
        phases: { type: 'string' },
        rejected_patch: { type: ['string', 'null'] },
        prompt_bundle: { type: ['string', 'null'] },
      },
    },
  },
};

/**
 * Registers the remote-runner protocol's routes (seed 004, "The write-back
 * contract" and "Comments"; docs/runners/level2.md, "The protocol") under the prefix the caller registers them in
 * (`/api/v1`), behind the server's bearer auth: whoami, open leases,
 * tasks_claim, tasks_get, heartbeat, log upload, artifacts, finish,
 * comments and documents. Each has the schema its input is checked
 * against and the OpenAPI description is made from. A refusal of the
 * garden side ({@link RemoteRefusal}) is answered by the server's error
 * handler as `{error, field, ...extra}` with its status (400, 404, 409
 * with `state` or `size`, 422); a comment action's UserError as the other
 * write routes answer it (404 unknown goal, 409 refused in this state, else
 * 400 naming the field). The runner headers are required where the
 * protocol says so (400 naming the missing header).
 */
export function registerRunnerRoutes(app: FastifyInstance, ctx: RunnerRouteContext): void {
  const { garden } = ctx;
  const { paths, config } = garden;

  app.get(
    '/whoami',
    {
      schema: {
        summary: "The server's view of a runner: its identity, the garden, the lease TTL and heartbeat interval (seconds), the server's clock",
        operationId: 'whoami',
        headers: RUNNER_HEADERS,
        response: {
          200: {
            type: 'object',
            properties: {
              runner: { type: 'object', properties: { name: { type: 'string' }, host: { type: 'string' } } },
              garden: { type: 'string' },
              token: { type: 'object', description: 'the name and role of the token the call came with', properties: { name: { type: 'string' }, role: { type: 'string', enum: ['operator', 'runner', 'read'] } } },
              lease_ttl_seconds: { type: 'integer' },
              heartbeat_seconds: { type: 'integer' },
              server_time: { type: 'string', format: 'date-time' },
            },
          },
          ...ERRORS,
        },
      },
    },
    async (request: FastifyRequest) => {
      const runner = runnerOf(request);
      const ttl = config.runners.leaseTtlSeconds;
      const { name, role } = request.caller!;
      return { runner: { name: runner.name, host: runner.host }, garden: config.gardenName, token: { name, role }, lease_ttl_seconds: ttl, heartbeat_seconds: heartbeatSeconds(ttl), server_time: new Date().toISOString() };
    },
  );

  app.get(
    '/leases',
    {
      schema: {
        summary: 'The active leases, all or one runner’s (a runner catching up after a restart)',
        operationId: 'listLeases',
        headers: RUNNER_HEADERS,
        querystring: { type: 'object', additionalProperties: false, properties: { runner: { type: 'string', minLength: 1, description: 'only the leases this runner holds' } } },
        response: { 200: { type: 'object', properties: { leases: { type: 'array', items: ref('Lease') } } }, ...ERRORS },
      },
    },
    async (request: FastifyRequest<{ Querystring: { runner?: string } }>) => {
      runnerOf(request);
      return { leases: await openLeases(garden, request.query.runner) };
    },
  );

  app.post(
    '/tasks/claim',
    {
      // A claim without a body is a claim without filters.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        summary: 'tasks_claim: take the first queued goal this runner may run, under a lease',
        description:
          'Dispatch order (priority, then age); only goals of active plants, never conversation replies (converse, post-reply hops); guarded and routed goals only with `guard: true` (the runner runs the guard in its checkout and finishes with its records; `context.guard` carries the guard and the routing plan). queued → dispatched under the goal’s lock (of racing claimers exactly one wins), the run opened with `runner`, dispatched → running, the lease, LeaseClaimed. 204 when nothing can be claimed.',
        operationId: 'claimTask',
        headers: RUNNER_HEADERS,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            plants: { type: 'array', items: { type: 'string', pattern: PLANT_NAME_PATTERN.source }, description: 'only goals assigned to these plants' },
            drivers: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'only goals whose driver (a routed goal: its tier; else goal → [defaults] → built-in) is one of these' },
            guard: { type: 'boolean', description: 'the runner runs guarded and routed goals: their guard in its checkout (seed 001), finishing with the guard records; without it they are never claimed' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              lease: ref('Lease'),
              goal: ref('Goal'),
              run: ref('Run'),
              context: {
                type: 'object',
                description: 'what the agent needs that only the garden has',
                properties: {
                  prompt: { type: 'string' },
                  motivation: { type: ['string', 'null'] },
                  plant: ref('Plant'),
                  documents: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } } },
                  seed: { type: 'object', properties: { name: { type: 'string' }, content: { type: ['string', 'null'] } } },
                  blocks: { type: 'object', properties: { tend: { type: 'string' }, commission: { type: 'string' }, supplements: { type: 'string' }, comments: { type: 'string' } } },
                  guard: {
                    type: 'object',
                    additionalProperties: true,
                    description: 'a guarded or routed goal only: the guard in force ({verify, allowed_files, forbidden_paths, timeout_seconds, env_passthrough, contract_id, redact}) and this attempt’s routing plan (`routing`: {task_class, tier_index, tier, attempts, escalations, pinned, tiers, max_escalations, budget_usd}, or null)',
                  },
                  comments: { type: 'array', items: ref('Comment') },
                  settings: {
                    type: 'object',
                    properties: { run_timeout_seconds: { type: 'integer' }, watchdog_seconds: { type: 'integer' }, tool_silence_seconds: { type: 'integer' }, result_grace_seconds: { type: 'integer' }, result_grace_cap_seconds: { type: 'integer' } },
                  },
                },
              },
            },
          },
          204: { description: 'nothing to claim', content: {} },
          ...ERRORS,
        },
      },
    },
    async (request: FastifyRequest<{ Body: { plants?: string[]; drivers?: string[]; guard?: boolean } | undefined }>, reply: FastifyReply) => {
      const who = runnerOf(request, true);
      const body = request.body ?? {};
      const claim = await claimTask(garden, who, { ...(body.plants ? { plants: body.plants } : {}), ...(body.drivers ? { drivers: body.drivers } : {}), ...(body.guard ? { guard: true } : {}) });
      if (!claim) return reply.code(204).send();
      return claim;
    },
  );

  app.get(
    '/tasks/:goal',
    {
      schema: {
        summary: 'tasks_get: a goal, its latest run, that run’s lease if any, and its comment thread',
        operationId: 'getTask',
        params: goalParam('goal'),
        response: {
          200: { type: 'object', properties: { goal: ref('Goal'), run: { anyOf: [ref('Run'), { type: 'null' }] }, lease: { anyOf: [ref('Lease'), { type: 'null' }] }, comments: { type: 'array', items: ref('Comment') } } },
          ...ERRORS,
          ...NOT_FOUND,
        },
      },
    },
    async (request: FastifyRequest<{ Params: { goal: string } }>) => getTask(garden, request.params.goal),
  );

  app.post(
    '/runs/:id/heartbeat',
    {
      schema: {
        summary: 'runs_heartbeat: renew the lease (expires_at = now + ttl on the garden’s clock); the answer says whether to stop',
        description: '`stop` is null, or `{requeue}` when the operator cancelled the goal or stopped the run: stop the agent and finish with what was observed. `answers` are the answers to this goal’s questions posted since the lease was claimed.',
        operationId: 'heartbeat',
        headers: RUNNER_HEADERS,
        params: runParam,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['lease'],
          properties: {
            lease: leaseField,
            progress: { type: 'number', minimum: 0, maximum: 100, description: 'a percentage' },
            status: { type: 'string', description: 'one line (no line breaks); cut at 200 characters' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              lease: ref('Lease'),
              stop: { anyOf: [{ type: 'null' }, { type: 'object', properties: { requeue: { type: 'boolean' } } }] },
              answers: { type: 'array', items: ref('Comment') },
            },
          },
          ...ERRORS,
          ...NOT_FOUND,
          ...REFUSED,
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { lease: string; progress?: number; status?: string } }>) => heartbeat(garden, request.params.id, request.body, runnerOf(request, true)),
  );

  app.post(
    '/runs/:id/log',
    {
      bodyLimit: RUNNER_BODY_LIMITS.log,
      schema: {
        summary: 'Log upload: append a chunk of the agent’s stream (events.jsonl) or stderr.log at the garden’s size',
        description: `\`offset\` (bytes) must be the garden's current size of that file; otherwise 409 {size} says where to resume. At most ${MAX_LOG_CHUNK_BYTES} bytes of decoded data per call; base64 lets a chunk end inside a UTF-8 character.`,
        operationId: 'uploadLog',
        headers: RUNNER_HEADERS,
        params: runParam,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['lease', 'stream', 'offset', 'data'],
          properties: {
            lease: leaseField,
            stream: { type: 'string', enum: ['events', 'stderr'] },
            offset: { type: 'integer', minimum: 0, description: 'bytes: the garden’s size of the file' },
            data: { type: 'string' },
            encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
          },
        },
        response: { 200: { type: 'object', properties: { size: { type: 'integer', description: 'the file’s size after the append, bytes' } } }, ...ERRORS, ...NOT_FOUND, ...REFUSED, 413: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { lease: string; stream: string; offset: number; data: string; encoding?: string } }>) =>
      appendRunLog(garden, request.params.id, request.body, runnerOf(request, true)),
  );

  app.post(
    '/runs/:id/artifacts',
    {
      bodyLimit: RUNNER_BODY_LIMITS.artifact,
      schema: {
        summary: 'artifacts_attach: a diff or file (kept in runs/<id>/artifacts/<name>) or a link (its http(s) url); one name once per run',
        operationId: 'attachArtifact',
        headers: RUNNER_HEADERS,
        params: runParam,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['lease', 'name', 'kind'],
          properties: {
            lease: leaseField,
            name: { type: 'string', minLength: 1, description: "one file name: letters, digits, '.', '_', '-'; no leading dot; at most 128" },
            kind: { type: 'string', enum: [...ARTIFACT_KINDS] },
            url: { type: 'string', description: 'a link’s http(s) URL' },
            content: { type: 'string', description: `a diff’s or file’s content, at most ${MAX_ARTIFACT_BYTES} bytes decoded` },
            encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
          },
        },
        response: { 201: { type: 'object', properties: { artifact: ref('Artifact') } }, ...ERRORS, ...NOT_FOUND, ...REFUSED, 413: ref('Error') },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { lease: string; name: string; kind: string; url?: string; content?: string; encoding?: string } }>, reply: FastifyReply) => {
      const artifact = await attachArtifact(garden, request.params.id, request.body, runnerOf(request, true));
      return reply.code(201).send({ artifact });
    },
  );

  app.get(
    '/runs/:id/artifacts',
    {
      schema: {
        summary: 'A run’s attached artifacts, in the order attached',
        operationId: 'listArtifacts',
        params: runParam,
        response: { 200: { type: 'object', properties: { artifacts: { type: 'array', items: ref('Artifact') } } }, ...ERRORS, ...NOT_FOUND },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => {
      await readRun(paths, request.params.id).catch((error: unknown) => {
        if (error instanceof StoreError && error.code === 'RUN_NOT_FOUND') throw new RemoteRefusal(404, `run ${request.params.id}: no such run`, 'id');
        throw error;
      });
      return { artifacts: await listArtifacts(garden, request.params.id) };
    },
  );

  app.post(
    '/runs/:id/finish',
    {
      // A guarded run's records ride along: a rejected patch and a phase log of up to 10 MB each.
      bodyLimit: RUNNER_BODY_LIMITS.finish,
      schema: {
        summary: 'runs_finish: close the run with the runner’s observed facts, end the lease, settle the goal',
        description:
          'Refused, changing nothing: 400 a status that is not a runner’s terminal one (abandoned included), failure_reason lease_expired, or guard records for a goal that is not guarded; 422 an outcome contradicting the runner’s own facts (`field` names it: /exit_code, /failure_reason, /reflection, /acceptance (also a criterion reported verified without evidence), /guard: a guarded goal’s success without guard records, records that do not validate, an outcome that did not keep the work); 409 {size} when stream_bytes exceeds what the garden holds; 409 an ended lease.',
        operationId: 'finishRun',
        headers: RUNNER_HEADERS,
        params: runParam,
        body: FINISH_BODY,
        response: {
          200: { type: 'object', properties: { run: ref('Run'), goal: ref('Goal') } },
          ...ERRORS,
          ...NOT_FOUND,
          ...REFUSED,
          422: { description: 'the outcome contradicts the runner’s own facts', ...ref('Error') },
        },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: FinishInput }>) => finishRemoteRun(garden, request.params.id, request.body, runnerOf(request, true)),
  );

  app.get(
    '/goals/:id/comments',
    {
      schema: {
        summary: 'A goal’s comment thread, and the ids of its unanswered blocking comments',
        operationId: 'listComments',
        params: goalParam('id'),
        response: { 200: { type: 'object', properties: { comments: { type: 'array', items: ref('Comment') }, open: { type: 'array', items: { type: 'string' } } } }, ...ERRORS, ...NOT_FOUND },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string } }>) => {
      const { comments, open } = await goalComments(garden, request.params.id).catch((error: unknown) => refusal(error, COMMENT_FIELDS, 'id'));
      return { comments, open: open.map((c) => c.id) };
    },
  );

  app.post(
    '/goals/:id/comments',
    {
      schema: {
        summary: 'comments_post: a comment, a blocking question (the goal waits blocked until it is answered), or an answer',
        description:
          '`answers` answers that open question (the last answer returns the goal to running while its run lives, else to queued). With `lease` the comment is the agent’s (`agent:<run-id>` of the lease’s run): the lease must be active and belong to this goal. Without one the author is `author`, else `operator`.',
        operationId: 'postComment',
        headers: OPTIONAL_RUNNER_HEADERS,
        params: goalParam('id'),
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['body'],
          properties: {
            body: { type: 'string', minLength: 1 },
            blocking: { type: 'boolean', default: false, description: 'a question the goal cannot go on without' },
            answers: { type: 'string', pattern: ULID_PATTERN.source, description: 'the id of the open question this answers' },
            lease: leaseField,
            author: { type: 'string', minLength: 1, maxLength: 200, description: 'a person’s name (default operator); not with a lease' },
          },
        },
        response: { 201: { type: 'object', properties: { comment: ref('Comment'), goal: ref('Goal') } }, ...ERRORS, ...NOT_FOUND, ...REFUSED },
      },
    },
    async (request: FastifyRequest<{ Params: { id: string }; Body: { body: string; blocking?: boolean; answers?: string; lease?: string; author?: string } }>, reply: FastifyReply) => {
      const b = request.body;
      const goalId = request.params.id;
      if (b.answers && b.blocking) throw new RemoteRefusal(400, 'blocking: an answer is not a question; post the question separately', '/blocking');
      if (b.lease && b.author !== undefined) throw new RemoteRefusal(400, "author: a comment with a lease is its agent's (agent:<run-id>); leave author out", '/author');
      if (!b.lease && b.author?.startsWith('agent:')) throw new RemoteRefusal(400, `author ${b.author}: an agent's comment comes with its run's lease`, '/author');
      leaseRequiredForRunner(request, b.lease, 'a comment');
      const who = optionalRunnerOf(request, Boolean(b.lease));
      await readGoal(paths, goalId).catch((error: unknown) => {
        if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new RemoteRefusal(404, `goal ${goalId}: no such goal`, 'id');
        throw error;
      });
      const lease = b.lease ? await commentLease(garden, goalId, b.lease, who) : undefined;
      const author = lease ? `agent:${lease.run}` : (b.author ?? 'operator');
      const result = await (b.answers
        ? ctx.actions.answerQuestion(goalId, b.body, { questionId: b.answers, author })
        : ctx.actions.postComment(goalId, { body: b.body, blocking: Boolean(b.blocking), author, ...(lease ? { run: lease.run } : {}) })
      ).catch((error: unknown) => refusal(error, COMMENT_FIELDS, '/body'));
      return reply.code(201).send(result);
    },
  );

  app.put(
    '/plants/:name/documents',
    {
      bodyLimit: RUNNER_BODY_LIMITS.document,
      schema: {
        summary: 'documents_upsert: write one plant document (memory/MEMORY.md, or Markdown under memory/, skills/, knowledge/)',
        description: `No '..', no absolute path, no hidden names, at most ${MAX_DOCUMENT_BYTES} bytes. With \`lease\` (and its \`run\`) the lease must be active and the runner headers are required. DocumentUpserted.`,
        operationId: 'upsertDocument',
        headers: OPTIONAL_RUNNER_HEADERS,
        params: { type: 'object', required: ['name'], properties: { name: { type: 'string', pattern: PLANT_NAME_PATTERN.source, description: 'a plant name' } } },
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['path', 'content'],
          properties: {
            lease: leaseField,
            run: { type: 'string', pattern: RUN_ID_PATTERN.source, description: 'the run the lease belongs to; required with lease' },
            path: { type: 'string', minLength: 1, description: 'relative to the plant directory, e.g. memory/MEMORY.md' },
            content: { type: 'string' },
          },
        },
        response: {
          200: { type: 'object', properties: { path: { type: 'string' }, bytes: { type: 'integer' }, sha256: { type: 'string' } } },
          ...ERRORS,
          ...NOT_FOUND,
          ...REFUSED,
          413: ref('Error'),
        },
      },
    },
    async (request: FastifyRequest<{ Params: { name: string }; Body: { lease?: string; run?: string; path: string; content: string } }>) => {
      leaseRequiredForRunner(request, request.body.lease, 'a plant document');
      const caller = request.caller ? { token: { name: request.caller.name, role: request.caller.role } } : {};
      const who = request.body.lease ? runnerOf(request, true) : (optionalRunnerOf(request) ?? { name: 'operator', host: request.ip || 'unknown', ...caller });
      return upsertDocument(garden, request.params.name, request.body, who);
    },
  );
}

/**
 * How often the server checks leases (seed 004, "Run": a runner that dies
 * is noticed when its lease expires): a third of the TTL, at least every
 * 5 s. `ttlSeconds` in seconds; the answer in milliseconds.
 */
export function leaseCheckMs(ttlSeconds: number): number {
  return Math.min((ttlSeconds * 1000) / 3, 5000);
}

/** A running lease reaper. */
export interface LeaseReaper {
  /** Stops the timer and waits for a check in progress. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Checks the garden's remote runs every `intervalMs` milliseconds (seed 004,
 * "Run"; superviseRemoteRuns: a lease past its TTL closes its run
 * `abandoned` / `lease_expired` and requeues its goal, a run without a lease
 * file is abandoned after its TTL, a closed remote run's goal is settled;
 * docs/runners/level2.md, "Leases and their timings"). The timer is
 * unref'd (it never keeps the process alive) and a check never overlaps
 * the previous one. A failing check is said once through `onNotice` (one
 * line) and again only after a check succeeded; it never throws.
 */
export function startLeaseReaper(garden: Garden, options: { intervalMs: number; onNotice?: (line: string) => void; leads?: () => boolean }): LeaseReaper {
  let running: Promise<void> | undefined;
  let failing = false;
  const scanner = new OpenGoalScanner(garden.paths);
  const check = async () => {
    // On a garden shared through a store the leader reaps, once for every server (docs/store/level2.md).
    if (options.leads && !options.leads()) return;
    try {
      await superviseRemoteRuns(garden, scanner);
      if (failing) options.onNotice?.('pak2 serve: checking leases works again');
      failing = false;
    } catch (error) {
      if (!failing) options.onNotice?.(`pak2 serve: checking leases failed (said once; retried every ${Math.round(options.intervalMs / 100) / 10} s): ${(error as Error).message}`);
      failing = true;
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = check().finally(() => (running = undefined));
  }, options.intervalMs);
  timer.unref();
  let stopped: Promise<void> | undefined;
  return {
    stop: () =>
      (stopped ??= (async () => {
        clearInterval(timer);
        await running;
      })()),
  };
}
