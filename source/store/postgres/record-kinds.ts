/**
 * The record kinds `pak2 store import` and `pak2 store export` move
 * (docs/store/level2.md, "Moving between stores"): one entry per kind, each
 * saying where its records are in a runtime root (the seeds' layout), how
 * they are read and checked from there, loaded into the PostgreSQL tables
 * in bulk, and written back with the file store's own format
 * ({@link recordText}, {@link recordLine}), so that files → store → files is
 * byte for byte the same for every record file.
 *
 * Reading is synchronous, a file at a time: a garden of 50,000 goals is
 * 150,000 small files, and a synchronous read is one call where an
 * asynchronous one is several trips through the thread pool.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { encodeTime } from 'ulid';
import {
  formatIssue,
  GOAL_ID_PATTERN,
  RUN_ID_PATTERN,
  validateComment,
  validateEvent,
  validateGoal,
  validateLease,
  validateRun,
  type GoalRecord,
  type ValidationIssue,
} from '../../contracts/index.js';
import { isErrno } from '../../errors.js';
import { closedEntryOf, CLOSED_LEDGER, compareGoalIds, goalNumber } from '../closed-index.js';
import { recordLine, recordText, RUNTIME_FILE_MODE } from '../files.js';
import { ulidSuccessor } from './event-ids.js';

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
const BATCH = 5000;
/** Mode of the directories an export makes: the owner's alone, as a split runtime root is (docs/run/level2.md, "Secrets"). */
const DIR_MODE = 0o700;

// ------------------------------------------------------------------ helpers

function names(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) return [];
    throw error;
  }
}

function isFile(file: string): boolean {
  return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}

/** A file's text, or undefined when it does not exist or cannot be read (said in `reading.damaged`, as `rel`). */
function readText(reading: Reading, rel: string): string | undefined {
  try {
    return fs.readFileSync(path.join(reading.root, rel), 'utf8');
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) reading.damaged.push({ file: rel, message: `cannot be read (${(error as Error).message})` });
    return undefined;
  }
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

function parse(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `malformed JSON (${(error as Error).message})` };
  }
}

function firstIssue(issues: readonly ValidationIssue[]): string | undefined {
  return issues.length > 0 ? formatIssue(issues[0]!) : undefined;
}

/** Runs `insert` on `rows` a batch at a time; `columns` turns a batch into the statement's array parameters. */
async function insertBatches<T>(client: PoolClient, rows: readonly T[], sql: string, columns: (batch: readonly T[]) => unknown[]): Promise<void> {
  for (let from = 0; from < rows.length; from += BATCH) {
    const batch = rows.slice(from, from + BATCH);
    await client.query(sql, columns(batch));
  }
}

function mkdir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
}

/** Writes a new file of an export (`wx`: never over one already there). */
function writeNew(file: string, text: string): void {
  fs.writeFileSync(file, text, { mode: RUNTIME_FILE_MODE, flag: 'wx' });
}

/** Reads a table a page at a time in `key` order (a unique column), handing each page to `each`. */
async function pages<R extends Record<string, unknown>>(client: PoolClient, sql: string, key: keyof R, first: unknown, each: (rows: R[]) => void): Promise<void> {
  let after = first;
  for (;;) {
    const { rows } = await client.query<R>(sql, [after, BATCH]);
    if (rows.length === 0) return;
    each(rows);
    after = rows[rows.length - 1]![key];
    if (rows.length < BATCH) return;
  }
}

// ------------------------------------------------------------------ goals

/** A closed goal's place in the ledger (closed_at, then N: the order a rebuild writes, closed-index.ts) and its line. */
interface LedgerEntry {
  at: number;
  n: number;
  line: string;
}

function ledgerEntry(goal: GoalRecord, n: number): LedgerEntry {
  const at = Date.parse(goal.closed_at ?? goal.updated_at ?? goal.submitted_at);
  return { at: Number.isFinite(at) ? at : 0, n, line: recordLine(closedEntryOf(goal)) };
}

/** The closed ledger pak2 would rebuild from these closed goals: one entry line each, in close order. */
function ledgerText(entries: LedgerEntry[]): string {
  return entries
    .sort((a, b) => a.at - b.at || a.n - b.n)
    .map((e) => e.line)
    .join('');
}

interface GoalRow {
  id: string;
  n: number;
  status: string;
  priority: number;
  submitted_at: string;
  plant: string | null;
  record: string;
}

const goals: RecordKind = {
  name: 'goals',
  layout: ['goals/<goal-id>.json', 'goals/.counter', `goals/${CLOSED_LEDGER} (the closed ledger: written from the closed goals, in close order)`],
  tables: ['goals'],
  read(reading) {
    const dir = path.join(reading.root, 'goals');
    const rows: GoalRow[] = [];
    const byN = new Map<number, string>();
    const ledger: LedgerEntry[] = [];
    const ids = names(dir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.slice(0, -5))
      .sort(compareGoalIds);
    for (const id of ids) {
      const rel = `goals/${id}.json`;
      if (!GOAL_ID_PATTERN.test(id)) {
        reading.notes.push({ file: rel, message: 'not a goal file name (goal files are <N-slug>.json): pak2 never reads it; not imported' });
        continue;
      }
      const text = readText(reading, rel);
      if (text === undefined) continue; // gone since the listing
      const parsed = parse(text);
      if (!parsed.ok) {
        reading.damaged.push({ file: rel, message: parsed.message });
        continue;
      }
      const issue = firstIssue(validateGoal(parsed.value));
      const goal = parsed.value as GoalRecord;
      if (issue || goal.id !== id) {
        reading.damaged.push({ file: rel, message: issue ?? `id ${JSON.stringify(goal.id)} does not match the file name` });
        continue;
      }
      const n = goalNumber(id);
      const taken = byN.get(n);
      if (taken) {
        reading.damaged.push({ file: rel, message: `goal number ${n} is ${taken}'s already (a store keeps N unique)` });
        continue;
      }
      byN.set(n, id);
      if (text !== recordText(goal)) reading.notes.push({ file: rel, message: "not in pak2's own form (JSON, two spaces, a newline): the export writes it in that form" });
      if (goal.status === 'closed') ledger.push(ledgerEntry(goal, n));
      rows.push({ id, n, status: goal.status, priority: goal.priority, submitted_at: goal.submitted_at, plant: goal.assigned_to ?? null, record: JSON.stringify(goal) });
    }
    const highest = rows.reduce((max, row) => Math.max(max, row.n), 0);
    const counter = readCounter(reading, highest);
    const ledgerFile = readText(reading, `goals/${CLOSED_LEDGER}`);
    const rebuilt = ledgerText(ledger);
    if (ledgerFile !== undefined ? ledgerFile !== rebuilt : rebuilt !== '') {
      reading.notes.push({
        file: `goals/${CLOSED_LEDGER}`,
        message: `${ledgerFile === undefined ? 'missing' : 'not what a rebuild from the goal files writes (its lines, or their order: closed_at, then N)'}: a store keeps no ledger (its closed goals are a query); the export writes the rebuilt one`,
      });
    }
    return {
      records: rows.length,
      load: async (client) => {
        await insertBatches(client, rows, 'INSERT INTO goals (id, n, status, priority, submitted_at, plant, record) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::json[])', (b) => [
          b.map((r) => r.id),
          b.map((r) => r.n),
          b.map((r) => r.status),
          b.map((r) => r.priority),
          b.map((r) => r.submitted_at),
          b.map((r) => r.plant),
          b.map((r) => r.record),
        ]);
        await client.query('UPDATE goal_counter SET n = $1', [counter]);
      },
    };
  },
  async write(client, root) {
    const dir = path.join(root, 'goals');
    mkdir(dir);
    const closed: LedgerEntry[] = [];
    let count = 0;
    await pages<{ n: string; id: string; record: GoalRecord }>(client, 'SELECT n, id, record FROM goals WHERE n > $1 ORDER BY n LIMIT $2', 'n', 0, (rows) => {
      for (const { n, id, record } of rows) {
        writeNew(path.join(dir, `${id}.json`), recordText(record));
        if (record.status === 'closed') closed.push(ledgerEntry(record, Number(n)));
        count += 1;
      }
    });
    if (closed.length > 0) writeNew(path.join(dir, CLOSED_LEDGER), ledgerText(closed));
    const { rows } = await client.query<{ n: string }>('SELECT n FROM goal_counter');
    const counter = Number(rows[0]?.n ?? 0);
    if (counter > 0) writeNew(path.join(dir, '.counter'), `${counter}\n`);
    return count;
  },
  list(root) {
    const dir = path.join(root, 'goals');
    return names(dir)
      .filter((name) => (name.endsWith('.json') && GOAL_ID_PATTERN.test(name.slice(0, -5))) || name === '.counter' || name === CLOSED_LEDGER)
      .filter((name) => isFile(path.join(dir, name)))
      .map((name) => `goals/${name}`);
  },
};

/** The goal counter: `.counter` as createGoal reads it, at least the highest N there is. */
function readCounter(reading: Reading, highest: number): number {
  const rel = 'goals/.counter';
  const text = readText(reading, rel);
  if (text === undefined) {
    if (highest > 0) reading.notes.push({ file: rel, message: `missing: the store's counter starts from the highest goal number, ${highest}; the export writes it` });
    return highest;
  }
  if (!/^\s*\d+\s*$/.test(text)) {
    reading.notes.push({ file: rel, message: `does not hold a number: the store's counter starts from the highest goal number, ${highest}; the export writes it` });
    return highest;
  }
  const n = Number.parseInt(text, 10);
  if (n < highest) {
    reading.notes.push({ file: rel, message: `says ${n}, below the highest goal number ${highest}: the store's counter starts from ${highest}` });
    return highest;
  }
  if (text !== `${n}\n`) reading.notes.push({ file: rel, message: `not in pak2's own form ("${n}" and a newline): the export writes it in that form` });
  return n;
}

// ------------------------------------------------------------------ runs

interface RunRow {
  id: string;
  goal: string;
  attempt: number;
  status: string;
  started_at: string;
  record: string;
}

/** A run record read from one of its two files: the record and its text, or why not. */
function runFrom(text: string | undefined, id: string): { record: Record<string, unknown>; text: string } | { why: string } | undefined {
  if (text === undefined) return undefined;
  const parsed = parse(text);
  if (!parsed.ok) return { why: parsed.message };
  const issue = firstIssue(validateRun(parsed.value));
  if (issue) return { why: issue };
  const record = parsed.value as Record<string, unknown>;
  if (record.id !== id) return { why: `id ${JSON.stringify(record.id)} does not match the run directory` };
  return { record, text };
}

const runs: RecordKind = {
  name: 'runs',
  layout: ['runs/<run-id>/meta.json', 'runs/.seals/<run-id>.json (the seal: the same record)'],
  tables: ['runs'],
  read(reading) {
    const dir = path.join(reading.root, 'runs');
    const sealsDir = path.join(dir, '.seals');
    const ids = new Set<string>();
    for (const name of names(dir)) if (RUN_ID_PATTERN.test(name) && fs.statSync(path.join(dir, name), { throwIfNoEntry: false })?.isDirectory()) ids.add(name);
    for (const name of names(sealsDir)) if (name.endsWith('.json') && RUN_ID_PATTERN.test(name.slice(0, -5))) ids.add(name.slice(0, -5));
    const rows: RunRow[] = [];
    for (const id of [...ids].sort(compareGoalIds)) {
      const metaRel = `runs/${id}/meta.json`;
      const sealRel = `runs/.seals/${id}.json`;
      const metaText = readText(reading, metaRel);
      const sealText = readText(reading, sealRel);
      const seal = runFrom(sealText, id);
      // The two are one text when pak2 wrote both: read and checked once.
      const meta = metaText === sealText ? seal : runFrom(metaText, id);
      // The seal is pak2's truth; without a readable one, meta.json is (readRunChecked).
      let truth: { record: Record<string, unknown>; text: string };
      if (seal && 'record' in seal) {
        truth = seal;
        if (metaText !== sealText) reading.notes.push({ file: metaRel, message: `${metaText === undefined ? 'missing' : 'differs from its seal'}: the store keeps the sealed record; the export writes meta.json from it` });
      } else if (meta && 'record' in meta) {
        truth = meta;
        reading.notes.push({ file: sealRel, message: `${seal ? `damaged (${seal.why}); readers believe meta.json` : 'missing (a record from before seals)'}: the store keeps meta.json's record; the export writes a seal of it` });
      } else {
        if (meta) reading.damaged.push({ file: metaRel, message: `${meta.why}; ${seal ? `its seal is damaged too (${seal.why})` : 'it has no seal'}: the run has no readable record` });
        else if (seal) reading.damaged.push({ file: sealRel, message: `${seal.why}; there is no meta.json: the run has no readable record` });
        else reading.damaged.push({ file: metaRel, message: 'no meta.json and no seal: the run directory has no record' });
        continue;
      }
      if (truth.text !== recordText(truth.record)) reading.notes.push({ file: metaRel, message: "not in pak2's own form (JSON, two spaces, a newline): the export writes it in that form" });
      const record = truth.record as { goal: string; status: string; started_at: string };
      rows.push({ id, goal: record.goal, attempt: Number(RUN_ID_PATTERN.exec(id)![2]), status: record.status, started_at: record.started_at, record: JSON.stringify(truth.record) });
    }
    return {
      records: rows.length,
      load: (client) =>
        insertBatches(client, rows, 'INSERT INTO runs (id, goal, attempt, status, started_at, record) SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::json[])', (b) => [
          b.map((r) => r.id),
          b.map((r) => r.goal),
          b.map((r) => r.attempt),
          b.map((r) => r.status),
          b.map((r) => r.started_at),
          b.map((r) => r.record),
        ]),
    };
  },
  async write(client, root) {
    const dir = path.join(root, 'runs');
    const sealsDir = path.join(dir, '.seals');
    mkdir(sealsDir);
    let count = 0;
    await pages<{ id: string; record: unknown }>(client, 'SELECT id, record FROM runs WHERE id > $1 ORDER BY id LIMIT $2', 'id', '', (rows) => {
      for (const { id, record } of rows) {
        const text = recordText(record);
        mkdir(path.join(dir, id));
        writeNew(path.join(sealsDir, `${id}.json`), text);
        writeNew(path.join(dir, id, 'meta.json'), text);
        count += 1;
      }
    });
    return count;
  },
  list(root) {
    const dir = path.join(root, 'runs');
    const out: string[] = [];
    for (const name of names(dir)) if (RUN_ID_PATTERN.test(name) && isFile(path.join(dir, name, 'meta.json'))) out.push(`runs/${name}/meta.json`);
    for (const name of names(path.join(dir, '.seals'))) if (name.endsWith('.json') && RUN_ID_PATTERN.test(name.slice(0, -5)) && isFile(path.join(dir, '.seals', name))) out.push(`runs/.seals/${name}`);
    return out;
  },
};

// ------------------------------------------------------------------ events

interface EventRow {
  id: string;
  type: string;
  goal: string | null;
  run: string | null;
  record: string;
}

/** The log's name in a runtime root. */
const EVENT_LOG = 'events/coordinator.jsonl';

/**
 * The `id` column of an event written before events had ids (the record
 * keeps none): the smallest ULID of its millisecond (event-log.ts
 * eventKey), or the next free one after it.
 */
function keyOfIdless(ts: string, taken: Set<string>): string {
  const ms = Date.parse(ts);
  let key = `${encodeTime(Number.isFinite(ms) ? Math.max(0, ms) : 0, 10)}0000000000000000`;
  while (taken.has(key)) key = ulidSuccessor(key);
  return key;
}

const events: RecordKind = {
  name: 'events',
  layout: [`${EVENT_LOG} (one event a line; the store keeps their ids, and their order as its seq)`],
  tables: ['events'],
  read(reading) {
    const text = readText(reading, EVENT_LOG);
    const rows: EventRow[] = [];
    if (text === undefined) return { records: 0, load: async () => undefined };
    if (text === '') reading.notes.push({ file: EVENT_LOG, message: 'empty: the export writes no log until there is an event' });
    const lines = text.split('\n');
    const last = lines.pop()!; // '' when the log ends with its newline, as pak2 writes it
    if (last !== '') {
      reading.notes.push({ file: EVENT_LOG, message: `its last line has no newline (a write cut short): ${parse(last).ok ? 'imported; the export ends it with one' : 'not imported'}` });
      if (parse(last).ok) lines.push(last);
    }
    const ids = new Set<string>();
    const idless: { row: EventRow; ts: string }[] = [];
    lines.forEach((line, index) => {
      const where = `${EVENT_LOG}: line ${index + 1}`;
      if (!line.trim()) {
        reading.notes.push({ file: where, message: 'blank: not an event; the export leaves it out' });
        return;
      }
      const parsed = parse(line);
      if (!parsed.ok) {
        reading.damaged.push({ file: where, message: parsed.message });
        return;
      }
      const issue = firstIssue(validateEvent(parsed.value));
      if (issue) {
        reading.damaged.push({ file: where, message: issue });
        return;
      }
      const event = parsed.value as { id?: string; type: string; goal?: string; run?: string; ts: string };
      if (event.id !== undefined) {
        if (ids.has(event.id)) {
          reading.damaged.push({ file: where, message: `id ${event.id} is an earlier line's already (a store keeps event ids unique)` });
          return;
        }
        ids.add(event.id);
      }
      const record = JSON.stringify(event);
      if (record !== line) reading.notes.push({ file: where, message: "not in pak2's own form (one compact JSON object): the export writes it in that form" });
      // The line itself when it is the record's form: one copy of the log in memory, not two.
      const row: EventRow = { id: event.id ?? '', type: event.type, goal: event.goal ?? null, run: event.run ?? null, record: record === line ? line : record };
      if (event.id === undefined) idless.push({ row, ts: event.ts });
      rows.push(row);
    });
    // Keys for id-less lines once every real id is known, so none is taken twice.
    for (const { row, ts } of idless) {
      row.id = keyOfIdless(ts, ids);
      ids.add(row.id);
    }
    return {
      records: rows.length,
      load: async (client) => {
        let seq = 0;
        // The file's order is the store's commit order: seq 1, 2, 3, … as the lines come.
        await insertBatches(client, rows, 'INSERT INTO events (seq, id, type, goal, run, record) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::json[])', (b) => [
          b.map(() => (seq += 1)),
          b.map((r) => r.id),
          b.map((r) => r.type),
          b.map((r) => r.goal),
          b.map((r) => r.run),
          b.map((r) => r.record),
        ]);
      },
    };
  },
  async write(client, root) {
    const file = path.join(root, EVENT_LOG);
    let fd: number | undefined;
    let count = 0;
    try {
      await pages<{ seq: string; record: unknown }>(client, 'SELECT seq, record FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', 'seq', 0, (rows) => {
        if (fd === undefined) {
          mkdir(path.dirname(file));
          fd = fs.openSync(file, 'wx', RUNTIME_FILE_MODE);
        }
        fs.writeSync(fd, rows.map((r) => recordLine(r.record)).join(''));
        count += rows.length;
      });
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
    return count;
  },
  list(root) {
    return isFile(path.join(root, EVENT_LOG)) ? [EVENT_LOG] : [];
  },
};

// ------------------------------------------------------------------ leases

interface LeaseRow {
  run: string;
  goal: string;
  state: string;
  epoch: number | null;
  expires_at: string;
  record: string;
}

const leases: RecordKind = {
  name: 'leases',
  layout: ['leases/<run-id>.json (active)', 'leases/ended/<run-id>.json (finished or expired)'],
  tables: ['leases'],
  read(reading) {
    const dir = path.join(reading.root, 'leases');
    const byRun = new Map<string, LeaseRow & { rel: string }>();
    for (const [sub, ended] of [['', false], ['ended', true]] as const) {
      for (const name of names(path.join(dir, sub)).sort()) {
        if (!name.endsWith('.json')) continue;
        const rel = sub ? `leases/${sub}/${name}` : `leases/${name}`;
        const run = name.slice(0, -5);
        if (!RUN_ID_PATTERN.test(run)) {
          reading.notes.push({ file: rel, message: 'not a lease file name (lease files are <run-id>.json): pak2 never reads it; not imported' });
          continue;
        }
        const text = readText(reading, rel);
        if (text === undefined) continue;
        const parsed = parse(text);
        const issue = parsed.ok ? firstIssue(validateLease(parsed.value)) : parsed.message;
        const lease = (parsed.ok ? parsed.value : {}) as { run?: string; goal: string; state: string; expires_at: string; epoch?: unknown };
        if (issue || lease.run !== run) {
          reading.damaged.push({ file: rel, message: issue ?? `run ${JSON.stringify(lease.run)} does not match the file name` });
          continue;
        }
        if (ended === (lease.state === 'active')) {
          reading.notes.push({ file: rel, message: `says ${lease.state} in ${ended ? 'leases/ended/' : 'leases/'}: the store keeps it by its state; the export writes it to ${ended ? 'leases/' : 'leases/ended/'}` });
        }
        if (text !== recordText(lease)) reading.notes.push({ file: rel, message: "not in pak2's own form (JSON, two spaces, a newline): the export writes it in that form" });
        const before = byRun.get(run);
        if (before) {
          // endLease writes the ended file, then removes the active one: both there is a crash between, and the ended one is the later.
          reading.notes.push({ file: before.rel, message: `${rel} ends this lease too (an end cut short before it removed this file): the store keeps the ended one; the export leaves this file out` });
        }
        byRun.set(run, { rel, run, goal: lease.goal, state: lease.state, epoch: typeof lease.epoch === 'number' && Number.isSafeInteger(lease.epoch) ? lease.epoch : null, expires_at: lease.expires_at, record: JSON.stringify(lease) });
      }
    }
    const rows = [...byRun.values()];
    return {
      records: rows.length,
      load: async (client) => {
        await insertBatches(
          client,
          rows,
          `INSERT INTO leases (run, goal, state, epoch, expires_at, record)
           SELECT run, goal, state, coalesce(epoch, nextval('lease_epoch')), expires_at, record
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::json[]) AS t(run, goal, state, epoch, expires_at, record)`,
          (b) => [b.map((r) => r.run), b.map((r) => r.goal), b.map((r) => r.state), b.map((r) => r.epoch), b.map((r) => r.expires_at), b.map((r) => r.record)],
        );
        // A lease's epoch only grows: the next claim's is above every one imported.
        if (rows.length > 0) await client.query("SELECT setval('lease_epoch', greatest((SELECT max(epoch) FROM leases), 1))");
      },
    };
  },
  async write(client, root) {
    const dir = path.join(root, 'leases');
    let count = 0;
    await pages<{ run: string; state: string; record: unknown }>(client, 'SELECT run, state, record FROM leases WHERE run > $1 ORDER BY run LIMIT $2', 'run', '', (rows) => {
      for (const { run, state, record } of rows) {
        const sub = state === 'active' ? dir : path.join(dir, 'ended');
        mkdir(sub);
        writeNew(path.join(sub, `${run}.json`), recordText(record));
        count += 1;
      }
    });
    return count;
  },
  list(root) {
    const dir = path.join(root, 'leases');
    const out: string[] = [];
    for (const sub of ['', 'ended']) {
      for (const name of names(path.join(dir, sub))) {
        if (name.endsWith('.json') && RUN_ID_PATTERN.test(name.slice(0, -5)) && isFile(path.join(dir, sub, name))) out.push(sub ? `leases/${sub}/${name}` : `leases/${name}`);
      }
    }
    return out;
  },
};

// ------------------------------------------------------------------ comments

interface CommentRow {
  id: string;
  goal: string;
  record: string;
}

const comments: RecordKind = {
  name: 'comments',
  layout: ['comments/<goal-id>.jsonl (one comment a line, in the order written)'],
  tables: ['comments'],
  read(reading) {
    const dir = path.join(reading.root, 'comments');
    const rows: CommentRow[] = [];
    const ids = new Set<string>();
    const files = names(dir)
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => name.slice(0, -6))
      .sort(compareGoalIds);
    for (const goal of files) {
      const rel = `comments/${goal}.jsonl`;
      if (!GOAL_ID_PATTERN.test(goal)) {
        reading.notes.push({ file: rel, message: 'not a comment thread name (threads are <goal-id>.jsonl): pak2 never reads it; not imported' });
        continue;
      }
      const text = readText(reading, rel);
      if (text === undefined) continue;
      if (text === '') reading.notes.push({ file: rel, message: 'empty: the export writes no thread until there is a comment' });
      const lines = text.split('\n');
      const last = lines.pop()!;
      if (last !== '') {
        reading.notes.push({ file: rel, message: `its last line has no newline (a write cut short): ${parse(last).ok ? 'imported; the export ends it with one' : 'not imported'}` });
        if (parse(last).ok) lines.push(last);
      }
      lines.forEach((line, index) => {
        const where = `${rel}: line ${index + 1}`;
        if (!line.trim()) {
          reading.notes.push({ file: where, message: 'blank: not a comment; the export leaves it out' });
          return;
        }
        const parsed = parse(line);
        const issue = parsed.ok ? firstIssue(validateComment(parsed.value)) : parsed.message;
        const comment = (parsed.ok ? parsed.value : {}) as { id: string; goal?: string };
        if (issue || comment.goal !== goal) {
          reading.damaged.push({ file: where, message: issue ?? `goal ${JSON.stringify(comment.goal)} is not the thread's` });
          return;
        }
        if (ids.has(comment.id)) {
          reading.damaged.push({ file: where, message: `id ${comment.id} is an earlier comment's already (a store keeps comment ids unique)` });
          return;
        }
        ids.add(comment.id);
        const record = JSON.stringify(comment);
        if (record !== line) reading.notes.push({ file: where, message: "not in pak2's own form (one compact JSON object): the export writes it in that form" });
        rows.push({ id: comment.id, goal, record });
      });
    }
    return {
      records: rows.length,
      load: async (client) => {
        let seq = 0;
        await insertBatches(client, rows, 'INSERT INTO comments (seq, id, goal, record) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::json[])', (b) => [
          b.map(() => (seq += 1)),
          b.map((r) => r.id),
          b.map((r) => r.goal),
          b.map((r) => r.record),
        ]);
        if (rows.length > 0) await client.query("SELECT setval(pg_get_serial_sequence('comments', 'seq'), $1)", [rows.length]);
      },
    };
  },
  async write(client, root) {
    const dir = path.join(root, 'comments');
    let count = 0;
    await pages<{ seq: string; goal: string; record: unknown }>(client, 'SELECT seq, goal, record FROM comments WHERE seq > $1 ORDER BY seq LIMIT $2', 'seq', 0, (rows) => {
      mkdir(dir);
      const threads = new Map<string, string[]>();
      for (const { goal, record } of rows) {
        const lines = threads.get(goal) ?? [];
        lines.push(recordLine(record));
        threads.set(goal, lines);
      }
      for (const [goal, lines] of threads) fs.appendFileSync(path.join(dir, `${goal}.jsonl`), lines.join(''), { mode: RUNTIME_FILE_MODE });
      count += rows.length;
    });
    return count;
  },
  list(root) {
    const dir = path.join(root, 'comments');
    return names(dir)
      .filter((name) => name.endsWith('.jsonl') && GOAL_ID_PATTERN.test(name.slice(0, -6)) && isFile(path.join(dir, name)))
      .map((name) => `comments/${name}`);
  },
};

/** Every record kind, in the order an import loads them and an export writes them. */
export const RECORD_KINDS: readonly RecordKind[] = [goals, runs, events, leases, comments];
