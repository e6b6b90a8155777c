/**
 * The store interface (docs/store/level2.md): the primitive reads and
 * writes of a garden's records that have a second home besides the seeds'
 * files. Every exported store function (createGoal, readGoal,
 * transitionGoal, openRun, closeRun, appendEvent, writeLease, …) is built on
 * these primitives; the file store is the code beside them in this folder,
 * and a garden whose `[store].url` names PostgreSQL has a
 * {@link GardenStore} attached (source/store/postgres/) that those functions
 * call instead. Validation, the goal state machine and the run close rules
 * stay above this line, the same for both stores.
 */
import type { CommentRecord, EventRecord, GoalRecord, LeaseRecord, LeaseState, RunRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';

/** A run's two agent streams: `events` (events.jsonl, the agent's stdout) and `stderr` (stderr.log). */
export type RunStreamName = 'events' | 'stderr';

/** What a listing returns: the readable records and, for each unreadable one, where and why. */
export interface RecordList<T> {
  records: T[];
  problems: { file: string; message: string }[];
}

/**
 * A garden store other than the files (seed 004's tables). Every method
 * joins the transaction it is called in ({@link GardenStore.withGoalLock}),
 * or runs in one of its own; an event appended in a transaction commits
 * with it or not at all.
 */
export interface GardenStore {
  readonly kind: 'postgres';
  /** Where the records are, as a message may show it (no password). */
  readonly where: string;

  /** Runs `fn` in one transaction: the store calls inside it, and the events they append, commit together or not at all. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` after the current transaction commits (never when it rolls back); at once outside one. */
  afterCommit(fn: () => void): void;
  /** Assigns the next goal number N (one more than any ever assigned) and inserts `make(N)`. @throws whatever `make` throws. */
  insertGoal(make: (n: number) => GoalRecord): Promise<GoalRecord>;
  /** One goal's stored record, or undefined when there is none. Not validated here: the caller validates. */
  goalRecord(id: string): Promise<unknown>;
  /** Writes an existing goal's record (validated by the caller). @throws StoreError GOAL_NOT_FOUND. */
  updateGoal(goal: GoalRecord): Promise<void>;
  /** Every goal record (`open`: those not closed), in N order, unvalidated, each with its id. */
  goalRecords(filter: { open?: boolean }): Promise<{ id: string; record: unknown }[]>;
  /** Closed goal records, the most recently closed first: `limit` of them after the first `offset`. */
  closedGoalRecords(offset: number, limit: number): Promise<unknown[]>;
  /**
   * Runs `fn` in a transaction holding goal `id`'s row lock (SELECT … FOR
   * UPDATE). `skipLocked`: when another transaction holds it, returns
   * `{ locked: false }` at once (SELECT … FOR UPDATE SKIP LOCKED).
   *
   * @throws StoreError GOAL_NOT_FOUND when there is no such goal.
   */
  withGoalLock<T>(id: string, fn: () => Promise<T>, options?: { skipLocked?: boolean }): Promise<{ locked: true; value: T } | { locked: false }>;

  /** Inserts a run (`running`) as attempt `attempt` of its goal. @returns false when that attempt exists (take the next). */
  insertRun(record: RunRecord, attempt: number): Promise<boolean>;
  /** Writes a run's record; the store refuses to rewrite a terminal one. @throws StoreError INVALID_TRANSITION, RUN_NOT_FOUND. */
  updateRun(record: RunRecord): Promise<void>;
  /** A run's stored record, or undefined. */
  runRecord(id: string): Promise<unknown>;
  /** The run ids of a goal, r1 first. */
  runIdsOfGoal(goalId: string): Promise<string[]>;
  /** Every run record, unvalidated, each with its id. */
  runRecords(): Promise<{ id: string; record: unknown }[]>;

  /** Appends an event made with a placeholder `id` as its first key: the id is given at commit, after every id committed before it. @throws StoreError INVALID_RECORD. */
  appendEvent(event: EventRecord): Promise<EventRecord>;
  /**
   * Events after the cursor `afterSeq` (0: from the first), at most `limit`,
   * in commit order; each with its `seq`, the cursor to pass back.
   */
  eventsAfter(afterSeq: number, limit?: number): Promise<{ event: EventRecord; seq: number }[]>;
  /** The `seq` of the event with this id, or undefined (a cursor given as an event id). */
  eventSeq(id: string): Promise<number | undefined>;
  /** The seq of the newest event whose id sorts at or before `id` (0 when none): where a cursor that names no event resumes. */
  eventSeqAtOrBefore(id: string): Promise<number>;
  /** The seq of the newest event (0 when none). */
  lastEventSeq(): Promise<number>;
  /** Calls `listener` when events commit (any process, any server: LISTEN/NOTIFY); returns the unsubscribe. */
  watchEvents(listener: (lastSeq: number) => void): Promise<() => Promise<void>>;

  /** A lease by run id (active or ended), or undefined. */
  leaseRecord(runId: string): Promise<unknown>;
  /** The active leases, unvalidated. */
  activeLeaseRecords(): Promise<{ run: string; record: unknown }[]>;
  /** Writes a lease; a new one gets the next epoch. @returns the lease as stored. */
  putLease(lease: LeaseRecord, state: LeaseState): Promise<LeaseRecord>;
  /** Runs `fn` holding run `runId`'s lease row lock (or the run's, when it has no lease yet). */
  withLeaseLock<T>(runId: string, fn: () => Promise<T>): Promise<T>;

  /** A goal's comments in the order written, unvalidated. */
  commentRecords(goalId: string): Promise<unknown[]>;
  /** Appends a comment (validated by the caller). */
  insertComment(comment: CommentRecord): Promise<void>;

  /**
   * Documents: the records of other kinds (inbox notes, conversations,
   * landings, budget, schedules, …), one JSON value per `(kind, key)`.
   * `documentRecord` gives one (undefined when absent); `documentRecords`
   * every one of a kind whose key starts with `prefix`, in key order;
   * `putDocument` writes one whole (insert or replace); `deleteDocument`
   * removes one (true when it was there).
   */
  documentRecord(kind: string, key: string): Promise<unknown>;
  documentRecords(kind: string, prefix?: string): Promise<{ key: string; record: unknown }[]>;
  putDocument(kind: string, key: string, record: unknown): Promise<void>;
  deleteDocument(kind: string, key: string): Promise<boolean>;
  /** Runs `fn` in a transaction holding the lock of document `(kind, key)` (it need not exist), so a read-change-write is never interleaved. */
  withDocumentLock<T>(kind: string, key: string, fn: () => Promise<T>): Promise<T>;

  /**
   * A run's agent streams (docs/runners/level2.md, "Log upload"): the bytes
   * of its `events.jsonl` (`events`) and `stderr.log` (`stderr`), appended
   * at byte offsets. `appendStreamChunk` appends `data` when `offset` is the
   * size held (an empty chunk appends nothing), else appends nothing:
   * `appended` says which, `size` is the size held after it (bytes), so a
   * retried chunk is never stored twice and never out of order.
   * `streamSize` is the size held (0 for a stream never appended to);
   * `streamBytes` the bytes from `from` (at most `length` of them);
   * `clearStream` empties a stream (a rewrite starts there, in one
   * transaction with its appends).
   *
   * @throws StoreError RUN_NOT_FOUND (appending to a run the store does not hold).
   */
  appendStreamChunk(runId: string, stream: RunStreamName, offset: number, data: Buffer): Promise<{ appended: boolean; size: number }>;
  streamSize(runId: string, stream: RunStreamName): Promise<number>;
  streamBytes(runId: string, stream: RunStreamName, from: number, length: number): Promise<Buffer>;
  clearStream(runId: string, stream: RunStreamName): Promise<void>;

  /**
   * Document lines: the records of an append-only file (a JSONL file's
   * lines: conversation messages, supplements, artifacts, operator messages,
   * webhook deliveries), numbered 1, 2, … per `(kind, parent)` in the order
   * appended. `appendDocumentLine` appends one under the lock
   * {@link GardenStore.withDocumentLock} takes for `(kind, parent)` and
   * returns its number; `documentLines` gives them in order: those after
   * line `after`, or only the `last` ones.
   */
  appendDocumentLine(kind: string, parent: string, record: unknown): Promise<number>;
  documentLines(kind: string, parent: string, options?: { after?: number; last?: number }): Promise<{ n: number; record: unknown }[]>;

  /**
   * Takes or renews duty `duty` (e.g. `leader`) for `holder` until
   * `ttlSeconds` from now on the database's clock, when it is free, expired
   * or already `holder`'s. The term grows each time the duty changes hands.
   *
   * @returns who holds it now, its term, and when it expires (ISO 8601).
   */
  claimDuty(duty: string, holder: string, ttlSeconds: number): Promise<{ held: boolean; holder: string; term: number; expires_at: string }>;
  /** Gives duty `duty` up when `holder` holds it (a clean stop: the next claimer need not wait for the expiry). */
  releaseDuty(duty: string, holder: string): Promise<void>;

  /** Ends the store's connections. */
  close(): Promise<void>;
}

const KEEP_WRITES = Symbol.for('pak2.store.keepWrites');

/**
 * Marks `error` so that a store transaction it is thrown from commits what
 * was written before it, then rethrows it: a refusal that is recorded (a
 * LeaseRefused event, an expiry it found) must stay recorded though the call
 * fails. The file store writes as it goes, so there it changes nothing.
 */
export function keepWrites<E extends Error>(error: E): E {
  (error as E & { [KEEP_WRITES]?: true })[KEEP_WRITES] = true;
  return error;
}

/** True for an error marked by {@link keepWrites}. */
export function keepsWrites(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { [KEEP_WRITES]?: true })[KEEP_WRITES] === true;
}

const attached = new Map<string, GardenStore>();

/**
 * Makes `store` the home of the records of the garden at `paths` (keyed by
 * its runtime root) for this process: from here on the store functions
 * call it instead of the files.
 */
export function attachStore(paths: Pick<GardenPaths, 'runtimeRoot'>, store: GardenStore): void {
  attached.set(paths.runtimeRoot, store);
}

/** Undoes {@link attachStore} (the files are the home again). */
export function detachStore(paths: Pick<GardenPaths, 'runtimeRoot'>): void {
  attached.delete(paths.runtimeRoot);
}

/** The store attached to the garden at `paths`, or undefined: its records are the seeds' files. */
export function storeOf(paths: Pick<GardenPaths, 'runtimeRoot'>): GardenStore | undefined {
  return attached.size === 0 ? undefined : attached.get(paths.runtimeRoot);
}

/**
 * Runs `fn` in one transaction of the store attached to the garden at
 * `paths`, so a record written inside it and the event that says so commit
 * together or not at all (seed 004); for a file garden, runs `fn` as it is
 * (the files' record-then-event order, with its crash points between).
 */
export function inStoreTransaction<T>(paths: Pick<GardenPaths, 'runtimeRoot'>, fn: () => Promise<T>): Promise<T> {
  const store = storeOf(paths);
  return store ? store.transaction(fn) : fn();
}
