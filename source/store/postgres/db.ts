/**
 * A connection to a PostgreSQL garden (docs/store/level2.md): the pool, the
 * transaction a store call joins, and the events a transaction stamps at
 * its commit. `pg` is imported only here, and only when a garden names a
 * PostgreSQL store: a file garden never loads it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { validateEvent, type EventRecord } from '../../contracts/index.js';
import { crashPoint, StoreError } from '../files.js';
import { keepsWrites } from '../backend.js';
import { redactStoreUrl } from '../../garden/store-url.js';
import { nextEventId } from './event-ids.js';

/** The channel every commit that wrote events notifies, with the last event's `seq` as payload. */
export const EVENTS_CHANNEL = 'pak2_events';

/** The advisory lock (transaction-scoped) that orders event stamping: one commit at a time stamps ids, so ids follow commit order. */
const EVENT_STAMP_LOCK = 0x70616b32; // 'pak2'

/** An open database: the pool, the URL as a message may show it, and the listeners told of committed events. */
export interface Db {
  pool: Pool;
  /** The URL with its password hidden. */
  where: string;
  /** Told, after each commit of this process, of the events it stamped (in order). */
  committed: Set<(events: EventRecord[]) => void>;
}

interface Tx {
  db: Db;
  client: PoolClient;
  /** Events appended in this transaction, stamped (id, seq) and inserted just before COMMIT. */
  events: EventRecord[];
  /** Called after COMMIT, in order. */
  after: (() => void)[];
}

const current = new AsyncLocalStorage<Tx>();

/**
 * Opens a pool on `url`. Connections carry `application_name = pak2` and TCP
 * keepalives (a dead peer's session, and the locks it held, end within a
 * bounded time).
 *
 * @throws StoreError IO_ERROR naming the (redacted) URL when no connection can be made.
 */
export async function openDb(url: string, options: { max?: number } = {}): Promise<Db> {
  const { default: pg } = await import('pg');
  const where = redactStoreUrl(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: 'pak2',
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    connectionTimeoutMillis: 10_000,
    // A command ends when its work does: idle connections do not hold the process open.
    allowExitOnIdle: true,
  });
  // A connection that drops (the server restarted, an administrator ended it) must never crash the process: an idle
  // one is dropped by the pool, a checked-out one fails its query (said where it is used), and the next call reconnects.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new StoreError('IO_ERROR', `store ${where}: cannot connect (${connectProblem(error as Error)})`, undefined, error);
  }
  return { pool, where, committed: new Set() };
}

/** Why a connection failed, in the words a user can act on (the client's own words otherwise). */
function connectProblem(error: Error): string {
  // The pg client's words when the server asks for a password and none was given.
  if (/client password must be a string/.test(error.message)) return 'the server asks for a password and none was given: set PGPASSWORD, or put it in PAK2_STORE_URL';
  return error.message;
}

/** True inside a transaction of `db` ({@link inTransaction}). */
export function inTransactionOf(db: Db): boolean {
  return current.getStore()?.db === db;
}

/**
 * One query: in the transaction this call is part of, else on its own.
 * Errors become StoreError IO_ERROR naming the store.
 */
export async function query<R extends QueryResultRow = QueryResultRow>(db: Db, text: string, values: unknown[] = []): Promise<R[]> {
  const tx = current.getStore();
  const runner = tx?.db === db ? tx.client : db.pool;
  try {
    const result = await runner.query<R>(text, values);
    return result.rows;
  } catch (error) {
    throw asStoreError(db, error);
  }
}

/** PostgreSQL's error, said as a store error (a StoreError passes through). */
export function asStoreError(db: Db, error: unknown): Error {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: string }).code;
  return new StoreError('IO_ERROR', `store ${db.where}: ${(error as Error).message}${code ? ` (SQLSTATE ${code})` : ''}`, undefined, error);
}

const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock

/** True for an error of the database (pg's DatabaseError, with its severity and SQLSTATE) or of the connection to it. */
function fromDatabase(error: unknown): boolean {
  if (error instanceof StoreError) return false;
  const e = error as { severity?: unknown; name?: unknown; message?: unknown };
  return typeof e.severity === 'string' || e.name === 'DatabaseError' || /Connection terminated|connection error|Client was closed/i.test(String(e.message ?? ''));
}

/**
 * Runs `fn` in one transaction: every store call inside it joins it, and
 * the events it appends are stamped and written just before COMMIT
 * (seed 004: "every state transition writes an Event inside the same
 * transaction as the write it describes"). A call already inside a
 * transaction of the same database joins that one. A deadlock or
 * serialization failure retries the whole transaction (up to 3 times);
 * any other error rolls it back and is rethrown.
 */
export async function inTransaction<T>(db: Db, fn: () => Promise<T>): Promise<T> {
  if (inTransactionOf(db)) return fn();
  for (let attempt = 1; ; attempt += 1) {
    let client: PoolClient;
    try {
      client = await db.pool.connect();
    } catch (error) {
      throw asStoreError(db, error);
    }
    const tx: Tx = { db, client, events: [], after: [] };
    let broken = false;
    try {
      await client.query('BEGIN');
      const value = await current.run(tx, fn);
      if (tx.events.length > 0) await stampEvents(tx);
      // The store's record-then-event crash point: everything written, nothing committed (test/store/contract/crash.test.ts).
      for (const event of tx.events) crashPoint(`commit:${event.type}`);
      await client.query('COMMIT');
      if (tx.events.length > 0) for (const listener of db.committed) listener(tx.events);
      for (const fn of tx.after) fn();
      return value;
    } catch (error) {
      if (keepsWrites(error)) {
        // A recorded refusal: what was written before it commits, then the caller hears the refusal.
        try {
          if (tx.events.length > 0) await stampEvents(tx);
          await client.query('COMMIT');
          if (tx.events.length > 0) for (const listener of db.committed) listener(tx.events);
          for (const fn of tx.after) fn();
        } catch (commitError) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
          throw asStoreError(db, commitError);
        }
        throw error;
      }
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      const code = (error as { code?: string }).code ?? ((error as { cause?: { code?: string } }).cause?.code);
      if (code && RETRYABLE.has(code) && attempt < 3) continue;
      // The caller's own refusal (a 409, a UserError) passes through as it is; the database's is said as a store error.
      throw fromDatabase(error) ? asStoreError(db, error) : error;
    } finally {
      client.release(broken);
    }
  }
}

/** Runs `fn` once the current transaction of `db` commits (never when it rolls back); at once outside one. */
export function afterCommit(db: Db, fn: () => void): void {
  const tx = current.getStore();
  if (tx?.db === db) tx.after.push(fn);
  else fn();
}

/**
 * Adds an event to the current transaction (or writes it in one of its own
 * when there is none). Its `id` and `seq` are given at commit
 * ({@link stampEvents}); the object returned is the one stamped.
 *
 * @throws StoreError INVALID_RECORD when it would not validate.
 */
export async function addEvent(db: Db, event: EventRecord): Promise<EventRecord> {
  // Validated with a stand-in id: the real one is given under the stamp lock.
  const issues = validateEvent({ ...event, id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' });
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `event ${event.type}: ${issues[0]!.message}`);
  if (inTransactionOf(db)) {
    current.getStore()!.events.push(event);
    return event;
  }
  return inTransaction(db, async () => {
    current.getStore()!.events.push(event);
    return event;
  });
}

/**
 * Stamps the transaction's events under {@link EVENT_STAMP_LOCK}: each gets
 * the next `seq` and an id after the newest id in the table, so ids and
 * seqs follow commit order (a since-cursor never skips an event committed
 * later with an earlier id: the classic trap of ids made before commit).
 * The lock is held to COMMIT, which follows at once. NOTIFY goes out with
 * the commit.
 */
async function stampEvents(tx: Tx): Promise<void> {
  const { client, events } = tx;
  await client.query('SELECT pg_advisory_xact_lock($1)', [EVENT_STAMP_LOCK]);
  // The highest id, not the last seq's: an imported log's ids need not follow its order.
  const last = await client.query<{ id: string | null; seq: string | null }>('SELECT (SELECT max(id) FROM events) AS id, (SELECT max(seq) FROM events) AS seq');
  let lastId = last.rows[0]?.id ?? undefined;
  let seq = Number(last.rows[0]?.seq ?? 0);
  const ids: string[] = [];
  const seqs: number[] = [];
  const types: string[] = [];
  const goals: (string | null)[] = [];
  const runs: (string | null)[] = [];
  const records: string[] = [];
  for (const event of events) {
    const id = nextEventId(lastId, Date.parse(event.ts));
    // The event was made with `id` as its first key (as the file store writes it): set in place, the order stays.
    event.id = id;
    seq += 1;
    lastId = id;
    ids.push(id);
    seqs.push(seq);
    types.push(event.type);
    goals.push(event.goal ?? null);
    runs.push(event.run ?? null);
    records.push(JSON.stringify(event));
  }
  await client.query(
    'INSERT INTO events (seq, id, type, goal, run, record) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::json[])',
    [seqs, ids, types, goals, runs, records],
  );
  await client.query(`SELECT pg_notify('${EVENTS_CHANNEL}', $1)`, [String(seq)]);
}

/** Ends the pool (waits for its clients). */
export async function closeDb(db: Db | undefined): Promise<void> {
  if (!db) return;
  await db.pool.end().catch(() => undefined);
}
