import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isTerminalRunStatus, REFLECTION_REQUIRED_TYPES, type GoalRecord, type LeaseRecord, type RunRecord } from '../contracts/index.js';
import { closeFromStream, dispatch, judge, readPhases, streamExtra, RUN_PROCESS_FILE, RUN_STDERR_FILE, type DriverContext, type RunProcessRecord } from '../driver/dispatch.js';
import type { RunHandle, StopDetail, StopReason } from '../driver/launch.js';
import { RunLiveness } from '../driver/liveness.js';
import { getDriverPlugin } from '../driver/plugins/index.js';
import { addCosts } from '../driver/pricing.js';
import { RUN_MARK_ENV, signalGroup, sweepRun } from '../driver/process-tree.js';
import { runDir, type Garden } from '../garden/index.js';
import { finishInterruptedGuard } from '../guard/index.js';
import { adoptRun, listRuns, readRun, runEventsFile, writeGoalRecord, type CloseRunInput } from '../store/index.js';
import { RunnerApiError } from './client.js';
import { carry, finishAndReport, leaseState, type CarriedRun, type RunnerContext } from './carry.js';
import { scratchGarden } from './scratch.js';
import { inboxDir, outboxDir, readClaimState, type ClaimState } from './state.js';

/**
 * A runner restarted with no memory of its runs (docs/runners/level2.md,
 * "Catch-up and resumption"): for each open lease of its name it finds
 * what its state directory and this machine still know, and carries the
 * run to its finish:
 *
 * - the agent process still lives (its `process.json` names a pid that
 *   carries the run's mark): heartbeats and uploads resume; when it exits
 *   the run is judged from the stream with `exit_code: null` (its code is
 *   not observable: this process did not start it);
 * - the local record is closed: the rest is uploaded and the run finished;
 * - the agent is gone and nothing recorded its end (or the runner has no
 *   state of the run at all): `failure` / `driver_error`, with what the
 *   stream carried;
 * - the garden refuses (409, the lease ended): said in one line.
 */

/** The message of a run whose agent was gone when its runner restarted (the doc's words). */
export const AGENT_GONE_MESSAGE = 'the runner restarted and the agent process was gone; its exit was not observed';
/** Why a guarded run the runner restarted in ends interrupted (its guard's verdict was in the process that died); the goal goes back to the queue. */
export const GUARD_INTERRUPTED_MESSAGE = 'the runner restarted during a guarded run: its guard never decided, so the run is interrupted and the goal goes back to the queue';
/** Why an adopted agent that ended without a result event failed. */
export const UNREPORTED_MESSAGE = 'the runner restarted while the agent ran; the agent ended without a result event and its exit was not observed';

/**
 * Carries an adopted run on through pak2's own driver code: dispatch judges
 * the main turn from its stream (docs/runners/level2.md, "Catch-up and
 * resumption"), runs the reflection turn where the goal type needs one, and
 * closes the local record; the keeper heartbeats and watches the reflection.
 */
async function dispatchAdopted(ctx: RunnerContext, garden: Garden, goal: GoalRecord, runId: string, claim: ClaimState, carried: CarriedRun, adopted: NonNullable<DriverContext['adoptedMain']>): Promise<void> {
  try {
    await dispatch(goal, runId, {
      garden,
      env: { ...ctx.env, PAK2_OUTBOX: outboxDir(ctx.stateDir, runId), PAK2_INBOX: inboxDir(ctx.stateDir, runId), PAK2_GOAL_ID: goal.id },
      contextBlocks: claim.context.blocks ?? {},
      adoptedMain: adopted,
      onRunStart: (_id, handle) => carried.keeper.setHandle(handle),
      onRunEnd: () => carried.keeper.setHandle(undefined),
      onStderr: () => undefined,
    });
  } catch (error) {
    const current = await readRun(garden.paths, runId);
    if (!isTerminalRunStatus(current.status)) await closeFromStream(garden, current, goal.type, { status: 'failure', failureReason: 'driver_error', errorText: `pak2 failed while finishing the adopted run: ${(error as Error)?.message ?? String(error)}`, exitCode: null, by: 'runner' });
  } finally {
    carried.keeper.setHandle(undefined);
  }
}

/** Reads a run's `process.json`, or undefined. */
export function readProcessRecord(garden: Garden, runId: string): RunProcessRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(runDir(garden.paths, runId), RUN_PROCESS_FILE), 'utf8')) as RunProcessRecord;
  } catch {
    return undefined;
  }
}

/** True when `pid` lives on this machine and carries the run mark `mark` (Linux /proc; false elsewhere). */
export function isMarkedAlive(pid: number, mark: string): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    return fs.readFileSync(`/proc/${pid}/environ`, 'latin1').includes(`${RUN_MARK_ENV}=${mark}\0`);
  } catch {
    return false;
  }
}

/** A handle over an agent process this runner process did not start: liveness from the stream file's growth, a stop by signals and the sweep. */
export interface AdoptedHandle extends RunHandle {
  /** Reads the stream file's size and time: growth counts as progress. */
  refresh(): void;
  readonly stopDetail: StopDetail | undefined;
}

/** Adopts the live agent process named by `record` (see {@link AdoptedHandle}). */
export function adoptProcess(record: RunProcessRecord, files: { events: string; stderr: string }, killGraceMs = 3000): AdoptedHandle {
  const liveness = new RunLiveness(Date.now());
  let size = -1;
  let stoppedBy: StopReason | undefined;
  let stopDetail: StopDetail | undefined;
  const handle: AdoptedHandle = {
    pid: record.pid,
    mark: record.mark,
    liveness,
    get stopping() {
      return stoppedBy;
    },
    get stopDetail() {
      return stopDetail;
    },
    stop(reason, detail) {
      if (stoppedBy) return;
      stoppedBy = reason;
      stopDetail = detail;
      signalGroup(record.pid, 'SIGINT');
      setTimeout(() => void sweepRun(record.pid, record.mark, [files.events, files.stderr]), killGraceMs).unref();
    },
    refresh() {
      try {
        const stat = fs.statSync(files.events);
        if (stat.size !== size) {
          size = stat.size;
          liveness.observe({ progress: true, label: 'output (resumed)' }, Date.now());
        }
      } catch {
        // no stream yet
      }
    },
  };
  handle.refresh();
  return handle;
}

/** The close of a run whose agent was followed to its end but whose exit code was not seen: judged from the stream. */
export function judgeUnobserved(garden: Garden, run: RunRecord, goalType: string, stop: { reason: StopReason; detail: StopDetail | undefined } | undefined): Omit<CloseRunInput, 'cost'> & { cost?: CloseRunInput['cost'] } {
  if (stop) {
    const { reason, detail } = stop;
    if (reason === 'operator') return { status: 'killed', failureReason: 'operator_stopped', errorText: detail?.message ?? 'stopped by the operator', exitCode: null, by: 'operator', extra: { operator_stop: { requeue: Boolean(detail?.requeue) } } };
    if (reason === 'timeout') return { status: 'timeout', failureReason: 'timeout', errorText: `ran past run_timeout_seconds (${garden.config.coordinator.runTimeoutSeconds} s)`, exitCode: null, by: 'runner' };
    if (reason === 'coordinator_stopped') return { status: 'killed', failureReason: 'coordinator_stopped', errorText: detail?.message ?? 'the runner stopped it', exitCode: null, by: 'runner' };
    if (reason === 'budget') return { status: 'killed', failureReason: 'budget_exceeded', errorText: detail?.message ?? 'stopped: its spend crossed a budget cap', exitCode: null, by: 'budget', ...(detail?.budget ? { extra: { budget: detail.budget } } : {}) };
    return { status: 'killed', failureReason: 'killed', errorText: detail?.message ?? 'killed by the watchdog', exitCode: null, by: 'watchdog', ...(detail?.watchdog ? { extra: { watchdog: detail.watchdog } } : {}) };
  }
  const plugin = getDriverPlugin(run.driver, garden.config);
  if (!plugin) return { status: 'failure', failureReason: 'driver_error', errorText: `unknown driver ${run.driver} on this runner`, exitCode: null, by: 'runner' };
  const phases = readPhases(runEventsFile(garden.paths, run.id));
  const parsed = plugin.parseEvents(phases.main, { phase: 'main', runDir: runDir(garden.paths, run.id), model: run.model });
  if (!parsed.reported) return { status: 'failure', failureReason: 'driver_error', errorText: 'the runner restarted while the agent ran; the agent ended without a result event and its exit was not observed', exitCode: null, by: 'runner' };
  // Its own report decides: the exit code is unknown, so it is not held against it.
  const verdict = judge(parsed, { exitCode: 0, lingered: false, stderrTail: '' });
  const facts = streamExtra(parsed);
  const base = { exitCode: null, by: 'runner' as const, ...(Object.keys(facts).length ? { extra: facts } : {}) };
  if (verdict.status !== 'success') return { ...base, ...verdict };
  if (!(REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goalType)) return { ...base, status: 'success' };
  const reflected = plugin.parseEvents(phases.reflection, { phase: 'reflection', runDir: runDir(garden.paths, run.id), model: run.model, ...(parsed.threadTotal ? { threadBefore: parsed.threadTotal } : {}) });
  const text = reflected.status === 'success' ? reflected.finalText?.trim() : undefined;
  const cost = addCosts(parsed.cost, reflected.cost);
  if (!text) return { ...base, cost, status: 'failure', failureReason: 'reflection_failed', errorText: 'the runner restarted before a reflection was recorded; no reflection turn finished' };
  return { ...base, cost, status: 'success', reflection: text };
}

/**
 * Carries one open lease of this runner to its finish after a restart (see
 * the module comment).
 *
 * @returns true when the garden took the finish.
 */
export async function resumeLease(ctx: RunnerContext, lease: LeaseRecord, task?: { goal: GoalRecord; run: RunRecord | null }): Promise<boolean> {
  const claim = readClaimState(ctx.stateDir, lease.run);
  const garden = scratchGarden(ctx.workdir, ctx.stateDir, claim?.context.settings, ctx.config);
  const goal = claim?.goal ?? task?.goal;
  let local: RunRecord | undefined = await readRun(garden.paths, lease.run).catch(() => undefined);
  if (!goal) {
    ctx.log(`lease ${lease.id} of ${lease.run}: the garden did not say its goal; left to expire`);
    return false;
  }
  if (!local) {
    // Nothing of it here: adopt the garden's record so the end can be recorded the same way.
    const record = task?.run && task.run.id === lease.run ? task.run : undefined;
    if (!record) {
      ctx.log(`lease ${lease.id} of ${lease.run}: no local state and no run record from the garden; left to expire`);
      return false;
    }
    await writeGoalRecord(garden.paths, goal);
    local = await adoptRun(garden.paths, { ...record, status: 'running' });
  }
  const files = { events: runEventsFile(garden.paths, lease.run), stderr: path.join(runDir(garden.paths, lease.run), RUN_STDERR_FILE) };
  const carried = await carry(ctx, garden, { runId: lease.run, goalId: goal.id, plant: lease.plant, lease: lease.id, ttlSeconds: lease.ttl_seconds, startedAt: Date.parse(local.started_at) || Date.now() });
  let exit: 'observed' | 'unobserved' = 'observed';
  if (!isTerminalRunStatus(local.status) && claim?.context.guard) {
    // A guarded run's verdict lived in the runner process that died (docs/runners/level2.md, "Guarded and routed goals"): as a local guarded run at a coordinator's restart, it is interrupted, never judged unguarded.
    exit = 'unobserved';
    const record = readProcessRecord(garden, lease.run);
    const alive = Boolean(record && record.host === os.hostname() && isMarkedAlive(record.pid, record.mark));
    if (record && alive) await sweepRun(record.pid, record.mark, [files.events, files.stderr]);
    const words = await finishInterruptedGuard(garden, local, ctx.env, new Date());
    const message = `${GUARD_INTERRUPTED_MESSAGE}${alive ? '; its agent was stopped' : ''}${words ? `; ${words}` : ''}`;
    ctx.log(`resuming ${lease.run} (lease ${lease.id}): ${message}`);
    await closeFromStream(garden, local, goal.type, { status: 'killed', failureReason: 'coordinator_stopped', errorText: message, exitCode: null, by: 'runner' });
    local = await readRun(garden.paths, lease.run);
  } else if (!isTerminalRunStatus(local.status)) {
    exit = 'unobserved';
    const record = readProcessRecord(garden, lease.run);
    const alive = record && record.host === os.hostname() && isMarkedAlive(record.pid, record.mark);
    if (record && alive) {
      ctx.log(`resuming ${lease.run} (lease ${lease.id}): its agent (pid ${record.pid}) still runs`);
      const handle = adoptProcess(record, files);
      carried.keeper.setHandle(handle);
      carried.keeper.start();
      const onAbort = () => carried.keeper.stopAgent('operator', { requeue: true, message: 'the runner was stopped; the goal goes back to the queue' });
      ctx.signal.addEventListener('abort', onAbort);
      if (ctx.signal.aborted) onAbort();
      try {
        // The wall-time limit holds for an adopted agent too, counted from the run's start.
        const deadline = Date.parse(local.started_at) + garden.config.coordinator.runTimeoutSeconds * 1000;
        while (isMarkedAlive(record.pid, record.mark)) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          handle.refresh();
          if (Date.now() > deadline && !handle.stopping) handle.stop('timeout');
        }
        await sweepRun(record.pid, record.mark, [files.events, files.stderr], 1000);
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
      }
      const stop = handle.stopping ? { reason: handle.stopping, detail: handle.stopDetail } : undefined;
      if (record.phase === 'main' && claim) {
        // The main turn ended under this runner's watch: judged from its stream, then the reflection turn runs here, as it would have.
        await dispatchAdopted(ctx, garden, goal, lease.run, claim, carried, { ...(stop ? { stoppedBy: stop.reason, stopDetail: stop.detail } : {}), unreported: UNREPORTED_MESSAGE });
      } else {
        await carried.keeper.stop();
        await closeFromStream(garden, local, goal.type, judgeUnobserved(garden, local, goal.type, stop));
      }
    } else if (claim && record?.phase !== 'reflection') {
      // The agent is gone: what its stream says stands (its exit was not observed); a result goes on to the reflection turn.
      ctx.log(`resuming ${lease.run} (lease ${lease.id}): its agent is gone`);
      carried.keeper.start();
      await dispatchAdopted(ctx, garden, goal, lease.run, claim, carried, { unreported: AGENT_GONE_MESSAGE });
    } else {
      ctx.log(`resuming ${lease.run} (lease ${lease.id}): its agent is gone`);
      await closeFromStream(garden, local, goal.type, record?.phase === 'reflection' ? judgeUnobserved(garden, local, goal.type, undefined) : { status: 'failure', failureReason: 'driver_error', errorText: AGENT_GONE_MESSAGE, exitCode: null, by: 'runner' });
    }
    local = await readRun(garden.paths, lease.run);
  } else {
    ctx.log(`resuming ${lease.run} (lease ${lease.id}): its local record is closed (${local.status})`);
  }
  await carried.keeper.flushOutbox();
  if (carried.keeper.leaseLost) {
    ctx.log(`lease of ${lease.run} ${leaseState(carried.keeper.leaseLost)} (409); moving on`);
    return false;
  }
  try {
    return await finishAndReport(ctx, carried, local, goal.type, claim, exit, lease.ttl_seconds);
  } catch (error) {
    if (error instanceof RunnerApiError) {
      ctx.log(`could not finish ${lease.run}: ${error.message}`);
      return false;
    }
    throw error;
  }
}

/** The local close of a run whose lease the garden ended while the runner was away. */
export const LEASE_ENDED_AWAY_MESSAGE = 'the garden ended its lease while the runner was away; the runner stopped what was left of its agent';

/**
 * Local runs still `running` that hold no open lease (the garden ended it
 * while the runner was down): their agent processes, if any still live
 * here, are swept, and the local record is closed `failure` /
 * `driver_error`, so no agent of a run the garden gave up on keeps working.
 *
 * @returns the run ids closed.
 */
export async function reapStaleRuns(ctx: RunnerContext, openRuns: ReadonlySet<string>): Promise<string[]> {
  const garden = scratchGarden(ctx.workdir, ctx.stateDir, undefined, ctx.config);
  const { runs } = await listRuns(garden.paths);
  const closed: string[] = [];
  for (const run of runs) {
    if (run.status !== 'running' || openRuns.has(run.id)) continue;
    const record = readProcessRecord(garden, run.id);
    const alive = Boolean(record && record.host === os.hostname() && isMarkedAlive(record.pid, record.mark));
    if (record && alive) await sweepRun(record.pid, record.mark, [runEventsFile(garden.paths, run.id), path.join(runDir(garden.paths, run.id), RUN_STDERR_FILE)]);
    const goalType = readClaimState(ctx.stateDir, run.id)?.goal.type ?? 'spike';
    await closeFromStream(garden, run, goalType, { status: 'failure', failureReason: 'driver_error', errorText: LEASE_ENDED_AWAY_MESSAGE, exitCode: null, by: 'runner' }).catch(() => undefined);
    ctx.log(`${run.id}: its lease ended while the runner was away${alive ? '; its agent was stopped' : ''}`);
    closed.push(run.id);
  }
  return closed;
}
