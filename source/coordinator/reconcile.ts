import fsp from 'node:fs/promises';
import pLimit from 'p-limit';
import os from 'node:os';
import { isTerminalRunStatus, type GoalRecord, type LeaseRecord, type RunRecord } from '../contracts/index.js';
import { resolveSettings, type Garden } from '../garden/index.js';
import {
  appendEvent,
  appendJsonLine,
  dispatchOrder,
  latestRun,
  OpenGoalScanner,
  openRun,
  readGoal,
  readLease,
  transitionGoalLocked,
  tryGoalLock,
  writeLease,
  type OpenRunInput,
  readPlant,
  readRun,
  runEventsFile,
  schedulesFile,
  StoreError,
  transitionGoal,
  type GoalProblem,
} from '../store/index.js';
import { pluginDefaults } from '../driver/plugins/index.js';
import { closeFromStream, RUN_PROCESS_FILE } from '../driver/dispatch.js';
import { decideWatchdog, describeOpenWork, watchdogKill } from '../driver/liveness.js';
import { runDir } from '../garden/index.js';
import { reportBlocked } from './blocked.js';
import type { BudgetGate } from './budget-gate.js';
import { decideReadiness, dependencyFacts, dependencyReason, type DependencyFact } from './readiness.js';
import { abandonLeaselessRun, dispatchIfQueued, expireLeases, hasActiveLease, newLease, nextLeaseId } from './remote.js';
import { settleGoals, type Settling, type SettleOut } from './settle.js';
import { repairDispatched } from './recover.js';
import { uploadLocalStreams } from './stream-upload.js';

export { settleGoals } from './settle.js';
import path from 'node:path';
import { captureWorktreeBaseline } from '../history/index.js';
import { isGuarded, planRoute, routedGoal } from '../guard/index.js';
import { nobodyTakes, NOBODY_TAKES } from './takers.js';
import type { LiveRuns } from './live-runs.js';
import { isTerminalLandingState, type LandingRecord } from '../contracts/index.js';
import { nextLanding } from '../landing/index.js';
import { readLanding } from '../store/index.js';
import { branchTip, type Isolation } from '../worktree/index.js';
import type { Lander } from './lander.js';
import type { IoFaults } from './io-faults.js';
import { decideTends, gardenerProblem, queueTends, readAttentionCovered, type WithheldTend } from './tend-policy.js';
import { runSchedules, type ScheduledSubmit, type ScheduleFiring } from './schedules.js';

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
  /** Closed dependencies' facts, kept across passes (a closed goal never changes); absent, they are read each pass. */
  closedDependencies?: Map<string, DependencyFact>;
  now?: () => Date;
  env?: NodeJS.ProcessEnv;
  /** Wait for each dispatch to finish inside the pass (the seed's sequential execution model). */
  awaitDispatch?: boolean;
  /**
   * How runs are isolated (docs/landing/level2.md, "Worktrees"): the
   * coordinator decides it at start (`decideIsolation`); absent, every run
   * works in the garden's tree, as the seeds' single tree.
   */
  isolation?: Isolation;
  /** Land in the background, at most one at a time (the coordinator's merge queue); absent, a pass lands nothing. */
  lander?: Lander;
  /** Budgets (docs/budget/level2.md): the ledger and caps that hold goals back; absent, nothing is capped. */
  budget?: BudgetGate;
  /** The live coordinator's settling: goals settle as work of their own instead of within the pass (absent, or with `awaitDispatch`: within it). */
  settling?: Settling;
  /**
   * Work held back by I/O faults (a full disk; docs/coordinator/level2.md,
   * "A full disk"): opening runs waits out its backoff; a run that could
   * not be closed is not in flight and is closed again after its backoff.
   * Absent: a fault is handled as any store error.
   */
  faults?: IoFaults;
  /**
   * How a `[[schedule]]` firing submits its goal (docs/schedules/level2.md):
   * the session passes submit's `submitScheduledGoal`. Absent, the pass
   * runs no schedule step (no goal, no state written).
   */
  submitScheduled?: ScheduledSubmit;
  /**
   * A garden shared through a store (docs/store/level2.md, "Many processes,
   * one garden"): other coordinators run too. This one counts, watches and
   * settles only its own runs (`ownsRun`), claims a goal, its run and the
   * run's lease in one transaction, and does the once-per-garden steps
   * (schedules, lease expiry, tends for stuck goals, landing, the blocked
   * report, settling what no live coordinator owns) only as the `leader`.
   * Absent: the garden's only coordinator, which does everything.
   */
  shared?: SharedGarden;
}

/** What a coordinator of a shared garden tells a pass (see {@link ReconcileOptions.shared}). */
export interface SharedGarden {
  leader: boolean;
  /** This coordinator's name in the leases of its runs (`coordinator@host#pid-ulid`). */
  holder: string;
  /** True for a run this coordinator launched (in this process). */
  ownsRun(runId: string): boolean;
  /** Called with each run this pass opens for this coordinator. */
  claimed(runId: string): void;
}

/** What one pass did. Ids are goal ids unless named run. */
export interface ReconcileSummary {
  /** Run ids opened and handed to the dispatch function. */
  dispatched: string[];
  /** Queued goals with no assigned_to, left queued. */
  skipped: string[];
  /** Goals rolled back to queued because opening the run failed, with why. */
  rolledBack: { goal: string; reason: string }[];
  /**
   * Queued goals that cannot dispatch (their plant is missing or not active,
   * a cap holds them (`code` `budget`), or a dependency closed failure or
   * cancelled: a reason starting `dependency `), left untouched, with why.
   */
  blocked: { goal: string; reason: string; code?: string; detail?: string }[];
  /** Queued goals waiting for dependencies still open (docs/goal/level2.md, "Dependencies"), left untouched: normal, not reported. */
  waiting: { goal: string; waiting_for: string[] }[];
  /** Queued goals left untouched while opening runs waits out an I/O fault's backoff (`faults`), with the fault. */
  ioHeld: { goal: string; reason: string }[];
  /** Run ids the watchdog closed as killed. */
  killed: string[];
  /** Remote run ids closed `abandoned` because their lease expired. */
  abandoned: string[];
  /** Goals closed this pass, with their closed_reason. */
  closed: { goal: string; reason: string }[];
  /** Goals put back in the queue because their run was interrupted by a coordinator shutdown. */
  requeued: string[];
  /** Unreadable goal files, named; reported, never deleted. */
  problems: GoalProblem[];
  /** Dispatches still running (empty with awaitDispatch). */
  pending: Promise<unknown>[];
  /** Assigned queued goals left waiting for a free local slot (none with max_concurrent_runs = 0: runners take them), and goals in flight after the pass (remote runs included). */
  queued: number;
  inFlight: number;
  /** Automatic tend goals queued this pass (docs/automatic-tend/level2.md). */
  tends: { goal: string; trigger: string; key: string }[];
  /** Automatic tend triggers that fired but queued no tend, with why. */
  tendsWithheld: WithheldTend[];
  /** Landings by state among open goals' runs (docs/landing/level2.md), and the run a landing began for this pass, if one did. */
  landings: { queued: number; awaiting_review: number; verifying: number; waiting: number; started?: string };
  /** `[[schedule]]` due times handled this pass, each with a ScheduleFired event (docs/schedules/level2.md). */
  schedules: ScheduleFiring[];
  /** The earliest next due time of an enabled schedule (ISO 8601 UTC): the coordinator wakes then. */
  nextScheduleAt?: string;
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
 * 0. Schedules (docs/schedules/level2.md, schedules.ts): each
 *    `[[schedule]]` due now submits one goal (ScheduleFired), with
 *    `submitScheduled` only.
 * 1. Dispatch: queued goals by priority then age, up to
 *    `[coordinator].max_concurrent_runs` in flight: the worktree baseline
 *    (non-converse goals in a git worktree), queued → dispatched
 *    (GoalTransitioned), openRun (RunStarted), dispatched → running
 *    (GoalTransitioned), then the dispatch function. Goals without
 *    assigned_to are skipped; when opening the run fails (unknown or archived
 *    plant, I/O) the goal is rolled back to queued.
 * 2. Watchdog: a running run silent for more than `watchdog_seconds` (events.jsonl
 *    mtime, else started_at; never before the goal last went running, so an
 *    answered question restarts the clock) is closed `killed` (failure_reason
 *    `killed`) and its process group stopped. A run whose goal is blocked on
 *    a question is not watched for silence; a remote run's lease is its
 *    watchdog here (its runner watches its agent).
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
  const summary: ReconcileSummary = { dispatched: [], skipped: [], rolledBack: [], blocked: [], waiting: [], ioHeld: [], killed: [], abandoned: [], closed: [], requeued: [], problems: [], pending: [], queued: 0, inFlight: 0, tends: [], tendsWithheld: [], landings: { queued: 0, awaiting_review: 0, verifying: 0, waiting: 0 }, schedules: [] };
  const worktrees = options.isolation?.mode === 'worktree' ? options.isolation : undefined;
  let baseTip: Promise<string | undefined> | undefined;

  // 0. Schedules: before the scan, so a goal a firing submits is dispatched by this very pass.
  // A step that fails (a full disk) is a problem of the pass, never a pass without dispatch, watchdog and closes.
  const leads = !options.shared || options.shared.leader;
  const shared = options.shared;
  const scheduled = options.submitScheduled && leads
    ? await runSchedules(garden, options.submitScheduled, now()).catch((error: Error) => ({ firings: [], nextAt: undefined, problems: [{ file: schedulesFile(paths), message: `schedules: ${error.message}` }] }))
    : undefined;
  if (scheduled) {
    summary.schedules = scheduled.firings;
    if (scheduled.nextAt) summary.nextScheduleAt = scheduled.nextAt;
  }

  const scan = await scanner.scan();
  summary.problems = [...scan.problems, ...(scheduled?.problems ?? [])];
  const goals = scan.goals;
  // The spend ledger and the caps, as they are now (a cap raised since the last pass releases its goals in this one).
  await options.budget?.refresh(goals);
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
  // On a store a claim is one transaction, never seen half done: the leader alone repairs what older writes left.
  if (leads) {
    summary.problems.push(
      ...(await repairDispatched(paths, goals, (goal) => {
        runOf.delete(goal.id);
        return loadRun(goal);
      }, now)),
    );
  }

  // 1. Dispatch
  let inFlight = 0;
  // A guarded run has the work tree to itself (docs/guarded-runs/level2.md, "Isolation"): its scope check and rollback see only its own changes.
  let guardedLive = false;
  let guardWaiting = false;
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'blocked') continue;
    const run = await loadRun(goal);
    // A remote run takes no local slot: it runs on its runner's machine (docs/runners/level2.md).
    // On a shared garden another coordinator's run takes its slot, not one of ours.
    if (run && !isTerminalRunStatus(run.status) && !run.runner && !options.faults?.get(`run:${run.id}`) && (!shared || shared.ownsRun(run.id))) {
      inFlight += 1;
      if (isGuarded(goal)) guardedLive = true;
    }
  }
  // What is dispatched, and in which order, is what is on disk now: queued goals are read fresh (a cache may only speed up listing).
  // With every slot taken nothing is dispatched: the scan's records (checked by stat this pass) list them, and
  // 10,000 queued goals cost no 10,000 reads a pass.
  const slotFree = inFlight < config.coordinator.maxConcurrentRuns;
  // Bounded: 10,000 reads at once hold 10,000 open files and their buffers together.
  const limit = pLimit(32);
  const queued = (
    await Promise.all(
      goals
        .filter((g) => g.status === 'queued')
        .map(async (g) => {
          if (!slotFree) return g;
          return limit(async () => {
            try {
              const fresh = await readGoal(paths, g.id);
              // What changed only: a field read again equal keeps its string (views hold the record's strings too).
              for (const [key, value] of Object.entries(fresh)) if ((g as Record<string, unknown>)[key] !== value) (g as Record<string, unknown>)[key] = value;
              return fresh.status === 'queued' ? g : undefined;
            } catch (error) {
              summary.problems.push({ file: g.id, message: (error as Error).message });
              return undefined;
            }
          });
        }),
    )
  )
    .filter((g): g is GoalRecord => g !== undefined)
    .sort(dispatchOrder);
  // Each plant is read once a pass, not once per goal assigned to it.
  const blocks = new Map<string, Promise<string | undefined>>();
  const blockOf = (plant: string) => {
    let block = blocks.get(plant);
    if (!block) blocks.set(plant, (block = plantBlock(paths, plant)));
    return block;
  };
  // Dependencies (docs/goal/level2.md): a goal waits untouched until every one closed success; no write, so no wake-up and no spin.
  const facts = queued.some((g) => g.depends_on?.length) ? await dependencyFacts(paths, goals, options.closedDependencies) : undefined;
  for (const goal of queued) {
    if (facts && goal.depends_on?.length) {
      const readiness = decideReadiness(goal, facts);
      if (readiness.state === 'waiting') {
        summary.waiting.push({ goal: goal.id, waiting_for: readiness.waiting_for });
        continue;
      }
      if (readiness.state === 'blocked') {
        summary.blocked.push({ goal: goal.id, reason: dependencyReason(readiness.blocked_on) });
        continue;
      }
    }
    if (!goal.assigned_to) {
      summary.skipped.push(goal.id);
      continue;
    }
    // A goal whose plant cannot take it waits untouched: no write, so no wake-up and no spin.
    const block = await blockOf(goal.assigned_to);
    if (block) {
      summary.blocked.push({ goal: goal.id, reason: block });
      continue;
    }
    // A goal neither this coordinator nor any runner may take (a conversation reply in a garden whose coordinator runs none) would wait in silence: reported, like a plant block.
    const nobody = nobodyTakes(goal, config);
    if (nobody) {
      summary.blocked.push({ goal: goal.id, code: NOBODY_TAKES, reason: nobody });
      continue;
    }
    // A cap with no room left holds the goal untouched, like a plant block: it says which cap and what is left (docs/budget/level2.md).
    const hold = options.budget?.holdFor(goal);
    if (hold) {
      summary.blocked.push({ goal: goal.id, code: 'budget', reason: hold.reason, detail: hold.detail });
      continue;
    }
    // Opening runs failed on I/O (a full disk): nothing is claimed until the backoff ends, so no write and no spin.
    if (options.faults?.holds('dispatch', now().getTime())) {
      summary.ioHeld.push({ goal: goal.id, reason: `opening runs waits after an I/O fault (${options.faults.get('dispatch')!.words})` });
      continue;
    }
    // In worktree mode each guarded run has its own tree: the rule that one holds back the queue goes.
    if (options.isolation?.held || inFlight >= config.coordinator.maxConcurrentRuns || (!worktrees && (guardedLive || guardWaiting || (inFlight > 0 && isGuarded(goal))))) {
      // A guarded goal that waits for the tree holds back the goals after it in the order, so the tree drains for it.
      if (isGuarded(goal) && !guardedLive) guardWaiting = true;
      // With no local slots at all (max_concurrent_runs = 0), or none allowed (worktrees asked for and impossible), the goal waits for a runner, not for this coordinator.
      if (config.coordinator.maxConcurrentRuns > 0 && !options.isolation?.held) summary.queued += 1;
      continue;
    }
    // A standard-route goal in worktree mode gets its own worktree from the base branch's tip now; a reply to a conversation works in the tree (its session resumes there).
    const ownTree = worktrees && !goal.conversation_id;
    let base: { base_branch: string; base_commit: string } | undefined;
    if (ownTree) {
      // One read of the tip a pass: every goal this pass dispatches starts from the base as it is now.
      baseTip ??= branchTip(paths.gardenRoot, worktrees.base!, options.env ?? process.env).catch(() => undefined);
      const tip = await baseTip;
      if (!tip) {
        summary.rolledBack.push({ goal: goal.id, reason: `the base branch ${worktrees.base} has no commit to start a worktree from` });
        continue;
      }
      base = { base_branch: worktrees.base!, base_commit: tip };
    }
    // Before the goal's first dispatch write, so neither the run directory nor this run's events are in it (seed 000). A fresh worktree starts clean: no baseline.
    const worktreeBaseline = goal.type === 'converse' || ownTree ? undefined : await captureWorktreeBaseline(paths.gardenRoot, paths.runtimeRoot, options.env ?? process.env);
    const runInput = async (): Promise<OpenRunInput> => {
      // An unknown driver or a CLI that cannot start still gets its run: the driver records it as launch_failed (seed 002).
      // A goal with a task_class runs on its routing tier, unless it pins its model (seed 001, routing).
      const plan = goal.task_class ? await planRoute(paths, config, goal) : undefined;
      const settings = resolveSettings(routedGoal(goal, plan), config, options.env ?? process.env, (driver) => pluginDefaults(driver, config));
      return {
        plant: goal.assigned_to!,
        driver: settings.driver,
        model: settings.model ?? 'unknown',
        ...(settings.reasoningEffort ? { reasoningEffort: settings.reasoningEffort } : {}),
        ...(worktreeBaseline ? { worktreeBaseline } : {}),
        ...(base ? { worktree: base } : {}),
      };
    };
    let run: RunRecord;
    if (shared) {
      // One transaction: the goal (SKIP LOCKED: a goal another claimer holds is passed over), its run, the run's lease, running.
      let taken: { value: RunRecord | undefined } | undefined;
      try {
        taken = await tryGoalLock(paths, goal.id, () => claimShared(garden, goal, runInput, shared.holder, now));
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        options.faults?.note('dispatch', error, now().getTime(), `opening a run of ${goal.id} failed`, '; the goal stays in the queue and dispatch waits, retried with a growing backoff (at most 60 s)');
        summary.rolledBack.push({ goal: goal.id, reason: error.message });
        continue;
      }
      if (!taken?.value) continue; // another coordinator or a runner has it
      run = taken.value;
      options.faults?.clear('dispatch');
      shared.claimed(run.id);
    } else {
      // The claim re-reads the goal under its lock: the agent is told what the file says at dispatch.
      let claimed: GoalRecord;
      try {
        claimed = await transitionGoal(paths, goal.id, 'dispatched', { now: now() });
      } catch (error) {
        // A runner claimed it between the read and the claim: it is theirs, not a problem.
        if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') continue;
        if (error instanceof StoreError) {
          summary.problems.push({ file: goal.id, message: error.message });
          continue;
        }
        throw error;
      }
      Object.assign(goal, claimed);
      try {
        run = await openRun(paths, goal, await runInput(), now());
      } catch (error) {
        const faults = options.faults;
        const fault = faults?.note('dispatch', error, now().getTime(), `opening a run of ${goal.id} failed`, '; the goal goes back to the queue and dispatch waits, retried with a growing backoff (at most 60 s)');
        // On a full disk the rollback may fail too: the goal stays dispatched and a later pass repairs it.
        const rolled = await transitionGoal(paths, goal.id, 'queued', { now: now() }).then(
          () => true,
          (again: unknown) => (fault && faults!.note('dispatch', again, now().getTime(), `putting ${goal.id} back in the queue failed`) ? false : Promise.reject(again)),
        );
        if (rolled) summary.rolledBack.push({ goal: goal.id, reason: (error as Error).message });
        continue;
      }
      options.faults?.clear('dispatch');
      await transitionGoal(paths, goal.id, 'running', { now: now() });
    }
    goal.status = 'running';
    runOf.set(goal.id, run);
    inFlight += 1;
    if (isGuarded(goal)) guardedLive = true;
    summary.dispatched.push(run.id);
    const work = startDispatch(options, goal, run.id);
    if (options.awaitDispatch) {
      await work;
      runOf.delete(goal.id);
      inFlight -= 1;
    } else summary.pending.push(work);
  }

  // 2. Watchdog
  const { watchdogSeconds, toolSilenceSeconds } = config.coordinator;
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'blocked') continue;
    const run = await loadRun(goal);
    // A remote run's liveness is its lease (expired below), watched by its runner's own watchdog; one without a lease file cannot be renewed.
    if (run?.runner && !isTerminalRunStatus(run.status)) {
      if (leads && !(await hasActiveLease(paths, run.id)) && (await abandonLeaselessRun(garden, run, now))) summary.abandoned.push(run.id);
      continue;
    }
    if (!run || isTerminalRunStatus(run.status)) continue;
    // Another coordinator's run is watched by it; if it died, the run's lease expires (the leader's step 2b).
    if (shared && !shared.ownsRun(run.id)) continue;
    // A run whose close failed on I/O: closed again, with what was known then, once its backoff ends.
    const stranded = options.faults?.get(`run:${run.id}`);
    if (stranded) {
      if (!options.faults!.holds(stranded.key, now().getTime()) && !options.live?.get(run.id)) {
        const closed = await closeStranded(options, goal, run);
        if (closed) runOf.set(goal.id, closed);
      }
      continue;
    }
    // A goal blocked on a question waits for a person, not a silent agent: no silence limit (run_timeout_seconds still holds).
    if (goal.status === 'blocked') continue;
    const handle = options.live?.get(run.id);
    if (handle?.stopping) continue; // already being stopped; its dispatch closes it
    const eventsFile = runEventsFile(paths, run.id);
    const verdict = decideWatchdog({
      nowMs: now().getTime(),
      // A run followed here: its last progress line; otherwise the seed's mtime, then started_at.
      // The silence clock restarts when an answered question returned the goal to running (its updated_at).
      lastActivityMs: Math.max(handle ? handle.liveness.lastProgressAt : await lastActivity(run, eventsFile), Date.parse(goal.updated_at ?? '') || 0),
      toolOpen: handle ? handle.liveness.openWork > 0 : false,
      watchdogSeconds,
      toolSilenceSeconds,
    });
    if (!verdict.kill) continue;
    const { watchdog, message } = watchdogKill(verdict, handle ? handle.liveness.lastEvent : await lastEventOf(eventsFile), handle ? describeOpenWork(handle.liveness) : []);
    await appendEvent(paths, { type: 'WatchdogKilled', run: run.id, goal: goal.id, plant: run.plant, detail: message }, now());
    summary.killed.push(run.id);
    if (handle) {
      // Its dispatch closes it from the stream, with what the agent says after SIGINT.
      options.live!.stop(run.id, 'killed', { watchdog, message });
      continue;
    }
    const closed = await closeFromStream(garden, run, goal.type, { status: 'killed', failureReason: 'killed', errorText: message, by: 'watchdog', extra: { watchdog } }, now());
    if (closed) runOf.set(goal.id, closed);
    else runOf.delete(goal.id);
  }

  // 2b. Leases of remote runs: one past its TTL closes its run abandoned (docs/runners/level2.md).
  if (leads) summary.abandoned.push(...(await expireLeases(garden, now)));

  // 3. Close completed goals
  runOf.clear(); // the dispatch may have closed runs meanwhile: read them fresh
  // On a shared garden each coordinator settles its own runs' goals, and the leader those no live coordinator owns.
  const settleable = shared ? await settleableShared(paths, goals, loadRun, shared, leads) : goals;
  let settled: SettleOut;
  if (options.settling && !options.awaitDispatch) {
    // Each goal's settle is work of its own (it wakes a pass when it ends): this pass takes what the settles that ended did.
    summary.pending.push(...(await options.settling.start(paths, settleable, loadRun, now, { garden, env: options.env ?? process.env })));
    settled = options.settling.take();
  } else settled = await settleGoals(paths, settleable, loadRun, now, { garden, env: options.env ?? process.env });
  summary.closed = settled.closed;
  summary.requeued = settled.requeued;
  summary.problems.push(...settled.problems);
  const closedRuns = settled.closedRuns;

  // 4. Automatic tends (docs/automatic-tend/level2.md): run_failure for the
  // goals closed above, queued_attention_needed for the queued goals the
  // dispatch phase could not claim. A pure decision, then its effect.
  const tendIds = new Set(goals.filter((g) => g.type === 'tend').map((g) => g.id));
  const stuck = [
    ...summary.skipped.map((id) => ({ goal: id, reason: 'no assigned_to' })),
    ...summary.rolledBack,
    // A goal a cap holds waits for the operator's budget, not a tend: a tend would spend the room a raised cap frees.
    ...summary.blocked.filter((b) => b.code !== 'budget'),
  ].filter((s) => !tendIds.has(s.goal));
  // Stuck goals and attention are the garden's (the leader's); a closed run's tend is its closer's (one closer per run).
  const attentionCovered = leads ? await readAttentionCovered(paths) : [];
  if ((leads && stuck.length > 0) || closedRuns.length > 0 || attentionCovered.length > 0) {
    const decision = decideTends({
      closed: closedRuns,
      stuck: leads ? stuck : [],
      open: goals,
      attentionCovered,
      gardenerProblem: await gardenerProblem(paths),
    });
    summary.tends = await queueTends(garden, decision, attentionCovered, now());
    summary.tendsWithheld = decision.withheld;
  }

  // 5. Landings: the merge queue takes the next landing of a completed goal's run, one at a time (docs/landing/level2.md).
  const held = new Set<string>();
  const open: LandingRecord[] = [];
  for (const goal of goals.filter((g) => g.status === 'completed')) {
    const run = await loadRun(goal);
    const landing = run?.worktree ? await readLanding(paths, run.id).catch(() => undefined) : undefined;
    if (!landing || isTerminalLandingState(landing.state)) continue;
    open.push(landing);
    if (landing.state in summary.landings) summary.landings[landing.state as 'queued' | 'awaiting_review' | 'verifying' | 'waiting'] += 1;
    // Held for the operator (review, or their checkout in the way): not work in flight for `--until-idle`.
    if (landing.state === 'awaiting_review' || landing.state === 'waiting') held.add(goal.id);
  }
  const next = leads && options.lander && !options.lander.busy ? nextLanding(open.filter((l) => options.lander!.ready(l))) : undefined;
  if (next && options.lander) {
    summary.landings.started = next.run;
    const work = options.lander.land(next);
    if (options.awaitDispatch) await work;
    else summary.pending.push(work);
  }

  if (leads) await reportBlocked(paths, summary.blocked, now());
  // A run left for recovery after an I/O fault, or a goal whose settle waits one out, is no work in flight for `--until-idle`.
  if (options.faults && !options.faults.empty) {
    const nowMs = now().getTime();
    for (const goal of goals) {
      const run = goal.status === 'running' ? await loadRun(goal) : undefined;
      if ((run && options.faults.get(`run:${run.id}`)) || options.faults.holds(`settle:${goal.id}`, nowMs)) held.add(goal.id);
    }
  }
  summary.inFlight = goals.filter((g) => (g.status === 'running' || g.status === 'dispatched' || g.status === 'completed') && !held.has(g.id)).length;
  return summary;
}

/** Why a queued goal's plant cannot take it now, or undefined when it can. */
async function plantBlock(paths: Garden['paths'], plantName: string): Promise<string | undefined> {
  try {
    const plant = await readPlant(paths, plantName);
    return plant.status === 'active' ? undefined : `plant ${plant.name} is ${plant.status}`;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The type (and subtype) of the last JSON line of a run's stream, for the watchdog's record. */
async function lastEventOf(eventsFile: string): Promise<string> {
  try {
    const handle = await fsp.open(eventsFile, 'r');
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, 64 * 1024);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      const lines = buffer.toString('utf8').split('\n').filter((l) => l.trim());
      const last = lines.at(-1);
      if (!last) return 'none';
      try {
        const value = JSON.parse(last) as { type?: unknown; subtype?: unknown };
        return [value.type, value.subtype].filter((p) => typeof p === 'string').join(' ') || 'json';
      } catch {
        return 'text';
      }
    } finally {
      await handle.close();
    }
  } catch {
    return 'none';
  }
}

/**
 * Starts the dispatch of an opened run (a driver failure closes it
 * `driver_error`). On a garden with a store, every server tails the run's
 * stream there: its files are copied as the driver writes them until the
 * dispatch ends (the close itself copies the rest).
 */
function startDispatch(options: ReconcileOptions, goal: GoalRecord, runId: string): Promise<unknown> {
  const upload = uploadLocalStreams(options.garden.paths, runId);
  return options
    .dispatch(goal, runId)
    .catch((error: unknown) => failRun(options, goal, runId, error))
    .finally(() => upload?.stop());
}

/**
 * A dispatch function that threw: record why in events.jsonl and close the
 * run from its stream. `driver_error` when the agent had been launched
 * (its process record exists), else `launch_failed`. When the close fails
 * on I/O (a full disk), the run is left for recovery: said in one line
 * (`faults`), not in flight, and closed again with the same facts once its
 * backoff ends ({@link closeStranded}), or by the next start's reclaim.
 */
async function failRun(options: ReconcileOptions, goal: GoalRecord, runId: string, error: unknown): Promise<void> {
  const { paths } = options.garden;
  const launched = await fsp.access(path.join(runDir(paths, runId), RUN_PROCESS_FILE)).then(() => true, () => false);
  const message = `dispatch failed: ${(error as Error)?.message ?? String(error)}`;
  const input = { status: 'failure', failureReason: launched ? 'driver_error' : 'launch_failed', errorText: message, by: 'coordinator' } as const;
  try {
    // Best effort: on a full disk the line may not fit, and the close is tried all the same.
    await appendJsonLine(runEventsFile(paths, runId), { type: 'error', source: 'pak2', message }).catch(() => undefined);
    const run = await readRun(paths, runId);
    await closeFromStream(options.garden, run, goal.type, input, (options.now ?? (() => new Date()))());
  } catch (closing) {
    // An I/O fault strands it (said once); otherwise its directory is gone and the next pass sees what is on disk.
    strand(options, runId, closing, input);
  }
}

/** Notes a run whose close failed on I/O (key `run:<id>`, the close's input kept for the retry); false when the failure was no I/O fault. */
function strand(options: Pick<ReconcileOptions, 'faults' | 'now'>, runId: string, error: unknown, input: StrandedClose): boolean {
  const nowMs = (options.now ?? (() => new Date()))().getTime();
  return options.faults?.note(`run:${runId}`, error, nowMs, `run ${runId} could not be closed`, '; left for recovery: it is closed from its stream once a write succeeds again (or by the next start)', input) ?? false;
}

/** What a stranded run is closed with: the facts its first closer had. */
export type StrandedClose = Omit<Parameters<typeof closeFromStream>[3], 'cost'>;

/**
 * Records a run a closer could not close on I/O (reclaim at start): left
 * for recovery as {@link failRun} leaves one (docs/coordinator/level2.md,
 * "A full disk").
 *
 * @returns false when `error` is no I/O fault (the caller handles it).
 */
export function strandRun(options: Pick<ReconcileOptions, 'faults' | 'now'>, runId: string, error: unknown, input: StrandedClose): boolean {
  return strand(options, runId, error, input);
}

/** Closes a stranded run again with its first closer's facts; on success its fault is forgotten. */
async function closeStranded(options: ReconcileOptions, goal: GoalRecord, run: RunRecord): Promise<RunRecord | undefined> {
  const faults = options.faults!;
  const input = (faults.get(`run:${run.id}`)?.detail as StrandedClose | undefined) ?? { status: 'failure', failureReason: 'driver_error', errorText: 'pak2 could not close the run (an I/O fault)', by: 'coordinator' };
  try {
    const closed = await closeFromStream(options.garden, run, goal.type, input, (options.now ?? (() => new Date()))());
    faults.clear(`run:${run.id}`);
    return closed;
  } catch (error) {
    if (!strand(options, run.id, error, input)) throw error;
    return undefined;
  }
}

/**
 * The tends the runs closed outside a pass call for (docs/automatic-tend/level2.md):
 * what settled while the coordinator stopped, which no later pass will see.
 * The same pure decision as a pass's step 4, with nothing stuck.
 *
 * @returns the tend goals queued.
 */
export async function tendsForClosed(garden: Garden, goals: GoalRecord[], closedRuns: SettleOut['closedRuns'], now: Date): Promise<ReconcileSummary['tends']> {
  if (closedRuns.length === 0) return [];
  const attentionCovered = await readAttentionCovered(garden.paths);
  const decision = decideTends({ closed: closedRuns, stuck: [], open: goals, attentionCovered, gardenerProblem: await gardenerProblem(garden.paths) });
  return queueTends(garden, decision, attentionCovered, now);
}

/**
 * The claim of one goal on a shared garden, run inside its lock's
 * transaction ({@link tryGoalLock}): queued → dispatched, openRun (the run
 * directory here, RunStarted), the run's lease held by this coordinator
 * (`holder`; the leader expires it when this coordinator dies and stops
 * renewing it), → running. A goal no longer queued is left (undefined).
 * Anything that fails rolls the whole claim back: the goal stays queued.
 */
async function claimShared(garden: Garden, goal: GoalRecord, runInput: () => Promise<OpenRunInput>, holder: string, now: () => Date): Promise<RunRecord | undefined> {
  const { paths, config } = garden;
  const current = await dispatchIfQueued(paths, goal.id, now());
  if (!current) return undefined;
  Object.assign(goal, current);
  const run = await openRun(paths, current, await runInput(), now());
  await writeLease(paths, coordinatorLease(run, holder, config.runners.leaseTtlSeconds, now()));
  await transitionGoalLocked(paths, goal.id, 'running', { now: now() });
  return run;
}

/** The lease a coordinator of a shared garden holds on a run of its own: renewed while it lives, expired by the leader when it does not. */
export function coordinatorLease(run: RunRecord, holder: string, ttlSeconds: number, at: Date): LeaseRecord {
  return newLease(nextLeaseId(at.getTime()), run, { name: 'coordinator', host: os.hostname(), instance: holder }, ttlSeconds, at);
}


/**
 * The goals a coordinator of a shared garden settles: those whose latest run
 * it owns; and, as the leader, those whose run nobody live owns (a remote
 * run; a run whose coordinator's lease expired or is gone).
 */
async function settleableShared(paths: Garden['paths'], goals: GoalRecord[], loadRun: (goal: GoalRecord) => Promise<RunRecord | undefined>, shared: SharedGarden, leads: boolean): Promise<GoalRecord[]> {
  const out: GoalRecord[] = [];
  for (const goal of goals) {
    if (goal.status === 'queued') continue;
    const run = await loadRun(goal);
    if (!run) {
      if (leads) out.push(goal);
      continue;
    }
    if (shared.ownsRun(run.id)) {
      out.push(goal);
      continue;
    }
    if (!leads) continue;
    if (run.runner) {
      out.push(goal);
      continue;
    }
    const lease = await readLease(paths, run.id).catch(() => undefined);
    // A coordinator's run: its owner settles it while its lease lives.
    if (!lease || lease.runner.name !== 'coordinator' || lease.state === 'expired') out.push(goal);
  }
  return out;
}
