import { BudgetBook, capsFor, decideDispatch } from '../budget/index.js';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { monotonicFactory } from 'ulid';
import {
  ARTIFACT_KINDS,
  ARTIFACT_NAME_PATTERN,
  formatIssue,
  isTerminalRunStatus,
  REFLECTION_REQUIRED_TYPES,
  RUNNER_NAME_PATTERN,
  validateArtifact,
  validateRunClose,
  type ArtifactKind,
  type ArtifactRecord,
  type CommentRecord,
  type Cost,
  type FailureReason,
  type GoalRecord,
  type LeaseRecord,
  type PlantRecord,
  type RunRecord,
} from '../contracts/index.js';
import { resolveSettings, runDir, type Garden } from '../garden/index.js';
import {
  appendEvent,
  appendRunStream,
  appendArtifact,
  hasArtifact,
  writeArtifactContent,
  readArtifacts,
  closeRun,
  dispatchOrder,
  endLease,
  freezeDispatchPacket,
  latestRun,
  listActiveLeases,
  OpenGoalScanner,
  openRun,
  plantDir,
  readComments,
  readGoal,
  readLease,
  readPlant,
  readPlantDocuments,
  MAX_PLANT_DOCUMENT_BYTES,
  readRun,
  runIdsForGoal,
  renderSupplements,
  RUN_STREAM_FILES,
  runStreamSize,
  seedFile,
  StoreError,
  transitionGoal,
  transitionGoalLocked,
  withGoalLock,
  withLeaseLock,
  writeLease,
  leaseFile,
  type CloseRunInput,
  type RunStreamName,
  keepWrites,
  storeOf,
  tryGoalLock,
} from '../store/index.js';
import { buildPrompt, closeFromStream, completeReportedAcceptance, pluginDefaults } from '../driver/index.js';
import { renderCommentThread, renderCommissionContextOf, renderTendContext } from '../driver/context-blocks.js';
import { claimRoutePlan, guardContextOf, guardRecordsProblem, isGuarded, routedGoal, routingEventOf, writeGuardRecords, type GuardContext, type GuardRecordsWire } from '../guard/index.js';
import { settleGoals } from './settle.js';
import { gardenIsolation, materializeRemoteWork } from '../landing/index.js';
import { branchTip } from '../worktree/index.js';
import { decideReadiness, dependencyFacts } from './readiness.js';

/** Who calls: a runner's name and host as it says them (headers `Pak2-Runner`, `Pak2-Runner-Host`). */
export interface RunnerIdentity {
  name: string;
  host: string;
  /** The runner process's instance id (header `Pak2-Runner-Instance`): a lease claimed with one is refused to another instance of the same name, and to a call that names none. */
  instance?: string;
  /** The name and role of the server token the call came with (docs/server/level2.md, "Tokens and roles"): recorded on the events the call writes. */
  token?: { name: string; role: string };
}

/** The `token_name` / `token_role` fields of an event a caller's call writes (none for a call not made over HTTP). */
export function tokenFields(who: RunnerIdentity | undefined): { token_name?: string; token_role?: string } {
  return who?.token ? { token_name: who.token.name, token_role: who.token.role } : {};
}

/**
 * A refused runner call (docs/runners/level2.md): the HTTP status it maps
 * to, the field it names (a JSON pointer into the body, or a parameter),
 * and extra answer fields (`state` of an ended lease, `size` for an upload
 * at the wrong offset).
 */
export class RemoteRefusal extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 422,
    message: string,
    readonly field: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'RemoteRefusal';
  }
}

/** The next lease id: a ULID that sorts after every id this process made (the fencing token of a claim; docs/store/level2.md, "Claims and leases"). */
export const nextLeaseId = monotonicFactory();

/** The most decoded bytes one log upload may carry. */
export const MAX_LOG_CHUNK_BYTES = 1024 * 1024;
/** The most bytes one artifact's content may hold. */
export const MAX_ARTIFACT_BYTES = 10 * 1024 * 1024;
/** The most bytes one plant document may hold (the store's limit, which the claim also keeps to). */
export const MAX_DOCUMENT_BYTES = MAX_PLANT_DOCUMENT_BYTES;

/** How often a runner heartbeats at most: a third of the lease, seconds. */
export function heartbeatSeconds(ttlSeconds: number): number {
  return Math.max(1, Math.floor(ttlSeconds / 3));
}

/** Checks a runner identity: a name of RUNNER_NAME_PATTERN and a host. @throws RemoteRefusal 400 naming the header. */
export function checkRunner(runner: Partial<RunnerIdentity>): RunnerIdentity {
  if (!runner.name || !RUNNER_NAME_PATTERN.test(runner.name)) {
    throw new RemoteRefusal(400, `Pak2-Runner ${JSON.stringify(runner.name ?? '')}: a runner name is letters, digits, '.', '_' and '-' (at most 64), given in the Pak2-Runner header`, 'Pak2-Runner');
  }
  const host = (runner.host ?? '').trim();
  if (!host || host.length > 255 || /[\s]/.test(host)) throw new RemoteRefusal(400, `Pak2-Runner-Host ${JSON.stringify(runner.host ?? '')}: the runner's host name, without spaces`, 'Pak2-Runner-Host');
  return { name: runner.name, host };
}

/** What a runner gets with its lease: everything the agent needs that only the garden has. */
export interface ClaimContext {
  /** The prompt as the garden renders it (the runner renders its own from the same parts, with its own directories). */
  prompt: string;
  motivation: string | null;
  plant: PlantRecord;
  /** The plant's documents: the `.md` files under memory/, skills/ and knowledge/, paths relative to the plant directory. */
  documents: { path: string; content: string }[];
  seed: { name: string; content: string | null };
  blocks: { tend?: string; commission?: string; supplements?: string; comments?: string };
  comments: CommentRecord[];
  /** A guarded or routed goal's guard (the garden's decision) and this attempt's routing plan: the runner runs the guard in its checkout (docs/runners/level2.md, "Guarded and routed goals"). Absent for other goals. */
  guard?: GuardContext;
  settings: { run_timeout_seconds: number; watchdog_seconds: number; tool_silence_seconds: number; result_grace_seconds: number; result_grace_cap_seconds: number };
}

/** A claim: the lease, the records as written, the context. */
export interface Claim {
  lease: LeaseRecord;
  goal: GoalRecord;
  run: RunRecord;
  context: ClaimContext;
}

/**
 * queued → dispatched for a claimer holding the goal's lock: the goal as
 * dispatched, or undefined when another claimer (a runner, a coordinator)
 * took it first.
 *
 * @throws StoreError other than INVALID_TRANSITION.
 */
export async function dispatchIfQueued(paths: Garden['paths'], goalId: string, at: Date): Promise<GoalRecord | undefined> {
  try {
    return await transitionGoalLocked(paths, goalId, 'dispatched', { now: at });
  } catch (error) {
    if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') return undefined;
    throw error;
  }
}

/**
 * A new active lease `id` on `run`, held by `holder` for `ttlSeconds` from
 * `at` (docs/runners/level2.md, "Leases"): a runner's claim, or on a garden
 * in a store a coordinator's own run (docs/store/level2.md).
 */
export function newLease(id: string, run: RunRecord, holder: LeaseRecord['runner'], ttlSeconds: number, at: Date): LeaseRecord {
  return {
    id,
    run: run.id,
    goal: run.goal,
    plant: run.plant,
    runner: holder,
    state: 'active',
    ttl_seconds: ttlSeconds,
    claimed_at: at.toISOString(),
    renewed_at: at.toISOString(),
    expires_at: new Date(at.getTime() + ttlSeconds * 1000).toISOString(),
    heartbeats: 0,
  };
}

/** What a runner says it can do in its claim: `guard`, it runs a guarded or routed goal's guard in its checkout (seed 001). */
export interface RunnerCapabilities {
  guard?: boolean;
}

/**
 * True when a runner may take this goal (docs/runners/level2.md, "Who runs
 * what"): one assigned to a plant, never a conversation reply (`converse`,
 * a post-reply hop: its agent session lives on the garden's machine), and a
 * guarded or routed goal only when the runner runs the guard (`guard`).
 */
export function runnerMayTake(goal: GoalRecord, caps: RunnerCapabilities = {}): boolean {
  if (goal.type === 'converse' || goal.post_reply_hop || !goal.assigned_to) return false;
  return !isGuarded(goal) || Boolean(caps.guard);
}

/**
 * tasks_claim (seed 004, "The write-back contract" 1): takes the first
 * queued goal in dispatch order that the runner may run ({@link
 * runnerMayTake}; plant active and in `filter.plants` if given, driver —
 * a routed goal's tier's — in `filter.drivers` if given), then
 * queued → dispatched (under the goal's lock: of two racing claimers exactly
 * one wins), openRun with `runner`, dispatched → running, the lease file,
 * LeaseClaimed.
 *
 * @returns the claim, or undefined when nothing can be claimed.
 */
export async function claimTask(garden: Garden, who: RunnerIdentity, filter: { plants?: string[]; drivers?: string[] } & RunnerCapabilities = {}, now: () => Date = () => new Date(), env: NodeJS.ProcessEnv = process.env): Promise<Claim | undefined> {
  const { paths, config } = garden;
  const caps: RunnerCapabilities = { guard: Boolean(filter.guard) };
  const { goals } = await new OpenGoalScanner(paths).scan();
  const candidates = goals.filter((g) => g.status === 'queued' && runnerMayTake(g, caps) && (!filter.plants?.length || filter.plants.includes(g.assigned_to!))).sort(dispatchOrder);
  // A goal that waits for a dependency, or is blocked by one, is never claimed (docs/goal/level2.md, "Dependencies").
  const facts = candidates.some((g) => g.depends_on?.length) ? await dependencyFacts(paths, goals) : undefined;
  const plants = new Map<string, boolean>();
  for (const candidate of candidates) {
    const plantName = candidate.assigned_to!;
    if (!plants.has(plantName)) plants.set(plantName, await readPlant(paths, plantName).then((p) => p.status === 'active', () => false));
    if (!plants.get(plantName)) continue;
    let goal: GoalRecord;
    try {
      goal = await readGoal(paths, candidate.id);
    } catch {
      continue;
    }
    if (goal.status !== 'queued' || !runnerMayTake(goal, caps)) continue;
    // A cap with no room left holds the goal from runners as from the coordinator (docs/budget/level2.md).
    if (await budgetHolds(garden, goal, now())) continue;
    if (goal.depends_on?.length && decideReadiness(goal, facts ?? (await dependencyFacts(paths, [goal]))).state !== 'ready') continue;
    // A routed goal runs on its attempt's tier, as the coordinator's dispatch would (seed 001, routing).
    const plan = await claimRoutePlan(paths, config, goal);
    const settings = resolveSettings(routedGoal(goal, plan), config, env, (driver) => pluginDefaults(driver, config));
    if (filter.drivers?.length && !filter.drivers.includes(settings.driver)) continue;
    // In worktree mode a remote run's work lands as a local run's does: its diff.patch is applied on the base tip it starts from now.
    const isolation = await gardenIsolation(garden, env);
    const tip = isolation.mode === 'worktree' ? await branchTip(paths.gardenRoot, isolation.base!, env).catch(() => undefined) : undefined;
    const taken = await tryGoalLock(paths, goal.id, async () => {
      // The whole claim under the goal's lock: a coordinator's crash repair of a `dispatched` goal takes the same lock, so it never sees a claim half done.
      let current = await dispatchIfQueued(paths, goal.id, now());
      if (!current) return undefined;
      const leaseId = nextLeaseId(now().getTime());
      let run: RunRecord;
      try {
        run = await openRun(
          paths,
          current,
          {
            plant: plantName,
            driver: settings.driver,
            model: settings.model ?? 'unknown',
            ...(settings.reasoningEffort ? { reasoningEffort: settings.reasoningEffort } : {}),
            runner: { name: who.name, host: who.host, lease: leaseId },
            ...(tip ? { worktree: { base_branch: isolation.base!, base_commit: tip } } : {}),
          },
          now(),
        );
      } catch (error) {
        await transitionGoalLocked(paths, goal.id, 'queued', { now: now() });
        throw error;
      }
      const ttl = config.runners.leaseTtlSeconds;
      const lease = newLease(leaseId, run, { name: who.name, host: who.host, ...(who.instance ? { instance: who.instance } : {}) }, ttl, now());
      await writeLease(paths, lease);
      current = await transitionGoalLocked(paths, goal.id, 'running', { now: now() });
      // In the claim's transaction on a store: the claim and its event commit together.
      await appendEvent(paths, { type: 'LeaseClaimed', run: run.id, goal: current.id, plant: plantName, detail: `runner ${who.name}@${who.host} lease ${leaseId} ttl ${ttl} s`, ...tokenFields(who) }, now());
      return { goal: current, run, lease, ttl, leaseId };
    });
    // Another claimer holds it (SKIP LOCKED on a store): the next one.
    const claimed = taken?.value;
    if (!claimed) continue;
    const { run, lease } = claimed;
    goal = claimed.goal;
    const guard = guardContextOf(goal, config, plan);
    return { lease, goal, run, context: { ...(await claimContext(garden, goal, run, now())), ...(guard ? { guard } : {}) } };
  }
  return undefined;
}

function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

async function claimContext(garden: Garden, goal: GoalRecord, run: RunRecord, now: Date): Promise<ClaimContext> {
  const { paths, config } = garden;
  const plant = await readPlant(paths, run.plant);
  const blocks: ClaimContext['blocks'] = {};
  const tend = renderTendContext(goal, paths);
  if (tend) blocks.tend = tend;
  const commission = renderCommissionContextOf(goal);
  if (commission) blocks.commission = commission;
  // Frozen in the garden's run directory, as for a local run (docs/goal-supplement).
  const packet = await freezeDispatchPacket(paths, goal, run.id, now);
  const supplements = packet && renderSupplements(packet);
  if (supplements) blocks.supplements = supplements;
  const comments = await readComments(paths, goal.id);
  const thread = renderCommentThread(comments, goal.id);
  if (thread) blocks.comments = thread;
  const prompt = buildPrompt({ paths, goal, runId: run.id, plant, runDirectory: runDir(paths, run.id), workingDirectory: "(the runner's working directory)", extraBlocks: blocks });
  return {
    prompt,
    motivation: readText(paths.motivationFile),
    plant,
    documents: Object.entries(readPlantDocuments(plantDir(paths, plant.name))).map(([rel, content]) => ({ path: rel, content })),
    seed: { name: plant.seed, content: readText(seedFile(paths, plant.seed)) },
    blocks,
    comments,
    settings: {
      run_timeout_seconds: config.coordinator.runTimeoutSeconds,
      watchdog_seconds: config.coordinator.watchdogSeconds,
      tool_silence_seconds: config.coordinator.toolSilenceSeconds,
      result_grace_seconds: config.coordinator.resultGraceSeconds,
      result_grace_cap_seconds: config.coordinator.resultGraceCapSeconds,
    },
  };
}

/**
 * The active lease a call names, under the lease's lock (held by the
 * caller). A lease past `expires_at` is expired here and then (the reaper
 * may not have run yet). A lease that ended is refused: LeaseRefused is
 * recorded and nothing changes.
 *
 * @throws RemoteRefusal 404 (no such run, or a run with no lease), 409 (another lease, another runner, or an ended lease: `state`).
 */
async function activeLease(garden: Garden, runId: string, leaseId: string | undefined, who: RunnerIdentity, call: string, now: Date): Promise<LeaseRecord> {
  const { paths } = garden;
  let lease: LeaseRecord | undefined;
  try {
    lease = await readLease(paths, runId);
  } catch (error) {
    throw new RemoteRefusal(409, (error as Error).message, 'lease');
  }
  if (!lease) {
    await readRun(paths, runId).catch((error: unknown) => {
      if (error instanceof StoreError && error.code === 'RUN_NOT_FOUND') throw new RemoteRefusal(404, `run ${runId}: no such run`, 'id');
      throw error;
    });
    throw new RemoteRefusal(404, `run ${runId}: not a remote run (it has no lease)`, 'id');
  }
  if (!leaseId) throw new RemoteRefusal(400, 'lease: the lease id is required', '/lease');
  if (lease.id !== leaseId) {
    await refused(garden, lease, who, call, `names lease ${leaseId}, not the run's lease ${lease.id}`, now);
    throw keepWrites(new RemoteRefusal(409, `lease ${leaseId}: not the lease of run ${runId}`, '/lease', { state: lease.state }));
  }
  if (lease.runner.name !== who.name) {
    await refused(garden, lease, who, call, `the lease is held by ${lease.runner.name}@${lease.runner.host}`, now);
    throw keepWrites(new RemoteRefusal(409, `lease ${leaseId}: held by runner ${lease.runner.name}, not ${who.name}`, 'Pak2-Runner', { state: lease.state }));
  }
  // A lease claimed with an instance is that process's: a call naming another instance, or none, is refused (leaving the header out skips nothing).
  if (lease.runner.instance && who.instance !== lease.runner.instance) {
    const other = who.instance ? `not ${who.instance}` : 'the call names no instance';
    await refused(garden, lease, who, call, `the lease is held by another instance of ${lease.runner.name} (${lease.runner.instance}, ${other})`, now);
    throw keepWrites(new RemoteRefusal(409, `lease ${leaseId}: held by another process of runner ${lease.runner.name} (instance ${lease.runner.instance}, ${other}; send Pak2-Runner-Instance)`, 'Pak2-Runner-Instance', { state: lease.state }));
  }
  if (lease.state === 'active' && Date.parse(lease.expires_at) <= now.getTime()) {
    lease = await expireLeaseLocked(garden, lease, now);
    // As the reaper does: the goal goes back to the queue now, not whenever a coordinator pass next runs (there may be none).
    await settleOne(garden, lease.goal, () => now);
  }
  if (lease.state !== 'active') {
    await refused(garden, lease, who, call, `the lease ${lease.state === 'expired' ? `expired at ${lease.expires_at}` : 'finished'}`, now);
    throw keepWrites(new RemoteRefusal(409, `lease ${leaseId}: the lease of run ${runId} ${lease.state === 'expired' ? `expired at ${lease.expires_at} (the run is abandoned)` : 'is finished'}; nothing was changed`, '/lease', { state: lease.state }));
  }
  return lease;
}

/**
 * The active lease a comment names (`comments_post` with `lease`): found
 * among the goal's runs, then checked as every runner call is (under the
 * lease's lock: an ended or foreign lease is refused and LeaseRefused
 * written; one past its TTL is expired first). Without runner headers the
 * caller is taken as the lease's holder: the lease id is the capability.
 *
 * @throws RemoteRefusal 409 `/lease` when no run of the goal has that lease, and activeLease's refusals.
 */
export async function commentLease(garden: Garden, goalId: string, leaseId: string, who: RunnerIdentity | undefined, now: () => Date = () => new Date()): Promise<LeaseRecord> {
  const { paths } = garden;
  for (const runId of (await runIdsForGoal(paths, goalId)).reverse()) {
    const found = await readLease(paths, runId).catch(() => undefined);
    if (found?.id !== leaseId) continue;
    return withLeaseLock(paths, runId, () => activeLease(garden, runId, leaseId, who ?? found.runner, 'comments_post', now()));
  }
  throw new RemoteRefusal(409, `lease ${leaseId}: not a lease of goal ${goalId}`, '/lease');
}

async function refused(garden: Garden, lease: LeaseRecord, who: RunnerIdentity, call: string, why: string, now: Date): Promise<void> {
  await appendEvent(garden.paths, { type: 'LeaseRefused', run: lease.run, goal: lease.goal, plant: lease.plant, detail: `${call} from ${who.name}@${who.host} refused: ${why}`, ...tokenFields(who) }, now);
}

/** What a heartbeat answers. */
export interface HeartbeatAnswer {
  lease: LeaseRecord;
  /** Set when the operator cancelled the goal or stopped the run: stop the agent and finish with what was observed. */
  stop: { requeue: boolean } | null;
  /** Answers to this goal's questions posted since the lease was claimed. */
  answers: CommentRecord[];
}

/**
 * runs_heartbeat (seed 004, 2): renews the lease (`expires_at = now + ttl`
 * on the garden's clock), keeps `progress` (0–100) and `status` (one line,
 * cut at 200 characters).
 *
 * @throws RemoteRefusal 400 (progress out of range, a status with a line
 *   break), 404, 409 (see activeLease).
 */
export async function heartbeat(garden: Garden, runId: string, input: { lease?: string; progress?: number; status?: string }, who: RunnerIdentity, now: () => Date = () => new Date()): Promise<HeartbeatAnswer> {
  if (input.progress !== undefined && (typeof input.progress !== 'number' || !Number.isFinite(input.progress) || input.progress < 0 || input.progress > 100)) {
    throw new RemoteRefusal(400, `progress ${JSON.stringify(input.progress)}: a percentage from 0 to 100`, '/progress');
  }
  if (input.status !== undefined && /[\r\n]/.test(input.status)) throw new RemoteRefusal(400, 'status: one line (no line breaks)', '/status');
  return withLeaseLock(garden.paths, runId, async () => {
    const at = now();
    const lease = await activeLease(garden, runId, input.lease, who, 'heartbeat', at);
    const renewed: LeaseRecord = {
      ...lease,
      // The holder stays as claimed: a caller's headers never rewrite it.
      runner: lease.runner,
      renewed_at: at.toISOString(),
      expires_at: new Date(at.getTime() + lease.ttl_seconds * 1000).toISOString(),
      heartbeats: lease.heartbeats + 1,
      ...(input.progress !== undefined ? { progress: input.progress } : {}),
      ...(input.status !== undefined ? { status_line: input.status.slice(0, 200) } : {}),
    };
    await writeLease(garden.paths, renewed);
    const comments = await readComments(garden.paths, lease.goal);
    const answers = comments.filter((c) => c.answers && c.created_at >= lease.claimed_at);
    return { lease: renewed, stop: lease.stop ? { requeue: lease.stop.requeue } : null, answers };
  });
}

/** The open leases, all or one runner's (seed 004, "Catch-up": whoami → open leases). */
export async function openLeases(garden: Garden, runnerName?: string): Promise<LeaseRecord[]> {
  const { leases } = await listActiveLeases(garden.paths);
  return runnerName ? leases.filter((l) => l.runner.name === runnerName) : leases;
}

/**
 * Log upload: appends `data` to the garden's copy of the run's
 * `events.jsonl` or `stderr.log` (the run directory's file, or the store's
 * copy on a garden with one: any server of the garden continues where
 * another left off) when `offset` (bytes) is the garden's size, so uploads
 * are idempotent and never reorder.
 *
 * @returns the stream's size after the append, bytes.
 * @throws RemoteRefusal 400 (bad stream, encoding or size), 409 `{size}` at another offset, and activeLease's.
 */
export async function appendRunLog(garden: Garden, runId: string, input: { lease?: string; stream?: string; offset?: number; data?: string; encoding?: string }, who: RunnerIdentity, now: () => Date = () => new Date()): Promise<{ size: number }> {
  if (input.stream !== 'events' && input.stream !== 'stderr') throw new RemoteRefusal(400, `stream ${JSON.stringify(input.stream)}: events or stderr`, '/stream');
  if (!Number.isInteger(input.offset) || input.offset! < 0) throw new RemoteRefusal(400, 'offset: a whole number of bytes', '/offset');
  const bytes = decode(input.data, input.encoding, '/data');
  if (bytes.length > MAX_LOG_CHUNK_BYTES) throw new RemoteRefusal(400, `data: ${bytes.length} bytes; at most ${MAX_LOG_CHUNK_BYTES} per call`, '/data');
  return withLeaseLock(garden.paths, runId, async () => {
    await activeLease(garden, runId, input.lease, who, 'log upload', now());
    const stream = input.stream as RunStreamName;
    const { appended, size } = await appendRunStream(garden.paths, runId, stream, input.offset!, bytes);
    if (!appended) throw new RemoteRefusal(409, `offset ${input.offset}: the garden holds ${size} bytes of ${RUN_STREAM_FILES[stream]}; upload from there`, '/offset', { size });
    return { size };
  });
}

function decode(data: string | undefined, encoding: string | undefined, field: string): Buffer {
  if (typeof data !== 'string') throw new RemoteRefusal(400, `${field.slice(1)}: required, a string`, field);
  if (encoding === undefined || encoding === 'utf8') return Buffer.from(data, 'utf8');
  if (encoding === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw new RemoteRefusal(400, `${field.slice(1)}: not base64`, field);
    return Buffer.from(data, 'base64');
  }
  throw new RemoteRefusal(400, `encoding ${JSON.stringify(encoding)}: utf8 or base64`, '/encoding');
}

/**
 * artifacts_attach (seed 004, 4): a `diff` or `file` is written to
 * `runs/<run-id>/artifacts/<name>`; a `link` keeps its http(s) `url`.
 * One name once per run. ArtifactAttached.
 *
 * @throws RemoteRefusal 400 (name, kind, url, content, size), 409 (the name is taken) and activeLease's.
 */
export async function attachArtifact(
  garden: Garden,
  runId: string,
  input: { lease?: string; name?: string; kind?: string; url?: string; content?: string; encoding?: string },
  who: RunnerIdentity,
  now: () => Date = () => new Date(),
): Promise<ArtifactRecord> {
  if (!input.name || !ARTIFACT_NAME_PATTERN.test(input.name)) throw new RemoteRefusal(400, `name ${JSON.stringify(input.name ?? '')}: one file name (letters, digits, '.', '_', '-'; no leading dot; at most 128)`, '/name');
  if (!(ARTIFACT_KINDS as readonly string[]).includes(input.kind ?? '')) throw new RemoteRefusal(400, `kind ${JSON.stringify(input.kind ?? '')}: ${ARTIFACT_KINDS.join(', ')}`, '/kind');
  const kind = input.kind as ArtifactKind;
  let bytes: Buffer | undefined;
  if (kind === 'link') {
    if (!input.url || !/^https?:\/\/\S+$/.test(input.url)) throw new RemoteRefusal(400, `url ${JSON.stringify(input.url ?? '')}: a link is an http(s) URL`, '/url');
  } else {
    bytes = decode(input.content, input.encoding, '/content');
    if (bytes.length > MAX_ARTIFACT_BYTES) throw new RemoteRefusal(400, `content: ${bytes.length} bytes; at most ${MAX_ARTIFACT_BYTES}`, '/content');
  }
  return withLeaseLock(garden.paths, runId, async () => {
    const lease = await activeLease(garden, runId, input.lease, who, 'artifact', now());
    if (await hasArtifact(garden.paths, runId, input.name!)) throw new RemoteRefusal(409, `name ${input.name}: an artifact of that name is already attached to run ${runId}`, '/name');
    const record: ArtifactRecord = {
      name: input.name!,
      kind,
      run: runId,
      ...(kind === 'link' ? { url: input.url! } : { bytes: bytes!.length, sha256: crypto.createHash('sha256').update(bytes!).digest('hex') }),
      attached_at: now().toISOString(),
      by: `runner:${who.name}`,
    };
    const issues = validateArtifact(record);
    if (issues.length > 0) throw new RemoteRefusal(400, `artifact: ${formatIssue(issues[0]!)}`, `/${issues[0]!.field ?? 'name'}`);
    if (bytes) await writeArtifactContent(garden.paths, runId, input.name!, bytes);
    await appendArtifact(garden.paths, record);
    await appendEvent(garden.paths, { type: 'ArtifactAttached', run: runId, goal: lease.goal, plant: lease.plant, detail: `${kind} ${input.name}${record.url ? ` ${record.url}` : ` (${record.bytes} bytes)`}`, ...tokenFields(who) }, now());
    return record;
  });
}

/** A run's attached artifacts, in the order attached (source/store/artifacts.ts). */
export async function listArtifacts(garden: Garden, runId: string): Promise<ArtifactRecord[]> {
  return readArtifacts(garden.paths, runId);
}

/** The terminal statuses a runner may report (never `abandoned`: only the garden decides that). */
export const RUNNER_STATUSES = ['success', 'failure', 'killed', 'timeout', 'zero_output'] as const;

/** runs_finish's body (docs/runners/level2.md, "runs_finish"). */
export interface FinishInput {
  lease?: string;
  status?: string;
  failure_reason?: string | null;
  exit_code?: number | null;
  cost?: Cost;
  session_id?: string | null;
  final_text?: string | null;
  error?: string | null;
  num_turns?: number | null;
  reflection?: string | null;
  stream_bytes?: { events?: number; stderr?: number };
  acceptance?: { item: string; verified: boolean; evidence?: string; criterion?: boolean; result?: 'verified' | 'failed' | 'unverified'; verify?: string }[];
  lingered?: boolean | null;
  leftovers?: string[] | null;
  watchdog?: RunRecord['watchdog'] | null;
  permission_denials?: RunRecord['permission_denials'] | null;
  operator_stop?: { requeue: boolean } | null;
  linger?: RunRecord['linger'] | null;
  background_tasks?: RunRecord['background_tasks'] | null;
  stop_reason?: string | null;
  terminal_reason?: string | null;
  /** A guarded run's records, from the guard the runner ran (docs/runners/level2.md, "Guarded and routed goals"). */
  guard?: GuardRecordsWire | null;
}

/**
 * What is wrong with a finish's guard records for `goal`, first found
 * (status, field, one line): records for a goal that is not guarded (400),
 * a success of a guarded goal without them (the runner ran no guard: 422),
 * records that do not validate or name another run (422), an outcome that
 * kept the work under a status that is not success or rejected it under
 * success (422).
 */
function guardProblem(goal: GoalRecord, runId: string, input: FinishInput): { status: 400 | 422; field: string; message: string } | undefined {
  const records = input.guard ?? undefined;
  if (!isGuarded(goal)) return records ? { status: 400, field: '/guard', message: `guard: goal ${goal.id} is not guarded; a finish of its run carries no guard records` } : undefined;
  if (!records) return input.status === 'success' ? { status: 422, field: '/guard', message: `status success without guard records: goal ${goal.id} is guarded, and only its guard's verdict can keep the work (a runner that runs no guard cannot finish it as success)` } : undefined;
  const wrong = guardRecordsProblem(runId, records);
  if (wrong) return { status: 422, ...wrong };
  const state = (records.outcome as { state: string }).state;
  if (input.status === 'success' && state !== 'ready') return { status: 422, field: '/guard/outcome/state', message: `status success while the guard's outcome is ${state}: the guard did not keep the work` };
  return undefined;
}

/** The outcome's contradictions with the runner's own facts, first one found (docs/runners/level2.md, "runs_finish"). */
function contradiction(input: FinishInput, goalType: string): { message: string; field: string } | undefined {
  if (input.status === 'success') {
    // A lingering agent (its result reported, then ended by pak2 after the grace) may exit non-zero on the signal; its result stands, as locally.
    if (typeof input.exit_code === 'number' && input.exit_code !== 0 && !input.lingered) return { message: `status success with exit_code ${input.exit_code}: the agent's process failed; report the failure`, field: '/exit_code' };
    if (input.failure_reason) return { message: `status success with failure_reason ${input.failure_reason}`, field: '/failure_reason' };
    // The runner's own checks of the agent's exit and result; a goal's criterion is the task's, not the process's, whatever its words.
    const failedCheck = (input.acceptance ?? []).find((a) => !a.criterion && !a.verified && /\b(exit|exited|result)\b/i.test(a.item));
    if (failedCheck) return { message: `status success while the runner's own check "${failedCheck.item}" is not verified`, field: '/acceptance' };
    if ((REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goalType) && !input.reflection?.trim()) return { message: `status success without a reflection: a ${goalType} run must reflect (MISSING_REFLECTION)`, field: '/reflection' };
  } else if (!input.failure_reason) return { message: `status ${input.status} without a failure_reason`, field: '/failure_reason' };
  // A checkbox ticked with nothing to show for it is the green lie seed 004 forbids.
  const unproven = (input.acceptance ?? []).find((a) => a.criterion && a.verified && !a.evidence?.trim());
  if (unproven) return { message: `acceptance criterion "${unproven.item}" reported verified without evidence`, field: '/acceptance' };
  return undefined;
}

/**
 * runs_finish (seed 004, 5): closes the garden's run with the runner's
 * observed facts (RunClosed by `runner`), ends the lease `finished`, and
 * settles the goal as the coordinator would (a blocked goal stays blocked).
 *
 * @throws RemoteRefusal 400 (a status that is not a runner's terminal one,
 *   failure_reason lease_expired, malformed fields), 422 (a contradiction:
 *   success with a non-zero exit code, a failed status without a reason,
 *   a missing reflection, or the record would not validate), 409 `{size}`
 *   when `stream_bytes` exceeds what the garden holds, and activeLease's.
 *   A retry of a finish the garden was killed in (the run closed, its lease
 *   still active) completes it: the recorded run is kept, the lease ends and
 *   the goal settles (200); one that names another status than the record's
 *   is 409 `/status`, nothing changed.
 */
export async function finishRemoteRun(garden: Garden, runId: string, input: FinishInput, who: RunnerIdentity, now: () => Date = () => new Date()): Promise<{ run: RunRecord; goal: GoalRecord }> {
  const { paths } = garden;
  if (!(RUNNER_STATUSES as readonly string[]).includes(input.status ?? '')) {
    throw new RemoteRefusal(400, `status ${JSON.stringify(input.status ?? '')}: a runner reports ${RUNNER_STATUSES.join(', ')} (abandoned is the garden's to decide)`, '/status');
  }
  if (input.failure_reason === 'lease_expired') throw new RemoteRefusal(400, 'failure_reason lease_expired: only the garden decides a lease expired', '/failure_reason');
  if (!input.cost || typeof input.cost !== 'object') throw new RemoteRefusal(400, 'cost: required ({source: provider|estimated|unknown, usd?, …})', '/cost');
  if (input.exit_code !== undefined && input.exit_code !== null && !Number.isInteger(input.exit_code)) throw new RemoteRefusal(400, 'exit_code: a whole number or null', '/exit_code');
  const closed = await withLeaseLock(paths, runId, async () => {
    const at = now();
    const lease = await activeLease(garden, runId, input.lease, who, 'finish', at);
    const goal = await readGoal(paths, lease.goal);
    // A finish killed after its close, before its lease ended (the garden crashed mid-finish): the retry completes it, never closes twice.
    const recorded = await readRun(paths, runId);
    if (isTerminalRunStatus(recorded.status)) {
      if (recorded.status !== input.status) throw new RemoteRefusal(409, `run ${runId} is already closed ${recorded.status}${recorded.failure_reason ? ` (${recorded.failure_reason})` : ''}; a closed run record is never rewritten, nothing was changed`, '/status', { state: lease.state });
      await takeInRemoteWork(garden, recorded, now);
      await endLease(paths, lease, 'finished', at);
      return recorded;
    }
    const wrong = contradiction(input, goal.type);
    if (wrong) throw new RemoteRefusal(422, wrong.message, wrong.field);
    const guardWrong = guardProblem(goal, runId, input);
    if (guardWrong) throw new RemoteRefusal(guardWrong.status, guardWrong.message, guardWrong.field);
    const extra: CloseRunInput['extra'] = {
      ...(input.lingered ? { lingered: true } : {}),
      ...(input.leftovers?.length ? { leftovers: input.leftovers } : {}),
      ...(input.watchdog ? { watchdog: input.watchdog } : {}),
      ...(input.permission_denials?.length ? { permission_denials: input.permission_denials } : {}),
      ...(input.operator_stop ? { operator_stop: { requeue: Boolean(input.operator_stop.requeue) } } : {}),
      ...(input.acceptance || goal.acceptance_criteria?.length ? { acceptance: completeReportedAcceptance(goal.acceptance_criteria, input.acceptance ?? []) } : {}),
      ...(input.linger ? { linger: input.linger } : {}),
      ...(input.background_tasks?.length ? { background_tasks: input.background_tasks } : {}),
      ...(typeof input.stop_reason === 'string' ? { stop_reason: input.stop_reason } : {}),
      ...(typeof input.terminal_reason === 'string' ? { terminal_reason: input.terminal_reason } : {}),
    };
    const held = { events: await runStreamSize(paths, runId, 'events'), stderr: await runStreamSize(paths, runId, 'stderr') };
    const claimed = { events: input.stream_bytes?.events ?? 0, stderr: input.stream_bytes?.stderr ?? 0 };
    if (claimed.events > held.events || claimed.stderr > held.stderr) {
      throw new RemoteRefusal(409, `stream_bytes: the runner has ${claimed.events} bytes of events.jsonl and ${claimed.stderr} of stderr.log, the garden ${held.events} and ${held.stderr}; upload the rest first`, '/stream_bytes', { size: held });
    }
    // A record that would not validate is refused before anything is written (the reflection events included).
    const current = await readRun(paths, runId);
    const invalid = validateRunClose(
      {
        ...current,
        status: input.status,
        completed_at: at.toISOString(),
        cost: input.cost,
        ...(input.failure_reason ? { failure_reason: input.failure_reason } : {}),
        ...(input.reflection ? { reflection: input.reflection } : {}),
        ...(input.exit_code !== undefined ? { exit_code: input.exit_code } : {}),
        ...extra,
      },
      goal.type,
    )[0];
    if (invalid) throw new RemoteRefusal(422, formatIssue(invalid), `/${invalid.field.split('.')[0] || 'status'}`);
    if (input.guard) await takeInGuardRecords(garden, runId, goal, lease, input.guard, who, at);
    if (input.status === 'success' && input.reflection?.trim()) {
      // The runner's driver asked for it and got it on its machine; the garden's log says so at the finish, in the local order.
      await appendEvent(paths, { type: 'ReflectionRequested', run: runId, goal: goal.id, plant: lease.plant, detail: `on runner ${who.name}@${who.host}` }, at);
      await appendEvent(paths, { type: 'ReflectionRecorded', run: runId, goal: goal.id, plant: lease.plant }, at);
    }
    let run: RunRecord;
    try {
      run = await closeRun(
        paths,
        runId,
        goal.type,
        {
          status: input.status as (typeof RUNNER_STATUSES)[number],
          cost: input.cost!,
          ...(input.failure_reason ? { failureReason: input.failure_reason as FailureReason } : {}),
          ...(input.reflection ? { reflection: input.reflection } : {}),
          ...(typeof input.final_text === 'string' ? { finalText: input.final_text } : {}),
          ...(typeof input.error === 'string' ? { errorText: input.error } : {}),
          ...(typeof input.num_turns === 'number' ? { numTurns: input.num_turns } : {}),
          ...(input.session_id ? { sessionId: input.session_id } : {}),
          ...(input.exit_code !== undefined ? { exitCode: input.exit_code } : {}),
          by: 'runner',
          extra,
        },
        at,
      );
    } catch (error) {
      if (error instanceof StoreError && error.code === 'INVALID_RECORD') throw new RemoteRefusal(422, error.message.replace(/^run \S+: /, ''), `/${/^run \S+: (\w+)/.exec(error.message)?.[1] ?? 'status'}`);
      throw error;
    }
    // Taken in before the lease ends, under its lock: a settle elsewhere (the lease reaper, a coordinator's pass) waits for it, and never lands an empty worktree.
    await takeInRemoteWork(garden, run, now);
    await endLease(paths, lease, 'finished', at);
    return run;
  });
  const goal = await settleOne(garden, closed.goal, now);
  return { run: closed, goal };
}

/**
 * A remote guarded run's records into the garden's run directory (seed
 * 001's files, where the local guard writes them: routing, `pak2 trace` and
 * the workbench read them there), with the events the guard writes locally:
 * RunRolledBack when the runner's guard reverted the work, and the routing
 * step (RoutingStopped / RoutingEscalated) of a routed goal's attempt.
 */
async function takeInGuardRecords(garden: Garden, runId: string, goal: GoalRecord, lease: LeaseRecord, records: GuardRecordsWire, who: RunnerIdentity, at: Date): Promise<void> {
  await writeGuardRecords(garden.paths, runId, records);
  const outcome = records.outcome as { diagnostic_code: string; rollback_performed: boolean; attempted_mutations: string[]; mutated_files: string[] };
  const base = { run: runId, goal: goal.id, plant: lease.plant, ...tokenFields(who) };
  if (outcome.rollback_performed) {
    const left = outcome.mutated_files.length;
    await appendEvent(garden.paths, { type: 'RunRolledBack', ...base, detail: `${outcome.diagnostic_code}: ${outcome.attempted_mutations.length} path(s) reverted on runner ${who.name}@${who.host}${left ? `, ${left} still changed` : ''}; rejected.patch` }, at);
  }
  const routing = (records.envelope as { routing?: Parameters<typeof routingEventOf>[0] }).routing;
  if (routing) {
    const event = routingEventOf(routing, outcome.diagnostic_code);
    await appendEvent(garden.paths, { type: event.type, ...base, detail: event.detail }, at);
  }
}

/** A closed remote run's work joins the merge queue as a local run's does (docs/landing/level2.md, "Remote runners"); a failure to take it in is a LandingFailed event. */
async function takeInRemoteWork(garden: Garden, run: RunRecord, now: () => Date): Promise<void> {
  if (!run.worktree || run.status !== 'success') return;
  await materializeRemoteWork(garden, run, process.env, now).catch((error: Error) => appendEvent(garden.paths, { type: 'LandingFailed', run: run.id, goal: run.goal, plant: run.plant, detail: `landing_error: the runner's diff.patch could not be taken in: ${error.message}` }, now()));
}

/** Settles one goal after its remote run closed, as the coordinator's pass would; a racing settle elsewhere wins quietly. */
async function settleOne(garden: Garden, goalId: string, now: () => Date): Promise<GoalRecord> {
  const { paths } = garden;
  const goal = await readGoal(paths, goalId);
  try {
    await settleGoals(paths, [goal], (g) => latestRun(paths, g.id), now, { garden, env: process.env });
  } catch (error) {
    if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) throw error;
  }
  return readGoal(paths, goalId);
}

/** Expires one lease (held under its lock): the run closes `abandoned`, the lease ends, LeaseExpired. */
async function expireLeaseLocked(garden: Garden, lease: LeaseRecord, now: Date): Promise<LeaseRecord> {
  const { paths } = garden;
  const silent = Math.round((now.getTime() - Date.parse(lease.renewed_at)) / 100) / 10;
  await appendEvent(paths, { type: 'LeaseExpired', run: lease.run, goal: lease.goal, plant: lease.plant, detail: `runner ${lease.runner.name}@${lease.runner.host} sent no heartbeat for ${silent} s (lease ttl ${lease.ttl_seconds} s)` }, now);
  const ended = await endLease(paths, lease, 'expired', now);
  const run = await readRun(paths, lease.run).catch(() => undefined);
  if (run && !isTerminalRunStatus(run.status)) {
    const goal = await readGoal(paths, lease.goal);
    // The stream uploaded so far keeps its facts (cost, session id).
    await closeFromStream(
      garden,
      run,
      goal.type,
      {
        status: 'abandoned',
        failureReason: 'lease_expired',
        errorText: `abandoned: runner ${lease.runner.name}@${lease.runner.host} sent no heartbeat for ${silent} s (lease ttl ${lease.ttl_seconds} s); assumed dead, not done${lease.stop ? `; the operator had asked it to stop${lease.stop.requeue ? ' and requeue' : ''}` : ''}`,
        by: 'lease',
        // The operator's stop stands though the runner never answered it: a cancelled goal stays cancelled.
        ...(lease.stop ? { extra: { operator_stop: { requeue: lease.stop.requeue } } } : {}),
      },
      now,
    );
  }
  return ended;
}

/**
 * Expires every active lease past `expires_at` (the server's timer and each
 * coordinator pass call this): the run closes `abandoned` /
 * `lease_expired`, LeaseExpired, the lease moves to `leases/ended/`, and
 * the goal goes back to `queued` (settleGoals; a blocked goal stays blocked
 * and its answer requeues it).
 *
 * @returns the run ids abandoned.
 */
export async function expireLeases(garden: Garden, now: () => Date = () => new Date()): Promise<string[]> {
  const { paths } = garden;
  const { leases } = await listActiveLeases(paths);
  const expired: string[] = [];
  for (const candidate of leases) {
    if (Date.parse(candidate.expires_at) > now().getTime()) continue;
    const done = await withLeaseLock(paths, candidate.run, async () => {
      const lease = await readLease(paths, candidate.run);
      if (!lease || lease.state !== 'active' || Date.parse(lease.expires_at) > now().getTime()) return false;
      const run = await readRun(paths, lease.run).catch(() => undefined);
      await expireLeaseLocked(garden, lease, now());
      // Counted only when this closed the run (a run already closed is not abandoned now).
      return Boolean(run && !isTerminalRunStatus(run.status));
    });
    if (!done) continue;
    expired.push(candidate.run);
    await settleOne(garden, candidate.goal, now);
  }
  return expired;
}

/**
 * Closes a remote run whose lease file is gone (a crash between `openRun`
 * and the lease's write, or a lease file removed by hand): nothing can renew
 * it, so once `[runners] lease_ttl_seconds` has passed since the run started
 * it is `abandoned` / `lease_expired` like any expired lease, and its goal
 * goes back to the queue. An expiry interrupted after the lease ended but
 * before the run closed is finished too. A run with an active lease is the
 * reaper's ({@link expireLeases}), never touched here.
 *
 * @returns true when it closed the run.
 */
export async function abandonLeaselessRun(garden: Garden, run: RunRecord, now: () => Date = () => new Date()): Promise<boolean> {
  const { paths } = garden;
  if (!run.runner || isTerminalRunStatus(run.status)) return false;
  const ttl = garden.config.runners.leaseTtlSeconds;
  const closed = await withLeaseLock(paths, run.id, async () => {
    const lease = await readLease(paths, run.id).catch(() => 'damaged' as const);
    // An expiry interrupted between ending the lease and closing the run is finished now; an active (or damaged) lease is the reaper's.
    const interrupted = lease !== 'damaged' && lease?.state === 'expired';
    if (lease && !interrupted) return false;
    if (!interrupted && Date.parse(run.started_at) + ttl * 1000 > now().getTime()) return false;
    const current = await readRun(paths, run.id);
    if (isTerminalRunStatus(current.status)) return false;
    const goal = await readGoal(paths, run.goal);
    const message = interrupted
      ? `abandoned: runner ${run.runner!.name}@${run.runner!.host}'s lease ${run.runner!.lease} expired (its close was interrupted and is finished now)`
      : `abandoned: run of runner ${run.runner!.name}@${run.runner!.host} has no lease file (lease ${run.runner!.lease} never written or removed); nothing renewed it for ${ttl} s`;
    if (!interrupted) await appendEvent(paths, { type: 'LeaseExpired', run: run.id, goal: run.goal, plant: run.plant, detail: message }, now());
    await closeFromStream(garden, current, goal.type, { status: 'abandoned', failureReason: 'lease_expired', errorText: message, by: 'lease' }, now());
    return true;
  });
  if (closed) await settleOne(garden, run.goal, now);
  return closed;
}

/** Whether a run has an active lease (the file store: its active lease file); a damaged one counts as there (it is the reaper's to report, not to replace). */
export async function hasActiveLease(paths: Garden['paths'], runId: string): Promise<boolean> {
  if (!storeOf(paths)) return fs.existsSync(leaseFile(paths, runId));
  const lease = await readLease(paths, runId).catch(() => 'damaged' as const);
  return lease === 'damaged' || lease?.state === 'active';
}

/**
 * What the server's lease reaper does every few seconds, so a garden served
 * with no coordinator (`pak2 serve` alone) still keeps its remote runs
 * true: {@link expireLeases}; a remote run whose lease file is missing is
 * abandoned after its TTL ({@link abandonLeaselessRun}); a goal whose
 * remote run closed but was never settled (the finish's process died in
 * between) is settled. `scanner` is kept across calls for warm scans.
 *
 * @returns the run ids abandoned and the goal ids settled.
 */
export async function superviseRemoteRuns(garden: Garden, scanner: OpenGoalScanner, now: () => Date = () => new Date()): Promise<{ abandoned: string[]; settled: string[] }> {
  const { paths } = garden;
  const abandoned = await expireLeases(garden, now);
  const settled: string[] = [];
  const { goals } = await scanner.scan();
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'blocked') continue;
    const run = await latestRun(paths, goal.id).catch(() => undefined);
    if (!run?.runner) continue;
    if (!isTerminalRunStatus(run.status)) {
      if (!(await hasActiveLease(paths, run.id)) && (await abandonLeaselessRun(garden, run, now))) abandoned.push(run.id);
    } else if (goal.status === 'running') {
      // The finish closed the run but died before ending the lease and settling: both are done now, its work taken in first.
      // Under the lease's lock: a finish still in progress is waited for, so its work is in the worktree before anything settles.
      const after = await withLeaseLock(paths, run.id, async () => {
        const lease = await readLease(paths, run.id).catch(() => undefined);
        if (lease?.state === 'active') {
          await takeInRemoteWork(garden, run, now);
          await endLease(paths, lease, 'finished', now());
        }
        return settleOne(garden, goal.id, now);
      });
      if (after.status !== 'running') settled.push(goal.id);
    }
  }
  return { abandoned, settled };
}

/**
 * Asks the runner holding a run to stop it (`pak2 stop`, `pak2 cancel`,
 * `POST /goals/:id/cancel`): the lease's `stop` is set and the runner's next
 * heartbeat is told. The run closes when the runner finishes it.
 *
 * @returns undefined when the run has no active lease.
 */
export async function requestLeaseStop(garden: Garden, runId: string, requeue: boolean, now: Date = new Date()): Promise<LeaseRecord | undefined> {
  const { paths } = garden;
  return withLeaseLock(paths, runId, async () => {
    const lease = await readLease(paths, runId);
    if (!lease || lease.state !== 'active') return undefined;
    const next: LeaseRecord = { ...lease, stop: { requested_at: now.toISOString(), requeue } };
    await writeLease(paths, next);
    return next;
  });
}

/**
 * documents_upsert (seed 004, 6): writes one plant document —
 * `memory/MEMORY.md` or a Markdown file under `memory/`, `skills/`,
 * `knowledge/` — atomically. DocumentUpserted.
 *
 * @returns the path written (relative to the plant directory), its size in bytes and SHA-256.
 * @throws RemoteRefusal 400 (path, content), 404 (no such plant), and activeLease's when a lease is named.
 */
export async function upsertDocument(
  garden: Garden,
  plantName: string,
  input: { lease?: string; run?: string; path?: string; content?: string },
  who: RunnerIdentity,
  now: () => Date = () => new Date(),
): Promise<{ path: string; bytes: number; sha256: string }> {
  const { paths } = garden;
  const rel = input.path ?? '';
  const parts = rel.split('/');
  if (!/^(memory|skills|knowledge)\/[^\0]+\.md$/.test(rel) || parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.')) || path.isAbsolute(rel)) {
    throw new RemoteRefusal(400, `path ${JSON.stringify(rel)}: a Markdown file under memory/, skills/ or knowledge/ of the plant (no '..', no hidden names)`, '/path');
  }
  if (typeof input.content !== 'string') throw new RemoteRefusal(400, 'content: required, a string', '/content');
  const bytes = Buffer.from(input.content, 'utf8');
  if (bytes.length > MAX_DOCUMENT_BYTES) throw new RemoteRefusal(400, `content: ${bytes.length} bytes; at most ${MAX_DOCUMENT_BYTES}`, '/content');
  let plant: PlantRecord;
  try {
    plant = await readPlant(paths, plantName);
  } catch (error) {
    if (error instanceof StoreError && (error.code === 'PLANT_NOT_FOUND' || error.code === 'INVALID_PLANT_NAME')) throw new RemoteRefusal(404, `plant ${plantName}: no such plant`, 'name');
    throw error;
  }
  const write = async (runId?: string) => {
    const file = await documentTarget(plantDir(paths, plant.name), parts, rel);
    // A temp name of its own per write (concurrent uploads to one path never share one), made new (`wx`: never through a link put there).
    const temp = `${file}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`;
    try {
      await fsp.writeFile(temp, bytes, { flag: 'wx' });
      await fsp.rename(temp, file);
    } catch (error) {
      await fsp.rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    await appendEvent(paths, { type: 'DocumentUpserted', plant: plant.name, ...(runId ? { run: runId } : {}), detail: `${rel} (${bytes.length} bytes) by ${who.name}@${who.host}`, ...tokenFields(who) }, now());
    return { path: rel, bytes: bytes.length, sha256: crypto.createHash('sha256').update(bytes).digest('hex') };
  };
  if (!input.lease) return write();
  if (!input.run) throw new RemoteRefusal(400, 'run: the run id the lease belongs to is required with a lease', '/run');
  return withLeaseLock(paths, input.run, async () => {
    const lease = await activeLease(garden, input.run!, input.lease, who, 'documents_upsert', now());
    // A lease lets its runner write the memory of the plant it works for, no other's (another plant's memory goes into that plant's prompts).
    if (lease.plant !== plant.name) throw new RemoteRefusal(409, `plant ${plant.name}: lease ${input.lease} is for plant ${lease.plant}; a lease writes only its own plant's documents`, 'name');
    return write(input.run);
  });
}

/**
 * Where a plant document is written: `parts` under the plant directory,
 * every directory on the way made or checked without following a link, so
 * a symbolic link inside the plant (to a directory or a file anywhere) is
 * never written through.
 *
 * @returns the file's path.
 * @throws RemoteRefusal 400 when a component is a symbolic link or not a directory, or the document is not a regular file.
 */
async function documentTarget(dir: string, parts: string[], rel: string): Promise<string> {
  const refuse = (what: string) => new RemoteRefusal(400, `path ${JSON.stringify(rel)}: ${what} in the plant is a symbolic link or not a ${what.endsWith('/') ? 'directory' : 'file'}; documents are written inside the plant only`, '/path');
  let at = dir;
  for (const [i, part] of parts.slice(0, -1).entries()) {
    at = path.join(at, part);
    let info = await fsp.lstat(at).catch(() => undefined);
    if (!info) {
      await fsp.mkdir(at).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      info = await fsp.lstat(at);
    }
    if (!info.isDirectory()) throw refuse(`${parts.slice(0, i + 1).join('/')}/`);
  }
  const file = path.join(at, parts.at(-1)!);
  const info = await fsp.lstat(file).catch(() => undefined);
  if (info && !info.isFile()) throw refuse(rel);
  return file;
}

/** tasks_get: a goal, its latest run, that run's lease if any, its thread. @throws RemoteRefusal 404. */
export async function getTask(garden: Garden, goalId: string): Promise<{ goal: GoalRecord; run: RunRecord | null; lease: LeaseRecord | null; comments: CommentRecord[] }> {
  const { paths } = garden;
  let goal: GoalRecord;
  try {
    goal = await readGoal(paths, goalId);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new RemoteRefusal(404, `goal ${goalId}: no such goal`, 'goal');
    throw error;
  }
  const run = (await latestRun(paths, goal.id).catch(() => undefined)) ?? null;
  const lease = run ? ((await readLease(paths, run.id).catch(() => undefined)) ?? null) : null;
  return { goal, run, lease, comments: await readComments(paths, goal.id) };
}

/** One ledger per runtime root for the claims this process answers: read incrementally, not from the start each claim. */
const claimBooks = new Map<string, BudgetBook>();

/** Whether a cap holds `goal` now (decideDispatch over the closed runs' spend; docs/budget/level2.md). */
async function budgetHolds(garden: Garden, goal: GoalRecord, now: Date): Promise<boolean> {
  let book = claimBooks.get(garden.paths.runtimeRoot);
  if (!book) claimBooks.set(garden.paths.runtimeRoot, (book = new BudgetBook(garden)));
  await book.refresh();
  // Caps the operator set that cannot be read hold every goal (as the coordinator does), never none.
  if (book.problem) return true;
  const routing = goal.task_class ? garden.config.routing[goal.task_class]?.budgetUsd : undefined;
  const caps = capsFor(garden.config.budget, book.overrides, goal, routing);
  return caps.length > 0 && decideDispatch(caps, book.facts(), { id: goal.id, plant: goal.assigned_to ?? 'unknown' }, now, garden.config.budget.timezone) !== undefined;
}
