import fsp from 'node:fs/promises';
import type { ArtifactRecord, LeaseRecord, RunRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { artifactsFile, readArtifacts, readLease, storeOf } from '../store/index.js';
import type { RemoteView } from './types.js';

/**
 * The runner side of the one run the workbench follows, when a runner runs
 * it (`run.runner`): its artifacts, read again only when artifacts.jsonl
 * changed (one stat a poll), and its lease: the active one from the
 * snapshot's leases, else the ended one, read once. At most one run is held.
 */
export class RemoteFollower {
  private runId: string | undefined;
  private stamp = '';
  private artifacts: ArtifactRecord[] = [];
  private ended: LeaseRecord | undefined;
  private endedRead = false;
  private view: RemoteView | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly paths: GardenPaths) {}

  /** The view of `runId` when it is the followed run and a remote one. */
  viewOf(runId: string | undefined): RemoteView | undefined {
    return runId !== undefined && this.view?.runId === runId ? this.view : undefined;
  }

  /**
   * Follows `run` (undefined, or a local run: nothing); `active` is its
   * active lease if any. True when what {@link viewOf} returns changed.
   * Refreshes run one at a time; an error leaves the view as it was.
   */
  refresh(run: RunRecord | undefined, active: LeaseRecord | undefined): Promise<boolean> {
    const next = this.queue.then(() => this.refreshNow(run, active));
    this.queue = next.catch(() => undefined);
    return next.catch(() => false);
  }

  private async refreshNow(run: RunRecord | undefined, active: LeaseRecord | undefined): Promise<boolean> {
    const before = this.view;
    if (!run?.runner) {
      this.runId = undefined;
      this.view = undefined;
      return before !== undefined;
    }
    if (run.id !== this.runId) {
      this.runId = run.id;
      this.stamp = '';
      this.artifacts = [];
      this.ended = undefined;
      this.endedRead = false;
    }
    let changed = before?.runId !== run.id;
    if (storeOf(this.paths)) {
      // A store has no file to stat: the artifacts are read, and kept when they are the same.
      const artifacts = await readArtifacts(this.paths, run.id);
      const stamp = JSON.stringify(artifacts);
      if (stamp !== this.stamp) {
        this.stamp = stamp;
        this.artifacts = artifacts;
        changed = true;
      }
    } else {
      const stat = await fsp.stat(artifactsFile(this.paths, run.id)).catch(() => undefined);
      const stamp = stat ? `${stat.mtimeMs}:${stat.size}` : '-';
      if (stamp !== this.stamp) {
        this.stamp = stamp;
        this.artifacts = stat ? await readArtifacts(this.paths, run.id) : [];
        changed = true;
      }
    }
    if (active) this.endedRead = false; // when it ends, its ended record is read (once)
    else if (!this.endedRead) {
      this.endedRead = true;
      this.ended = await readLease(this.paths, run.id).catch(() => undefined);
      changed = true;
    }
    const lease = active ?? this.ended;
    if (!changed && before?.lease === lease) return false;
    this.view = { runId: run.id, lease, artifacts: this.artifacts };
    return true;
  }
}
