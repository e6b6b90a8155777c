import path from 'node:path';
import type { Garden } from '../garden/index.js';
import { landingsDir } from '../garden/index.js';
import { leasesDir, replyDir, runEventsFile, runStreamReader, storeOf, type OpenGoalScanner } from '../store/index.js';
import { DirectoryWake } from '../watch.js';

/** On a garden in a store: a reload this often besides the commit notices, ms. */
const STORE_BACKSTOP_MS = 3000;
import { GuardFollower } from './guard.js';
import { SnapshotLoader } from './load.js';
import { RemoteFollower } from './remote.js';
import { RunTail } from './tail.js';
import type { AttachedView, CoordinatorView, ServerView, Snapshot } from './types.js';

/** What the source needs to know of a coordinator running in the same process. */
export interface CoordinatorProbe {
  readonly state: CoordinatorView;
  readonly live: { ids(): string[] };
  on(event: 'state' | 'pass', listener: () => void): unknown;
  off(event: 'state' | 'pass', listener: () => void): unknown;
  /** Its open-goal scanner: the source reads the goals through it instead of reading every goal file a second time. */
  readonly scanner?: OpenGoalScanner;
}

/** What the source needs to know of the other process's coordinator a workbench is attached to (source/session/attachment.ts). */
export interface AttachmentProbe {
  readonly view: AttachedView | undefined;
  on(event: 'change', listener: () => void): unknown;
  off(event: 'change', listener: () => void): unknown;
}

/** Options of {@link SnapshotSource}. */
export interface SnapshotSourceOptions {
  garden: Garden;
  /** The in-process coordinator; absent for the read-only dashboard. */
  coordinator?: CoordinatorProbe;
  /** The coordinator of another process this workbench attached to, when it did (docs/workbench/level2.md, "Attached"). */
  attachment?: AttachmentProbe;
  readOnly?: boolean;
  /** Coalescing window for bursts of file events, ms. Default 50. */
  coalesceMs?: number;
  /** How often the followed tail is polled besides file events, ms. Default 500. */
  tailPollMs?: number;
}

/** How many reported problems (coordinator errors) a source keeps, the newest. */
export const REPORTED_PROBLEMS_MAX = 50;

/** The snapshot before the first load: an empty, read-only garden. */
export const EMPTY_SNAPSHOT: Snapshot = {
  version: 0,
  takenAt: new Date(0).toISOString(),
  garden: { name: '', root: '', runtimeRoot: '', readOnly: true, drivers: [] },
  coordinator: { state: 'absent', liveRuns: [] },
  goals: [],
  counts: { queued: 0, inFlight: 0, closedShown: 0 },
  plants: [],
  inbox: [],
  chat: { conversationId: undefined, messages: [] },
  costToday: { usd: 0, runs: 0, unknown: 0 },
  tail: undefined,
  problems: [],
  leases: {},
  questions: [],
  attention: [],
};

/**
 * The read model (STYLE.md, "The seam between core and views"): watches the
 * garden's directories (DirectoryWake: one watch per directory, no stat of
 * their entries, so starting costs the same whatever the history) and
 * publishes immutable snapshots through `getSnapshot()` /
 * `subscribe(listener)`. Bursts of file events are coalesced; the followed
 * run's tail is read from its last offset. File events only wake a reload;
 * they carry no payload.
 */
export class SnapshotSource {
  private snapshot: Snapshot = EMPTY_SNAPSHOT;
  private readonly listeners = new Set<() => void>();
  private readonly loader: SnapshotLoader;
  private wake: DirectoryWake | undefined;
  /** Reloads when PAK2.toml changes (the load reads it again: source/garden/reload.ts). */
  private configWake: DirectoryWake | undefined;
  private unwatchStore: (() => Promise<void>) | undefined;
  private storeTimer: NodeJS.Timeout | undefined;
  private wakeKey = '';
  private timer: NodeJS.Timeout | undefined;
  private tailTimer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private again = false;
  private tail: RunTail | undefined;
  private followed: string | undefined;
  private stopped = false;
  private server: ServerView | undefined;
  private readonly onCoordinator = () => this.schedule();
  /** The attached coordinator's state, live runs, or its going: published at once, no reload of the garden. */
  private readonly onAttachment = () => {
    if (this.snapshot.version === 0) return;
    this.publish({ ...this.snapshot, coordinator: this.coordinatorOf() });
    this.schedule();
  };
  /** The followed run's guard files (one run), re-read only when they change. */
  private readonly guard: GuardFollower;
  /** The followed run's runner side (lease, artifacts), when a runner runs it. */
  private readonly remote: RemoteFollower;

  constructor(private readonly options: SnapshotSourceOptions) {
    this.loader = new SnapshotLoader(options.garden, options.coordinator?.scanner);
    this.guard = new GuardFollower(options.garden);
    this.remote = new RemoteFollower(options.garden.paths);
  }

  /** The current snapshot (stable identity until something changes). */
  getSnapshot = (): Snapshot => this.snapshot;

  /** Registers a listener told after each new snapshot; returns the unsubscribe function. */
  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Loads the first snapshot and starts watching. */
  async start(): Promise<void> {
    await this.reload();
    this.rewatch();
    const { configFile, gardenRoot } = this.options.garden.paths;
    this.configWake = new DirectoryWake([gardenRoot], () => this.schedule(), (name) => name !== path.basename(configFile));
    this.configWake.start();
    const store = storeOf(this.options.garden.paths);
    if (store) {
      // A garden in a store changes on other machines too: every commit that leaves an event wakes a reload (LISTEN/NOTIFY),
      // and a slow timer catches a write that left none.
      this.unwatchStore = await store.watchEvents(() => this.schedule()).catch(() => undefined);
      this.storeTimer = setInterval(() => this.schedule(), STORE_BACKSTOP_MS);
      this.storeTimer.unref();
    }
    this.options.coordinator?.on('state', this.onCoordinator);
    this.options.coordinator?.on('pass', this.onCoordinator);
    this.options.attachment?.on('change', this.onAttachment);
    this.tailTimer = setInterval(() => this.pollTail(), this.options.tailPollMs ?? 500);
    this.tailTimer.unref();
  }

  /**
   * The directories whose changes the snapshot shows: goals, events, the
   * inbox and its reply notes, conversations and the one shown, plants and
   * each plant's memory, skills and knowledge, the comment threads (a new
   * question on a goal already blocked), the active leases (heartbeats) and
   * the landings (a review accepted, a landing verifying, landed).
   * Those that do not exist yet are watched once they appear.
   */
  private wakeDirs(): string[] {
    const { paths, config } = this.options.garden;
    const dirs = [paths.goalsDir, paths.eventsDir, paths.inboxDir, replyDir(paths, config), paths.conversationsDir, paths.plantsDir, path.join(paths.runtimeRoot, 'comments'), leasesDir(paths), landingsDir(paths)];
    const shown = this.snapshot.chat.conversationId;
    if (shown) dirs.push(path.join(paths.conversationsDir, shown));
    for (const view of this.snapshot.plants) {
      const dir = path.join(paths.plantsDir, view.plant.name);
      dirs.push(dir, path.join(dir, 'memory'), path.join(dir, 'skills'), path.join(dir, 'knowledge'));
    }
    return dirs;
  }

  /** Watches the directories of {@link wakeDirs}, anew when that set changed (a new plant, another conversation shown). */
  private rewatch(): void {
    if (this.stopped) return;
    const dirs = this.wakeDirs();
    const key = dirs.join('\n');
    if (this.wake && key === this.wakeKey) return;
    this.wake?.close();
    this.wakeKey = key;
    this.wake = new DirectoryWake(dirs, () => this.schedule(), (name) => name.endsWith('.lock'));
    this.wake.start();
  }

  /** Stops watching. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.tailTimer) clearInterval(this.tailTimer);
    this.options.coordinator?.off('state', this.onCoordinator);
    this.options.coordinator?.off('pass', this.onCoordinator);
    this.options.attachment?.off('change', this.onAttachment);
    this.wake?.close();
    this.configWake?.close();
    if (this.storeTimer) clearInterval(this.storeTimer);
    await this.unwatchStore?.().catch(() => undefined);
    await this.loading;
  }

  /**
   * Chooses the run the tail follows: a run id, or undefined for "the
   * running run, else the newest run shown".
   */
  follow(runId: string | undefined): void {
    if (runId === this.followed) return;
    this.followed = runId;
    // Only the tail changes: swap it on the current snapshot, no reload of the garden.
    if (this.snapshot.version > 0) {
      this.retarget(this.snapshot);
      void this.pollGuard();
      void this.pollRemote();
    }
  }

  private retarget(base: Omit<Snapshot, 'tail' | 'version'>): void {
    const target = this.tailTarget(base);
    if (target !== this.tail?.runId) this.tail = target ? this.tailOf(target) : undefined;
    this.tail?.read();
    if (this.tail?.stored) void this.refreshTail();
    const { guard: _old, remote: _oldRemote, ...rest } = base as Omit<Snapshot, 'tail' | 'version'>;
    const guard = this.guard.viewOf(target);
    const remote = this.remote.viewOf(target);
    this.publish({ ...rest, version: 0, tail: this.tail?.state(), ...(guard ? { guard } : {}), ...(remote ? { remote } : {}) });
  }

  /** Asks for a reload soon; bursts within the coalescing window make one reload. */
  schedule(delayMs = this.options.coalesceMs ?? 50): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.reload();
    }, delayMs);
  }

  /** Sets what the session's HTTP server reports (undefined: none runs); published at once. */
  setServer(view: ServerView | undefined): void {
    this.server = view;
    if (this.snapshot.version > 0) {
      const { server: _old, ...rest } = this.snapshot;
      this.publish(view ? { ...rest, server: view } : rest);
    }
  }

  /** A tail of run `runId`'s events.jsonl: the file, or the store's copy on a garden with one (the run may be another machine's). */
  private tailOf(runId: string): RunTail {
    const { paths } = this.options.garden;
    return new RunTail(runId, runEventsFile(paths, runId), storeOf(paths) ? runStreamReader(paths, runId, 'events') : undefined);
  }

  /** Reads what is new in a stored tail and publishes it, unless the tail followed meanwhile is another. */
  private async refreshTail(): Promise<void> {
    const tail = this.tail;
    if (!tail || !(await tail.refresh()) || tail !== this.tail || this.snapshot.version === 0) return;
    this.publish({ ...this.snapshot, tail: tail.state() });
  }

  private pollTail(): void {
    if (this.tail?.stored) void this.refreshTail();
    else if (this.tail?.read()) this.publish({ ...this.snapshot, tail: this.tail.state() });
    void this.pollGuard();
    void this.pollRemote();
  }

  /** The run record of `runId` as the snapshot shows it. */
  private runOf(base: Pick<Snapshot, 'goals'>, runId: string | undefined) {
    return runId ? base.goals.find((row) => row.run?.id === runId)?.run : undefined;
  }

  /** Re-reads the followed remote run's artifacts when they changed (one stat) and publishes them. */
  private async pollRemote(): Promise<void> {
    const runId = this.tail?.runId;
    const run = this.runOf(this.snapshot, runId);
    if (!(await this.remote.refresh(run, runId ? this.snapshot.leases[runId] : undefined)) || runId !== this.tail?.runId || this.snapshot.version === 0) return;
    const { remote: _old, ...rest } = this.snapshot;
    const remote = this.remote.viewOf(runId);
    this.publish(remote ? { ...rest, remote } : rest);
  }

  /** Re-reads the followed run's guard files when they changed (phases come as a guarded run goes) and publishes them. */
  private async pollGuard(): Promise<void> {
    const runId = this.tail?.runId;
    if (!(await this.guard.refresh(runId)) || runId !== this.tail?.runId || this.snapshot.version === 0) return;
    const { guard: _old, ...rest } = this.snapshot;
    const guard = this.guard.viewOf(runId);
    this.publish(guard ? { ...rest, guard } : rest);
  }

  private tailTarget(next: Omit<Snapshot, 'tail' | 'version'>): string | undefined {
    if (this.followed) return this.followed;
    const running = next.goals.find((row) => row.run?.status === 'running');
    if (running?.run) return running.run.id;
    const withRun = next.goals.filter((row) => row.run).sort((a, b) => (b.run!.started_at > a.run!.started_at ? 1 : -1));
    return withRun[0]?.run?.id;
  }

  private async reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      const loaded = await this.loader
        .load()
        .catch((error: unknown) => ({ ...this.snapshot, unread: (error as Error).message, problems: [`snapshot: ${(error as Error).message}`] }));
      const probe = this.options.coordinator;
      const base = {
        ...loaded,
        problems: this.withReported(loaded.problems),
        garden: { ...loaded.garden, readOnly: this.options.readOnly ?? !probe },
        coordinator: this.coordinatorOf(),
        ...(this.server ? { server: this.server } : {}),
      };
      const target = this.tailTarget(base);
      await this.guard.refresh(target);
      await this.remote.refresh(this.runOf(base, target), target ? base.leases[target] : undefined);
      this.retarget(base);
      if (this.wake) this.rewatch();
    })();
    await this.loading;
    this.loading = undefined;
    if (this.again) {
      this.again = false;
      this.schedule(0);
    } else if (this.loader.pendingClosed) this.schedule(); // the shown closed goals' bodies, read after the first frame
  }

  /** This process's coordinator as the status line shows it, and the one attached to. */
  private coordinatorOf(): Snapshot['coordinator'] {
    const probe = this.options.coordinator;
    const attached = this.options.attachment?.view;
    return { state: probe?.state ?? 'absent', liveRuns: probe ? probe.live.ids() : [], ...(attached ? { attached } : {}) };
  }

  /** Problems no file shows (coordinator errors), reported by the session; and the last load's own. */
  private reported: string[] = [];
  private loadedProblems: string[] = [];

  /**
   * Reports a problem no file shows (a coordinator error) as one line:
   * every snapshot lists it, once, after the files' problems, until the
   * source restarts or the same line is reported `fixed`. At most
   * {@link REPORTED_PROBLEMS_MAX} are kept, the newest. Published at once.
   */
  reportProblem(line: string, options: { fixed?: boolean } = {}): void {
    const known = this.reported.includes(line);
    if (options.fixed ? !known : known) return;
    this.reported = options.fixed ? this.reported.filter((l) => l !== line) : [...this.reported, line].slice(-REPORTED_PROBLEMS_MAX);
    if (this.snapshot.version > 0) this.publish({ ...this.snapshot, problems: this.withReported(this.loadedProblems) });
  }

  private withReported(loaded: string[]): string[] {
    this.loadedProblems = loaded;
    return this.reported.length ? [...loaded, ...this.reported] : loaded;
  }

  private publish(next: Snapshot): void {
    if (this.stopped) return;
    this.snapshot = { ...next, version: this.snapshot.version + 1 };
    for (const listener of this.listeners) listener();
  }
}
