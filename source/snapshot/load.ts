import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isTerminalRunStatus, type AttentionItem, type GoalRecord, type RunRecord, type RuntimeHistoryRecord } from '../contracts/index.js';
import { reloadConfig, type Garden, type GardenPaths } from '../garden/index.js';
import {
  readBudgetOverrides,
  dispatchOrder,
  eventLogLineStart,
  indexMarkdown,
  latestConversation,
  listInbox,
  listPlants,
  closedEntriesNewestFirst,
  ledgerNotices,
  goalOfEntry,
  OpenGoalScanner,
  readActiveThreads,
  readConversationMessages,
  readEvents,
  readGoal,
  readRun,
  runIdsForGoal,
  runMetaFile,
  storeOf,
} from '../store/index.js';
import { BUILTIN_DRIVERS } from '../driver/plugins/index.js';
import { readHistoryRecord } from '../history/read.js';
import { attentionItems, readBlocked, untakeableGoals } from '../coordinator/index.js';
import { readAttentionAcks } from '../store/index.js';
import { LandingReader } from './landings.js';
import { periodOf } from '../budget/index.js';
import { chainOrder, readDependencyViews, type DependencyFact } from '../coordinator/readiness.js';
import { LeaseReader, QuestionReader } from './questions.js';
import type { GoalRow, PlantView, Snapshot, ThreadView } from './types.js';

/** How many recently closed goals the queue shows. */
export const CLOSED_SHOWN = 200;
/** How much of the event log is read at start to total today's cost (bytes). */
export const COST_LOG_WINDOW = 8 * 1024 * 1024;

function readTextCapped(file: string, max: number): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.length > max ? `${text.slice(0, max)}\n…` : text;
  } catch {
    return '';
  }
}

/** True when two attention lists hold the same items in the same order. */
function sameItems(a: readonly AttentionItem[], b: readonly AttentionItem[]): boolean {
  return a.length === b.length && a.every((item, i) => JSON.stringify(item) === JSON.stringify(b[i]));
}

/** True when `a` and `b` have the same own fields with the same values (nested objects by identity). */
function sameFields(a: object, b: object): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const key of ka) if ((a as Record<string, unknown>)[key] !== (b as Record<string, unknown>)[key]) return false;
  return true;
}

/**
 * A plant's Active Threads for display, through the validated reader
 * (docs/active-threads/level2.md): a missing file is no threads; a malformed
 * one is no threads and one line in `problems`, so the workbench keeps going.
 */
export async function readThreads(paths: GardenPaths, plant: string, problems: string[]): Promise<ThreadView[]> {
  try {
    const threads = await readActiveThreads(paths, plant);
    return threads.map((t): ThreadView => ({ title: t.title, status: t.status, detail: t.summary ?? t.next }));
  } catch (error) {
    problems.push((error as Error).message);
    return [];
  }
}

/**
 * Incremental loader behind the snapshot source: keeps caches between loads
 * (open goals by mtime, the shown closed goals, run records by mtime, the
 * event log offset for today's cost) so a reload reads only what changed.
 *
 * The shown closed goals come from the closed ledger's end: the first load
 * opens no closed goal file (each row is its ledger entry, body empty);
 * later loads read the shown ones' files (at most {@link CLOSED_SHOWN}) so the
 * detail view and the filter have their bodies. Memory: the open goals, the
 * shown closed goals and their latest runs, whatever the history.
 */
export class SnapshotLoader {
  private readonly scanner: OpenGoalScanner;
  /** The scanner is the coordinator's, whose passes change its records in place: snapshots take copies. */
  private readonly shared: boolean;
  /** Full records of shown closed goals (closed goals never change), by id. */
  private readonly closedCache = new Map<string, GoalRecord>();
  /** Closed dependencies' facts (a closed goal never changes). */
  private readonly closedDependencies = new Map<string, DependencyFact>();
  private loads = 0;
  /** True when some shown closed goal is still only its ledger entry: the next load reads its file. */
  pendingClosed = false;
  private readonly runCache = new Map<string, { mtimeMs: number; run: RunRecord }>();
  /** Provenance records found, by run id: written once at close, so kept for good. */
  private readonly provenanceCache = new Map<string, RuntimeHistoryRecord>();
  private eventsOffset: number | undefined;
  private costDay = '';
  private cost = { usd: 0, runs: 0, unknown: 0 };
  private version = 0;
  private readonly questions: QuestionReader;
  private readonly leases: LeaseReader;
  private readonly landings: LandingReader;
  /** The last attention list: kept while unchanged, so memoised views skip it. */
  private attention: AttentionItem[] = [];

  /** `scanner`: the in-process coordinator's (the goal files are then read once for both); default a scanner of its own. */
  constructor(
    private readonly garden: Garden,
    scanner?: OpenGoalScanner,
  ) {
    this.scanner = scanner ?? new OpenGoalScanner(garden.paths);
    this.shared = scanner !== undefined;
    this.questions = new QuestionReader(garden.paths);
    this.leases = new LeaseReader(garden.paths);
    this.landings = new LandingReader(garden.paths);
  }

  private async latestRunOf(goalId: string): Promise<RunRecord | undefined> {
    const ids = await runIdsForGoal(this.garden.paths, goalId);
    const id = ids.at(-1);
    if (!id) return undefined;
    // A store's run is one row: read it (no file to stat).
    if (storeOf(this.garden.paths)) return readRun(this.garden.paths, id).catch(() => undefined);
    const file = runMetaFile(this.garden.paths, id);
    const stat = await fsp.stat(file).catch(() => undefined);
    if (!stat) return undefined;
    const cached = this.runCache.get(id);
    if (cached && cached.mtimeMs === stat.mtimeMs) return cached.run;
    const run = await readRun(this.garden.paths, id);
    this.runCache.set(id, { mtimeMs: stat.mtimeMs, run });
    return run;
  }

  /** The run's provenance record in a split garden, once its close has written it. */
  private async provenanceOf(run: RunRecord | undefined, problems: string[]): Promise<RuntimeHistoryRecord | undefined> {
    if (!run || !this.garden.paths.split || !isTerminalRunStatus(run.status)) return undefined;
    const cached = this.provenanceCache.get(run.id);
    if (cached) return cached;
    const read = await readHistoryRecord(this.garden.paths, run.id);
    if (read.ok) {
      this.provenanceCache.set(run.id, read.record);
      return read.record;
    }
    if (!read.missing) problems.push(read.message);
    return undefined;
  }

  private async costToday(problems: string[]): Promise<Snapshot['costToday']> {
    // Today as the budget counts it: its day in [budget] timezone (docs/budget/level2.md).
    const timezone = this.garden.config.budget.timezone;
    const day = periodOf(new Date(), timezone).day;
    if (day !== this.costDay) {
      this.costDay = day;
      this.cost = { usd: 0, runs: 0, unknown: 0 };
      const size = await fsp.stat(this.garden.paths.coordinatorLog).then((s) => s.size).catch(() => 0);
      this.eventsOffset = await eventLogLineStart(this.garden.paths, Math.max(0, size - COST_LOG_WINDOW));
    }
    const read = await readEvents(this.garden.paths, this.eventsOffset ?? 0);
    problems.push(...read.errors.slice(0, 3));
    for (const event of read.events) {
      if (event.type !== 'RunClosed' || event.ts.slice(0, 10) < dayBefore(this.costDay) || periodOf(new Date(event.ts), timezone).day !== this.costDay) continue;
      this.cost.runs += 1;
      if (typeof event.cost_usd === 'number') this.cost.usd += event.cost_usd;
      else this.cost.unknown += 1;
    }
    this.eventsOffset = read.offset;
    // The day's cap, as the coordinator holds goals to it: budget.json over [budget] garden_day_usd (docs/budget/level2.md).
    const set = await readBudgetOverrides(this.garden.paths).catch(() => ({}) as Record<string, number | null | undefined>);
    const cap = 'garden_day_usd' in set ? set.garden_day_usd : this.garden.config.budget.gardenDayUsd;
    return { ...this.cost, ...(cap !== null && cap !== undefined ? { capUsd: cap } : {}) };
  }

  /** The shown copy of each scanned open goal (the goal itself when the scanner is this loader's own), and its row while queued. */
  private readonly shown = new WeakMap<GoalRecord, { copy: GoalRecord; row?: GoalRow }>();

  /**
   * The goal as a snapshot shows it. A shared scanner's records are the
   * coordinator's, which its passes change in place, so a snapshot holds a
   * copy; the copy is kept and shown again while it is equal to the record,
   * so unchanged goals cost nothing from one snapshot to the next (and
   * snapshots alive at once share them).
   */
  private shownGoal(goal: GoalRecord): GoalRecord {
    if (!this.shared) return goal;
    const known = this.shown.get(goal);
    if (known && sameFields(known.copy, goal)) return known.copy;
    const copy = { ...goal };
    this.shown.set(goal, { copy });
    this.shown.set(copy, { copy });
    return copy;
  }

  private queuedRow(goal: GoalRecord): GoalRow {
    let known = this.shown.get(goal);
    if (!known) this.shown.set(goal, (known = { copy: goal }));
    known.row ??= { goal, run: undefined };
    return known.row;
  }

  /** Reads the garden into a fresh snapshot (without tail and coordinator state, which the source adds). */
  async load(): Promise<Omit<Snapshot, 'coordinator' | 'tail' | 'garden' | 'remote'> & { garden: Omit<Snapshot['garden'], 'readOnly'> }> {
    // PAK2.toml as it is now (a workbench open for days sees an edit; a bad one is a problem until fixed).
    const configStatus = reloadConfig(this.garden);
    const { paths, config } = this.garden;
    const problems: string[] = configStatus.problem ? [configStatus.problem] : [];
    const configFile = { ...(configStatus.problem ? { invalid: configStatus.where ?? [] } : {}), ...(configStatus.restart.length ? { restart: configStatus.restart } : {}) };
    // Goals that cannot be read at all (a closed ledger that is a directory) are said; the rest of the garden still loads.
    let unread: string | undefined;
    const scan = await this.scanner.scan().catch((error: unknown) => {
      unread = (error as Error).message;
      return { goals: [], problems: [{ file: '', message: `goals not read: ${unread}` }] };
    });
    problems.push(...scan.problems.map((p) => p.message));
    // What was said of the closed ledger (a check, a rebuild): on stderr for a command, here for the workbench.
    problems.push(...ledgerNotices(paths).map((line) => line.replace(/^pak2: /, '')));
    const open = scan.goals.map((goal) => this.shownGoal(goal));
    // In flight, then blocked (waiting on the operator), then queued in dispatch order.
    const order: Record<string, number> = { running: 0, dispatched: 1, completed: 2, blocked: 3, queued: 4 };
    open.sort((a, b) => (order[a.status] ?? 9) - (order[b.status] ?? 9) || dispatchOrder(a, b));
    // A chain's order: a queued goal is listed after the queued goals it waits for (docs/goal/level2.md, "Dependencies").
    const firstQueued = open.findIndex((g) => g.status === 'queued');
    if (firstQueued >= 0) open.splice(firstQueued, open.length - firstQueued, ...chainOrder(open.slice(firstQueued)));
    const dependencies = await readDependencyViews(paths, open, this.closedDependencies).catch((error: unknown) => {
      problems.push((error as Error).message);
      return new Map();
    });

    const openIds = new Set(open.map((g) => g.id));
    const first = this.loads === 0;
    this.loads += 1;
    const closed: GoalRecord[] = [];
    const closedIds = new Set<string>();
    let pending = false;
    for await (const entry of unread ? [] : closedEntriesNewestFirst(paths)) {
      if (openIds.has(entry.id)) continue; // the goal file says open: it wins over the ledger
      let goal = this.closedCache.get(entry.id);
      const summary = goal ? undefined : goalOfEntry(entry);
      if (!goal && summary && first) {
        goal = summary;
        pending = true;
      } else if (!goal) {
        try {
          goal = await readGoal(paths, entry.id);
          this.closedCache.set(entry.id, goal);
        } catch (error) {
          problems.push((error as Error).message);
          goal = summary;
        }
      }
      if (!goal) continue;
      closed.push(goal);
      closedIds.add(goal.id);
      if (closed.length >= CLOSED_SHOWN) break;
    }
    this.pendingClosed = pending;
    for (const id of this.closedCache.keys()) if (!closedIds.has(id)) this.closedCache.delete(id);

    // A queued goal's row is the same object from load to load while the goal is unchanged; only the others wait on a run.
    const rows: GoalRow[] = [];
    const reads: Promise<void>[] = [];
    for (const goal of [...open, ...closed]) {
      if (goal.status === 'queued') {
        const waits = dependencies.get(goal.id);
        // A waiting or blocked goal's row is made afresh: what it waits for changes while its record does not.
        rows.push(waits ? { goal, run: undefined, ...waits } : this.queuedRow(goal));
        continue;
      }
      const at = rows.push({ goal, run: undefined }) - 1;
      reads.push(
        (async () => {
          try {
            const run = await this.latestRunOf(goal.id);
            const provenance = await this.provenanceOf(run, problems);
            const landing = await this.landings.of(run, problems);
            rows[at] = { goal, run, ...(provenance ? { provenance } : {}), ...(landing ? { landing } : {}) };
          } catch (error) {
            problems.push((error as Error).message);
          }
        })(),
      );
    }
    await Promise.all(reads);
    const shownRuns = new Set(rows.map((r) => r.run?.id));
    for (const id of this.provenanceCache.keys()) if (!shownRuns.has(id)) this.provenanceCache.delete(id);
    for (const id of this.runCache.keys()) if (!shownRuns.has(id)) this.runCache.delete(id);
    this.landings.retain(shownRuns);

    const listed = await listPlants(paths);
    problems.push(...listed.problems.map((p) => p.message));
    const plants: PlantView[] = await Promise.all(
      listed.plants.map(async (plant) => {
        const dir = path.join(paths.plantsDir, plant.name);
        return {
          plant,
          memory: readTextCapped(path.join(dir, 'memory', 'MEMORY.md'), 8192),
          skills: indexMarkdown(path.join(dir, 'skills'), 'skills'),
          knowledge: indexMarkdown(path.join(dir, 'knowledge'), 'knowledge'),
          threads: await readThreads(paths, plant.name, problems),
        };
      }),
    );

    // Open questions from the blocked goals' threads only; closed goals' threads are never opened.
    const questions = await this.questions.read(open, problems);
    const leases = await this.leases.read(problems);
    const blocked = open.filter((g) => g.status === 'blocked').length;
    const awaitingReview = rows.filter((r) => r.goal.status === 'completed' && r.landing?.state === 'awaiting_review').length;

    const acked = await readAttentionAcks(paths).catch((error: Error) => {
      problems.push(error.message);
      return new Map();
    });
    const attention = attentionItems({ goals: rows, questions, blocked: { ...untakeableGoals(open, this.garden.config), ...(await readBlocked(paths, problems)) }, acked: new Set(acked.keys()) });
    if (!sameItems(attention, this.attention)) this.attention = attention;

    const conversation = await latestConversation(paths).catch(() => undefined);
    const messages = conversation ? await readConversationMessages(paths, conversation.id) : [];
    this.version += 1;
    return {
      version: this.version,
      takenAt: new Date().toISOString(),
      garden: {
        name: config.gardenName,
        root: paths.gardenRoot,
        runtimeRoot: paths.runtimeRoot,
        drivers: [...new Set([...BUILTIN_DRIVERS, ...Object.keys(config.drivers)])],
        taskClasses: Object.keys(config.routing ?? {}).sort(),
        ...(Object.keys(configFile).length ? { configFile } : {}),
      },
      goals: rows,
      ...(unread ? { unread } : {}),
      counts: {
        queued: open.filter((g) => g.status === 'queued').length,
        inFlight: open.filter((g) => g.status !== 'queued' && g.status !== 'blocked').length,
        closedShown: closed.length,
        ...(blocked ? { blocked } : {}),
        ...(awaitingReview ? { awaitingReview } : {}),
      },
      plants,
      inbox: await listInbox(paths, config).catch(() => []),
      chat: { conversationId: conversation?.id, messages },
      costToday: await this.costToday(problems),
      leases,
      questions,
      attention: this.attention,
      problems,
    };
  }
}

/** The day before `day` (YYYY-MM-DD): an event's UTC date that old cannot be `day` in any time zone (they differ by less than a day). */
function dayBefore(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - 1);
  return d.toISOString().slice(0, 10);
}
