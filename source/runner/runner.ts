import net from 'node:net';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isTerminalRunStatus, type RunRecord } from '../contracts/index.js';
import { closeFromStream, dispatch, REFLECTION_MARKER_TYPE } from '../driver/dispatch.js';
import { UserError } from '../errors.js';
import { appendJsonLine, readPlantDocuments, readRun, runEventsFile } from '../store/index.js';
import { RunnerApiError, RunnerClient, type ClaimAnswer, type GardenEvent } from './client.js';
import { carry, diffExcludes, finishAndReport, leaseState, type CarriedRun, type RunnerContext } from './carry.js';
import type { ExitObservation } from './finish.js';
import { reapStaleRuns, resumeLease } from './resume.js';
import { scratchGarden, workdirConfig, workdirPlantDir, writeClaim } from './scratch.js';
import { oneLine } from './outbox.js';
import { inboxDir, lockStateDir, outboxDir, readCursor, runnerInstance, writeClaimState, writeCursor, type ClaimState } from './state.js';
import { isGitWorkTree, snapshotTree } from './workdir-diff.js';
import { runnerGuardFor } from './guard.js';

/**
 * `pak2 runner` (docs/runners/level2.md): claims goals from a garden's
 * server under a lease and runs them on this machine with pak2's own
 * driver code. Start: whoami → the open leases of this runner (each
 * resumed or reported, resume.ts) → the events since the persisted cursor
 * → the claim loop (`204`: wait the poll interval, woken early by the
 * event stream when a goal is queued). One stderr line per state change.
 */

/** What {@link runRunner} needs. Times in ms. */
export interface RunnerOptions {
  /** The garden's server, e.g. `http://garden-host:7717` (`/api/v1` is added). */
  server: string;
  token: string;
  /** The token's file, named in a 401's message. */
  tokenFile: string;
  name: string;
  host: string;
  plants: string[];
  drivers: string[];
  /** Exit after this many finished runs (resumed ones count). */
  maxRuns?: number;
  workdir: string;
  stateDir: string;
  pollMs: number;
  env: NodeJS.ProcessEnv;
  /** One line to stderr (the prefix `pak2 runner NAME: ` is added here). */
  err: (line: string) => void;
  /** Aborted on SIGINT/SIGTERM; a string reason (the signal's name) starts the line that says what the runner does about it. */
  signal: AbortSignal;
  /** The keeper's tick (default 1000). */
  tickMs?: number;
  /** Hold the event stream open to wake early (default true). */
  stream?: boolean;
}

/** What a runner did before it exited. */
export interface RunnerSummary {
  /** Runs whose finish the garden took. */
  finished: number;
  /** Runs carried to an end the garden did not take (lease ended, refused). */
  lost: number;
}

/** Event types that may make a goal claimable: the claim loop wakes on them. */
const WAKE_TYPES = new Set(['GoalSubmitted', 'LeaseExpired', 'RunClosed', 'CommentPosted']);

function wakes(event: GardenEvent): boolean {
  return WAKE_TYPES.has(event.type) || (event.type === 'GoalTransitioned' && event.to === 'queued');
}

/**
 * Turns a failed whoami into one line naming the URL and what to check.
 *
 * @throws UserError always.
 */
function connectError(error: unknown, base: string, tokenFile: string): never {
  if (error instanceof RunnerApiError) {
    if (error.unreachable) throw new UserError(`--server: cannot reach the garden's server at ${base} (${error.message.replace(/^.*unreachable \((.*)\)$/, '$1')}): check the URL and that \`pak2 serve\` runs there (with --host to serve other machines)`, { exitCode: 1 });
    if (error.status === 401) throw new UserError(`--token-file ${tokenFile}: ${base} refused the token (401): check that it is the garden's <runtime-root>/serve/token`, { exitCode: 1 });
    if (error.status === 403) throw new UserError(`--token-file ${tokenFile}: ${base} refused this token's role (403: ${error.serverError ?? 'forbidden'}): a runner needs a runner token (pak2 token create --role runner --name NAME) or the operator's`, { exitCode: 1 });
    if (error.status === 404) throw new UserError(`--server: ${base} has no runner routes (404 on whoami): check that it is a pak2 server of this version`, { exitCode: 1 });
    throw new UserError(`--server: ${error.message}`, { exitCode: 1 });
  }
  throw error;
}

/** A wait that ends after `ms`, on `wake()`, or when `signal` aborts. */
class Waiter {
  private wakeUp: (() => void) | undefined;
  private woken = false;
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wakeUp = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
      this.wakeUp = done;
    });
  }
}

/**
 * Runs the runner until `signal` aborts or `maxRuns` runs are finished.
 *
 * @throws UserError when the server cannot be reached or refuses the token at start, or the workdir's PAK2.toml is invalid.
 */
export async function runRunner(options: RunnerOptions): Promise<RunnerSummary> {
  const prefix = `pak2 runner ${options.name}: `;
  // Every line is one line: a message that quotes a file or a server's answer has its line breaks escaped.
  const log = (line: string) => options.err(`${prefix}${oneLine(line, Number.POSITIVE_INFINITY)}`);
  const activity: Activity = {};
  const onStop = () => log(stopLine(options.signal.reason, activity));
  if (options.signal.aborted) onStop();
  else options.signal.addEventListener('abort', onStop, { once: true });
  try {
    const config = workdirConfig(options.workdir);
    await fsp.mkdir(options.stateDir, { recursive: true });
    let release: () => void;
    try {
      release = lockStateDir(options.stateDir);
    } catch (error) {
      throw new UserError(`--state ${options.stateDir}: ${(error as Error).message}`, { hint: 'give each runner process its own --state (and its own --name)', exitCode: 1 });
    }
    try {
      let instance: string;
      try {
        instance = runnerInstance(options.stateDir);
      } catch (error) {
        throw new UserError(`--state ${options.stateDir}: cannot keep the runner's instance id there (${(error as Error).message})`, { exitCode: 1 });
      }
      const client = new RunnerClient(options.server, options.token, { name: options.name, host: options.host, instance });
      return await runWithState(options, log, client, config, instance, activity);
    } finally {
      release();
    }
  } finally {
    options.signal.removeEventListener('abort', onStop);
  }
}

/** What the runner is doing, for the line a signal gets. */
interface Activity {
  /** A claim request is in flight. */
  claiming?: boolean;
  /** The run it carries (claimed or resumed). */
  run?: string;
}

/** The line said when the runner is stopped: what is true of it now. */
function stopLine(reason: unknown, activity: Activity): string {
  const why = typeof reason === 'string' && reason ? reason : 'stopped';
  if (activity.run) return `${why}: stopping the agent of ${activity.run} and finishing the run (operator_stopped; the goal goes back to the queue)`;
  if (activity.claiming) return `${why}: a claim is in flight; a goal it brings is finished at once (operator_stopped, requeued), its agent not started`;
  return `${why}: no run in progress; exiting`;
}

/**
 * The warning for a server URL that would carry the runner's token in the
 * clear beyond this machine: `http:` to a host that is not loopback
 * (127.0.0.0/8, ::1, `localhost`). Undefined for https, loopback, or a URL
 * that does not parse (the client says that one).
 */
export function plainHttpWarning(server: string): string | undefined {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:') return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = host === 'localhost' || host.endsWith('.localhost') || (net.isIPv4(host) && host.startsWith('127.')) || (net.isIPv6(host) && (host === '::1' || /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(host)));
  return loopback ? undefined : `warning: --server ${url.origin} is plain http to another machine: the runner's token and every run's stream cross the network in the clear (use https, or a tunnel to a loopback address)`;
}

/**
 * The start's warnings, one line each (docs/runners/level2.md): the token
 * sent over plain http beyond this machine ({@link plainHttpWarning}), a workdir
 * that is not a git work tree (its runs get no diff.patch), and a --plant
 * the garden does not have or that is not active (no goal of it would be
 * claimed). Nothing here stops the runner.
 */
async function startWarnings(options: RunnerOptions, client: RunnerClient, log: (line: string) => void): Promise<void> {
  const plain = plainHttpWarning(options.server);
  if (plain) log(plain);
  if (!(await isGitWorkTree(options.workdir, options.env))) log(`warning: --workdir ${options.workdir} is not in a git work tree: no diff.patch will be attached to its runs`);
  if (options.plants.length === 0) return;
  let plants: { name: string; status?: string }[];
  try {
    plants = await client.plants();
  } catch (error) {
    log(`warning: cannot list the garden's plants to check --plant (${(error as Error).message})`);
    return;
  }
  const byName = new Map(plants.map((p) => [p.name, p]));
  for (const name of options.plants) {
    const plant = byName.get(name);
    if (!plant) {
      const known = plants.map((p) => p.name).sort();
      log(`warning: --plant ${name}: the garden has no plant ${name} (${known.length ? `it has ${known.join(', ')}` : 'it has none'}); no goal will be claimed for it`);
    } else if (plant.status && plant.status !== 'active') {
      log(`warning: --plant ${name}: the plant is ${plant.status}; its goals are claimed only while it is active`);
    }
  }
}

/** The runner once it holds its state directory. */
async function runWithState(options: RunnerOptions, log: (line: string) => void, client: RunnerClient, config: ReturnType<typeof workdirConfig>, instance: string, activity: Activity): Promise<RunnerSummary> {
  const ctx: RunnerContext = { client, name: options.name, host: options.host, workdir: options.workdir, stateDir: options.stateDir, config, env: options.env, log, signal: options.signal, pollMs: options.pollMs, ...(options.tickMs ? { tickMs: options.tickMs } : {}) };
  const summary: RunnerSummary = { finished: 0, lost: 0 };
  const done = () => options.signal.aborted || (options.maxRuns !== undefined && summary.finished + summary.lost >= options.maxRuns);
  const count = (ok: boolean) => (ok ? (summary.finished += 1) : (summary.lost += 1));

  let whoami;
  try {
    whoami = await client.whoami();
  } catch (error) {
    connectError(error, client.base, options.tokenFile);
  }
  // A read token may call whoami but never claim: said at once, not as a claim retried forever.
  if (whoami.token?.role === 'read') throw new UserError(`--token-file ${options.tokenFile}: a read token (${whoami.token.name}); a runner needs a runner token (pak2 token create --role runner --name NAME) or the operator's`, { exitCode: 1 });
  log(`connected to ${whoami.garden} at ${client.base} (lease ttl ${whoami.lease_ttl_seconds} s, instance ${instance})`);
  await startWarnings(options, client, log);

  // Catch-up: this runner's open leases, each resumed or reported.
  const leases = await client.openLeases().catch((error: unknown) => connectError(error, client.base, options.tokenFile));
  for (const lease of leases) {
    if (options.signal.aborted) break;
    if (lease.runner.instance && lease.runner.instance !== instance) {
      // Another process of this name (its own --state) holds it: not ours to resume; it expires if that process is gone.
      log(`lease ${lease.id} of ${lease.run} is held by another runner process named ${lease.runner.name} (instance ${lease.runner.instance} on ${lease.runner.host}; this one is ${instance}): left alone; it expires if that process is gone`);
      continue;
    }
    if (lease.runner.host !== options.host) {
      log(`lease ${lease.id} of ${lease.run} is held by ${lease.runner.name} on ${lease.runner.host}, not this machine (${options.host}): left alone`);
      continue;
    }
    const task = await client.task(lease.goal).catch(() => undefined);
    activity.run = lease.run;
    try {
      count(await resumeLease(ctx, lease, task));
    } catch (error) {
      log(`resuming ${lease.run}: ${(error as Error).message}; left to expire`);
      count(false);
    } finally {
      activity.run = undefined;
    }
  }
  await reapStaleRuns(ctx, new Set(leases.map((l) => l.run))).catch((error: unknown) => log(`looking for runs left behind: ${(error as Error).message}`));

  // The events since the cursor (nothing to act on beyond the claims below: the loop is level-based).
  let cursor = readCursor(options.stateDir);
  try {
    for (let page = 0; page < 1000; page += 1) {
      const answer = await client.events(cursor);
      if (answer.next && answer.next !== cursor) {
        cursor = answer.next;
        await writeCursor(options.stateDir, cursor);
      }
      if (!answer.more) break;
    }
  } catch (error) {
    log(`catching up on events: ${(error as Error).message}`);
  }

  // A guard needs git in the checkout (its baseline is a git snapshot): outside one, guarded and routed goals are left to others.
  const canGuard = await isGitWorkTree(options.workdir, options.env);
  const waiter = new Waiter();
  const streamStop = new AbortController();
  const onAbort = () => streamStop.abort();
  options.signal.addEventListener('abort', onAbort);
  const follower = options.stream === false ? Promise.resolve() : followEvents(client, () => cursor, (id) => (cursor = id), options.stateDir, streamStop.signal, waiter, options.pollMs);

  let unreachableSaid = false;
  try {
    while (!done()) {
      let claim: ClaimAnswer | undefined;
      try {
        activity.claiming = true;
        claim = await client.claim({ plants: options.plants, drivers: options.drivers, guard: canGuard });
        if (unreachableSaid) log(`reached ${client.base} again`);
        unreachableSaid = false;
      } catch (error) {
        if (!(error instanceof RunnerApiError)) throw error;
        if (error.status === 401 || error.status === 403) connectError(error, client.base, options.tokenFile);
        if (!unreachableSaid) log(`claiming: ${error.message}; retrying every ${options.pollMs / 1000} s`);
        unreachableSaid = true;
        await waiter.wait(options.pollMs, options.signal);
        continue;
      } finally {
        // Carried from here on (a signal now stops the claimed run, whose agent is then not started).
        activity.run = claim?.run.id;
        activity.claiming = false;
      }
      if (!claim) {
        await waiter.wait(options.pollMs, options.signal);
        continue;
      }
      try {
        count(await executeClaim(ctx, claim));
      } catch (error) {
        // A fault of the runner's own (its disk, its state): said, reported to the garden as a failure it observed, and the loop goes on.
        count(await failClaim(ctx, claim, error));
      } finally {
        activity.run = undefined;
      }
    }
  } finally {
    options.signal.removeEventListener('abort', onAbort);
    streamStop.abort();
    await follower;
    if (cursor) await writeCursor(options.stateDir, cursor).catch(() => undefined);
  }
  return summary;
}

/** Holds the event stream open (reconnecting after a pause), moving the cursor and waking the claim loop on a queued goal. */
async function followEvents(client: RunnerClient, cursor: () => string | undefined, setCursor: (id: string) => void, stateDir: string, signal: AbortSignal, waiter: Waiter, pollMs: number): Promise<void> {
  let lastWrite = 0;
  while (!signal.aborted) {
    try {
      await client.streamEvents(cursor(), signal, (event) => {
        if (event.id) {
          setCursor(event.id);
          if (Date.now() - lastWrite > 1000) {
            lastWrite = Date.now();
            void writeCursor(stateDir, event.id).catch(() => undefined);
          }
        }
        if (wakes(event)) waiter.wake();
      });
    } catch {
      // unreachable or refused: polling goes on; try the stream again later
    }
    if (signal.aborted) break;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(pollMs, 1000));
      signal.addEventListener('abort', done);
    });
  }
}

/**
 * Runs one claimed goal: writes it into the scratch garden, keeps the
 * lease while pak2's dispatch runs the agent in the workdir, then finishes
 * with the local record.
 *
 * @returns true when the garden took the finish.
 */
export async function executeClaim(ctx: RunnerContext, claim: ClaimAnswer): Promise<boolean> {
  const { lease, goal, run, context } = claim;
  ctx.log(`claimed ${run.id} (lease ${lease.id}, ttl ${lease.ttl_seconds} s)`);
  const garden = scratchGarden(ctx.workdir, ctx.stateDir, context.settings, ctx.config);
  const plant = await writeClaim(garden.paths, claim);
  const state: ClaimState = {
    lease,
    goal,
    context: { ...context, documents: [] },
    documents: Object.fromEntries((context.documents ?? []).map((d) => [d.path, d.content])),
    workdirDocuments: readPlantDocuments(workdirPlantDir(ctx.workdir, ctx.config, plant.name)),
    baselineTree: await snapshotTree(ctx.workdir, diffExcludes(ctx), ctx.env),
    claimed_at: new Date().toISOString(),
  };
  await writeClaimState(ctx.stateDir, state);
  let reflecting = false;
  const carried = await carry(ctx, garden, { runId: run.id, goalId: goal.id, plant: plant.name, lease: lease.id, ttlSeconds: lease.ttl_seconds, startedAt: Date.now(), reflecting: () => reflecting });
  const { keeper } = carried;
  try {
    return await carryClaim(ctx, claim, carried, state, (value) => (reflecting = value));
  } finally {
    await keeper.stop();
  }
}

/** The part of {@link executeClaim} that runs with the keeper: dispatch, the local close, the finish. */
async function carryClaim(ctx: RunnerContext, claim: ClaimAnswer, carried: CarriedRun, state: ClaimState, setReflecting: (value: boolean) => void): Promise<boolean> {
  const { lease, goal, run, context } = claim;
  const { keeper, garden } = carried;
  keeper.start();
  const onAbort = () => keeper.stopAgent('operator', { requeue: true, message: 'the runner was stopped; the goal goes back to the queue' });
  ctx.signal.addEventListener('abort', onAbort);
  if (ctx.signal.aborted) onAbort();
  let launches = 0;
  let exit: ExitObservation = 'observed';
  try {
    if (ctx.signal.aborted) {
      // Stopped before the agent started (a signal while the claim was in flight): no agent is launched; the run ends as the operator's stop, and the goal goes back to the queue.
      exit = 'not_started';
      ctx.log(`${run.id}: the runner was stopped before its agent started; finishing it (operator_stopped, requeued)`);
      const current = await readRun(garden.paths, run.id);
      if (!isTerminalRunStatus(current.status)) await closeFromStream(garden, current, goal.type, { status: 'killed', failureReason: 'operator_stopped', errorText: NOT_STARTED_MESSAGE, exitCode: null, by: 'operator', extra: { operator_stop: { requeue: true } } });
    } else {
      const env = { ...ctx.env, PAK2_OUTBOX: outboxDir(ctx.stateDir, run.id), PAK2_INBOX: inboxDir(ctx.stateDir, run.id), PAK2_GOAL_ID: goal.id };
      // A guarded or routed goal: the garden's guard runs here, in this checkout (docs/runners/level2.md, "Guarded and routed goals").
      const guardFor = runnerGuardFor(context.guard, { garden, workdir: ctx.workdir, stateDir: ctx.stateDir, env });
      await dispatch(goal, run.id, {
        garden,
        env,
        ...(guardFor ? { guardFor } : {}),
        contextBlocks: context.blocks ?? {},
        onRunStart: (_id, handle) => {
          launches += 1;
          // The second launch of a run that needs one is its reflection turn (a fresh-session retry is rare and brief).
          setReflecting(launches > 1 && readPhasesHasReflection(runEventsFile(garden.paths, run.id)));
          keeper.setHandle(handle);
        },
        onRunEnd: () => keeper.setHandle(undefined),
        onStderr: () => undefined, // stderr.log holds it, and it is uploaded
      });
    }
  } catch (error) {
    const message = `pak2 failed while running the agent: ${(error as Error)?.message ?? String(error)}`;
    await appendJsonLine(runEventsFile(garden.paths, run.id), { type: 'error', source: 'pak2', message }).catch(() => undefined);
    const current = await readRun(garden.paths, run.id);
    if (!isTerminalRunStatus(current.status)) await closeFromStream(garden, current, goal.type, { status: 'failure', failureReason: 'driver_error', errorText: message, by: 'runner' });
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    keeper.setHandle(undefined);
  }
  // The keeper goes on heartbeating until the finish is sent (finishAndReport stops it).
  let local: RunRecord = await readRun(garden.paths, run.id);
  if (!isTerminalRunStatus(local.status)) {
    await closeFromStream(garden, local, goal.type, { status: 'failure', failureReason: 'driver_error', errorText: 'the driver returned without closing the run', by: 'runner' });
    local = await readRun(garden.paths, run.id);
  }
  await keeper.flushOutbox();
  if (keeper.leaseLost) {
    await keeper.stop();
    ctx.log(`lease of ${run.id} ${leaseState(keeper.leaseLost)} (409); moving on`);
    return false;
  }
  return finishAndReport(ctx, carried, local, goal.type, state, exit, lease.ttl_seconds);
}

/** The error of a run whose runner was stopped between its claim and its agent's start. */
export const NOT_STARTED_MESSAGE = 'the runner was stopped before the agent started; the goal goes back to the queue';

/**
 * Finishes a claim the runner could not carry (its own fault: the scratch
 * garden could not be written, the run could not be read): `failure` /
 * `driver_error` with the message, cost unknown, no stream.
 *
 * @returns true when the garden took the finish.
 */
export async function failClaim(ctx: RunnerContext, claim: ClaimAnswer, error: unknown): Promise<boolean> {
  const message = `the runner could not run it: ${(error as Error)?.message ?? String(error)}`;
  ctx.log(`run ${claim.run.id}: ${message}`);
  try {
    await ctx.client.finish(claim.run.id, {
      lease: claim.lease.id,
      status: 'failure',
      failure_reason: 'driver_error',
      exit_code: null,
      cost: { source: 'unknown' },
      session_id: null,
      final_text: null,
      error: message,
      num_turns: null,
      reflection: null,
      stream_bytes: { events: 0, stderr: 0 },
      acceptance: [{ item: 'agent process exited 0', verified: false, evidence: `the agent was not started: ${message}` }],
      lingered: false,
      leftovers: [],
      watchdog: null,
      permission_denials: [],
      operator_stop: null,
      linger: null,
      background_tasks: [],
      stop_reason: null,
      terminal_reason: null,
    });
    ctx.log(`finished ${claim.run.id} failure (driver_error) cost unknown`);
    return true;
  } catch (finishError) {
    ctx.log(`could not finish ${claim.run.id}: ${(finishError as Error).message}; the garden will find its lease expired`);
    return false;
  }
}

/** True when the last 64 KB of the stream hold the driver's reflection marker (written just before the reflection turn starts). */
function readPhasesHasReflection(eventsFile: string): boolean {
  try {
    const fd = fs.openSync(eventsFile, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const length = Math.min(size, 64 * 1024);
      const buffer = Buffer.alloc(length);
      fs.readSync(fd, buffer, 0, length, size - length);
      return buffer.toString('utf8').includes(`"${REFLECTION_MARKER_TYPE}"`);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
}
