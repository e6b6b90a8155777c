/**
 * What every record kind of `pak2 store import` / `export` shares
 * (record-kinds.ts, document-kinds.ts): the kind's shape, what reading a
 * runtime root finds, and the file and batch helpers they read and write
 * with (synchronous reads: a file at a time, see record-kinds.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { formatIssue, type ValidationIssue } from '../../contracts/index.js';
import { isErrno } from '../../errors.js';
import { RUNTIME_FILE_MODE } from '../files.js';

/** A record file (or line) and what is to be said of it; `file` is relative to the runtime root. */
export interface TransferNote {
  file: string;
  message: string;
}

/** What reading a runtime root found besides the records: what cannot be imported, and what will not come back byte for byte. */
export interface Reading {
  /** The runtime root read (absolute). */
  root: string;
  /** Records that cannot be imported (unreadable, failing their contract, a duplicate key): an import refuses while there is one, unless told to leave them out. */
  damaged: TransferNote[];
  /** Records imported whose export will differ from the file (not in pak2's own form, a meta.json that differs from its seal, …), and files not imported that are no records. */
  notes: TransferNote[];
}

/** One kind's records, read and checked, ready to load. */
export interface Staged {
  /** How many records were read (a goal, a run, an event line, a lease, a comment). */
  records: number;
  /** Inserts them in bulk on `client`, inside the import's transaction. */
  load(client: PoolClient): Promise<void>;
}

/** One record kind: where it lives in a runtime root, and how it moves. */
export interface RecordKind {
  /** Its name in messages and in `--json` (goals, runs, events, leases, comments). */
  name: string;
  /** True for a store document or line kind (conversations, landings, budget.json, …): a summary names it only when it has records. */
  document?: boolean;
  /** Its files in a runtime root, as the docs list them. */
  layout: readonly string[];
  /** The store tables its records go to (an import refuses a store where any of them holds a row). */
  tables: readonly string[];
  /** Reads and checks the kind's files under `reading.root`; what is wrong goes to `reading`. */
  read(reading: Reading): Staged;
  /** Writes the kind's records from the store under `root` (a new directory); returns how many. */
  write(client: PoolClient, root: string): Promise<number>;
  /** The kind's record files present under `root`, relative to it (what a round trip compares). */
  list(root: string): string[];
}

/** Rows per bulk insert (one `INSERT … SELECT FROM unnest(…)` each) and per page read back. */
export const BATCH = 5000;
/** Mode of the directories an export makes: the owner's alone, as a split runtime root is (docs/run/level2.md, "Secrets"). */
export const DIR_MODE = 0o700;

/** A directory's entries; none when it is missing or no directory. */
export function names(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) return [];
    throw error;
  }
}

/** True when `file` is a regular file (following links). */
export function isFile(file: string): boolean {
  return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}

/** A file's text, or undefined when it does not exist or cannot be read (said in `reading.damaged`, as `rel`). */
export function readText(reading: Reading, rel: string): string | undefined {
  try {
    return fs.readFileSync(path.join(reading.root, rel), 'utf8');
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) reading.damaged.push({ file: rel, message: `cannot be read (${(error as Error).message})` });
    return undefined;
  }
}

/** A JSON text parsed, or why not (`malformed JSON (…)`). */
export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

/** Parses a JSON text. */
export function parse(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `malformed JSON (${(error as Error).message})` };
  }
}

/** The first contract issue, formatted; undefined when there is none. */
export function firstIssue(issues: readonly ValidationIssue[]): string | undefined {
  return issues.length > 0 ? formatIssue(issues[0]!) : undefined;
}

/** Runs `insert` on `rows` a batch at a time; `columns` turns a batch into the statement's array parameters. */
export async function insertBatches<T>(client: PoolClient, rows: readonly T[], sql: string, columns: (batch: readonly T[]) => unknown[]): Promise<void> {
  for (let from = 0; from < rows.length; from += BATCH) {
    const batch = rows.slice(from, from + BATCH);
    await client.query(sql, columns(batch));
  }
}

/** Makes `dir` (and its parents) with {@link DIR_MODE}. */
export function mkdir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
}

/** A file's bytes, or undefined when it does not exist or cannot be read (said in `reading.damaged`, as `rel`). */
export function readBytes(reading: Reading, rel: string): Buffer | undefined {
  try {
    return fs.readFileSync(path.join(reading.root, rel));
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) reading.damaged.push({ file: rel, message: `cannot be read (${(error as Error).message})` });
    return undefined;
  }
}

/** Writes a new file of an export (`wx`: never over one already there). */
export function writeNew(file: string, text: string | Buffer): void {
  fs.writeFileSync(file, text, { mode: RUNTIME_FILE_MODE, flag: 'wx' });
}

/**
 * Reads a table a page at a time in `key` order (a unique column), handing
 * each page to `each`: `sql` takes the last key seen as $1, the page size
 * as $2, and `params` as $3, ….
 */
export async function pages<R extends Record<string, unknown>>(client: PoolClient, sql: string, key: keyof R, first: unknown, each: (rows: R[]) => void, params: readonly unknown[] = []): Promise<void> {
  let after = first;
  for (;;) {
    const { rows } = await client.query<R>(sql, [after, BATCH, ...params]);
    if (rows.length === 0) return;
    each(rows);
    after = rows[rows.length - 1]![key];
    if (rows.length < BATCH) return;
  }
}

