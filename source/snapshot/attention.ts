import fsp from 'node:fs/promises';
import { isTerminalRunStatus, type AttentionItem, type GoalRecord, type LandingRecord, type RunRecord } from '../contracts/index.js';
import { attentionItems, readBlocked, untakeableGoals } from '../coordinator/index.js';
import type { Garden } from '../garden/index.js';
import type { GardenPaths } from '../garden/index.js';
import { closedEntriesNewestFirst, goalOfEntry, OpenGoalScanner, readAttentionAcks, readRun, runIdsForGoal, runMetaFile, storeOf } from '../store/index.js';
import { CLOSED_SHOWN } from './load.js';
import { LandingReader } from './landings.js';
import { QuestionReader } from './questions.js';

/** A goal's latest run; none while its directory has no record yet (a run being opened), as the snapshot reads it. */
async function latestRunOf(paths: GardenPaths, goalId: string): Promise<RunRecord | undefined> {
  const id = (await runIdsForGoal(paths, goalId)).at(-1);
  if (!id) return undefined;
  if (storeOf(paths)) return readRun(paths, id).catch(() => undefined);
  if (!(await fsp.stat(runMetaFile(paths, id)).catch(() => undefined))) return undefined;
  return readRun(paths, id);
}

/** The "needs you" list at one moment: `items` not acknowledged, `derived` every item derived (acknowledged or not). */
export interface AttentionRead {
  items: AttentionItem[];
  derived: AttentionItem[];
  /** Files that could not be read, one line each. */
  problems: string[];
}

/**
 * Reads the facts of the "needs you" list (docs/attention/level2.md, "Items")
 * without the rest of a snapshot: the open goals and the
 * {@link CLOSED_SHOWN} most recently closed ones with their latest runs and
 * landings, the blocked goals' open questions, `coordinator.blocked.json`
 * and `attention.json`. Kept between reads (a notifier polls it), an ended
 * run of a closed goal is read once.
 */
export class AttentionReader {
  private readonly scanner: OpenGoalScanner;
  private readonly questions: QuestionReader;
  private readonly landings: LandingReader;
  /** Latest runs of closed goals (a closed goal gets no new run), by goal id. */
  private readonly closedRuns = new Map<string, RunRecord | undefined>();

  constructor(private readonly garden: Garden) {
    this.scanner = new OpenGoalScanner(garden.paths);
    this.questions = new QuestionReader(garden.paths);
    this.landings = new LandingReader(garden.paths);
  }

  /** One read of the list; unreadable records are lines in `problems`, never a throw. */
  async read(): Promise<AttentionRead> {
    const { paths } = this.garden;
    const problems: string[] = [];
    const scan = await this.scanner.scan().catch((error: Error) => ({ goals: [] as GoalRecord[], problems: [{ message: `goals not read: ${error.message}` }] }));
    problems.push(...scan.problems.map((p) => p.message));
    const open = scan.goals;
    const openIds = new Set(open.map((g) => g.id));
    const closed: GoalRecord[] = [];
    try {
      for await (const entry of closedEntriesNewestFirst(paths)) {
        if (openIds.has(entry.id)) continue;
        const goal = goalOfEntry(entry);
        if (goal) closed.push(goal);
        if (closed.length >= CLOSED_SHOWN) break;
      }
    } catch (error) {
      problems.push(`closed goals not read: ${(error as Error).message}`);
    }
    const shown = new Set(closed.map((g) => g.id));
    for (const id of this.closedRuns.keys()) if (!shown.has(id)) this.closedRuns.delete(id);
    const rows = await Promise.all(
      [...open, ...closed].map(async (goal) => {
        if (goal.status === 'queued') return { goal };
        try {
          let run: RunRecord | undefined;
          if (shown.has(goal.id) && this.closedRuns.has(goal.id)) run = this.closedRuns.get(goal.id);
          else {
            run = await latestRunOf(paths, goal.id);
            if (shown.has(goal.id) && (!run || isTerminalRunStatus(run.status))) this.closedRuns.set(goal.id, run);
          }
          const landing: LandingRecord | undefined = await this.landings.of(run, problems);
          return { goal, run, landing };
        } catch (error) {
          problems.push((error as Error).message);
          return { goal };
        }
      }),
    );
    this.landings.retain(new Set(rows.map((r) => ('run' in r ? r.run?.id : undefined))));
    const questions = await this.questions.read(open, problems);
    // A goal no one can take is said from the facts (goal and PAK2.toml), whether or not a coordinator pass reported it.
    const blocked = { ...untakeableGoals(open, this.garden.config), ...(await readBlocked(paths, problems)) };
    const acked = await readAttentionAcks(paths).catch((error: Error) => {
      problems.push(error.message);
      return new Map<string, unknown>();
    });
    const derived = attentionItems({ goals: rows, questions, blocked, acked: new Set() });
    return { items: derived.filter((item) => !acked.has(item.id)), derived, problems };
  }
}

/** One read of the "needs you" list (`pak2 attention`, `GET /attention`, `pak2 ack`). */
export function readAttention(garden: Garden): Promise<AttentionRead> {
  return new AttentionReader(garden).read();
}
