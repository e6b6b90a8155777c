/**
 * A look at a PostgreSQL store without changing it (docs/store/level2.md):
 * its schema version against this code's, its record counts, its active
 * leases and its running runs, for `pak2 store status` and `pak2 doctor`.
 * Unlike every other opening of the store, this one never migrates: a
 * store whose schema is older is said to be older, not brought up to date.
 */
import type { LeaseRecord, RunRecord } from '../../contracts/index.js';
import { asStoreError, closeDb, openDb, type Db } from './db.js';
import { migrate, schemaVersion, SCHEMA_VERSION } from './migrations.js';

/** How the store's schema stands against this code's: `current`; `older` (pak2 migrates it when it next opens it; 0: never set up); `newer` (this pak2 refuses it). */
export type SchemaState = 'current' | 'older' | 'newer';

/** A store's record counts (when its schema is current). */
export interface StoreCounts {
  goals: number;
  openGoals: number;
  runs: number;
  runningRuns: number;
  events: number;
  activeLeases: number;
  endedLeases: number;
  comments: number;
  documents: number;
  /** The goal counter: the highest N ever assigned. */
  goalCounter: number;
}

/** A run the store holds as `running`, with what decides whether anything will close it. */
export interface RunningRun {
  run: RunRecord;
  /** Its goal's status; undefined when the store has no such goal. */
  goalStatus: string | undefined;
  /** Its lease, active or ended; undefined when it has none (a local run, or a remote one whose lease was never written). */
  lease: LeaseRecord | undefined;
}

/** What {@link inspectStore} found. */
export interface StoreInspection {
  /** The store, its password hidden. */
  where: string;
  schema: { database: number; code: number; state: SchemaState };
  /** Present when the schema is current (the tables are the ones this code knows). */
  counts?: StoreCounts;
  /** Every active lease (current schema only), soonest expiry first. */
  activeLeases: LeaseRecord[];
  /** Every `running` run (current schema only), oldest first. */
  runningRuns: RunningRun[];
  /**
   * Who holds the `leader` duty (current schema only; source/coordinator/leader.ts),
   * undefined when none ever took it; `live`: its term has not lapsed (the database's clock).
   */
  leader?: { holder: string; term: number; expires_at: string; live: boolean };
}

/**
 * Connects to the store at `url`, reads its schema version and, when that
 * is this code's, its counts, active leases and running runs. Changes
 * nothing.
 *
 * @throws StoreError IO_ERROR naming the store (no connection, a failed query).
 */
export async function inspectStore(url: string): Promise<StoreInspection> {
  const db = await openDb(url, { max: 1 });
  try {
    const database = await schemaVersion(db);
    const state: SchemaState = database === SCHEMA_VERSION ? 'current' : database < SCHEMA_VERSION ? 'older' : 'newer';
    const inspection: StoreInspection = { where: db.where, schema: { database, code: SCHEMA_VERSION, state }, activeLeases: [], runningRuns: [] };
    if (state !== 'current') return inspection;
    inspection.counts = await counts(db);
    const leases = await db.pool.query<{ record: LeaseRecord }>("SELECT record FROM leases WHERE state = 'active'");
    inspection.activeLeases = leases.rows.map((r) => r.record).sort((a, b) => Date.parse(a.expires_at) - Date.parse(b.expires_at));
    const running = await db.pool.query<{ record: RunRecord; goal_status: string | null; lease: LeaseRecord | null }>(
      "SELECT r.record, g.status AS goal_status, l.record AS lease FROM runs r LEFT JOIN goals g ON g.id = r.goal LEFT JOIN leases l ON l.run = r.id WHERE r.status = 'running' ORDER BY r.started_at, r.id",
    );
    inspection.runningRuns = running.rows.map((r) => ({ run: r.record, goalStatus: r.goal_status ?? undefined, lease: r.lease ?? undefined }));
    const leader = await db.pool.query<{ holder: string; term: string; expires_at: Date; live: boolean }>("SELECT holder, term, expires_at, expires_at > now() AS live FROM duties WHERE duty = 'leader'");
    const row = leader.rows[0];
    if (row) inspection.leader = { holder: row.holder, term: Number(row.term), expires_at: row.expires_at.toISOString(), live: row.live };
    return inspection;
  } catch (error) {
    throw asStoreError(db, error);
  } finally {
    await closeDb(db);
  }
}

async function counts(db: Db): Promise<StoreCounts> {
  const { rows } = await db.pool.query<Record<keyof StoreCounts, string>>(`SELECT
    (SELECT count(*) FROM goals) AS "goals",
    (SELECT count(*) FROM goals WHERE status <> 'closed') AS "openGoals",
    (SELECT count(*) FROM runs) AS "runs",
    (SELECT count(*) FROM runs WHERE status = 'running') AS "runningRuns",
    (SELECT count(*) FROM events) AS "events",
    (SELECT count(*) FROM leases WHERE state = 'active') AS "activeLeases",
    (SELECT count(*) FROM leases WHERE state <> 'active') AS "endedLeases",
    (SELECT count(*) FROM comments) AS "comments",
    (SELECT count(*) FROM documents) AS "documents",
    (SELECT n FROM goal_counter) AS "goalCounter"`);
  const row = rows[0]!;
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value ?? 0)])) as unknown as StoreCounts;
}

/**
 * Brings the store's schema up to this code's version (what any pak2
 * command does when it opens the store; `pak2 doctor --fix` asks for it).
 *
 * @returns the versions applied (empty when it was current).
 * @throws StoreError IO_ERROR, SCHEMA_TOO_NEW.
 */
export async function migrateStore(url: string, by = 'pak2 doctor'): Promise<number[]> {
  const db = await openDb(url, { max: 1 });
  try {
    return await migrate(db, by);
  } finally {
    await closeDb(db);
  }
}
