import fsp from 'node:fs/promises';
import { isTerminalLandingState, type LandingRecord, type RunRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { landingFile, readLanding, storeOf } from '../store/index.js';

/**
 * The landings of the shown goals' latest runs (docs/landing/level2.md), for
 * the queue, the status line and the run pane. Only a run that worked in a
 * worktree of its own can have one. An ended landing (landed, conflict,
 * rejected, failed) never changes: it is kept and never looked at again; an
 * open one costs one stat per load and is read again only when its file
 * changed, so an unchanged landing keeps its object (memoised panes skip it).
 */
export class LandingReader {
  private readonly cache = new Map<string, { stamp: string; landing: LandingRecord | undefined }>();

  constructor(private readonly paths: GardenPaths) {}

  /** The landing of `run`, if it has one; a damaged record is one line in `problems`. */
  async of(run: RunRecord | undefined, problems: string[]): Promise<LandingRecord | undefined> {
    if (!run?.worktree) return undefined;
    const cached = this.cache.get(run.id);
    if (cached?.landing && isTerminalLandingState(cached.landing.state)) return cached.landing;
    try {
      if (storeOf(this.paths)) {
        // A store has no file to stat: the record is read, and kept when it is the same.
        const landing = await readLanding(this.paths, run.id);
        const stamp = landing ? JSON.stringify(landing) : '-';
        if (cached && cached.stamp === stamp) return cached.landing;
        this.cache.set(run.id, { stamp, landing });
        return landing;
      }
      const stat = await fsp.stat(landingFile(this.paths, run.id)).catch(() => undefined);
      const stamp = stat ? `${stat.mtimeMs}:${stat.size}` : '-';
      if (cached && cached.stamp === stamp) return cached.landing;
      const landing = stat ? await readLanding(this.paths, run.id) : undefined;
      this.cache.set(run.id, { stamp, landing });
      return landing;
    } catch (error) {
      problems.push((error as Error).message);
      return undefined;
    }
  }

  /** Forgets the runs no longer shown. */
  retain(shown: ReadonlySet<string | undefined>): void {
    for (const id of this.cache.keys()) if (!shown.has(id)) this.cache.delete(id);
  }
}
