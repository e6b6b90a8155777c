import path from 'node:path';
import type { RunRecord } from '../contracts/index.js';
import { RUN_STDERR_FILE } from '../driver/dispatch.js';
import { runDir, type Garden, type GardenConfig } from '../garden/index.js';
import { runEventsFile } from '../store/index.js';
import { RunnerApiError, type RunnerClient } from './client.js';
import { finishRun, type ExitObservation, type FinishOutcome } from './finish.js';
import { LeaseKeeper } from './keeper.js';
import { OutboxRelay } from './outbox.js';
import { inboxDir, outboxDir, type ClaimState } from './state.js';
import { LogUploader } from './uploader.js';

/**
 * What carrying one run needs, whether the runner claimed it now or resumes
 * it after a restart: the client, where things are, and how to speak.
 */
export interface RunnerContext {
  client: RunnerClient;
  name: string;
  host: string;
  /** Where the agent works (a checkout of the garden's repository). */
  workdir: string;
  stateDir: string;
  /** The workdir's PAK2.toml (its [drivers] and [defaults]), or every default. */
  config: GardenConfig;
  /** The agents' base environment. */
  env: NodeJS.ProcessEnv;
  /** One stderr line, without the `pak2 runner NAME: ` prefix. */
  log: (line: string) => void;
  /** Aborted by SIGINT/SIGTERM: the agent is stopped (operator, requeue) and the run finished. */
  signal: AbortSignal;
  /** Retry period for an unreachable server, ms. */
  pollMs: number;
  /** The keeper's tick, ms (default 1000). */
  tickMs?: number;
}

/** The pieces that keep one run: its uploader, its outbox relay and its lease keeper. */
export interface CarriedRun {
  garden: Garden;
  uploader: LogUploader;
  relay: OutboxRelay;
  keeper: LeaseKeeper;
  lease: string;
  runId: string;
}

/** Builds (does not start) the uploader, relay and keeper of a run in the scratch `garden`. */
export async function carry(ctx: RunnerContext, garden: Garden, input: { runId: string; goalId: string; plant: string; lease: string; ttlSeconds: number; startedAt: number; reflecting?: () => boolean }): Promise<CarriedRun> {
  const uploader = new LogUploader(ctx.client, input.runId, input.lease, {
    events: runEventsFile(garden.paths, input.runId),
    stderr: path.join(runDir(garden.paths, input.runId), RUN_STDERR_FILE),
  });
  const relay = new OutboxRelay(ctx.client, input.goalId, input.lease, outboxDir(ctx.stateDir, input.runId), inboxDir(ctx.stateDir, input.runId), { runId: input.runId, workdir: ctx.workdir });
  await relay.prepare();
  const keeper = new LeaseKeeper({
    client: ctx.client,
    garden,
    runId: input.runId,
    goalId: input.goalId,
    plant: input.plant,
    lease: input.lease,
    ttlSeconds: input.ttlSeconds,
    uploader,
    relay,
    log: ctx.log,
    startedAt: input.startedAt,
    ...(input.reflecting ? { reflecting: input.reflecting } : {}),
    ...(ctx.tickMs ? { tickMs: ctx.tickMs } : {}),
  });
  return { garden, uploader, relay, keeper, lease: input.lease, runId: input.runId };
}

/** `$0.0123`, or `cost unknown`. */
export function formatCost(cost: RunRecord['cost']): string {
  if (!cost || cost.usd === undefined) return 'cost unknown';
  return `$${cost.usd.toFixed(4)}${cost.partial ? ' (partial)' : ''}`;
}

/** The paths the diff leaves out: the state directory, when it is inside the workdir. */
export function diffExcludes(ctx: Pick<RunnerContext, 'workdir' | 'stateDir'>): string[] {
  const rel = path.relative(ctx.workdir, ctx.stateDir);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? [ctx.stateDir] : [];
}

/**
 * Finishes a closed local run and says how it went in one line. The lease
 * keeper heartbeats until the finish is sent. An unreachable server is
 * retried every `pollMs` for up to a lease TTL (a signal ends the retries
 * early).
 *
 * @returns true when the garden took the finish.
 */
export async function finishAndReport(ctx: RunnerContext, carried: CarriedRun, local: RunRecord, goalType: string, claim: ClaimState | undefined, exit: ExitObservation, ttlSeconds: number): Promise<boolean> {
  try {
    return await finishAndReportNow(ctx, carried, local, goalType, claim, exit, ttlSeconds);
  } finally {
    await carried.keeper.stop();
  }
}

async function finishAndReportNow(ctx: RunnerContext, carried: CarriedRun, local: RunRecord, goalType: string, claim: ClaimState | undefined, exit: ExitObservation, ttlSeconds: number): Promise<boolean> {
  carried.keeper.finishing = true;
  carried.keeper.setHandle(undefined);
  carried.keeper.start();
  const deadline = Date.now() + ttlSeconds * 1000;
  let outcome: FinishOutcome;
  for (;;) {
    try {
      outcome = await finishRun({
        client: ctx.client,
        garden: carried.garden,
        run: local,
        goalType,
        lease: carried.lease,
        uploader: carried.uploader,
        claim,
        workdir: ctx.workdir,
        exclude: diffExcludes(ctx),
        exit,
        log: ctx.log,
        env: ctx.env,
        // The keeper heartbeats through the uploads and attachments (a short lease must not expire while a diff goes up), and stops before the finish.
        beforeFinish: () => carried.keeper.stop(),
      });
      break;
    } catch (error) {
      if (!(error instanceof RunnerApiError) || Date.now() > deadline || ctx.signal.aborted) {
        ctx.log(`could not finish ${local.id}: ${(error as Error).message}; the garden will find its lease expired`);
        return false;
      }
      if (carried.keeper.leaseLost) {
        outcome = { kind: 'lease-ended', error: carried.keeper.leaseLost };
        break;
      }
      ctx.log(`finishing ${local.id}: ${error.message}; retrying`);
      await new Promise((resolve) => setTimeout(resolve, ctx.pollMs));
    }
  }
  if (outcome.kind === 'finished') {
    const reason = local.failure_reason ? ` (${local.failure_reason})` : '';
    ctx.log(`finished ${local.id} ${local.status}${reason} ${formatCost(local.cost)}`);
    return true;
  }
  if (outcome.kind === 'lease-ended') {
    ctx.log(`lease of ${local.id} ${leaseState(outcome.error)} (409); moving on`);
    return false;
  }
  ctx.log(`the garden refused the finish of ${local.id}: ${outcome.error.message}`);
  return false;
}

/** `expired` or `finished`, from a 409's body, else `ended`. */
export function leaseState(error: RunnerApiError): string {
  const state = (error.body as { state?: unknown } | undefined)?.state;
  return state === 'expired' || state === 'finished' ? state : /expired/.test(error.serverError ?? '') ? 'expired' : /finished/.test(error.serverError ?? '') ? 'finished' : 'ended';
}
