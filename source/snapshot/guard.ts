import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Garden } from '../garden/index.js';
import { runDir } from '../garden/index.js';
import { routingAttemptsMax } from '../guard/describe.js';
import { GUARD_RECORD_FILES, readGuardRecord } from '../guard/read.js';
import type { GuardView } from './types.js';

const FILES = [GUARD_RECORD_FILES.envelope, GUARD_RECORD_FILES.outcome, GUARD_RECORD_FILES.phases, GUARD_RECORD_FILES.patch];

/**
 * The guard files of the one run the workbench follows (the run pane, the
 * detail view), read through readGuardRecord only when they changed: a
 * refresh costs four stats; a read happens when one of them differs. At
 * most one run's record is held.
 */
export class GuardFollower {
  private view: GuardView | undefined;
  private stamp = '';
  private runId: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly garden: Garden) {}

  /** The record of `runId` when it is the followed run and a guarded one. */
  viewOf(runId: string | undefined): GuardView | undefined {
    return runId !== undefined && this.view?.runId === runId ? this.view : undefined;
  }

  /** Follows `runId` (undefined: none); true when what {@link viewOf} returns changed. Refreshes run one at a time. */
  refresh(runId: string | undefined): Promise<boolean> {
    const next = this.queue.then(() => this.refreshNow(runId));
    this.queue = next.catch(() => undefined);
    return next.catch(() => false);
  }

  private async refreshNow(runId: string | undefined): Promise<boolean> {
    const before = this.view;
    if (!runId) {
      this.runId = undefined;
      this.stamp = '';
      this.view = undefined;
      return before !== undefined;
    }
    const dir = runDir(this.garden.paths, runId);
    const stats = await Promise.all(FILES.map((f) => fsp.stat(path.join(dir, f)).then((s) => `${s.mtimeMs}:${s.size}`, () => '-')));
    const stamp = stats.join('|');
    if (runId === this.runId && stamp === this.stamp) return false;
    this.runId = runId;
    this.stamp = stamp;
    if (stats.slice(0, 3).every((s) => s === '-')) {
      this.view = undefined;
      return before !== undefined;
    }
    const record = await readGuardRecord(this.garden.paths, runId);
    const maxAttempts = routingAttemptsMax(this.garden.config.routing, record.envelope?.routing?.task_class);
    this.view = record.guarded ? { ...record, runId, ...(maxAttempts !== undefined ? { maxAttempts } : {}) } : undefined;
    return true;
  }
}
