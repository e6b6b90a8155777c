import fs from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import type { Garden } from '../garden/index.js';
import { runEventsFile } from '../store/index.js';
import { SnapshotLoader } from './load.js';
import { RunTail } from './tail.js';
import type { CoordinatorView, ServerView, Snapshot } from './types.js';

/** What the source needs to know of a coordinator running in the same process. */
export interface CoordinatorProbe {
  readonly state: CoordinatorView;
  readonly live: { ids(): string[] };
  on(event: 'state' | 'pass', listener: () => void): unknown;
  off(event: 'state' | 'pass', listener: () => void): unknown;
}

/** Options of {@link SnapshotSource}. */
export interface SnapshotSourceOptions {
  garden: Garden;
  /** The in-process coordinator; absent for the read-only dashboard. */
  coordinator?: CoordinatorProbe;
  readOnly?: boolean;
  /** Coalescing window for bursts of file events, ms. Default 50. */
  coalesceMs?: number;
  /** How often the followed tail is polled besides file events, ms. Default 500. */
  tailPollMs?: number;
}

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
};

/**
 * The read model (STYLE.md, "The seam between core and views"): watches the
 * garden with chokidar and publishes immutable snapshots through
 * `getSnapshot()` / `subscribe(listener)`. Bursts of file events are coalesced;
 * the followed run's tail is read from its last offset. File events only wake
 * a reload; they carry no payload.
 */
export class SnapshotSource {
  private snapshot: Snapshot = EMPTY_SNAPSHOT;
  private readonly listeners = new Set<() => void>();
  private readonly loader: SnapshotLoader;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private tailTimer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private again = false;
  private tail: RunTail | undefined;
  private followed: string | undefined;
  private stopped = false;
  private server: ServerView | undefined;
  private readonly onCoordinator = () => this.schedule();

  constructor(private readonly options: SnapshotSourceOptions) {
    this.loader = new SnapshotLoader(options.garden);
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
    const { paths } = this.options.garden;
    await this.reload();
    this.watcher = watch(this.watchable(), {
      ignoreInitial: true,
      depth: 2,
      ignored: (p: string) => p.endsWith('.lock') || p.includes(`${paths.runsDir}`),
    });
    this.watcher.on('all', () => this.schedule());
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    this.options.coordinator?.on('state', this.onCoordinator);
    this.options.coordinator?.on('pass', this.onCoordinator);
    this.tailTimer = setInterval(() => this.pollTail(), this.options.tailPollMs ?? 500);
    this.tailTimer.unref();
  }

  private readonly watched = new Set<string>();

  /** The garden directories that exist now and are not watched yet (a fresh garden grows them later). */
  private watchable(): string[] {
    const { paths } = this.options.garden;
    const fresh = [paths.goalsDir, paths.eventsDir, paths.plantsDir, paths.inboxDir, paths.conversationsDir].filter((p) => !this.watched.has(p) && fs.existsSync(p));
    for (const p of fresh) this.watched.add(p);
    return fresh;
  }

  /** Stops watching. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.tailTimer) clearInterval(this.tailTimer);
    this.options.coordinator?.off('state', this.onCoordinator);
    this.options.coordinator?.off('pass', this.onCoordinator);
    await this.watcher?.close();
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
    if (this.snapshot.version > 0) this.retarget(this.snapshot);
  }

  private retarget(base: Omit<Snapshot, 'tail' | 'version'>): void {
    const target = this.tailTarget(base);
    if (target !== this.tail?.runId) this.tail = target ? new RunTail(target, runEventsFile(this.options.garden.paths, target)) : undefined;
    this.tail?.read();
    this.publish({ ...base, version: 0, tail: this.tail?.state() });
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

  private pollTail(): void {
    if (this.tail?.read()) this.publish({ ...this.snapshot, tail: this.tail.state() });
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
      const loaded = await this.loader.load().catch((error: unknown) => ({ ...this.snapshot, problems: [`snapshot: ${(error as Error).message}`] }));
      const probe = this.options.coordinator;
      const base = {
        ...loaded,
        garden: { ...loaded.garden, readOnly: this.options.readOnly ?? !probe },
        coordinator: { state: probe?.state ?? ('absent' as const), liveRuns: probe ? probe.live.ids() : [] },
        ...(this.server ? { server: this.server } : {}),
      };
      this.retarget(base);
      const grown = this.watcher ? this.watchable() : [];
      if (grown.length) this.watcher!.add(grown);
    })();
    await this.loading;
    this.loading = undefined;
    if (this.again) {
      this.again = false;
      this.schedule(0);
    }
  }

  private publish(next: Snapshot): void {
    if (this.stopped) return;
    this.snapshot = { ...next, version: this.snapshot.version + 1 };
    for (const listener of this.listeners) listener();
  }
}
