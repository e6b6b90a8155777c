import type { CommentRecord, GoalRecord, LeaseRecord, RunRecord } from '../contracts/index.js';
import type { GuardContext, GuardRecordsWire } from '../guard/index.js';

/**
 * The runner's side of the garden's HTTP protocol (docs/runners/level2.md,
 * "The protocol"): one method per call, typed answers, and one error class
 * that names the call, the URL and the status. Uses Node's global fetch.
 */

/** The path every route lives under. */
export const API_PREFIX = '/api/v1';

/** Milliseconds one ordinary call may take before it is abandoned (network trouble is retried by the caller). */
export const CALL_TIMEOUT_MS = 30_000;

/**
 * A call that did not get the answer it wanted: `status` is the HTTP status,
 * or 0 when the server could not be reached at all. `field` and `error` are
 * the server's `{error, field}`; `size` is a log upload's `409 {size}`
 * (a finish's `409 {size}` names both streams: see `body`). The message is one line: `<call> (<METHOD> <url>): <what>`.
 */
export class RunnerApiError extends Error {
  readonly call: string;
  readonly status: number;
  readonly url: string;
  readonly field: string | undefined;
  readonly serverError: string | undefined;
  readonly size: number | undefined;
  /** The answer's parsed JSON body, when it had one. */
  readonly body: unknown;

  constructor(call: string, method: string, url: string, status: number, detail: { error?: string; field?: string; size?: number; body?: unknown; cause?: string }) {
    const what = status === 0 ? `unreachable (${detail.cause ?? 'no answer'})` : `${status}${detail.error ? `: ${detail.error}` : ''}${detail.field ? ` (field ${detail.field})` : ''}`;
    super(`${call} (${method} ${url}): ${what}`);
    this.name = 'RunnerApiError';
    this.call = call;
    this.status = status;
    this.url = url;
    this.field = detail.field;
    this.serverError = detail.error;
    this.size = detail.size;
    this.body = detail.body;
  }

  /** True when the server could not be reached (connection refused, DNS, timeout). */
  get unreachable(): boolean {
    return this.status === 0;
  }

  /** True for a 409 about the lease: it ended (`lease` or `/lease`), or another runner (`Pak2-Runner`) or another process of this runner's name (`Pak2-Runner-Instance`) holds it. */
  get leaseEnded(): boolean {
    return this.status === 409 && (this.field === 'lease' || this.field === '/lease' || this.field === 'Pak2-Runner' || this.field === 'Pak2-Runner-Instance');
  }
}

/** `GET /whoami`. Seconds for the TTL and heartbeat; `server_time` ISO 8601. */
export interface WhoamiAnswer {
  runner: { name: string; host: string };
  garden: string;
  /** The name and role of the token the runner calls with (absent from a server older than token roles). */
  token?: { name: string; role: string };
  lease_ttl_seconds: number;
  heartbeat_seconds: number;
  server_time: string;
}

/** The garden's `[coordinator]` limits a runner's agent runs under, seconds. */
export interface RunSettings {
  run_timeout_seconds: number;
  watchdog_seconds: number;
  tool_silence_seconds: number;
  result_grace_seconds: number;
  /** Absent from a garden older than this runner: its own default applies. */
  result_grace_cap_seconds?: number;
}

/** A plant document: a path relative to the plant directory (`memory/MEMORY.md`) and its text. */
export interface PlantDocument {
  path: string;
  content: string;
}

/**
 * What the agent needs that only the garden has (`tasks_claim`'s `context`).
 * `plant` is the plant record (a bare name is accepted too); `blocks` the
 * rendered tend, commission, supplements and comment-thread blocks.
 */
export interface ClaimContext {
  prompt?: string;
  motivation?: string | null;
  plant: { name: string; seed: string; status?: string; commissioned_at?: string; description?: string } | string;
  documents?: PlantDocument[];
  /** The plant's seed: `{name, content}` (content null when the garden has no such file), or its text alone. */
  seed?: { name: string; content: string | null } | string | null;
  blocks?: { tend?: string; commission?: string; supplements?: string; comments?: string } | null;
  comments?: CommentRecord[];
  /** A guarded or routed goal: the guard in force and this attempt's routing plan; the runner runs the guard in its checkout (docs/runners/level2.md, "Guarded and routed goals"). */
  guard?: GuardContext;
  settings: RunSettings;
}

/** `POST /tasks/claim` 200. */
export interface ClaimAnswer {
  lease: LeaseRecord;
  goal: GoalRecord;
  run: RunRecord;
  context: ClaimContext;
}

/** `GET /tasks/:goal`. */
export interface TaskAnswer {
  goal: GoalRecord;
  run: RunRecord | null;
  lease: LeaseRecord | null;
  comments: CommentRecord[];
}

/** `POST /runs/:id/heartbeat` 200: `stop` set when the operator stopped the run or cancelled the goal. */
export interface HeartbeatAnswer {
  lease: LeaseRecord;
  stop: { requeue: boolean } | null;
  answers: CommentRecord[];
}

/** The two streams a runner uploads. */
export type LogStream = 'events' | 'stderr';

/**
 * An acceptance item of `runs_finish`: what was checked, and what was
 * seen. A goal's acceptance criterion carries `criterion: true`, its
 * `result` (`verified`, `failed`, `unverified`) and its `verify` command.
 */
export interface AcceptanceItem {
  item: string;
  verified: boolean;
  evidence: string;
  criterion?: boolean;
  result?: 'verified' | 'failed' | 'unverified';
  verify?: string;
}

/** The body of `POST /runs/:id/finish` (docs/runners/level2.md, "runs_finish"). */
export interface FinishBody {
  lease: string;
  status: string;
  failure_reason: string | null;
  exit_code: number | null;
  cost: RunRecord['cost'];
  session_id: string | null;
  final_text: string | null;
  error: string | null;
  num_turns: number | null;
  reflection: string | null;
  stream_bytes: { events: number; stderr: number };
  acceptance: AcceptanceItem[];
  lingered: boolean;
  leftovers: string[];
  watchdog: RunRecord['watchdog'] | null;
  permission_denials: NonNullable<RunRecord['permission_denials']>;
  operator_stop: RunRecord['operator_stop'] | null;
  linger: RunRecord['linger'] | null;
  background_tasks: NonNullable<RunRecord['background_tasks']>;
  stop_reason: string | null;
  terminal_reason: string | null;
  /** A guarded run's records (execution_envelope.json, task_outcome.json, phase_events.jsonl, rejected.patch, prompt_bundle.md); absent for an unguarded run. */
  guard?: GuardRecordsWire;
}

/** One event of the garden's log (docs/server): `id` is a sortable ULID. */
export interface GardenEvent {
  id?: string;
  type: string;
  goal?: string;
  run?: string;
  to?: string;
  [key: string]: unknown;
}

/** Who the runner is: sent on every call as `Pak2-Runner`, `Pak2-Runner-Host` and (when set) `Pak2-Runner-Instance`. */
export interface RunnerIdentity {
  name: string;
  host: string;
  /** This runner process's instance id (kept in its state directory): leases it claims carry it. */
  instance?: string;
}

/** The API base for `--server URL`: the URL with `/api/v1` appended unless it ends with it; no trailing slash. */
export function apiBase(server: string): string {
  const trimmed = server.replace(/\/+$/, '');
  return trimmed.endsWith(API_PREFIX) ? trimmed : `${trimmed}${API_PREFIX}`;
}

/** The HTTP client of one runner. Every method throws {@link RunnerApiError} for anything but its expected answer. */
export class RunnerClient {
  readonly base: string;

  constructor(
    server: string,
    private readonly token: string,
    private readonly identity: RunnerIdentity,
    private readonly timeoutMs = CALL_TIMEOUT_MS,
  ) {
    this.base = apiBase(server);
  }

  private headers(body: boolean): Record<string, string> {
    return {
      authorization: `Bearer ${this.token}`,
      'pak2-runner': this.identity.name,
      'pak2-runner-host': this.identity.host,
      ...(this.identity.instance ? { 'pak2-runner-instance': this.identity.instance } : {}),
      accept: 'application/json',
      ...(body ? { 'content-type': 'application/json' } : {}),
    };
  }

  /** One call; resolves with the status and parsed body when the status is in `ok`. */
  private async call<T>(name: string, method: string, route: string, body: unknown, ok: number[]): Promise<{ status: number; body: T }> {
    const url = `${this.base}${route}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: this.headers(body !== undefined),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new RunnerApiError(name, method, url, 0, { cause: cause?.code ?? cause?.message ?? (error as Error).message });
    }
    const text = await response.text().catch(() => '');
    let parsed: unknown;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (ok.includes(response.status)) return { status: response.status, body: parsed as T };
    const detail = (parsed ?? {}) as { error?: unknown; field?: unknown; size?: unknown };
    throw new RunnerApiError(name, method, url, response.status, {
      ...(typeof detail.error === 'string' ? { error: detail.error } : text && !parsed ? { error: text.split('\n')[0]!.slice(0, 200) } : {}),
      ...(typeof detail.field === 'string' ? { field: detail.field } : {}),
      ...(typeof detail.size === 'number' ? { size: detail.size } : {}),
      body: parsed,
    });
  }

  /** `GET /whoami`: the server's view of this runner, the lease TTL (s) and its clock. */
  async whoami(): Promise<WhoamiAnswer> {
    return (await this.call<WhoamiAnswer>('whoami', 'GET', '/whoami', undefined, [200])).body;
  }

  /** `GET /leases?runner=NAME`: this runner's active leases. */
  async openLeases(): Promise<LeaseRecord[]> {
    return (await this.call<{ leases: LeaseRecord[] }>('open leases', 'GET', `/leases?runner=${encodeURIComponent(this.identity.name)}`, undefined, [200])).body.leases ?? [];
  }

  /** `GET /plants`: the garden's plants, each with its name and status (`active`, …). */
  async plants(): Promise<{ name: string; status?: string }[]> {
    return (await this.call<{ plants?: { name: string; status?: string }[] }>('plants', 'GET', '/plants', undefined, [200])).body.plants ?? [];
  }

  /** `POST /tasks/claim`: the claimed goal with its lease and context, or undefined for `204` (nothing to claim). */
  async claim(filter: { plants?: string[]; drivers?: string[]; guard?: boolean }): Promise<ClaimAnswer | undefined> {
    const body = { ...(filter.plants?.length ? { plants: filter.plants } : {}), ...(filter.drivers?.length ? { drivers: filter.drivers } : {}), ...(filter.guard ? { guard: true } : {}) };
    const answer = await this.call<ClaimAnswer>('tasks_claim', 'POST', '/tasks/claim', body, [200, 204]);
    return answer.status === 204 ? undefined : answer.body;
  }

  /** `GET /tasks/:goal`: the goal, its latest run, that run's lease and the thread. */
  async task(goal: string): Promise<TaskAnswer> {
    return (await this.call<TaskAnswer>('tasks_get', 'GET', `/tasks/${encodeURIComponent(goal)}`, undefined, [200])).body;
  }

  /** `GET /events?since=`: one page of events after the cursor; `next` the cursor to pass back, `more` when the page was cut. */
  async events(since: string | undefined, limit = 1000): Promise<{ events: GardenEvent[]; next: string | null; more: boolean }> {
    const query = new URLSearchParams({ limit: String(limit), ...(since ? { since } : {}) });
    return (await this.call<{ events: GardenEvent[]; next: string | null; more: boolean }>('events', 'GET', `/events?${query}`, undefined, [200])).body;
  }

  /** `POST /runs/:id/heartbeat`: renews the lease; `progress` 0–100, `status` one line (≤ 200 characters). */
  async heartbeat(run: string, body: { lease: string; progress?: number; status?: string }): Promise<HeartbeatAnswer> {
    const answer = (await this.call<HeartbeatAnswer>('runs_heartbeat', 'POST', `/runs/${encodeURIComponent(run)}/heartbeat`, body, [200])).body;
    return { lease: answer.lease, stop: answer.stop ?? null, answers: answer.answers ?? [] };
  }

  /**
   * `POST /runs/:id/log`: appends `data` (utf8, or base64 for the exact
   * bytes) at byte `offset` of the garden's copy of a stream; resolves with the garden's new size. A `409 {size}` (the
   * offset is not the garden's size) throws with `size` set.
   */
  async uploadLog(run: string, body: { lease: string; stream: LogStream; offset: number; data: string; encoding?: 'utf8' | 'base64' }): Promise<number> {
    return (await this.call<{ size: number }>('log upload', 'POST', `/runs/${encodeURIComponent(run)}/log`, body, [200])).body.size;
  }

  /** `POST /goals/:id/comments`: posts a comment (with `lease`, the author is `agent:<run>`). */
  async postComment(goal: string, body: { body: string; blocking?: boolean; answers?: string; lease?: string; author?: string }): Promise<{ comment: CommentRecord; goal: GoalRecord }> {
    return (await this.call<{ comment: CommentRecord; goal: GoalRecord }>('comments_post', 'POST', `/goals/${encodeURIComponent(goal)}/comments`, body, [200, 201])).body;
  }

  /** `GET /goals/:id/comments`: the thread and the ids of its open questions. */
  async comments(goal: string): Promise<{ comments: CommentRecord[]; open: string[] }> {
    const body = (await this.call<{ comments: CommentRecord[]; open: string[] }>('comments list', 'GET', `/goals/${encodeURIComponent(goal)}/comments`, undefined, [200])).body;
    return { comments: body.comments ?? [], open: body.open ?? [] };
  }

  /** `POST /runs/:id/artifacts`: attaches a diff, a link or a file. */
  async attachArtifact(run: string, body: { lease: string; name: string; kind: 'diff' | 'link' | 'file'; url?: string; content?: string; encoding?: 'utf8' | 'base64' }): Promise<unknown> {
    return (await this.call<{ artifact: unknown }>('artifacts_attach', 'POST', `/runs/${encodeURIComponent(run)}/artifacts`, body, [200, 201])).body.artifact;
  }

  /** `POST /runs/:id/finish`: closes the garden's run with the runner's facts. */
  async finish(run: string, body: FinishBody): Promise<{ run: RunRecord; goal: GoalRecord }> {
    return (await this.call<{ run: RunRecord; goal: GoalRecord }>('runs_finish', 'POST', `/runs/${encodeURIComponent(run)}/finish`, body, [200])).body;
  }

  /** `PUT /plants/:name/documents`: writes one plant document (with a lease, `run` names the lease's run). */
  async upsertDocument(plant: string, body: { lease?: string; run?: string; path: string; content: string }): Promise<{ path: string; bytes: number; sha256: string }> {
    return (await this.call<{ path: string; bytes: number; sha256: string }>('documents_upsert', 'PUT', `/plants/${encodeURIComponent(plant)}/documents`, body, [200, 201])).body;
  }

  /**
   * `GET /events/stream?since=`: calls `onEvent` for each event until `signal`
   * aborts or the stream ends. Resolves when it ends; throws
   * {@link RunnerApiError} when it cannot open.
   */
  async streamEvents(since: string | undefined, signal: AbortSignal, onEvent: (event: GardenEvent) => void): Promise<void> {
    const url = `${this.base}/events/stream${since ? `?since=${encodeURIComponent(since)}` : ''}`;
    let response: Response;
    try {
      response = await fetch(url, { headers: { ...this.headers(false), accept: 'text/event-stream' }, signal });
    } catch (error) {
      if (signal.aborted) return;
      throw new RunnerApiError('events_stream', 'GET', url, 0, { cause: (error as Error).message });
    }
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw new RunnerApiError('events_stream', 'GET', url, response.status, {});
    }
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          if (!data) continue;
          try {
            onEvent(JSON.parse(data) as GardenEvent);
          } catch {
            // not an event: skipped
          }
        }
      }
    } catch (error) {
      if (!signal.aborted) throw new RunnerApiError('events_stream', 'GET', url, 0, { cause: (error as Error).message });
    }
  }
}
