import fs from 'node:fs';
import { watch } from 'chokidar';
import { runEventsFile } from '../store/index.js';
import { SnapshotLoader } from './load.js';
import { RunTail } from './tail.js';
const EMPTY = {
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
    options;
    snapshot = EMPTY;
    listeners = new Set();
    loader;
    watcher;
    timer;
    tailTimer;
    loading;
    again = false;
    tail;
    followed;
    stopped = false;
    onCoordinator = () => this.schedule();
    constructor(options) {
        this.options = options;
        this.loader = new SnapshotLoader(options.garden);
    }
    /** The current snapshot (stable identity until something changes). */
    getSnapshot = () => this.snapshot;
    /** Registers a listener told after each new snapshot; returns the unsubscribe function. */
    subscribe = (listener) => {
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
    };
    /** Loads the first snapshot and starts watching. */
    async start() {
        const { paths } = this.options.garden;
        await this.reload();
        const targets = [paths.goalsDir, paths.eventsDir, paths.plantsDir, paths.inboxDir, paths.conversationsDir].filter((p) => fs.existsSync(p));
        this.watcher = watch(targets, {
            ignoreInitial: true,
            depth: 2,
            ignored: (p) => p.endsWith('.lock') || p.includes(`${paths.runsDir}`),
        });
        this.watcher.on('all', () => this.schedule());
        this.options.coordinator?.on('state', this.onCoordinator);
        this.options.coordinator?.on('pass', this.onCoordinator);
        this.tailTimer = setInterval(() => this.pollTail(), this.options.tailPollMs ?? 500);
        this.tailTimer.unref();
    }
    /** Stops watching. Idempotent. */
    async stop() {
        this.stopped = true;
        if (this.timer)
            clearTimeout(this.timer);
        if (this.tailTimer)
            clearInterval(this.tailTimer);
        this.options.coordinator?.off('state', this.onCoordinator);
        this.options.coordinator?.off('pass', this.onCoordinator);
        await this.watcher?.close();
        await this.loading;
    }
    /**
     * Chooses the run the tail follows: a run id, or undefined for "the
     * running run, else the newest run shown".
     */
    follow(runId) {
        if (runId === this.followed)
            return;
        this.followed = runId;
        this.schedule(0);
    }
    /** Asks for a reload soon; bursts within the coalescing window make one reload. */
    schedule(delayMs = this.options.coalesceMs ?? 50) {
        if (this.stopped || this.timer)
            return;
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.reload();
        }, delayMs);
    }
    pollTail() {
        if (this.tail?.read())
            this.publish({ ...this.snapshot, tail: this.tail.state() });
    }
    tailTarget(next) {
        if (this.followed)
            return this.followed;
        const running = next.goals.find((row) => row.run?.status === 'running');
        if (running?.run)
            return running.run.id;
        const withRun = next.goals.filter((row) => row.run).sort((a, b) => (b.run.started_at > a.run.started_at ? 1 : -1));
        return withRun[0]?.run?.id;
    }
    async reload() {
        if (this.loading) {
            this.again = true;
            return this.loading;
        }
        this.loading = (async () => {
            const loaded = await this.loader.load().catch((error) => ({ ...this.snapshot, problems: [`snapshot: ${error.message}`] }));
            const probe = this.options.coordinator;
            const base = {
                ...loaded,
                garden: { ...loaded.garden, readOnly: this.options.readOnly ?? !probe },
                coordinator: { state: probe?.state ?? 'absent', liveRuns: probe ? probe.live.ids() : [] },
            };
            const target = this.tailTarget(base);
            if (target !== this.tail?.runId)
                this.tail = target ? new RunTail(target, runEventsFile(this.options.garden.paths, target)) : undefined;
            this.tail?.read();
            this.publish({ ...base, tail: this.tail?.state() });
        })();
        await this.loading;
        this.loading = undefined;
        if (this.again) {
            this.again = false;
            this.schedule(0);
        }
    }
    publish(next) {
        if (this.stopped)
            return;
        this.snapshot = { ...next, version: this.snapshot.version + 1 };
        for (const listener of this.listeners)
            listener();
    }
}
//# sourceMappingURL=source.js.map