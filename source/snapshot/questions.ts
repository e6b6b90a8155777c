import fsp from 'node:fs/promises';
import type { GoalRecord, LeaseRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { commentsFile, listActiveLeases, openQuestions, readComments } from '../store/index.js';
import type { QuestionView } from './types.js';

/**
 * The open questions of the blocked goals, for the inbox (docs/workbench/
 * level2.md, "Panes"). Only the threads of goals that are `blocked` now are
 * looked at, one stat each per load, read again only when the thread file
 * changed: a garden of 500,000 closed goals costs what its blocked goals
 * cost. Unchanged, {@link QuestionReader.read} returns the same array.
 */
export class QuestionReader {
  private readonly cache = new Map<string, { stamp: string; questions: QuestionView[] }>();
  private last: QuestionView[] = [];

  constructor(private readonly paths: GardenPaths) {}

  /** The open questions of `blocked` goals, oldest first; unreadable threads are one line in `problems`. */
  async read(goals: readonly GoalRecord[], problems: string[]): Promise<QuestionView[]> {
    const blocked = goals.filter((g) => g.status === 'blocked');
    let changed = blocked.length !== this.cache.size;
    const seen = new Set<string>();
    await Promise.all(
      blocked.map(async (goal) => {
        seen.add(goal.id);
        try {
          const file = commentsFile(this.paths, goal.id);
          const stat = await fsp.stat(file).catch(() => undefined);
          const stamp = stat ? `${stat.mtimeMs}:${stat.size}` : '-';
          if (this.cache.get(goal.id)?.stamp === stamp) return;
          const questions = openQuestions(await readComments(this.paths, goal.id)).map((comment) => ({ goal: goal.id, comment }));
          this.cache.set(goal.id, { stamp, questions });
          changed = true;
        } catch (error) {
          problems.push(`comments of ${goal.id}: ${(error as Error).message}`);
        }
      }),
    );
    for (const id of this.cache.keys()) {
      if (!seen.has(id)) {
        this.cache.delete(id);
        changed = true;
      }
    }
    if (!changed) return this.last;
    this.last = [...this.cache.values()].flatMap((c) => c.questions).sort((a, b) => a.comment.created_at.localeCompare(b.comment.created_at) || a.comment.id.localeCompare(b.comment.id));
    return this.last;
  }
}

/**
 * The active leases by run id. A lease that did not change keeps its
 * object from the last read (memoised panes skip it); unchanged, the same
 * map is returned. Damaged lease files are lines in `problems`.
 */
export class LeaseReader {
  private last: Record<string, LeaseRecord> = {};
  private texts = new Map<string, string>();

  constructor(private readonly paths: GardenPaths) {}

  async read(problems: string[]): Promise<Readonly<Record<string, LeaseRecord>>> {
    const listed = await listActiveLeases(this.paths).catch((error: Error) => ({ leases: [] as LeaseRecord[], problems: [{ file: 'leases', message: error.message }] }));
    problems.push(...listed.problems.map((p) => p.message));
    const next: Record<string, LeaseRecord> = {};
    const texts = new Map<string, string>();
    let changed = listed.leases.length !== Object.keys(this.last).length;
    for (const lease of listed.leases) {
      const text = JSON.stringify(lease);
      texts.set(lease.run, text);
      const same = this.texts.get(lease.run) === text;
      next[lease.run] = same ? this.last[lease.run]! : lease;
      if (!same) changed = true;
    }
    this.texts = texts;
    if (changed) this.last = next;
    return this.last;
  }
}
