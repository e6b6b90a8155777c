import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reloadConfig, runDir, type ConfigStatus, type Garden } from '../garden/index.js';
import { RUN_PROCESS_FILE } from '../driver/dispatch.js';
import { DirectoryWake } from '../watch.js';
import { span, timed } from '../timing.js';
import { dispatch as driverDispatch, type DriverContext } from '../driver/index.js';
import { createRunGuard, isGuarded, planRoute } from '../guard/index.js';
import { appendEvent, endLease, ensureRuntimeRoot, latestRun, onEvent, OpenGoalScanner, readLease, storeOf, withLeaseLock, writeLease } from '../store/index.js';
import { Leadership } from './leader.js';
import { acquireCoordinatorLock, type CoordinatorReply, type CoordinatorRequest, type CoordinatorService, type CoordinatorState } from './lock.js';
import { LiveRuns } from './live-runs.js';
import { reclaimOrphans } from './reclaim.js';
import { BudgetGate } from './budget-gate.js';
import { recoverInterruptedWrites } from './recover.js';
import type { DependencyFact } from './readiness.js';
import { reconcile, settleGoals, tendsForClosed, type DispatchFn, type ReconcileSummary } from './reconcile.js';
import { Settling } from './settle.js';
import { IoFaults } from './io-faults.js';
import { Lander } from './lander.js';
import { emptyTrash, gardenIsolationNow, type Isolation } from '../worktree/index.js';
import { pruneLandedBranches } from './prune.js';
import type { ScheduledSubmit } from './schedules.js';

/** Options of a {@link Coordinator}. */
export interface CoordinatorOptions {
  garden: Garden;
  /** Defaults to the driver's dispatch with this coordinator's live-run registry. */
  dispatch?: DispatchFn;
  /** Agent stderr sink; default: this process's stderr. The TUI passes its own. */
  onStderr?: DriverContext['onStderr'];
  /** Called after every pass with its summary. */
  onPass?: (summary: ReconcileSummary) => void;
  /** Called when a pass throws; the loop goes on. */
  onError?: (error: Error) => void;
  now?: () => Date;
  /** Label written into the lock holder record. */
  command?: string;
  /** Debounce of file-watch wake-ups, ms. Default 50. */
  debounceMs?: number;
  /** The agents' base environment and the override chain's `PAK2_DEFAULT_*`; default this process's. */
  env?: NodeJS.ProcessEnv;
  /**
   * What the session around the coordinator does at two points: before the
   * first pass (the startup window's note), and after each pass, before
   * `pass` is emitted (its play-by-play). Errors are theirs to handle.
   */
  hooks?: { beforeFirstPass?: () => Promise<void>; afterPass?: (summary: ReconcileSummary) => Promise<void> };
  /**
   * Told when PAK2.toml changed as a pass found it (docs/garden/level2.md,
   * "Changing PAK2.toml while pak2 runs"): the live keys now in force, the
   * keys that wait for a restart, or why the file is not in force. Once per
   * change, before the pass that acts on it.
   */
  onConfig?: (status: ConfigStatus) => void;
  /** How a `[[schedule]]` firing submits its goal (the session passes submit's `submitScheduledGoal`); absent, schedules do not fire (docs/schedules/level2.md). */
  submitScheduled?: ScheduledSubmit;
}

export type { CoordinatorState } from './lock.js';

/** The events after which a watcher of the coordinator socket is sent its status (when it changed). */
const STATUS_EVENTS = ['state', 'pass', 'live'] as const;

/**
 * The coordinator loop (seed 002, "Running the coordinator"): holds the
 * garden's single-coordinator lock, runs {@link reconcile} on its timer
 * (`[coordinator].interval_seconds`) and whenever the goals directory changes
 * (a goal written by another process dispatches within a second) or a run
 * ends. Passes never overlap. Dispatches run in the background, so the TUI
 * never blocks while a run is live.
 *
 * PAK2.toml is read again at the start of every pass when it changed, and
 * a change wakes a pass: every key but the restart keys is in force from
 * that pass on (source/garden/reload.ts).
 *
 * Emits `pass` (ReconcileSummary), `state` (CoordinatorState), `live` (a
 * run's agent process started or ended), `error` (Error), `config`
 * (ConfigStatus, as `onConfig`).
 */
export class Coordinator extends EventEmitter {
  readonly live = new LiveRuns(() => this.emit('live'));
  /**
   * The open-goal scanner of recovery, reclaim and every pass; a snapshot
   * source in the same process reads through it too, so the goal files are
   * read (and kept) once.
   */
  readonly scanner: OpenGoalScanner;
  private readonly dispatchFn: DispatchFn;
  /** Budgets: the ledger, the caps, the stop of a run past one (docs/budget/level2.md). */
  readonly budget: BudgetGate;
  private release: (() => Promise<void>) | undefined;
  private watcher: DirectoryWake | undefined;
  /** Wakes a pass when PAK2.toml changes (its directory's watch, only that name). */
  private configWatcher: DirectoryWake | undefined;
  /** The `ConfigStatus.version` said last through `onConfig`. */
  private configSaid = 0;
  /** The interval the timer and the lease renewal were armed with (seconds), to arm them again when PAK2.toml changes them. */
  private timerSeconds = 0;
  private leaseTtlSeconds = 0;
  private stopListening: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private again = false;
  private readonly pending = new Set<Promise<unknown>>();
  /**
   * Work held back by I/O faults (a full disk: docs/coordinator/level2.md,
   * "A full disk"); each fault is said once through `onError`.
   */
  readonly faults: IoFaults;
  private readonly settling: Settling;
  /** Wakes a pass when the earliest I/O backoff ends. */
  private retryTimer: NodeJS.Timeout | undefined;
  /** Wakes a pass at the next `[[schedule]]` due time (the interval timer alone could be up to a minute late). */
  private scheduleTimer: NodeJS.Timeout | undefined;
  private lastSummary: ReconcileSummary | undefined;
  /** Closed dependencies' facts across passes (a closed goal never changes). */
  private readonly closedDependencies = new Map<string, DependencyFact>();
  private stateValue: CoordinatorState = 'stopped';
  private idleWaiters: (() => void)[] = [];
  private lander: Lander | undefined;
  private isolationValue: Isolation = { mode: 'tree' };
  /** On a garden shared through a store: who leads, and the runs this coordinator launched (docs/store/level2.md). */
  private leadership: Leadership | undefined;
  private readonly mine = new Set<string>();
  /** Runs whose dispatch is under way here (between turns and through the close too, not only while an agent lives). */
  private readonly dispatching = new Set<string>();
  private leaseTimer: NodeJS.Timeout | undefined;
  private unwatchStore: (() => Promise<void>) | undefined;

  constructor(private readonly options: CoordinatorOptions) {
    super();
    this.scanner = new OpenGoalScanner(options.garden.paths);
    // PAK2.toml as this coordinator starts with it: the baseline later changes are told against.
    reloadConfig(options.garden);
    this.faults = new IoFaults((line) => this.options.onError?.(new Error(line)));
    this.settling = new Settling(this.faults);
    this.budget = new BudgetGate(
      options.garden,
      options.now ?? (() => new Date()),
      (runId, detail) => this.live.stop(runId, 'budget', detail),
      (message) => this.options.onError?.(new Error(message)),
    );
    const driverCtx: DriverContext = {
      garden: options.garden,
      onRunStart: (runId, handle) => this.live.add(runId, handle),
      onRunEnd: (runId) => this.live.remove(runId),
      onSpend: (runId, spend, reported) => this.budget.onSpend(runId, spend, reported),
      ...(options.onStderr ? { onStderr: options.onStderr } : {}),
      ...(options.now ? { now: options.now } : {}),
      ...(options.env ? { env: options.env } : {}),
      guardFor: async (goal, run) => {
        if (!isGuarded(goal)) return undefined;
        const plan = await planRoute(options.garden.paths, options.garden.config, goal);
        return createRunGuard({ garden: options.garden, goal, run, env: options.env ?? process.env, now: options.now ?? (() => new Date()), ...(plan ? { plan } : {}) });
      },
    };
    const dispatch: DispatchFn = options.dispatch ?? ((goal, runId) => timed('dispatch (run opened → run closed)', () => driverDispatch(goal, runId, driverCtx)));
    // Each run's spend is followed from its dispatch to its end (docs/budget/level2.md).
    this.dispatchFn = (goal, runId) => {
      this.budget.track(runId, goal);
      this.dispatching.add(runId);
      return dispatch(goal, runId).finally(async () => {
        this.dispatching.delete(runId);
        this.budget.untrack(runId);
        // A shared garden's run is closed: its lease ends with it (a late end after an expiry changes nothing).
        if (this.leadership?.shared) await this.endOwnLease(runId).catch(() => undefined);
      });
    };
  }

  /** Current state. */
  get state(): CoordinatorState {
    return this.stateValue;
  }

  /** The last pass's summary. */
  get summary(): ReconcileSummary | undefined {
    return this.lastSummary;
  }

  /** How this coordinator isolates runs (decided at start; docs/landing/level2.md, "Worktrees"). */
  get isolation(): Isolation {
    return this.isolationValue;
  }

  private setState(state: CoordinatorState): void {
    if (state === this.stateValue) return;
    this.stateValue = state;
    this.emit('state', state);
  }

  /** Whether this start appended CoordinatorStarted (a failed start then appends CoordinatorStopped). */
  private startedEvent = false;
  private lockTaken = false;

  /**
   * Whether the last {@link start} took the garden's lock: false for a start
   * refused because another coordinator holds the garden (what the log says
   * meanwhile is that one's), true for one that then failed holding it.
   */
  get tookLock(): boolean {
    return this.lockTaken;
  }

  /**
   * Takes the lock, starts watching and the timer, and runs the first pass.
   * A start that fails after taking the lock (a closed ledger that cannot be
   * read) appends CoordinatorStopped with the cause and releases the lock.
   *
   * @throws UserError when another coordinator holds the garden; the
   * StoreError of a store that cannot be read.
   */
  async start(): Promise<void> {
    const { paths } = this.options.garden;
    this.stopRequested = false;
    this.lockTaken = false;
    this.release = await acquireCoordinatorLock(
      paths,
      this.options.command ?? 'pak2 cycle',
      (error) => {
        // Someone removed the lock (or the runtime root): another coordinator could start, so stop.
        this.options.onError?.(new Error(`coordinator lock lost (${error.message}); stopping`));
        void this.stop();
      },
      () => this.service,
    );
    this.lockTaken = true;
    try {
      await this.startHolding();
    } catch (error) {
      // A start that fails holding the lock (a ledger that cannot be read) leaves no holder behind.
      if (this.startedEvent) await appendEvent(paths, { type: 'CoordinatorStopped', detail: `pid ${process.pid}; the start failed: ${(error as Error).message}` }).catch(() => undefined);
      await this.release?.();
      this.release = undefined;
      this.setState('stopped');
      throw error;
    }
  }

  private async startHolding(): Promise<void> {
    const { paths } = this.options.garden;
    await ensureRuntimeRoot(paths);
    fs.mkdirSync(paths.goalsDir, { recursive: true });
    const store = storeOf(paths);
    await appendEvent(paths, { type: 'CoordinatorStarted', detail: `pid ${process.pid}${store ? ` on ${os.hostname()}, garden in ${store.where}` : ''}` });
    this.startedEvent = true;
    if (store) {
      // Many coordinators share the garden: one leads the once-per-garden duties (docs/store/level2.md).
      this.leadership = new Leadership(this.options.garden, 'coordinator', (leader, term) => {
        this.emit('leader', leader, term);
        this.wake(0);
      });
      await this.leadership.start();
      // Any process's commit wakes a pass (LISTEN/NOTIFY); the timer stays as the backstop.
      this.unwatchStore = await store.watchEvents(() => this.wake());
      this.armLeaseTimer();
    } else {
      // A killed coordinator can leave a record written without its event: complete those first (a store's writes are atomic).
      // One scanner for recovery, reclaim and the passes: the goal files are read once at start, then only stat'ed.
      const recovered = await recoverInterruptedWrites(this.options.garden, this.options.now, this.scanner);
      if (recovered.length > 0) this.emit('recovered', recovered);
    }
    // On a shared garden only this checkout's runs (their process.json is here) are this coordinator's to reclaim.
    const reclaimed = await reclaimOrphans(this.options.garden, this.options.now, this.scanner, this.faults);
    if (store) {
      for (const runId of reclaimed) this.mine.add(runId);
      await this.adoptCheckoutRuns();
    }
    // Worktrees or the one tree: decided once, from what the repository is now.
    const env = this.options.env ?? process.env;
    this.isolationValue = await gardenIsolationNow(this.options.garden, env);
    // Said where the operator looks (stderr headless, the problems list in the workbench), at every start.
    if (this.isolationValue.reason) this.options.onError?.(new Error(this.isolationValue.reason));
    this.lander = new Lander(this.options.garden, env, this.options.now);
    if (this.isolationValue.mode === 'worktree') {
      await pruneLandedBranches(this.options.garden, env, this.options.now).catch((error: Error) => this.options.onError?.(new Error(`pruning landed branches: ${error.message}`)));
      // What removed worktrees left to delete when the process that removed them ended first.
      void emptyTrash(path.join(paths.runtimeRoot, 'worktrees'));
    }
    await this.options.hooks?.beforeFirstPass?.();
    // O(1) at start whatever the number of goal files, and re-armed when goals/ is replaced.
    this.watcher = new DirectoryWake([paths.goalsDir], () => this.wake(), (name) => name.endsWith('.lock') || name.endsWith('.tmp'));
    this.watcher.start();
    // A run's record closed: its slot is free now, while its dispatch still captures the runtime history (a close never holds the next dispatch).
    this.stopListening = onEvent((event) => {
      if (event.type === 'RunClosed') this.wake(0);
    });
    this.configWatcher = new DirectoryWake([paths.gardenRoot], () => this.wake(), (name) => name !== path.basename(paths.configFile));
    this.configWatcher.start();
    this.armTimer();
    this.setState('idle');
    this.wake(0);
  }

  /** The pass timer, every `[coordinator].interval_seconds` as in force now. */
  private armTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timerSeconds = this.options.garden.config.coordinator.intervalSeconds;
    this.timer = setInterval(() => this.wake(0), this.timerSeconds * 1000);
  }

  /** On a shared garden: this coordinator's leases renewed every third of `[runners].lease_ttl_seconds` as in force now. */
  private armLeaseTimer(): void {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTtlSeconds = this.options.garden.config.runners.leaseTtlSeconds;
    this.leaseTimer = setInterval(() => void this.renewOwnLeases(), Math.max(1000, (this.leaseTtlSeconds * 1000) / 3));
    this.leaseTimer.unref();
  }

  /**
   * PAK2.toml as it is now, before a pass acts on it: read again when it
   * changed (a bad edit leaves the configuration read last in force), the
   * timers armed again for new intervals, and a change said once.
   */
  private applyConfig(): void {
    const status = reloadConfig(this.options.garden);
    const { coordinator, runners } = this.options.garden.config;
    if (this.timer && coordinator.intervalSeconds !== this.timerSeconds) this.armTimer();
    if (this.leaseTimer && runners.leaseTtlSeconds !== this.leaseTtlSeconds) this.armLeaseTimer();
    if (status.version === this.configSaid) return;
    this.configSaid = status.version;
    this.options.onConfig?.(status);
    this.emit('config', status);
  }

  /** One pass when the earliest I/O backoff ends (work held back is tried again then, not before). */
  private wakeAtRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const next = this.faults.nextRetryMs();
    if (next === undefined || this.stopRequested || this.stateValue === 'stopped') return;
    const now = (this.options.now ?? (() => new Date()))().getTime();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.wake(0);
    }, Math.max(0, next - now) + 10);
  }

  /** One pass at the next schedule due time the last pass reported (`nextScheduleAt`). */
  private wakeAtSchedule(): void {
    if (this.scheduleTimer) clearTimeout(this.scheduleTimer);
    this.scheduleTimer = undefined;
    const next = this.lastSummary?.nextScheduleAt;
    if (next === undefined || this.stopRequested || this.stateValue === 'stopped') return;
    const now = (this.options.now ?? (() => new Date()))().getTime();
    // Node timers hold at most 2^31 - 1 ms; a later due time is met by a pass on the way.
    const delay = Math.min(Math.max(0, Date.parse(next) - now) + 10, 2 ** 31 - 1);
    this.scheduleTimer = setTimeout(() => {
      this.scheduleTimer = undefined;
      this.wake(0);
    }, delay);
  }

  /** Asks for a pass soon (debounced); a pass already under way is followed by one more. */
  wake(delayMs = this.options.debounceMs ?? 50): void {
    if (this.stopRequested || this.stateValue === 'stopped') return;
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      void this.pass();
    }, delayMs);
  }

  private async pass(): Promise<void> {
    if (this.passing) {
      this.again = true;
      return this.passing;
    }
    // A stopping coordinator starts no pass: one begun after stop() released the lock would race the next holder.
    if (this.stopRequested) return;
    this.setState('reconciling');
    this.passing = (async () => {
      const endPass = span('reconcile pass');
      try {
        this.applyConfig();
        const summary = await reconcile({
          garden: this.options.garden,
          dispatch: this.dispatchFn,
          live: this.live,
          scanner: this.scanner,
          closedDependencies: this.closedDependencies,
          isolation: this.isolationValue,
          ...(this.lander ? { lander: this.lander } : {}),
          settling: this.settling,
          faults: this.faults,
          budget: this.budget,
          ...(this.options.now ? { now: this.options.now } : {}),
          ...(this.options.env ? { env: this.options.env } : {}),
          ...(this.options.submitScheduled ? { submitScheduled: this.options.submitScheduled } : {}),
          ...(this.leadership?.shared
            ? {
                shared: {
                  leader: this.leadership.leader,
                  holder: this.leadership.holder,
                  ownsRun: (runId: string) => this.mine.has(runId),
                  claimed: (runId: string) => this.mine.add(runId),
                },
              }
            : {}),
        });
        for (const work of summary.pending) {
          this.pending.add(work);
          void work.finally(() => {
            this.pending.delete(work);
            this.wake(0);
          });
        }
        this.lastSummary = summary;
        await this.options.hooks?.afterPass?.(summary);
        // Closing or dispatching changes what the next pass sees: look again.
        if (summary.closed.length > 0 || summary.requeued.length > 0 || summary.tends.length > 0 || summary.schedules.length > 0) this.again = true;
        this.options.onPass?.(summary);
        this.emit('pass', summary);
      } catch (error) {
        this.options.onError?.(error as Error);
        if (this.listenerCount('error') > 0) this.emit('error', error);
      } finally {
        endPass();
      }
    })();
    await this.passing;
    this.passing = undefined;
    // The pass stop() waited for ends here: the coordinator stays stopping, and no pass follows.
    if (this.stopRequested) return;
    this.setState(this.pending.size > 0 ? 'running' : 'idle');
    if (this.isIdle()) for (const resolve of this.idleWaiters.splice(0)) resolve();
    this.wakeAtRetry();
    this.wakeAtSchedule();
    if (this.again) {
      this.again = false;
      this.wake(0);
    }
  }

  private async settle(): Promise<void> {
    const { paths } = this.options.garden;
    const now = this.options.now ?? (() => new Date());
    const scanned = (await this.scanner.scan()).goals;
    // On a shared garden a stopping coordinator settles its own runs' goals; the rest are their owners' or the leader's.
    const goals = this.leadership?.shared ? await this.ownGoals(scanned) : scanned;
    const settled = await settleGoals(paths, goals, (goal) => latestRun(paths, goal.id).catch(() => undefined), now, { garden: this.options.garden, env: this.options.env ?? process.env });
    // Closed by a settle no pass will follow (the last ones in flight, and this one): their tends are queued here.
    await tendsForClosed(this.options.garden, goals, [...this.settling.take().closedRuns, ...settled.closedRuns], now());
  }

  /** The goals whose latest run this coordinator launched. */
  private async ownGoals(goals: Awaited<ReturnType<OpenGoalScanner['scan']>>['goals']): Promise<typeof goals> {
    const { paths } = this.options.garden;
    const out: typeof goals = [];
    for (const goal of goals) {
      const run = await latestRun(paths, goal.id).catch(() => undefined);
      if (run && this.mine.has(run.id)) out.push(goal);
    }
    return out;
  }

  /**
   * Renews the leases of this coordinator's runs in dispatch on a shared garden.
   * A lease found expired was taken by the leader (this coordinator was cut
   * off longer than the TTL): the run is closed `abandoned` already, so its
   * agent is stopped and its late close changes nothing. A lease that
   * carries an operator's stop (`pak2 stop` or a workbench in another
   * checkout: `stop` on the lease, as a runner's heartbeat is told) has its
   * run stopped as the operator asked.
   */
  private async renewOwnLeases(): Promise<void> {
    const { paths } = this.options.garden;
    const now = this.options.now ?? (() => new Date());
    // Every run whose dispatch is under way: its close (reflection, redaction, the stream's last upload) can outlast a TTL.
    for (const runId of this.dispatching) {
      try {
        const found = await withLeaseLock(paths, runId, async () => {
          const lease = await readLease(paths, runId);
          if (!lease || lease.runner.instance !== this.leadership?.holder) return undefined;
          if (lease.state !== 'active') return 'fenced' as const;
          const at = now();
          await writeLease(paths, { ...lease, renewed_at: at.toISOString(), expires_at: new Date(at.getTime() + lease.ttl_seconds * 1000).toISOString(), heartbeats: lease.heartbeats + 1 });
          return lease.stop;
        });
        if (found === 'fenced') this.live.stop(runId, 'coordinator_stopped');
        else if (found && !this.live.get(runId)?.stopping) this.live.stop(runId, 'operator', { message: 'stopped by the operator', requeue: found.requeue });
      } catch (error) {
        this.options.onError?.(new Error(`renewing the lease of ${runId}: ${(error as Error).message}`));
      }
    }
  }

  /**
   * On a shared garden, at start: the runs an earlier coordinator of this
   * checkout launched (their process.json is here; that coordinator is gone,
   * this one holds the checkout's lock) are this one's to settle, and their
   * leases are ended, so nobody waits out a TTL for a run already closed.
   */
  private async adoptCheckoutRuns(): Promise<void> {
    const { paths } = this.options.garden;
    const { goals } = await this.scanner.scan();
    for (const goal of goals) {
      if (goal.status === 'queued') continue;
      const run = await latestRun(paths, goal.id).catch(() => undefined);
      if (!run || run.runner || !fs.existsSync(path.join(runDir(paths, run.id), RUN_PROCESS_FILE))) continue;
      this.mine.add(run.id);
      await this.endOwnLease(run.id).catch(() => undefined);
    }
  }

  /** Ends the lease this coordinator holds on one of its runs (`finished`), when it is still active. */
  private async endOwnLease(runId: string): Promise<void> {
    const { paths } = this.options.garden;
    const now = this.options.now ?? (() => new Date());
    await withLeaseLock(paths, runId, async () => {
      const lease = await readLease(paths, runId);
      if (lease?.state === 'active' && lease.runner.name === 'coordinator') await endLease(paths, lease, 'finished', now());
    });
  }

  /**
   * What the coordinator socket serves (docs/workbench/level2.md,
   * "Attached"): operator requests, and this coordinator's state and live
   * runs for a watcher (an attached workbench), told at each change.
   */
  private readonly service: CoordinatorService = {
    handle: (request) => this.handleRequest(request),
    status: () => ({ state: this.stateValue, live: this.live.ids() }),
    onStatus: (listener) => {
      // One set of listeners for every watcher, hooked to the coordinator's events once.
      if (this.statusListeners.size === 0) for (const event of STATUS_EVENTS) this.on(event, this.tellWatchers);
      this.statusListeners.add(listener);
      return () => {
        this.statusListeners.delete(listener);
        if (this.statusListeners.size === 0) for (const event of STATUS_EVENTS) this.off(event, this.tellWatchers);
      };
    },
  };
  private readonly statusListeners = new Set<() => void>();
  private readonly tellWatchers = () => {
    for (const listener of this.statusListeners) listener();
  };

  /** Operator requests over the coordinator socket (`pak2 stop`). */
  private async handleRequest(request: CoordinatorRequest): Promise<CoordinatorReply> {
    // A landing accepted or a record changed outside goals/: look again now.
    if (request.op === 'wake') {
      this.wake(0);
      return { ok: true, detail: 'a pass is on its way' };
    }
    if (request.op !== 'stop') return { ok: false, error: `unknown request ${JSON.stringify((request as { op?: unknown }).op)}` };
    const handle = this.live.get(request.run);
    if (!handle) return { ok: false, error: `run ${request.run} has no live process in this coordinator` };
    if (handle.stopping) return { ok: true, detail: `run ${request.run} is already being stopped (${handle.stopping})` };
    this.live.stop(request.run, 'operator', { message: 'stopped by the operator', requeue: Boolean(request.requeue) });
    return { ok: true, detail: `run ${request.run}: SIGINT sent to its process group; SIGKILL follows in 3 s` };
  }

  /** True when nothing can be dispatched, nothing is in flight and no dispatch is pending. */
  isIdle(): boolean {
    const s = this.lastSummary;
    return !!s && this.pending.size === 0 && s.dispatched.length === 0 && s.queued === 0 && s.inFlight === 0 && s.closed.length === 0 && s.requeued.length === 0 && s.tends.length === 0;
  }

  /** Resolves once a pass finds the garden idle (`pak2 cycle --until-idle`). */
  untilIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops the loop. Live runs are stopped (their process groups killed) and
   * closed `killed` with failure_reason `coordinator_stopped`; then the lock
   * is released. Idempotent.
   */
  async stop(): Promise<void> {
    if (this.stopRequested || this.stateValue === 'stopped') return;
    this.stopRequested = true;
    this.setState('stopping');
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    if (this.timer) clearInterval(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.scheduleTimer) clearTimeout(this.scheduleTimer);
    this.watcher?.close();
    this.configWatcher?.close();
    this.stopListening?.();
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await this.unwatchStore?.().catch(() => undefined);
    this.unwatchStore = undefined;
    await this.passing;
    this.live.stopAll('coordinator_stopped');
    await Promise.allSettled([...this.pending]);
    await this.lander?.idle();
    const { paths } = this.options.garden;
    // Put the interrupted goals back in the queue (and close finished ones) now, not at the next start.
    await this.settle().catch((error: Error) => this.options.onError?.(new Error(`settling goals at stop: ${error.message}`)));
    await appendEvent(paths, { type: 'CoordinatorStopped', detail: `pid ${process.pid}` }).catch(() => undefined);
    await this.leadership?.stop();
    await this.release?.();
    this.release = undefined;
    this.setState('stopped');
  }

  /** Set by stop(), cleared by start(): the state word alone can be overwritten by a pass that was under way. */
  private stopRequested = false;
}
