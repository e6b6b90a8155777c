import type { RunHandle, StopDetail, StopReason } from '../driver/launch.js';

/**
 * The agent processes this coordinator has live, by run id. The watchdog
 * and shutdown stop runs through it; the status line counts it.
 */
export class LiveRuns {
  private readonly handles = new Map<string, RunHandle>();
  private closing: StopReason | undefined;

  /** `onChange` is told each time a run is added or removed (an attached workbench's live count follows it). */
  constructor(private readonly onChange: () => void = () => undefined) {}

  /**
   * Records the handle of a run's current agent process. After
   * {@link stopAll}, a process that starts anyway (its dispatch was past the
   * check when the stop came) is stopped at once, so a stop never waits on it.
   */
  add(runId: string, handle: RunHandle): void {
    this.handles.set(runId, handle);
    if (this.closing) handle.stop(this.closing);
    this.onChange();
  }

  /** Forgets a run whose process has exited. */
  remove(runId: string): void {
    if (this.handles.delete(runId)) this.onChange();
  }

  /** Stops a run's whole process group (SIGINT, then SIGKILL after a grace); false when it is not live here. */
  stop(runId: string, reason: StopReason, detail?: StopDetail): boolean {
    const handle = this.handles.get(runId);
    if (!handle) return false;
    handle.stop(reason, detail);
    return true;
  }

  /** The handle of a run live here, for the watchdog's liveness. */
  get(runId: string): RunHandle | undefined {
    return this.handles.get(runId);
  }

  /** Stops every live run, and every run that starts from now on. */
  stopAll(reason: StopReason): void {
    this.closing = reason;
    for (const handle of this.handles.values()) handle.stop(reason);
  }

  /** Run ids with a live process. */
  ids(): string[] {
    return [...this.handles.keys()];
  }

  get size(): number {
    return this.handles.size;
  }
}
