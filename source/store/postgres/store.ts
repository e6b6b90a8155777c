/**
 * The PostgreSQL store (docs/store/level2.md): {@link GardenStore} on the
 * tables of migrations.ts. Each method is one statement or one
 * transaction; a method called inside {@link PostgresStore.withGoalLock}
 * joins that transaction.
 */
import type { CommentRecord, EventRecord, GoalRecord, LeaseRecord, LeaseState, RunRecord } from '../../contracts/index.js';
import type { GardenStore, RunStreamName } from '../backend.js';
import { StoreError } from '../files.js';
import { addEvent, afterCommit, asStoreError, closeDb, EVENTS_CHANNEL, inTransaction, openDb, query, type Db } from './db.js';
import { migrate } from './migrations.js';
import { redactStoreUrl } from '../../garden/store-url.js';

/**
 * Opens the store at `url` and brings its schema up to date.
 *
 * @throws StoreError IO_ERROR (no connection), SCHEMA_TOO_NEW.
 */
export async function openPostgresStore(url: string, options: { max?: number; by?: string } = {}): Promise<PostgresStore> {
  const store = new PostgresStore(url, options);
  await store.open();
  return store;
}

/**
 * The PostgreSQL {@link GardenStore}. It connects (and brings the schema up
 * to date) on its first call, so a command that loads a PostgreSQL garden
 * and touches no record never connects.
 */
export class PostgresStore implements GardenStore {
  readonly kind = 'postgres' as const;
  readonly where: string;
  private opening: Promise<Db> | undefined;
  private opened: Db | undefined;

  constructor(
    private readonly url: string,
    private readonly options: { max?: number; by?: string } = {},
  ) {
    this.where = redactStoreUrl(url);
  }

  /**
   * The open database: connected, schema current.
   *
   * @throws StoreError IO_ERROR (no connection), SCHEMA_TOO_NEW. A failed open is tried again by the next call.
   */
  open(): Promise<Db> {
    this.opening ??= (async () => {
      const db = await openDb(this.url, this.options);
      try {
        await migrate(db, this.options.by);
      } catch (error) {
        await closeDb(db);
        throw error;
      }
      this.opened = db;
      return db;
    })().catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    });
    return this.opening;
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    return inTransaction((await this.open()), fn);
  }

  afterCommit(fn: () => void): void {
    // Not open yet: no transaction of this store can be under way.
    if (this.opened) afterCommit(this.opened, fn);
    else fn();
  }

  async insertGoal(make: (n: number) => GoalRecord): Promise<GoalRecord> {
    return inTransaction((await this.open()), async () => {
      // The counter row is the lock that orders goal numbers: N is never made twice, and a rolled-back insert leaves a gap, as the files do.
      const [row] = await query<{ n: string }>((await this.open()), 'UPDATE goal_counter SET n = n + 1 RETURNING n');
      const goal = make(Number(row!.n));
      await query((await this.open()), 'INSERT INTO goals (id, n, status, priority, submitted_at, plant, record) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        goal.id,
        Number(row!.n),
        goal.status,
        goal.priority,
        goal.submitted_at,
        goal.assigned_to ?? null,
        JSON.stringify(goal),
      ]);
      return goal;
    });
  }

  async goalRecord(id: string): Promise<unknown> {
    const [row] = await query<{ record: unknown }>((await this.open()), 'SELECT record FROM goals WHERE id = $1', [id]);
    return row?.record;
  }

  async updateGoal(goal: GoalRecord): Promise<void> {
    const rows = await query((await this.open()), 'UPDATE goals SET status = $2, priority = $3, plant = $4, record = $5 WHERE id = $1 RETURNING id', [
      goal.id,
      goal.status,
      goal.priority,
      goal.assigned_to ?? null,
      JSON.stringify(goal),
    ]);
    if (rows.length === 0) throw new StoreError('GOAL_NOT_FOUND', `no goal ${goal.id} in ${this.where}`);
  }

  async goalRecords(filter: { open?: boolean }): Promise<{ id: string; record: unknown }[]> {
    return query<{ id: string; record: unknown }>((await this.open()), `SELECT id, record FROM goals${filter.open ? " WHERE status <> 'closed'" : ''} ORDER BY n`);
  }

  async closedGoalRecords(offset: number, limit: number): Promise<unknown[]> {
    const rows = await query<{ record: unknown }>((await this.open()), "SELECT record FROM goals WHERE status = 'closed' ORDER BY record->>'closed_at' DESC, n DESC OFFSET $1 LIMIT $2", [offset, limit]);
    return rows.map((r) => r.record);
  }

  async withGoalLock<T>(id: string, fn: () => Promise<T>, options: { skipLocked?: boolean } = {}): Promise<{ locked: true; value: T } | { locked: false }> {
    return inTransaction((await this.open()), async () => {
      const rows = await query((await this.open()), `SELECT id FROM goals WHERE id = $1 FOR UPDATE${options.skipLocked ? ' SKIP LOCKED' : ''}`, [id]);
      if (rows.length === 0) {
        if (options.skipLocked && (await query((await this.open()), 'SELECT 1 FROM goals WHERE id = $1', [id])).length > 0) return { locked: false as const };
        throw new StoreError('GOAL_NOT_FOUND', `no goal ${id} in ${this.where}`);
      }
      return { locked: true as const, value: await fn() };
    });
  }

  async insertRun(record: RunRecord, attempt: number): Promise<boolean> {
    const rows = await query((await this.open()), 'INSERT INTO runs (id, goal, attempt, status, started_at, record) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING id', [
      record.id,
      record.goal,
      attempt,
      record.status,
      record.started_at,
      JSON.stringify(record),
    ]);
    return rows.length > 0;
  }

  async updateRun(record: RunRecord): Promise<void> {
    let rows: unknown[];
    try {
      rows = await query((await this.open()), 'UPDATE runs SET status = $2, record = $3 WHERE id = $1 RETURNING id', [record.id, record.status, JSON.stringify(record)]);
    } catch (error) {
      // The seal trigger (migrations.ts): a terminal record is never rewritten.
      if (((error as StoreError).cause as { code?: string } | undefined)?.code === 'P0001') {
        throw new StoreError('INVALID_TRANSITION', `run ${record.id}: a terminal run record is never rewritten (${this.where})`);
      }
      throw error;
    }
    if (rows.length === 0) throw new StoreError('RUN_NOT_FOUND', `no run ${record.id} in ${this.where}`);
  }

  async runRecord(id: string): Promise<unknown> {
    const [row] = await query<{ record: unknown }>((await this.open()), 'SELECT record FROM runs WHERE id = $1', [id]);
    return row?.record;
  }

  async runIdsOfGoal(goalId: string): Promise<string[]> {
    const rows = await query<{ id: string }>((await this.open()), 'SELECT id FROM runs WHERE goal = $1 ORDER BY attempt', [goalId]);
    return rows.map((r) => r.id);
  }

  async runRecords(): Promise<{ id: string; record: unknown }[]> {
    return query<{ id: string; record: unknown }>((await this.open()), 'SELECT id, record FROM runs ORDER BY started_at, id');
  }

  async appendEvent(event: EventRecord): Promise<EventRecord> {
    return addEvent((await this.open()), event);
  }

  async eventsAfter(afterSeq: number, limit = 1000): Promise<{ event: EventRecord; seq: number }[]> {
    const rows = await query<{ seq: string; record: EventRecord }>((await this.open()), 'SELECT seq, record FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [afterSeq, limit]);
    return rows.map((r) => ({ event: r.record, seq: Number(r.seq) }));
  }

  async eventSeq(id: string): Promise<number | undefined> {
    const [row] = await query<{ seq: string }>((await this.open()), 'SELECT seq FROM events WHERE id = $1', [id]);
    return row ? Number(row.seq) : undefined;
  }

  async eventSeqAtOrBefore(id: string): Promise<number> {
    const [row] = await query<{ seq: string | null }>(await this.open(), 'SELECT max(seq) AS seq FROM events WHERE id <= $1', [id]);
    return Number(row?.seq ?? 0);
  }

  async lastEventSeq(): Promise<number> {
    const [row] = await query<{ seq: string | null }>((await this.open()), 'SELECT max(seq) AS seq FROM events');
    return Number(row?.seq ?? 0);
  }

  async watchEvents(listener: (lastSeq: number) => void): Promise<() => Promise<void>> {
    const db = await this.open();
    let current: import('pg').PoolClient | undefined;
    let connectedOnce = false;
    let ended = false;
    let retry: NodeJS.Timeout | undefined;
    let delayMs = 250;
    const onNotification = (message: { channel: string; payload?: string }): void => {
      if (message.channel === EVENTS_CHANNEL) listener(Number(message.payload ?? 0));
    };
    const schedule = (): void => {
      if (ended || retry) return;
      retry = setTimeout(() => {
        retry = undefined;
        void listen().catch(() => schedule());
      }, delayMs);
      retry.unref();
      delayMs = Math.min(delayMs * 2, 10_000);
    };
    const lost = (gone: import('pg').PoolClient): void => {
      gone.off('notification', onNotification);
      if (current === gone) current = undefined;
      // A broken connection goes back to be discarded, never reused.
      try {
        gone.release(true);
      } catch {
        // released already
      }
      schedule();
    };
    // LISTEN on a connection of its own. When it drops (the server restarted, an administrator ended it), listen
    // again with a growing delay (at most 10 s) and wake the listener once back: what committed meanwhile is read
    // by its cursor, not lost.
    const listen = async (): Promise<void> => {
      if (ended) return;
      const next = await db.pool.connect();
      next.on('notification', onNotification);
      next.once('error', () => lost(next));
      try {
        await next.query(`LISTEN ${EVENTS_CHANNEL}`);
      } catch (error) {
        lost(next);
        throw error;
      }
      if (ended) {
        next.release();
        return;
      }
      current = next;
      delayMs = 250;
      if (connectedOnce) listener(0);
      connectedOnce = true;
    };
    try {
      await listen();
    } catch (error) {
      ended = true;
      if (retry) clearTimeout(retry);
      throw asStoreError(db, error);
    }
    return async () => {
      if (ended) return;
      ended = true;
      if (retry) clearTimeout(retry);
      const held = current;
      current = undefined;
      if (!held) return;
      held.off('notification', onNotification);
      await held.query(`UNLISTEN ${EVENTS_CHANNEL}`).catch(() => undefined);
      try {
        held.release();
      } catch {
        // released already (its connection dropped)
      }
    };
  }

  async leaseRecord(runId: string): Promise<unknown> {
    const [row] = await query<{ record: unknown }>((await this.open()), 'SELECT record FROM leases WHERE run = $1', [runId]);
    return row?.record;
  }

  async activeLeaseRecords(): Promise<{ run: string; record: unknown }[]> {
    return query<{ run: string; record: unknown }>((await this.open()), "SELECT run, record FROM leases WHERE state = 'active' ORDER BY run");
  }

  async putLease(lease: LeaseRecord, state: LeaseState): Promise<LeaseRecord> {
    const record = { ...lease, state };
    await query(
      (await this.open()),
      `INSERT INTO leases (run, goal, state, epoch, expires_at, record) VALUES ($1, $2, $3, nextval('lease_epoch'), $4, $5)
       ON CONFLICT (run) DO UPDATE SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at, record = EXCLUDED.record`,
      [lease.run, lease.goal, state, lease.expires_at, JSON.stringify(record)],
    );
    return record;
  }

  async withLeaseLock<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    return inTransaction((await this.open()), async () => {
      // The run's row is the lock: it exists before its lease does, and a heartbeat, a finish and the expiry all take it.
      await query((await this.open()), 'SELECT id FROM runs WHERE id = $1 FOR UPDATE', [runId]);
      return fn();
    });
  }

  async commentRecords(goalId: string): Promise<unknown[]> {
    const rows = await query<{ record: unknown }>((await this.open()), 'SELECT record FROM comments WHERE goal = $1 ORDER BY seq', [goalId]);
    return rows.map((r) => r.record);
  }

  async insertComment(comment: CommentRecord): Promise<void> {
    await query((await this.open()), 'INSERT INTO comments (id, goal, record) VALUES ($1, $2, $3)', [comment.id, comment.goal, JSON.stringify(comment)]);
  }

  async documentRecord(kind: string, key: string): Promise<unknown> {
    const [row] = await query<{ record: unknown }>(await this.open(), 'SELECT record FROM documents WHERE kind = $1 AND key = $2', [kind, key]);
    return row?.record;
  }

  async documentRecords(kind: string, prefix = ''): Promise<{ key: string; record: unknown }[]> {
    // starts_with, not LIKE: a key's own % or _ is not a pattern.
    return query<{ key: string; record: unknown }>(await this.open(), 'SELECT key, record FROM documents WHERE kind = $1 AND starts_with(key, $2) ORDER BY key COLLATE "C"', [kind, prefix]);
  }

  async putDocument(kind: string, key: string, record: unknown): Promise<void> {
    await query(await this.open(), 'INSERT INTO documents (kind, key, record) VALUES ($1, $2, $3) ON CONFLICT (kind, key) DO UPDATE SET record = EXCLUDED.record', [kind, key, JSON.stringify(record)]);
  }

  async deleteDocument(kind: string, key: string): Promise<boolean> {
    return (await query(await this.open(), 'DELETE FROM documents WHERE kind = $1 AND key = $2 RETURNING key', [kind, key])).length > 0;
  }

  async withDocumentLock<T>(kind: string, key: string, fn: () => Promise<T>): Promise<T> {
    const db = await this.open();
    return inTransaction(db, async () => {
      // A transaction-scoped advisory lock on the pair: it works before the row exists.
      await query(db, 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [kind, key]);
      return fn();
    });
  }

  async appendStreamChunk(runId: string, stream: RunStreamName, offset: number, data: Buffer): Promise<{ appended: boolean; size: number }> {
    const db = await this.open();
    for (let attempt = 0; ; attempt += 1) {
      // One statement: the size moves from `offset` only (a row lock and a re-check of the WHERE under a concurrent append), the chunk goes with it.
      const [moved] = await query<{ size: string }>(
        db,
        `WITH moved AS (UPDATE run_streams SET size = size + $5 WHERE run = $1 AND stream = $2 AND size = $3 RETURNING size),
              chunk AS (INSERT INTO run_stream_chunks (run, stream, byte_offset, data) SELECT $1, $2, $3, $4 FROM moved WHERE $5 > 0)
         SELECT size FROM moved`,
        [runId, stream, offset, data, data.length],
      );
      if (moved) return { appended: true, size: Number(moved.size) };
      const [held] = await query<{ size: string }>(db, 'SELECT size FROM run_streams WHERE run = $1 AND stream = $2', [runId, stream]);
      // Another offset: refused with the size held. (The size became `offset` meanwhile: a concurrent append; try again.)
      if (held && (Number(held.size) !== offset || attempt >= 3)) return { appended: false, size: Number(held.size) };
      if (!held) {
        if ((await query(db, 'SELECT 1 FROM runs WHERE id = $1', [runId])).length === 0) throw new StoreError('RUN_NOT_FOUND', `no run ${runId} in ${this.where}`);
        await query(db, 'INSERT INTO run_streams (run, stream) VALUES ($1, $2) ON CONFLICT DO NOTHING', [runId, stream]);
      }
    }
  }

  async streamSize(runId: string, stream: RunStreamName): Promise<number> {
    const [row] = await query<{ size: string }>(await this.open(), 'SELECT size FROM run_streams WHERE run = $1 AND stream = $2', [runId, stream]);
    return Number(row?.size ?? 0);
  }

  async streamBytes(runId: string, stream: RunStreamName, from: number, length: number): Promise<Buffer> {
    if (length <= 0) return Buffer.alloc(0);
    // The chunk that holds `from` (the last starting at or before it) and those after it, up to `from + length`.
    const rows = await query<{ byte_offset: string; data: Buffer }>(
      await this.open(),
      `SELECT byte_offset, data FROM run_stream_chunks
        WHERE run = $1 AND stream = $2 AND byte_offset < $3::bigint + $4::bigint
          AND byte_offset >= coalesce((SELECT max(byte_offset) FROM run_stream_chunks WHERE run = $1 AND stream = $2 AND byte_offset <= $3), 0)
        ORDER BY byte_offset`,
      [runId, stream, from, length],
    );
    if (rows.length === 0) return Buffer.alloc(0);
    const start = Number(rows[0]!.byte_offset);
    const all = rows.length === 1 ? rows[0]!.data : Buffer.concat(rows.map((r) => r.data));
    return all.subarray(Math.max(0, from - start), Math.max(0, from - start) + length);
  }

  async clearStream(runId: string, stream: RunStreamName): Promise<void> {
    const db = await this.open();
    await inTransaction(db, async () => {
      // The row first: an append waits on its lock, then finds the size 0.
      await query(db, 'UPDATE run_streams SET size = 0 WHERE run = $1 AND stream = $2', [runId, stream]);
      await query(db, 'DELETE FROM run_stream_chunks WHERE run = $1 AND stream = $2', [runId, stream]);
    });
  }

  async appendDocumentLine(kind: string, parent: string, record: unknown): Promise<number> {
    const db = await this.open();
    return inTransaction(db, async () => {
      // withDocumentLock's lock: a read-compute-append under it (the next operator message number) is never interleaved.
      await query(db, 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [kind, parent]);
      const [row] = await query<{ n: string }>(
        db,
        'INSERT INTO document_lines (kind, parent, n, record) SELECT $1, $2, coalesce(max(n), 0) + 1, $3 FROM document_lines WHERE kind = $1 AND parent = $2 RETURNING n',
        [kind, parent, JSON.stringify(record)],
      );
      return Number(row!.n);
    });
  }

  async documentLines(kind: string, parent: string, options: { after?: number; last?: number } = {}): Promise<{ n: number; record: unknown }[]> {
    const db = await this.open();
    const rows =
      options.last !== undefined
        ? await query<{ n: string; record: unknown }>(db, 'SELECT n, record FROM (SELECT n, record FROM document_lines WHERE kind = $1 AND parent = $2 AND n > $3 ORDER BY n DESC LIMIT $4) AS tail ORDER BY n', [kind, parent, options.after ?? 0, options.last])
        : await query<{ n: string; record: unknown }>(db, 'SELECT n, record FROM document_lines WHERE kind = $1 AND parent = $2 AND n > $3 ORDER BY n', [kind, parent, options.after ?? 0]);
    return rows.map((r) => ({ n: Number(r.n), record: r.record }));
  }

  async claimDuty(duty: string, holder: string, ttlSeconds: number): Promise<{ held: boolean; holder: string; term: number; expires_at: string }> {
    // One statement: free, expired or already ours, it is ours (a new holder starts a new term); else it stays as it is.
    const [row] = await query<{ holder: string; term: string; expires_at: Date }>(
      await this.open(),
      `INSERT INTO duties AS d (duty, holder, term, expires_at) VALUES ($1, $2, 1, now() + make_interval(secs => $3))
       ON CONFLICT (duty) DO UPDATE SET
         holder = EXCLUDED.holder,
         term = CASE WHEN d.holder = EXCLUDED.holder THEN d.term ELSE d.term + 1 END,
         expires_at = EXCLUDED.expires_at
       WHERE d.holder = EXCLUDED.holder OR d.expires_at < now()
       RETURNING holder, term, expires_at`,
      [duty, holder, ttlSeconds],
    );
    if (row) return { held: true, holder: row.holder, term: Number(row.term), expires_at: row.expires_at.toISOString() };
    const [current] = await query<{ holder: string; term: string; expires_at: Date }>(await this.open(), 'SELECT holder, term, expires_at FROM duties WHERE duty = $1', [duty]);
    return { held: false, holder: current?.holder ?? '', term: Number(current?.term ?? 0), expires_at: current?.expires_at.toISOString() ?? '' };
  }

  async releaseDuty(duty: string, holder: string): Promise<void> {
    await query(await this.open(), 'UPDATE duties SET expires_at = now() - interval \'1 second\' WHERE duty = $1 AND holder = $2', [duty, holder]);
  }

  async close(): Promise<void> {
    const opening = this.opening;
    this.opening = undefined;
    this.opened = undefined;
    if (opening) await closeDb(await opening.catch(() => undefined as unknown as Db)).catch(() => undefined);
  }
}
