/**
 * `pak2 store import` and `pak2 store export` (docs/store/level2.md,
 * "Moving between stores"): a runtime root's records (the seeds' files) into
 * an empty PostgreSQL store in one transaction, and a store's records out
 * into a new directory in the seeds' exact layout; and the comparison of two
 * runtime roots' record files that proves a round trip. The kinds moved are
 * the table in record-kinds.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { UserError } from '../../errors.js';
import { StoreError } from '../files.js';
import { asStoreError, type Db } from './db.js';
import { RECORD_KINDS, type Reading, type TransferNote } from './record-kinds.js';
import { PostgresStore } from './store.js';

export { RECORD_KINDS, type RecordKind, type TransferNote } from './record-kinds.js';

/** How long an import waits for the tables' lock before it gives up (another pak2 writing to the store). */
const LOCK_TIMEOUT = '10s';

/** One kind's part of an import or export: how many records, and how long each step took (ms). */
export interface KindFigures {
  kind: string;
  records: number;
  /** Import: reading and checking the files. */
  readMs?: number;
  /** Import: the bulk inserts. Export: the reads and file writes. */
  ms: number;
}

/** What {@link importGarden} did. */
export interface ImportResult {
  /** The store, its password hidden. */
  where: string;
  /** The runtime root read. */
  from: string;
  /** False when it refused: there were damaged records and `skipDamaged` was not given (nothing was written). */
  imported: boolean;
  kinds: KindFigures[];
  /** Records left out (or, when not imported, the reason it refused). */
  damaged: TransferNote[];
  /** Records imported whose export will not be byte for byte their file, and files that are no records. */
  notes: TransferNote[];
  /** Whole import, ms: reading, and the transaction (to its commit). */
  readMs: number;
  loadMs: number;
}

/**
 * Reads the record files of the runtime root `from` and loads them into the
 * PostgreSQL store at `url`, in one transaction holding the tables' locks:
 * all of them or, on any failure, none. The store must hold no record
 * (no goal, run, event, lease, comment or document): an import never merges.
 * Its schema is brought up to date first, as any pak2 command does. Goals
 * keep their ids and N, the goal counter its value, events their ids and
 * their file order (as `seq`), comments theirs. Nothing under `from` is
 * changed.
 *
 * A record that cannot be imported (unreadable, failing its contract, a
 * duplicate key) refuses the whole import before anything is written,
 * unless `skipDamaged` leaves those out.
 *
 * @throws UserError naming `from` when it holds no pak2 records; StoreError
 *   IO_ERROR naming the store (no connection, the store is not empty, a
 *   failed insert), SCHEMA_TOO_NEW.
 */
export async function importGarden(from: string, url: string, options: { skipDamaged?: boolean; by?: string } = {}): Promise<ImportResult> {
  const root = path.resolve(from);
  const stat = fs.statSync(root, { throwIfNoEntry: false });
  if (!stat?.isDirectory()) throw new UserError(`${root}: ${stat ? 'not a directory' : 'no such directory'}`, { hint: 'give --from the runtime root of a file garden (the directory holding goals/, runs/, events/)' });
  if (RECORD_KINDS.every((kind) => kind.list(root).length === 0)) {
    throw new UserError(`${root}: holds no pak2 records (no ${RECORD_KINDS.flatMap((k) => k.layout.map((l) => l.split(' ')[0])).join(', ')})`, {
      hint: 'give --from the runtime root of a file garden (the directory holding goals/, runs/, events/)',
    });
  }
  const reading: Reading = { root, damaged: [], notes: [] };
  const startedRead = performance.now();
  const staged = RECORD_KINDS.map((kind) => {
    const began = performance.now();
    const stage = kind.read(reading);
    return { kind, stage, readMs: performance.now() - began };
  });
  const readMs = performance.now() - startedRead;
  const store = new PostgresStore(url, { max: 2, ...(options.by ? { by: options.by } : {}) });
  const result: ImportResult = {
    where: store.where,
    from: root,
    imported: false,
    kinds: staged.map((s) => ({ kind: s.kind.name, records: s.stage.records, readMs: Math.round(s.readMs), ms: 0 })),
    damaged: reading.damaged,
    notes: reading.notes,
    readMs: Math.round(readMs),
    loadMs: 0,
  };
  if (reading.damaged.length > 0 && !options.skipDamaged) return result;
  try {
    const db = await store.open();
    const startedLoad = performance.now();
    await inOneTransaction(db, 'READ WRITE', async (client) => {
      await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      const tables = [...new Set(RECORD_KINDS.flatMap((k) => k.tables)), 'documents', 'goal_counter'];
      // No pak2 writes while the records go in, and none can slip in between the check and the inserts.
      await client.query(`LOCK TABLE ${tables.join(', ')} IN EXCLUSIVE MODE`);
      await refuseUnlessEmpty(client, db.where);
      for (const [index, { stage }] of staged.entries()) {
        const began = performance.now();
        await stage.load(client);
        result.kinds[index]!.ms = Math.round(performance.now() - began);
      }
    });
    result.loadMs = Math.round(performance.now() - startedLoad);
    result.imported = true;
    return result;
  } finally {
    await store.close();
  }
}

/** @throws StoreError IO_ERROR naming the store and what it holds when any record table has a row. */
async function refuseUnlessEmpty(client: PoolClient, where: string): Promise<void> {
  const tables = [...new Set([...RECORD_KINDS.flatMap((k) => k.tables), 'documents'])];
  const { rows } = await client.query<Record<string, string>>(`SELECT ${tables.map((t) => `(SELECT count(*) FROM ${t}) AS ${t}`).join(', ')}`);
  const held = Object.entries(rows[0]!)
    .filter(([, count]) => Number(count) > 0)
    .map(([table, count]) => `${count} ${table}`);
  if (held.length > 0) {
    throw new StoreError('IO_ERROR', `store ${where} is not empty (${held.join(', ')}): pak2 store import fills an empty store only, it never merges; import into a new database`);
  }
}

/** What {@link exportGarden} wrote. */
export interface ExportResult {
  where: string;
  /** The directory written (absolute). */
  to: string;
  kinds: KindFigures[];
  /** Whole export, ms. */
  ms: number;
}

/**
 * Writes the records of the PostgreSQL store at `url` into `dir` (made when
 * missing; it must be empty) in the seeds' exact runtime layout, with the
 * file store's own format, from one consistent snapshot (a repeatable-read
 * transaction: a store in use exports as it was at one instant). A file
 * garden imported and exported again gives its record files back byte for
 * byte ({@link compareRecordFiles}). The runs' own files (agent streams,
 * prompts, logs) are not records of the store and are not written.
 *
 * @throws UserError naming `dir` when it is not an empty directory; StoreError IO_ERROR, SCHEMA_TOO_NEW.
 */
export async function exportGarden(url: string, dir: string): Promise<ExportResult> {
  const to = path.resolve(dir);
  const stat = fs.statSync(to, { throwIfNoEntry: false });
  if (stat && !stat.isDirectory()) throw new UserError(`${to}: not a directory`, { hint: 'pak2 store export writes into a new or empty directory' });
  if (stat && fs.readdirSync(to).length > 0) throw new UserError(`${to}: not empty`, { hint: 'pak2 store export writes into a new or empty directory' });
  const store = new PostgresStore(url, { max: 2 });
  try {
    const db = await store.open();
    const started = performance.now();
    fs.mkdirSync(to, { recursive: true, mode: 0o700 });
    const kinds: KindFigures[] = [];
    await inOneTransaction(db, 'ISOLATION LEVEL REPEATABLE READ, READ ONLY', async (client) => {
      for (const kind of RECORD_KINDS) {
        const began = performance.now();
        const records = await kind.write(client, to);
        kinds.push({ kind: kind.name, records, ms: Math.round(performance.now() - began) });
      }
    });
    return { where: store.where, to, kinds, ms: Math.round(performance.now() - started) };
  } finally {
    await store.close();
  }
}

/** Runs `fn` on one connection in one transaction (`mode` after BEGIN); rolls back on any error. */
async function inOneTransaction<T>(db: Db, mode: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  let client: PoolClient;
  try {
    client = await db.pool.connect();
  } catch (error) {
    throw asStoreError(db, error);
  }
  try {
    await client.query(`BEGIN ${mode}`);
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw asStoreError(db, error);
  } finally {
    client.release();
  }
}

/** Two runtime roots' record files compared ({@link compareRecordFiles}); paths relative to the roots. */
export interface RecordComparison {
  /** Record files in either root. */
  files: number;
  /** Present in both, byte for byte the same. */
  identical: number;
  /** Present in both, different. */
  differing: string[];
  onlyInFirst: string[];
  onlyInSecond: string[];
}

/**
 * Compares the record files (every kind's, {@link RECORD_KINDS}) of two
 * runtime roots byte for byte; other files (caches, locks, the runs' own
 * files) are not records and are not compared.
 */
export function compareRecordFiles(first: string, second: string): RecordComparison {
  const a = new Set(RECORD_KINDS.flatMap((k) => k.list(first)));
  const b = new Set(RECORD_KINDS.flatMap((k) => k.list(second)));
  const comparison: RecordComparison = { files: new Set([...a, ...b]).size, identical: 0, differing: [], onlyInFirst: [], onlyInSecond: [] };
  for (const rel of [...a].sort()) {
    if (!b.has(rel)) comparison.onlyInFirst.push(rel);
    else if (fs.readFileSync(path.join(first, rel)).equals(fs.readFileSync(path.join(second, rel)))) comparison.identical += 1;
    else comparison.differing.push(rel);
  }
  for (const rel of [...b].sort()) if (!a.has(rel)) comparison.onlyInSecond.push(rel);
  return comparison;
}
