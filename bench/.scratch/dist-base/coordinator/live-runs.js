/**
 * The agent processes this coordinator has live, by run id. The watchdog
 * and shutdown stop runs through it; the status line counts it.
 */
export class LiveRuns {
    handles = new Map();
    /** Records the handle of a run's current agent process. */
    add(runId, handle) {
        this.handles.set(runId, handle);
    }
    /** Forgets a run whose process has exited. */
    remove(runId) {
        this.handles.delete(runId);
    }
    /** Stops a run's whole process group (SIGTERM, then SIGKILL after a grace); false when it is not live here. */
    stop(runId, reason) {
        const handle = this.handles.get(runId);
        if (!handle)
            return false;
        handle.stop(reason);
        return true;
    }
    /** Stops every live run. */
    stopAll(reason) {
        for (const handle of this.handles.values())
            handle.stop(reason);
    }
    /** Run ids with a live process. */
    ids() {
        return [...this.handles.keys()];
    }
    get size() {
        return this.handles.size;
    }
}
//# sourceMappingURL=live-runs.js.map