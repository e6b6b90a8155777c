import { EventEmitter } from 'node:events';
import { coordinatorSocketName, watchCoordinator, type CoordinatorWatch } from '../coordinator/index.js';
import type { GardenPaths } from '../garden/index.js';
import type { AttachedView } from '../snapshot/index.js';

/**
 * A workbench's attachment to the coordinator another process runs on its
 * garden (docs/workbench/level2.md, "Attached"): a watch on the garden's
 * coordinator socket that keeps {@link view} current — who it is (the lock
 * holder record: pid, host, command, since when), its state and live runs
 * as it reports them, and when it went (`goneAt`: the socket closed, as it
 * does when the coordinator stops or its process dies).
 *
 * Emits `change` whenever the view changed.
 */
export class Attachment extends EventEmitter {
  private watch: CoordinatorWatch | undefined;
  private current: AttachedView | undefined;
  private connecting: Promise<boolean> | undefined;
  private closed = false;

  constructor(
    private readonly paths: GardenPaths,
    private readonly now: () => Date = () => new Date(),
  ) {
    super();
  }

  /** What the status line shows of it; undefined when this session never attached, or took over. */
  get view(): AttachedView | undefined {
    return this.current;
  }

  /** True while the coordinator attached to runs (its socket is open). */
  get alive(): boolean {
    return this.watch !== undefined;
  }

  /**
   * Attaches to the coordinator listening on the garden's socket (again,
   * after one went). Resolves false when none answers (none runs, or it is
   * on another host: the socket is this host's).
   */
  connect(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    this.connecting ??= (async () => {
      if (this.watch) return true;
      let watch: CoordinatorWatch | undefined;
      const gone = () => {
        if (this.watch !== watch) return;
        this.watch = undefined;
        if (this.current) this.set({ ...this.current, liveRuns: [], goneAt: this.now().toISOString() });
      };
      watch = await watchCoordinator(coordinatorSocketName(this.paths), {
        onStatus: (status) => {
          if (this.watch === watch && this.current) this.set({ ...this.current, state: status.state, liveRuns: status.live });
        },
        onGone: gone,
      });
      if (!watch || this.closed) {
        watch?.close();
        return false;
      }
      this.watch = watch;
      this.set({ holder: watch.holder, ...(watch.status ? { state: watch.status.state } : {}), liveRuns: watch.status?.live ?? [] });
      return true;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Ends the attachment (the workbench quits, or took over): the view goes; the other coordinator is left as it is. */
  close(): void {
    this.closed = true;
    const watch = this.watch;
    this.watch = undefined;
    watch?.close();
    if (this.current) this.set(undefined);
  }

  private set(view: AttachedView | undefined): void {
    this.current = view;
    this.emit('change');
  }
}
