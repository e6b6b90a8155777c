import fsp from 'node:fs/promises';
import { isTerminalRunStatus, type GoalRecord, type RunRecord } from '../contracts/index.js';
import { resolveSettings, type Garden } from '../garden/index.js';
import {
  appendEvent,
  appendJsonLine,
  closeRun,
  dispatchOrder,
  latestRun,
  OpenGoalScanner,
  openRun,
  readPlant,
  runEventsFile,
  StoreError,
  transitionGoal,
  type GoalProblem,
} from '../store/index.js';
import { driverProblem, pluginDefaults } from '../driver/plugins/index.js';
import { captureWorktreeBaseline } from '../history/index.js';
import type { LiveRuns } from './live-runs.js';
import { decideTends, gardenerProblem, queueTends, readAttentionCovered, type ClosedGoalInput, type WithheldTend } from './tend-policy.js';

/**
 * The function that carries a dispatched goal's run to its close (seed 002,
 * `_dispatch_fn`). Production passes the driver's dispatch; tests inject their own.
 */
export type DispatchFn = (goal: GoalRecord, runId: string) => Promise<unknown>;

/** Inputs of one reconcile pass; every path and clock is injectable. */
export interface ReconcileOptions {
  garden: Garden;
  dispatch: DispatchFn;
  /** Live agent processes, so the watchdog can stop the group it kills. */
  live?: LiveRuns;
  /** Reused across passes for warm reads; a fresh one makes a cold pass. */
  scanner?: OpenGoalScanner;
  now?: () => Date;
  env?: NodeJS.ProcessEnv;
  /** Wait for each dispatch to finish inside the pass (the seed's sequential execution model). */
  awaitDispatch?: boolean;
}

/** What one pass did. Ids are goal ids unless named run. */
export interface ReconcileSummary {
  /** Run ids opened and handed to the dispatch function. */
  dispatched: string[];
  /** Queued goals with no assigned_to, left queued. */
  skipped: string[];
  /** Goals rolled back to queued because opening the run failed, with why. */
  rolledBack: { goal: string; reason: string }[];
  /** Run ids the watchdog closed as killed. */
  killed: string[];
  /** Goals closed this pass, with their closed_reason. */
  closed: { goal: string; reason: string }[];
  /** Goals put back in the queue because their run was interrupted by a coordinator shutdown. */
  requeued: string[];
  /** Unreadable goal files, named; reported, never deleted. */
  problems: GoalProblem[];
  /** Dispatches still running (empty with awaitDispatch). */
  pending: Promise<unknown>[];
  /** Assigned queued goals left waiting for a free slot, and goals in flight after the pass. */
  queued: number;
  inFlight: number;
  /** Automatic tend goals queued this pass (docs/automatic-tend/level2.md). */
  tends: { goal: string; trigger: string; key: string }[];
  /** Automatic tend triggers that fired but queued no tend, with why. */
  tendsWithheld: WithheldTend[];
}

async function lastActivity(run: RunRecord, eventsFile: string): Promise<number> {
  try {
    return (await fsp.stat(eventsFile)).mtimeMs;
  } catch {
    // Before events.jsonl exists the watchdog falls back to started_at (seed 000, "Watchdog").
    return Date.parse(run.started_at);
  }
}

/**
 * One coordinator pass (seed 002, "The reconcile loop"), level-based and
 * idempotent: reads goals and runs from disk, never the event log, and never
 * the contents of closed goals. In order:
 *
 * 1. Dispatch: queued goals by priority then age, up to
 *    `[coordinator].max_concurrent_runs` in flight: the worktree baseline
 *    (non-converse goals in a git worktree), queued → dispatched
 *    (GoalTransitioned), openRun (RunStarted), dispatched → running
 *    (GoalTransitioned), then the dispatch function. Goals without
 *    assigned_to are skipped; when opening the run fails (unknown or archived
 *    plant, I/O) the goal is rolled back to queued.
 * 2. Watchdog: a running run silent for more than `watchdog_seconds` (events.jsonl
 *    mtime, else started_at) is closed `killed` (failure_reason `killed`) and
 *    its process group stopped.
 * 3. Close: a running goal whose latest run is terminal goes running →
 *    completed → closed (GoalTransitioned ×2, GoalClosed), closed_reason
 *    `success` when the run succeeded, else `failure`. A run interrupted by a
 *    coordinator shutdown (failure_reason `coordinator_stopped`) instead puts
 *    its goal back in the queue (running → queued).
 * 4. Automatic tends (docs/automatic-tend/level2.md, tend-policy.ts):
 *    `run_failure` for goals closed in 3 whose run failed or was killed by
 *    the watchdog, `queued_attention_needed` for queued goals 1 could not
 *    dispatch; bounded, reported in `tends` and `tendsWithheld`.
 */
export async function reconcile(options: ReconcileOptions): Promise<ReconcileSummary> {
  const { garden } = options;
  const { paths, config } = garden;
  const now = options.now ?? (() => new Date());
  const scanner = options.scanner ?? new OpenGoalScanner(paths);
  const summary: ReconcileSummary = { dispatched: [], skipped: [], rolledBack: [], killed: [], closed: [], requeued: [], problems: [], pending: [], queued: 0, inFlight: 0, tends: [], tendsWithheld: [] };

  const scan = await scanner.scan();
  summary.problems = scan.problems;
  const goals = scan.goals;
  const runOf = new Map<string, RunRecord | undefined>();
  const loadRun = async (goal: GoalRecord) => {
    if (!runOf.has(goal.id)) {
      try {
        runOf.set(goal.id, await latestRun(paths, goal.id));
      } catch (error) {
        summary.problems.push({ file: goal.id, message: (error as Error).message });
        runOf.set(goal.id, undefined);
      }
    }
    return runOf.get(goal.id);
  };

  // Repair what a crash can leave between two writes: a dispatched goal whose
  // run never opened goes back to queued; one whose run opened moves on.
  for (const goal of goals.filter((g) => g.status === 'dispatched')) {
    const run = await loadRun(goal);
    if (run) goal.status = (await transitionGoal(paths, goal.id, 'running', { now: now() })).status;
    else goal.status = (await transitionGoal(paths, goal.id, 'queued', { now: now() })).status;
  }

  // 1. Dispatch
  let inFlight = 0;
  for (const goal of goals) {
    if (goal.status !== 'running') continue;
    const run = await loadRun(goal);
    if (run && !isTerminalRunStatus(run.status)) inFlight += 1;
  }
  const queued = goals.filter((g) => g.status === 'queued').sort(dispatchOrder);
  for (const goal of queued) {
    if (!goal.assigned_to) {
      summary.skipped.push(goal.id);
      continue;
    }
    if (inFlight >= config.coordinator.maxConcurrentRuns) {
      summary.queued += 1;
      continue;
    }
    // Before the goal's first dispatch write, so neither the run directory nor this run's events are in it (seed 000).
    const worktreeBaseline = goal.type === 'converse' ? undefined : await captureWorktreeBaseline(paths.gardenRoot, paths.runtimeRoot, options.env ?? process.env);
    await transitionGoal(paths, goal.id, 'dispatched', { now: now() });
    let run: RunRecord;
    try {
      const plant = await readPlant(paths, goal.assigned_to);
      if (plant.status !== 'active') throw new StoreError('INVALID_TRANSITION', `plant ${plant.name} is ${plant.status}`);
      const settings = resolveSettings(goal, config, options.env ?? process.env, (driver) => pluginDefaults(driver, config));
      // A driver that cannot launch keeps the goal queued: a typo in config must not burn the queue.
      const problem = driverProblem(settings.driver, config);
      if (problem) throw new StoreError('INVALID_TRANSITION', `${problem} (driver from ${settings.sources.driver})`);
      run = await openRun(
        paths,
        goal,
        {
          plant: goal.assigned_to,
          driver: settings.driver,
          model: settings.model ?? 'unknown',
          ...(settings.reasoningEffort ? { reasoningEffort: settings.reasoningEffort } : {}),
          ...(worktreeBaseline ? { worktreeBaseline } : {}),
        },
        now(),
      );
    } catch (error) {
      await transitionGoal(paths, goal.id, 'queued', { now: now() });
      summary.rolledBack.push({ goal: goal.id, reason: (error as Error).message });
      continue;
    }
    await transitionGoal(paths, goal.id, 'running', { now: now() });
    goal.status = 'running';
    runOf.set(goal.id, run);
    inFlight += 1;
    summary.dispatched.push(run.id);
    const work = options.dispatch(goal, run.id).catch((error: unknown) => failRun(options, goal, run.id, error));
    if (options.awaitDispatch) {
      await work;
      runOf.delete(goal.id);
      inFlight -= 1;
    } else summary.pending.push(work);
  }

  // 2. Watchdog
  const watchdogMs = config.coordinator.watchdogSeconds * 1000;
  for (const goal of goals) {
    if (goal.status !== 'running') continue;
    const run = await loadRun(goal);
    if (!run || isTerminalRunStatus(run.status)) continue;
    const silentMs = now().getTime() - (await lastActivity(run, runEventsFile(paths, run.id)));
    if (silentMs <= watchdogMs) continue;
    try {
      const closed = await closeRun(paths, run.id, goal.type, { status: 'killed', failureReason: 'killed', cost: { source: 'unknown' }, by: 'watchdog' }, now());
      runOf.set(goal.id, closed);
      await appendEvent(paths, { type: 'WatchdogKilled', run: run.id, goal: goal.id, plant: run.plant, detail: `silent for ${Math.round(silentMs / 1000)} s (limit ${config.coordinator.watchdogSeconds} s)` }, now());
      summary.killed.push(run.id);
    } catch (error) {
      if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) throw error;
      runOf.delete(goal.id);
    }
    options.live?.stop(run.id, 'killed');
  }

  // 3. Close completed goals
  const closedRuns: ClosedGoalInput[] = [];
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'completed') continue;
    runOf.delete(goal.id); // the dispatch may have closed it meanwhile: read it fresh
    const run = await loadRun(goal);
    if (!run || !isTerminalRunStatus(run.status)) continue;
    if (goal.status === 'running' && run.failure_reason === 'coordinator_stopped') {
      // Interrupted by a shutdown, not failed: back to the queue for the next attempt.
      await transitionGoal(paths, goal.id, 'queued', { now: now() });
      goal.status = 'queued';
      summary.requeued.push(goal.id);
      continue;
    }
    const reason = run.status === 'success' ? 'success' : 'failure';
    if (goal.status === 'running') await transitionGoal(paths, goal.id, 'completed', { now: now() });
    await transitionGoal(paths, goal.id, 'closed', { closedReason: reason, now: now() });
    goal.status = 'closed';
    summary.closed.push({ goal: goal.id, reason });
    closedRuns.push({ goal, run });
  }

  // 4. Automatic tends (docs/automatic-tend/level2.md): run_failure for the
  // goals closed above, queued_attention_needed for the queued goals the
  // dispatch phase could not claim. A pure decision, then its effect.
  const stuck = [
    ...summary.skipped.map((id) => ({ goal: id, reason: 'no assigned_to' })),
    ...summary.rolledBack,
  ].filter((s) => goals.find((g) => g.id === s.goal)?.type !== 'tend');
  const attentionCovered = await readAttentionCovered(paths);
  if (stuck.length > 0 || closedRuns.length > 0 || attentionCovered.length > 0) {
    const decision = decideTends({
      closed: closedRuns,
      stuck,
      open: goals,
      attentionCovered,
      gardenerProblem: await gardenerProblem(paths),
    });
    summary.tends = await queueTends(garden, decision, attentionCovered, now());
    summary.tendsWithheld = decision.withheld;
  }

  summary.inFlight = goals.filter((g) => g.status === 'running' || g.status === 'dispatched' || g.status === 'completed').length;
  return summary;
}

/** A dispatch function that threw: record why in events.jsonl and close the run as a launch failure. */
async function failRun(options: ReconcileOptions, goal: GoalRecord, runId: string, error: unknown): Promise<void> {
  const { paths } = options.garden;
  const message = `dispatch failed: ${(error as Error)?.message ?? String(error)}`;
  try {
    await appendJsonLine(runEventsFile(paths, runId), { type: 'error', source: 'pak2', message });
    await closeRun(paths, runId, goal.type, { status: 'failure', failureReason: 'launch_failed', cost: { source: 'unknown' }, errorText: message, by: 'coordinator' });
  } catch {
    // The run is already closed, or its directory is gone: the next pass sees what is on disk.
  }
}
