import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import {
  formatIssue,
  GOAL_ID_PATTERN,
  GOAL_TRANSITIONS,
  GOAL_TYPES,
  PLANT_NAME_PATTERN,
  PRIORITY_DEFAULT,
  validateGoal,
  type ClosedReason,
  type GoalRecord,
  type AcceptanceCriterion,
  type GoalGuard,
  type GoalStatus,
  type GoalType,
} from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { timed } from '../timing.js';
import { appendEvent, type EventInput } from './events.js';
import { crashPoint, createJsonExclusive, RUNTIME_FILE_MODE, readJsonFile, readJsonFileSync, StoreError, withLock, writeJsonAtomic, type JsonRead } from './files.js';
import { storeOf, type GardenStore } from './backend.js';
import { appendClosedEntry, ClosedLedger, goalNumber, goalsDirKey, highestGoalNumber, noteGoalsDirWrite } from './closed-index.js';

export * from './closed-index.js';

const COUNTER_FILE = '.counter';

/** What a caller gives to create a goal; the store assigns id, status and timestamps. */
export interface GoalInput {
  type: GoalType;
  /** The plant the goal is assigned to (`assigned_to`); absent goals wait in the queue. */
  plant?: string;
  body: string;
  /** 0–100, higher first; default 50. */
  priority?: number;
  driver?: string;
  model?: string;
  reasoning_effort?: string;
  conversation_id?: string;
  post_reply_hop?: boolean;
  /** Words for the id's slug; default: the body's first line. */
  title?: string;
  /** Tend goals only: the automatic tend trigger metadata (docs/automatic-tend/level2.md), kept as the record's `tend` field. */
  tend?: { trigger: string; key: string; origin: object };
  /** Commission goals only: the later-plant commissioning payload (docs/plant/level2.md), kept as the record's `commission` field. */
  commission?: { plant: string; seed: string; purpose: string; first_goal: { type: string; body: string } };
  /** Retrospective goals only: the window and the goals it covers (docs/retrospective/level2.md), kept as the record's `retrospective` field. */
  retrospective?: { since: string; until: string; goals: string[]; focus?: string };
  /** A guarded goal's `guard` (docs/guarded-runs/level2.md): kept as given; `[guard]` defaults fill the rest at dispatch. */
  guard?: GoalGuard;
  /** Its own cap in USD across its attempts (docs/budget/level2.md). */
  budget_usd?: number;
  /** The routing class (`[routing.<task_class>]`), kept as the record's `task_class`. */
  task_class?: string;
  /** The goals it waits for (docs/goal/level2.md, "Dependencies"); checked by the caller (they exist, no cycle). */
  depends_on?: string[];
  /** The goal it retries (`pak2 retry`). */
  retry_of?: string;
  /** A goal a `[[schedule]]` submitted: the schedule's name, kept as the record's `schedule` (docs/schedules/level2.md). */
  schedule?: string;
  /** What must be true when the work is done (docs/goal/level2.md, "Acceptance criteria"), kept as the record's `acceptance_criteria`. */
  acceptance_criteria?: AcceptanceCriterion[];
}

/** Path of a goal's file. Refuses ids that are not `N-slug` (never a path outside goals/). */
export function goalFile(paths: GardenPaths, id: string): string {
  if (!GOAL_ID_PATTERN.test(id)) throw new StoreError('GOAL_NOT_FOUND', `goal id ${JSON.stringify(id)} is not of the form N-slug`);
  return path.join(paths.goalsDir, `${id}.json`);
}

type Slugify = (text: string) => string;
let slugifyModule: Promise<Slugify> | undefined;

/** @sindresorhus/slugify, imported on the first goal created (its transliteration tables cost a read command's start). */
export function loadSlugify(): Promise<Slugify> {
  slugifyModule ??= import('@sindresorhus/slugify').then((m) => m.default);
  return slugifyModule;
}

/**
 * Turns a title into the slug part of a goal id: at most 6 words, 48
 * characters. `slugify` is {@link loadSlugify}'s.
 */
export function makeSlug(title: string, fallback: string, slugify: Slugify): string {
  const firstLine = title.split('\n').find((l) => l.trim()) ?? '';
  const words = slugify(firstLine).split('-').filter(Boolean).slice(0, 6);
  let slug = '';
  for (const word of words) {
    const next = slug ? `${slug}-${word}` : word;
    if (next.length > 48) break;
    slug = next;
  }
  return slug || fallback;
}

/** The highest N the counter records, or undefined when it is missing or does not hold a number. */
async function readCounter(file: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  return /^\s*\d+\s*$/.test(text) ? Number.parseInt(text, 10) : undefined;
}

/** The new goal's record: N, its slug, the input's fields, `queued`. Validated by the caller. */
function goalRecordOf(input: GoalInput, n: number, slug: string, now: Date): GoalRecord {
  return {
    id: `${n}-${slug}`,
    type: input.type,
    status: 'queued',
    priority: input.priority ?? PRIORITY_DEFAULT,
    ...(input.plant !== undefined ? { assigned_to: input.plant } : {}),
    body: input.body,
    submitted_at: now.toISOString(),
    ...(input.driver ? { driver: input.driver } : {}),
    ...(input.model ? { model: input.model } : {}),
    ...(input.reasoning_effort ? { reasoning_effort: input.reasoning_effort } : {}),
    ...(input.conversation_id ? { conversation_id: input.conversation_id } : {}),
    ...(input.post_reply_hop ? { post_reply_hop: true } : {}),
    ...(input.tend ? { tend: input.tend } : {}),
    ...(input.commission ? { commission: input.commission } : {}),
    ...(input.retrospective ? { retrospective: input.retrospective } : {}),
    ...(input.guard ? { guard: input.guard } : {}),
    ...(input.task_class ? { task_class: input.task_class } : {}),
    ...(input.budget_usd !== undefined ? { budget_usd: input.budget_usd } : {}),
    ...(input.depends_on?.length ? { depends_on: input.depends_on } : {}),
    ...(input.retry_of ? { retry_of: input.retry_of } : {}),
    ...(input.schedule ? { schedule: input.schedule } : {}),
    ...(input.acceptance_criteria?.length ? { acceptance_criteria: input.acceptance_criteria } : {}),
  };
}

/**
 * Creates a goal (`queued`) with the next monotonic N and appends GoalSubmitted.
 * N is one more than the highest ever assigned (`.counter`), even if goal
 * files were removed; without a readable counter, one more than the highest
 * N in the goals directory.
 *
 * @throws StoreError INVALID_RECORD (bad type, plant name, priority), IO_ERROR.
 */
export async function createGoal(paths: GardenPaths, input: GoalInput, now: Date = new Date()): Promise<GoalRecord> {
  if (!(GOAL_TYPES as readonly string[]).includes(input.type)) {
    throw new StoreError('INVALID_RECORD', `type ${JSON.stringify(input.type)} is not one of ${GOAL_TYPES.join(', ')}`);
  }
  if (input.plant !== undefined && !PLANT_NAME_PATTERN.test(input.plant)) {
    throw new StoreError('INVALID_PLANT_NAME', `plant ${JSON.stringify(input.plant)} is not a valid plant name (lower-case letters, digits, inner hyphens)`);
  }
  const store = storeOf(paths);
  if (store) {
    const slug = makeSlug(input.title ?? input.body, input.type, await loadSlugify());
    return store.transaction(async () => {
      const goal = await store.insertGoal((n) => {
        const record = goalRecordOf(input, n, slug, now);
        const issues = validateGoal(record);
        if (issues.length > 0) throw new StoreError('INVALID_RECORD', `goal: ${formatIssue(issues[0]!)}`);
        return record;
      });
      await appendEvent(paths, submittedEvent(goal), now);
      return goal;
    });
  }
  await fsp.mkdir(paths.goalsDir, { recursive: true });
  const goal = await withLock(paths.goalsDir, async () => {
    const before = await goalsDirKey(paths);
    const counterPath = path.join(paths.goalsDir, COUNTER_FILE);
    // The counter is the record of the highest N assigned; the directory is listed only without it.
    let highest = await readCounter(counterPath);
    highest ??= await highestGoalNumber(paths.goalsDir);
    const slug = makeSlug(input.title ?? input.body, input.type, await loadSlugify());
    // A file of that id already there (a counter restored from a backup, say): the directory decides.
    if (fs.existsSync(goalFile(paths, `${highest + 1}-${slug}`))) highest = Math.max(highest, await highestGoalNumber(paths.goalsDir));
    const n = highest + 1;
    if (!Number.isSafeInteger(n)) throw new StoreError('IO_ERROR', `${counterPath}: goal number ${highest} is too large to continue from`, counterPath);
    const record = goalRecordOf(input, n, slug, now);
    const issues = validateGoal(record);
    if (issues.length > 0) throw new StoreError('INVALID_RECORD', `goal: ${formatIssue(issues[0]!)}`);
    // N is taken before its file is made: a crash between the two leaves a gap in the numbers, never an N made twice.
    await fsp.writeFile(counterPath, `${n}\n`);
    await createJsonExclusive(goalFile(paths, record.id), record);
    await noteGoalsDirWrite(paths, before, [record.id]);
    return record;
  });
  try {
    await appendEvent(paths, submittedEvent(goal), now);
  } catch (error) {
    // Without its event the submit did not happen: take the new goal back, so a retry makes no duplicate.
    await fsp.rm(goalFile(paths, goal.id), { force: true });
    throw error;
  }
  return goal;
}

function submittedEvent(goal: GoalRecord): EventInput {
  return { type: 'GoalSubmitted', goal: goal.id, ...(goal.assigned_to ? { plant: goal.assigned_to } : {}), detail: goal.type };
}

/**
 * Reads and validates one goal.
 *
 * @throws StoreError GOAL_NOT_FOUND (no such id) or INVALID_RECORD (malformed JSON or a failing field, named).
 */
export async function readGoal(paths: GardenPaths, id: string): Promise<GoalRecord> {
  const file = goalFile(paths, id);
  const store = storeOf(paths);
  if (store) return goalOfRead(`${store.where} goal ${id}`, id, storedRead(await store.goalRecord(id)));
  return goalOfRead(file, id, await readJsonFile(file));
}

/**
 * {@link readGoal}, synchronously (the scanner reads goal files a slice at a time).
 *
 * @throws StoreError GOAL_NOT_FOUND (no such id) or INVALID_RECORD (malformed JSON or a failing field, named).
 */
export function readGoalSync(paths: GardenPaths, id: string): GoalRecord {
  const file = goalFile(paths, id);
  return goalOfRead(file, id, readJsonFileSync(file));
}

/** A record a store returned, as a file read says it (missing when there is none). */
export function storedRead(value: unknown): JsonRead {
  return value === undefined ? { ok: false, missing: true, message: 'no such record' } : { ok: true, value };
}

function goalOfRead(file: string, id: string, read: JsonRead): GoalRecord {
  if (!read.ok) {
    if (read.missing) throw new StoreError('GOAL_NOT_FOUND', `no goal ${id} (looked for ${file})`, file);
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateGoal(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  const goal = read.value as GoalRecord;
  if (goal.id !== id) throw new StoreError('INVALID_RECORD', `${file}: id ${JSON.stringify(goal.id)} does not match the file name`, file);
  return goal;
}

/** Options of {@link transitionGoal}. */
export interface TransitionOptions {
  closedReason?: ClosedReason;
  now?: Date;
}

/**
 * Moves a goal along its state machine (GOAL_TRANSITIONS), appending
 * GoalTransitioned, and GoalClosed too when it reaches `closed`. A closed
 * goal is never transitioned again.
 *
 * @throws StoreError GOAL_NOT_FOUND, INVALID_TRANSITION, MISSING_CLOSED_REASON, IO_ERROR.
 */
export async function transitionGoal(paths: GardenPaths, id: string, to: GoalStatus, options: TransitionOptions = {}): Promise<GoalRecord> {
  return timed(`transition → ${to}`, () => withGoalLock(paths, id, () => transitionLocked(paths, id, to, options)));
}

/**
 * Runs `fn` holding the goal file's inter-process lock (the lock every
 * transition takes), so a sequence of steps — a runner's claim: queued →
 * dispatched, the run, the lease, → running — is never seen half done by
 * another writer that takes the same lock.
 *
 * @throws StoreError GOAL_NOT_FOUND before locking a missing file.
 */
export async function withGoalLock<T>(paths: GardenPaths, id: string, fn: () => Promise<T>): Promise<T> {
  const store = storeOf(paths);
  if (store) {
    goalFile(paths, id); // refuses a malformed id
    const held = await store.withGoalLock(id, fn);
    return (held as { value: T }).value;
  }
  // GOAL_NOT_FOUND before taking a lock on a missing file (a read says so in its words; `fn` reads the goal under the lock).
  await fsp.access(goalFile(paths, id)).catch(() => readGoal(paths, id));
  const lock = goalLockFile(paths, id);
  await fsp.mkdir(path.dirname(lock), { recursive: true });
  return withLock(goalFile(paths, id), fn, lock);
}

/**
 * {@link withGoalLock} for a claimer that takes the next goal when this one
 * is taken: on a store, `SELECT … FOR UPDATE SKIP LOCKED` (a goal another
 * transaction holds is passed over at once, undefined); on the files, the
 * lock is waited for as withGoalLock does (the claimer then finds it no
 * longer queued).
 *
 * @returns `{ value }` from `fn`, or undefined when another claimer holds the goal.
 * @throws StoreError GOAL_NOT_FOUND.
 */
export async function tryGoalLock<T>(paths: GardenPaths, id: string, fn: () => Promise<T>): Promise<{ value: T } | undefined> {
  const store = storeOf(paths);
  if (!store) return { value: await withGoalLock(paths, id, fn) };
  goalFile(paths, id); // refuses a malformed id
  const held = await store.withGoalLock(id, fn, { skipLocked: true });
  return held.locked ? { value: held.value } : undefined;
}

/**
 * Where a goal's lock is held: `<runtime-root>/.locks/goals/<id>.json.lock`,
 * outside goals/ (a lock made and removed there would change the goals
 * directory's mtime, which its listing is kept under).
 */
export function goalLockFile(paths: GardenPaths, id: string): string {
  return path.join(paths.runtimeRoot, '.locks', 'goals', `${path.basename(goalFile(paths, id))}.lock`);
}

/**
 * Writes a goal's record (atomically: a temp file renamed over it), holding
 * the goals directory's lock so that the listing of goals/ is kept current
 * across the write ({@link noteGoalsDirWrite}). Every writer of an existing
 * goal file goes through here; {@link createGoal} makes new ones.
 *
 * @throws StoreError IO_ERROR naming the file.
 */
export async function writeGoalRecord(paths: GardenPaths, goal: GoalRecord): Promise<void> {
  const store = storeOf(paths);
  if (store) return store.updateGoal(goal);
  await fsp.mkdir(paths.goalsDir, { recursive: true });
  await withLock(paths.goalsDir, async () => {
    const before = await goalsDirKey(paths);
    await writeJsonAtomic(goalFile(paths, goal.id), goal, RUNTIME_FILE_MODE);
    await noteGoalsDirWrite(paths, before, []);
  });
}

/**
 * {@link transitionGoal} for a caller that already holds the goal's lock
 * ({@link withGoalLock}).
 *
 * @throws StoreError as transitionGoal.
 */
export function transitionGoalLocked(paths: GardenPaths, id: string, to: GoalStatus, options: TransitionOptions = {}): Promise<GoalRecord> {
  return transitionLocked(paths, id, to, options);
}

async function transitionLocked(paths: GardenPaths, id: string, to: GoalStatus, options: TransitionOptions): Promise<GoalRecord> {
  const now = options.now ?? new Date();
  const goal = await readGoal(paths, id);
  const allowed = GOAL_TRANSITIONS[goal.status];
  if (!allowed.includes(to)) {
    throw new StoreError('INVALID_TRANSITION', `goal ${id}: ${goal.status} → ${to} is not allowed`, goalFile(paths, id));
  }
  if (to === 'closed' && !options.closedReason) {
    throw new StoreError('MISSING_CLOSED_REASON', `goal ${id}: closing needs a closed_reason`, goalFile(paths, id));
  }
  const next: GoalRecord = { ...goal, status: to, updated_at: now.toISOString() };
  if (goal.status === 'blocked') delete next.blocked_on; // it names a question only while the goal waits on it
  if (to === 'closed') {
    next.closed_reason = options.closedReason;
    next.closed_at = now.toISOString();
  }
  const issues = validateGoal(next);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `goal ${id}: ${formatIssue(issues[0]!)}`, goalFile(paths, id));
  await writeGoalRecord(paths, next);
  crashPoint(`goal:${to}:after-write`);
  await appendEvent(paths, { type: 'GoalTransitioned', goal: id, from: goal.status, to }, now);
  if (to === 'closed') {
    crashPoint('goal:closed:after-event');
    // A store's closed goals are a query, not a ledger.
    if (!storeOf(paths)) await appendClosedEntry(paths, next);
    crashPoint('goal:closed:after-ledger');
    await appendEvent(paths, { type: 'GoalClosed', goal: id, reason: options.closedReason }, now);
  }
  return next;
}

/**
 * Changes an open goal's `depends_on` under its lock (docs/goal/level2.md,
 * "Dependencies"): `change` gets the goal as it is now and returns the new
 * list with words for the event, or undefined to leave it as it is. The
 * record is written (an empty list removes the field) and
 * `GoalDependencyChanged` appended with those words as its detail.
 *
 * @throws StoreError GOAL_NOT_FOUND, INVALID_TRANSITION (the goal is closed:
 *   its dependencies no longer matter), INVALID_RECORD; whatever `change` throws.
 */
export async function changeGoalDependencies(
  paths: GardenPaths,
  id: string,
  change: (goal: GoalRecord) => { depends_on: string[]; detail: string } | undefined,
  now: Date = new Date(),
): Promise<GoalRecord> {
  return withGoalLock(paths, id, async () => {
    const goal = await readGoal(paths, id);
    if (goal.status === 'closed') throw new StoreError('INVALID_TRANSITION', `goal ${id} is closed (${goal.closed_reason ?? 'no reason'}); its dependencies no longer matter`, goalFile(paths, id));
    const next = change(goal);
    if (!next) return goal;
    const record: GoalRecord = { ...goal, updated_at: now.toISOString() };
    if (next.depends_on.length > 0) record.depends_on = next.depends_on;
    else delete record.depends_on;
    const issues = validateGoal(record);
    if (issues.length > 0) throw new StoreError('INVALID_RECORD', `goal ${id}: ${formatIssue(issues[0]!)}`, goalFile(paths, id));
    await writeGoalRecord(paths, record);
    await appendEvent(paths, { type: 'GoalDependencyChanged', goal: id, detail: next.detail }, now);
    return record;
  });
}

/** A goal file that could not be read or failed validation, named with its reason. */
export interface GoalProblem {
  file: string;
  message: string;
}

/** Result of a listing: the readable goals and the files that were not. */
export interface GoalList {
  goals: GoalRecord[];
  problems: GoalProblem[];
}

async function readMany(paths: GardenPaths, ids: string[]): Promise<GoalList> {
  const goals: GoalRecord[] = [];
  const problems: GoalProblem[] = [];
  // Bounded, so a low open-file limit never turns into dropped entries.
  const limit = pLimit(32);
  const results = await Promise.allSettled(ids.map((id) => limit(() => readGoal(paths, id))));
  results.forEach((result, index) => {
    if (result.status === 'fulfilled') goals.push(result.value);
    else problems.push({ file: goalFile(paths, ids[index]!), message: (result.reason as Error).message });
  });
  return { goals, problems };
}

/**
 * Goal ids present in the goals directory (file names only; nothing is
 * read). A `.json` file whose name is not a goal id (`../x`, a space) is not
 * a goal; pass `strays` to be told of each one.
 */
export async function listGoalIds(paths: GardenPaths, strays?: GoalProblem[]): Promise<string[]> {
  const store = storeOf(paths);
  if (store) return (await store.goalRecords({})).map((r) => r.id);
  let names: string[];
  try {
    names = await fsp.readdir(paths.goalsDir);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw error;
  }
  const ids: string[] = [];
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const id = name.slice(0, -5);
    if (GOAL_ID_PATTERN.test(id)) ids.push(id);
    else strays?.push({ file: path.join(paths.goalsDir, name), message: `${path.join(paths.goalsDir, name)}: not a goal file name (goal files are <N-slug>.json); not read` });
  }
  return ids;
}

/** Every goal, closed ones included. Malformed files are reported in `problems`, never deleted. */
export async function listGoals(paths: GardenPaths): Promise<GoalList> {
  const store = storeOf(paths);
  if (store) return storedGoals(store, {});
  const strays: GoalProblem[] = [];
  const list = await readMany(paths, await listGoalIds(paths, strays));
  return { goals: list.goals, problems: [...strays, ...list.problems] };
}

/** A store's goals (all, or the open ones), validated; a record that fails is reported by id, never dropped silently. */
async function storedGoals(store: GardenStore, filter: { open?: boolean }): Promise<GoalList> {
  const goals: GoalRecord[] = [];
  const problems: GoalProblem[] = [];
  for (const { id, record } of await store.goalRecords(filter)) {
    try {
      goals.push(goalOfRead(`${store.where} goal ${id}`, id, storedRead(record)));
    } catch (error) {
      problems.push({ file: `${store.where} goal ${id}`, message: (error as Error).message });
    }
  }
  return { goals, problems };
}

/** Orders goals for dispatch: priority high → low, then submitted_at old → new, then N. */
export function dispatchOrder(a: GoalRecord, b: GoalRecord): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.submitted_at !== b.submitted_at) return a.submitted_at < b.submitted_at ? -1 : 1;
  return goalNumber(a.id) - goalNumber(b.id);
}

/** How long after its close a goal missing from the ledger counts as lost from it, not as a close still being written (ms). */
const UNLISTED_SETTLE_MS = 10_000;

/** Goal files an {@link OpenGoalScanner} stats before it lets the event loop run (a slice takes a few ms). */
const SCAN_STAT_SLICE = 1000;
/** Goal files a scan reads before it lets the event loop run (a slice takes a few ms). */
const SCAN_READ_SLICE = 200;

/** A goal file whose stat differs from the scanner's cached one (or that it has not read yet). */
interface ChangedGoalFile {
  id: string;
  file: string;
  mtimeMs: number;
  ctimeMs: number;
  size: number;
}

/**
 * The open-goal scanner used by reconcile, the snapshot and `pak2 goals`:
 * lists the goals directory, skips every id in the closed ledger without
 * opening its file, and reads only the rest. The ledger and the listing are
 * shared by every scanner of the garden in this process (ClosedLedger); each
 * scanner keeps its unchanged open goals between passes, so a warm pass
 * re-reads only what changed. A goal found closed but missing from the
 * ledger (a crash between the two writes) is added to it.
 */
export class OpenGoalScanner {
  private readonly ledger: ClosedLedger;
  private cache = new Map<string, { mtimeMs: number; ctimeMs: number; size: number; goal: GoalRecord; scan: number }>();
  private scans = 0;
  private running: Promise<GoalList> | undefined;

  constructor(private readonly paths: GardenPaths) {
    // A store's open goals are one query: no ledger, no listing cache.
    this.ledger = storeOf(paths) ? (undefined as unknown as ClosedLedger) : ClosedLedger.of(paths);
  }

  /**
   * The goals that are not closed, and any unreadable goal files. One scan
   * at a time: a caller that comes while one is under way waits for it and
   * then scans itself, warm (the coordinator's first pass and the
   * workbench's first snapshot share the scanner: the goal files are read
   * once, not twice at the same time).
   */
  async scan(): Promise<GoalList> {
    const store = storeOf(this.paths);
    if (store) return storedGoals(store, { open: true });
    while (this.running) await this.running.catch(() => undefined);
    const running = this.scanNow();
    this.running = running;
    try {
      return await running;
    } finally {
      if (this.running === running) this.running = undefined;
    }
  }

  private async scanNow(): Promise<GoalList> {
    const { ids, strays } = await this.ledger.openCandidates();
    const goals: GoalRecord[] = [];
    const problems: GoalProblem[] = [...strays];
    // Entries this scan saw are marked with its number (no set of every id per scan); the rest are dropped at the end.
    const scan = ++this.scans;
    const unlisted: GoalRecord[] = [];
    // Each goal file is stat'ed synchronously, a slice at a time with the event loop free between slices: a
    // warm scan of 10,000 open goals is then 10,000 stat calls, not 10,000 promises and thread-pool requests.
    // A slice's changed files are read before the next slice is stat'ed, so what a cold scan holds besides the
    // goals is one slice's list, not one entry per goal file.
    for (let from = 0; from < ids.length; from += SCAN_STAT_SLICE) {
      if (from > 0) await new Promise((resolve) => setImmediate(resolve));
      const changed: ChangedGoalFile[] = [];
      for (let i = from; i < Math.min(ids.length, from + SCAN_STAT_SLICE); i++) {
        const id = ids[i]!;
        const file = goalFile(this.paths, id);
        let stat: fs.Stats | undefined;
        try {
          stat = fs.statSync(file, { throwIfNoEntry: false });
        } catch {
          stat = undefined;
        }
        if (!stat) continue;
        const cached = this.cache.get(id);
        // ctime too: `touch -r` can restore an edited file's mtime, never its ctime.
        if (cached && cached.mtimeMs === stat.mtimeMs && cached.ctimeMs === stat.ctimeMs && cached.size === stat.size) {
          cached.scan = scan;
          goals.push(cached.goal);
        } else changed.push({ id, file, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, size: stat.size });
      }
      if (changed.length > 0) await this.readChanged(changed, scan, goals, problems, unlisted);
    }
    for (const [id, entry] of this.cache) if (entry.scan !== scan) this.cache.delete(id);
    if (unlisted.length > 0) await this.addUnlisted(unlisted);
    return { goals, problems };
  }

  /**
   * Reads changed goal files into `goals` (open ones, cached) and `problems`,
   * synchronously, {@link SCAN_READ_SLICE} at a time with the event loop free
   * between slices: a goal file is small, and a synchronous read is one
   * call where an asynchronous one is four trips through the thread pool.
   */
  private async readChanged(changed: ChangedGoalFile[], scan: number, goals: GoalRecord[], problems: GoalProblem[], unlisted: GoalRecord[]): Promise<void> {
    for (let from = 0; from < changed.length; from += SCAN_READ_SLICE) {
      if (from > 0) await new Promise((resolve) => setImmediate(resolve));
      for (let i = from; i < Math.min(changed.length, from + SCAN_READ_SLICE); i++) {
        const { id, file, mtimeMs, ctimeMs, size } = changed[i]!;
        try {
          const goal = readGoalSync(this.paths, id);
          if (goal.status === 'closed') {
            this.cache.delete(id);
            if (!this.ledger.has(id)) unlisted.push(goal);
            continue;
          }
          // Keyed by the record's own id string when it is the same id: one string per goal, not one per listing too.
          this.cache.set(goal.id === id ? goal.id : id, { mtimeMs, ctimeMs, size, goal, scan });
          goals.push(goal);
        } catch (error) {
          problems.push({ file, message: (error as Error).message });
        }
      }
    }
  }

  /**
   * Closed goals the ledger lacks. One is a crash between a close's two
   * writes (or a close still under way): appended. Several closed more
   * than {@link UNLISTED_SETTLE_MS} ago mean the ledger lost lines (a
   * restore, an older copy put back): rebuilt once, with a notice, not
   * refilled a line at a time in directory order.
   */
  private async addUnlisted(unlisted: GoalRecord[]): Promise<void> {
    await this.ledger.refresh(); // appended meanwhile by the writer that closed them
    const missing = unlisted.filter((g) => !this.ledger.has(g.id));
    const now = Date.now();
    const old = missing.filter((g) => now - Date.parse(g.closed_at ?? g.updated_at ?? g.submitted_at) > UNLISTED_SETTLE_MS);
    if (old.length > 1 && (await this.ledger.rebuildFor(`it lacks ${old.length} goals closed more than ${UNLISTED_SETTLE_MS / 1000} s ago, ${old[0]!.id} among them`))) return;
    // All at once: goals written outside pak2 (a restore, a copy) are adopted in one append, in linear time.
    await this.ledger.addAll(missing);
  }
}
