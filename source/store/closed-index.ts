import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { GOAL_ID_PATTERN, validateGoal, type GoalRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { processAlive } from '../proc.js';
import { appendJsonLines, StoreError, withLock } from './files.js';
import { readSealedSync, writeSealed, writeSealedSync } from './cache-seal.js';
import { storeOf } from './backend.js';

/**
 * Name of the closed-goal ledger in the goals directory (docs/goal/level2.md):
 * append-only, one line per closed goal, oldest close first. A line is the
 * goal's {@link ClosedEntry} as JSON (`{"id":…}`, id first), or, in gardens
 * from before the entry existed, the bare goal id; both are read.
 */
export const CLOSED_LEDGER = '.closed';

/**
 * What a listing needs of a closed goal, appended to the ledger at close, so
 * that "the most recently closed" is a read from the ledger's end and no
 * closed goal file is opened. `plant` is the goal's `assigned_to`. A bare-id
 * line carries only `id`.
 */
export interface ClosedEntry {
  id: string;
  type?: string;
  plant?: string;
  priority?: number;
  closed_reason?: string;
  closed_at?: string;
  submitted_at?: string;
}

/** A problem with a goal file or the goals directory (re-exported by goals.ts). */
interface ListingProblem {
  file: string;
  message: string;
}

/** The ledger entry of a closed goal (id first: the scanner reads ids from the line's first bytes). */
export function closedEntryOf(goal: GoalRecord): ClosedEntry {
  return {
    id: goal.id,
    type: goal.type,
    ...(goal.assigned_to !== undefined ? { plant: goal.assigned_to } : {}),
    priority: goal.priority,
    ...(goal.closed_reason !== undefined ? { closed_reason: goal.closed_reason } : {}),
    ...(goal.closed_at !== undefined ? { closed_at: goal.closed_at } : {}),
    submitted_at: goal.submitted_at,
  };
}

/**
 * One ledger line as an entry: a bare goal id, or a JSON entry whose `id` is
 * a goal id (fields of the wrong type are left out). Undefined for a line
 * that is neither (damage).
 */
export function parseClosedLine(line: string): ClosedEntry | undefined {
  if (GOAL_ID_PATTERN.test(line)) return { id: line };
  if (!line.startsWith('{')) return undefined;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!value || typeof value !== 'object' || typeof value.id !== 'string' || !GOAL_ID_PATTERN.test(value.id)) return undefined;
  // The id first, as pak2 writes it, and once: the fast path reads the first key, JSON.parse keeps the last.
  if (!line.startsWith(`{"id":${JSON.stringify(value.id)}`) || line.indexOf('"id":', 2) !== -1) return undefined;
  const entry: ClosedEntry = { id: value.id };
  for (const key of ['type', 'plant', 'closed_reason', 'closed_at', 'submitted_at'] as const) {
    if (typeof value[key] === 'string') entry[key] = value[key];
  }
  if (typeof value.priority === 'number' && Number.isFinite(value.priority)) entry.priority = value.priority;
  return entry;
}

/**
 * The goal as a listing shows it, from its entry alone: every field the goal
 * queue and `pak2 goals` print, and an empty body. Undefined for a bare-id
 * entry (the caller reads the goal file instead).
 */
export function goalOfEntry(entry: ClosedEntry): GoalRecord | undefined {
  if (entry.type === undefined || entry.priority === undefined || entry.submitted_at === undefined) return undefined;
  return {
    id: entry.id,
    type: entry.type as GoalRecord['type'],
    status: 'closed',
    priority: entry.priority,
    ...(entry.plant !== undefined ? { assigned_to: entry.plant } : {}),
    body: '',
    submitted_at: entry.submitted_at,
    ...(entry.closed_at !== undefined ? { closed_at: entry.closed_at } : {}),
    ...(entry.closed_reason !== undefined ? { closed_reason: entry.closed_reason as GoalRecord['closed_reason'] } : {}),
  };
}

/** The goal number N of an id or file name (`12-fix` → 12); 0 when it has none. */
export function goalNumber(name: string): number {
  const n = Number.parseInt(name, 10);
  return Number.isFinite(n) ? n : 0;
}

/** Orders goal ids by their number N, low to high (never as strings: 9999 before 50001), then by the rest. */
export function compareGoalIds(a: string, b: string): number {
  return goalNumber(a) - goalNumber(b) || (a < b ? -1 : a > b ? 1 : 0);
}

// ------------------------------------------------------------------ notices

/** Where the one-line notice of a ledger rebuild goes. */
export type ClosedLedgerNoticeListener = (line: string) => void;
const stderrNotice: ClosedLedgerNoticeListener = (line) => {
  process.stderr.write(`${line}\n`);
};
let noticeListener: ClosedLedgerNoticeListener = stderrNotice;

/**
 * Replaces where a ledger rebuild is reported (default: one stderr line).
 *
 * @returns a function restoring the previous listener.
 */
export function setClosedLedgerNoticeListener(next: ClosedLedgerNoticeListener | undefined): () => void {
  const previous = noticeListener;
  noticeListener = next ?? stderrNotice;
  return () => {
    noticeListener = previous;
  };
}

/** The notices said of each ledger in this process (the last few), for views that have no stderr to show. */
const said = new Map<string, string[]>();
/** How many notices of a ledger are kept for {@link ledgerNotices}. */
const NOTICES_KEPT = 5;

function notice(line: string, ledger: string): void {
  const kept = said.get(ledger) ?? [];
  kept.push(line);
  said.set(ledger, kept.slice(-NOTICES_KEPT));
  try {
    noticeListener(line);
  } catch {
    // a notice never fails a read
  }
}

/**
 * What this process said of the garden's closed ledger (a check, a
 * rebuild, a line found false), the last few, oldest first: the workbench
 * lists them with its problems (its stderr is not on the screen).
 */
export function ledgerNotices(paths: GardenPaths): string[] {
  return [...(said.get(path.join(paths.goalsDir, CLOSED_LEDGER)) ?? [])];
}

// ------------------------------------------------------------------ the closed set

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function hashString(id: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < id.length; i += 1) h = Math.imul(h ^ id.charCodeAt(i), FNV_PRIME);
  return h >>> 0 || 1;
}

/** Ns below this live in a typed array (4 bytes each); above, in a map. */
const DENSE_MAX = 1 << 22;

/**
 * The ids of closed goals, compactly: goal numbers are unique (the store
 * assigns N monotonically), so each N holds a 32-bit hash of its id, 4 bytes
 * a goal instead of a string in a Set. A second id with an N already taken
 * (a goal file made by hand) is kept as a string.
 */
class ClosedSet {
  private dense = new Uint32Array(1024);
  private readonly far = new Map<number, number>();
  private readonly extra = new Set<string>();
  size = 0;

  private slot(n: number): number {
    return n < this.dense.length ? this.dense[n]! : n < DENSE_MAX ? 0 : (this.far.get(n) ?? 0);
  }

  /** Adds an id by its number and hash; `id()` makes the string only when N is taken by another id. */
  addHashed(n: number, hash: number, id: () => string): void {
    const current = this.slot(n);
    if (current === hash) return;
    if (current !== 0) {
      const s = id();
      if (!this.extra.has(s)) {
        this.extra.add(s);
        this.size += 1;
      }
      return;
    }
    if (n < DENSE_MAX) {
      if (n >= this.dense.length) {
        let length = this.dense.length;
        while (length <= n) length *= 2;
        const grown = new Uint32Array(Math.min(length, DENSE_MAX));
        grown.set(this.dense);
        this.dense = grown;
      }
      this.dense[n] = hash;
    } else this.far.set(n, hash);
    this.size += 1;
  }

  add(id: string): void {
    this.addHashed(goalNumber(id), hashString(id), () => id);
  }

  has(id: string): boolean {
    // N and the hash in one pass over the id (called once per directory entry: 500,000 times in a big garden).
    let n = 0;
    let h = FNV_OFFSET;
    let digits = true;
    for (let i = 0; i < id.length; i += 1) {
      const c = id.charCodeAt(i);
      if (digits) {
        if (c >= 0x30 && c <= 0x39) n = n * 10 + (c - 0x30);
        else digits = false;
      }
      h = Math.imul(h ^ c, FNV_PRIME);
    }
    if (this.slot(n) === (h >>> 0 || 1)) return true;
    return this.extra.size > 0 && this.extra.has(id);
  }
}

// Scratch results of idAt (no allocation per line).
let lineN = 0;
let lineHash = 0;
let lineIdStart = 0;
let lineIdEnd = 0;

const ENTRY_PREFIX = Buffer.from('{"id":"');

/**
 * Reads the goal id of the ledger line buf[start, end) without making a
 * string: a bare id, or a JSON entry opening with `{"id":"`. Sets lineN,
 * lineHash and the id's byte range. False when the line holds no goal id
 * there (the caller parses it the slow way).
 */
function idAt(buf: Buffer, start: number, end: number): boolean {
  let i = start;
  let idEnd = end;
  if (buf[i] === 0x7b) {
    if (end - start < ENTRY_PREFIX.length + 3) return false;
    // A whole entry only: it ends with its one `}` and holds no other `{` (a line torn after its id, or two
    // lines run together, goes the slow way and is found damaged, never counted closed on its id alone).
    if (buf[end - 1] !== 0x7d) return false;
    const inner = buf.indexOf(0x7b, start + 1);
    if (inner >= 0 && inner < end) return false;
    for (let k = 0; k < ENTRY_PREFIX.length; k += 1) if (buf[start + k] !== ENTRY_PREFIX[k]) return false;
    i = start + ENTRY_PREFIX.length;
    idEnd = buf.indexOf(0x22, i);
    if (idEnd < 0 || idEnd >= end) return false;
  }
  // [1-9][0-9]*-[a-z0-9]+(-[a-z0-9]+)*
  const first = buf[i];
  if (first === undefined || first < 0x31 || first > 0x39) return false;
  let n = 0;
  let h = FNV_OFFSET;
  let k = i;
  for (; k < idEnd; k += 1) {
    const c = buf[k]!;
    if (c < 0x30 || c > 0x39) break;
    n = n * 10 + (c - 0x30);
    h = Math.imul(h ^ c, FNV_PRIME);
  }
  if (k >= idEnd || buf[k] !== 0x2d) return false;
  h = Math.imul(h ^ 0x2d, FNV_PRIME);
  k += 1;
  let previousDash = true;
  for (; k < idEnd; k += 1) {
    const c = buf[k]!;
    if (c === 0x2d) {
      if (previousDash) return false;
      previousDash = true;
    } else if ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)) previousDash = false;
    else return false;
    h = Math.imul(h ^ c, FNV_PRIME);
  }
  if (previousDash) return false;
  lineN = n;
  lineHash = h >>> 0 || 1;
  lineIdStart = i;
  lineIdEnd = idEnd;
  return true;
}

// ------------------------------------------------------------------ the shared ledger reader

/** Bytes read from the ledger at a time. */
const CHUNK = 4 * 1024 * 1024;
/** How many of the last bytes read are kept to notice a ledger replaced by one of the same size. */
const TAIL_CHECK = 64;
/** How many directory entries are read before the listing lets other work run. */
const LISTING_SLICE = 4096;

function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Lists a directory's entry names in bounded memory (opendir, read in
 * slices, the event loop served between them), calling `visit` with each.
 */
async function forEachName(dir: string, visit: (name: string) => void | Promise<void>): Promise<boolean> {
  let handle: fs.Dir;
  try {
    handle = fs.opendirSync(dir, { bufferSize: 1024 });
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) return false;
    throw error;
  }
  try {
    for (;;) {
      for (let i = 0; i < LISTING_SLICE; i += 1) {
        const entry = handle.readSync();
        if (!entry) return true;
        const pending = visit(entry.name);
        if (pending) await pending;
      }
      await yieldToLoop();
    }
  } finally {
    handle.closeSync();
  }
}

/**
 * A listing of the goals directory: the goal ids the ledger did not list
 * then, and the stray `.json` names. `key` is the directory's identity and
 * mtime (ns) stat'ed just before the listing; `settled` says the listing
 * began at least {@link SETTLE_NS} after that mtime, so that any later change
 * to the directory's entries gives it another mtime (a change in the same
 * coarse timestamp tick as the listing cannot hide behind it: git's
 * racy-clean rule). Only a settled listing is ever reused.
 */
interface Listing {
  key: string;
  generation: number;
  settled: boolean;
  candidates: string[];
  strays: ListingProblem[];
}

/** How long after the directory's mtime a listing must begin to be reused (ns): more than any file system's timestamp tick. */
const SETTLE_NS = 2_000_000_000n;

/** The directory's identity and mtime, as a listing is keyed by, or undefined when it is not there. */
async function directoryKey(dir: string): Promise<{ key: string; mtimeNs: bigint } | undefined> {
  try {
    const stat = await fsp.stat(dir, { bigint: true });
    return { key: `${stat.dev}:${stat.ino}:${stat.mtimeNs}`, mtimeNs: stat.mtimeNs };
  } catch {
    return undefined;
  }
}

/** Whether two keys name the same goals directory (device and inode), whatever its mtime. */
function sameDirectory(a: string, b: string): boolean {
  return a.slice(0, a.lastIndexOf(':')) === b.slice(0, b.lastIndexOf(':'));
}

/** The wall clock in ns (the clock file systems stamp mtimes with). */
function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** One process's view of a garden's ledger, shared by every scanner and reader of that garden. */
class LedgerState {
  readonly set = new ClosedSet();
  offset = 0;
  ino: number | undefined;
  birth = 0;
  tail: Buffer = Buffer.alloc(0);
  /** Increases whenever the set is read again from scratch (the ledger was replaced or shrank). */
  generation = 0;
  rebuildTried = false;
  /**
   * The byte offset from which the ledger's lines are checked against their
   * goal files as they are read: 0 while the ledger is checked whole (it was
   * changed outside pak2), Infinity while every byte of it is pak2's own;
   * undefined until a read decides it from the ledger record.
   */
  verifyFrom: number | undefined;
  /** The offset of the first line found false and skipped: the ledger is not recorded as checked, so the next process checks it again. */
  falseLineAt: number | undefined;
  /** The ledger's stamp when this process last found it as pak2 left it. */
  trusted: LedgerStamp | undefined;
  /** The ledger record (as JSON) this process last found matching or wrote: a full check is said once per change. */
  noticedFor = '';
  /** Goals named in a notice of a line found false (once each per process). */
  readonly warned = new Set<string>();
  /** The candidates of the listing a reset dropped (goal files found open then). */
  wasOpen: string[] | undefined;
  /** Goals the ledger lists whose goal file says open (found after the one rebuild): they stay open. */
  readonly notClosed = new Set<string>();
  /** The key of goals/ whose changed goal files were last looked at (not again for the same key). */
  changeCheckedFor: string | undefined;
  /** What the listing cache on disk holds, as this process last read or wrote it. */
  disk: { key: string; ledgerOffset: number } | undefined;
  busy: Promise<void> | undefined;
  /**
   * True while the set holds only the ledger's lines from `offset` of a
   * listing cache on (docs/goal/level2.md): enough to filter that listing's
   * candidates, not to list the directory again (which reads the whole ledger first).
   */
  partial = false;
  /** The listing cache was looked at (once per process). */
  cacheChecked = false;
  listing: Listing | undefined;
  listingInFlight: { key: string; generation: number; settled: boolean; listing: Promise<{ candidates: string[]; strays: ListingProblem[] }> } | undefined;

  constructor(
    readonly paths: GardenPaths,
    readonly file: string,
  ) {}

  reset(): void {
    // What was open before: a new listing checks those the new ledger lists against their files.
    if (this.listing) this.wasOpen = this.listing.candidates;
    this.offset = 0;
    this.falseLineAt = undefined;
    this.notClosed.clear();
    this.tail = Buffer.alloc(0);
    this.generation += 1;
    this.listing = undefined;
    this.partial = false;
    (this as { set: ClosedSet }).set = new ClosedSet();
  }
}

const states = new Map<string, LedgerState>();

function stateOf(paths: GardenPaths): LedgerState {
  let state = states.get(paths.goalsDir);
  if (!state) {
    state = new LedgerState(paths, path.join(paths.goalsDir, CLOSED_LEDGER));
    states.set(paths.goalsDir, state);
  }
  return state;
}

/** Forgets every garden's ledger state, as a new process starts (for tests of what a cold start does). */
export function forgetClosedLedgers(): void {
  states.clear();
  said.clear();
}

/** A ledger checked whole is said in a notice from this size on (about 6,000 lines; the check reads a goal file a line). */
const CHECK_NOTICE_BYTES = 1024 * 1024;

/**
 * Where the ledger record is kept: the closed ledger as pak2 last left it
 * (its inode, size and ctime in ns), written under the goals directory's
 * lock by every pak2 write to the ledger (an append at close, a rebuild,
 * `pak2 doctor --fix`) and after a full check (docs/goal/level2.md, "The
 * goal files win"). A ledger that differs from its record was changed
 * outside pak2, and each of its lines is checked against its goal file.
 */
export function ledgerRecordFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, '.cache', 'closed-ledger.json');
}

interface LedgerRecord {
  version: 1;
  ino: string;
  size: number;
  ctime_ns: string;
  /**
   * pak2's appends made while the record did not match (a whole check under
   * way): each its stamp before and after. A check that ends finds, through
   * them, whether every change since it began was pak2's (the last
   * {@link APPENDS_KEPT}).
   */
  appends?: Array<{ before: LedgerStamp; after: LedgerStamp }>;
}

/** How many unmatched appends a ledger record keeps. */
const APPENDS_KEPT = 1000;

/** What a ledger record says of a file: its inode, size and ctime (ns). */
type LedgerStamp = Pick<LedgerRecord, 'ino' | 'size' | 'ctime_ns'>;

function stampOf(stat: fs.BigIntStats): LedgerStamp {
  return { ino: String(stat.ino), size: Number(stat.size), ctime_ns: String(stat.ctimeNs) };
}

function sameStamp(a: LedgerStamp | undefined, b: LedgerStamp | undefined): boolean {
  return Boolean(a && b && a.ino === b.ino && a.size === b.size && a.ctime_ns === b.ctime_ns);
}

function readLedgerRecord(paths: GardenPaths): LedgerRecord | undefined {
  try {
    const read = readSealedSync(ledgerRecordFile(paths));
    const value = read && 'value' in read ? (read.value as unknown as LedgerRecord) : undefined;
    if (value?.version === 1 && typeof value.ino === 'string' && Number.isSafeInteger(value.size) && typeof value.ctime_ns === 'string') return value;
  } catch {
    // none, or unreadable: the ledger is checked whole
  }
  return undefined;
}

/** The ledger's stamp now, or undefined when it is not there. */
function ledgerStampNow(paths: GardenPaths): LedgerStamp | undefined {
  try {
    return stampOf(fs.statSync(path.join(paths.goalsDir, CLOSED_LEDGER), { bigint: true }));
  } catch {
    return undefined;
  }
}

/** Writes the record (temp file and rename); call holding the goals directory's lock. Never throws. */
function writeLedgerRecord(paths: GardenPaths, stamp: LedgerStamp, appends?: LedgerRecord['appends']): void {
  try {
    const record: LedgerRecord = { version: 1, ino: stamp.ino, size: stamp.size, ctime_ns: stamp.ctime_ns, ...(appends?.length ? { appends } : {}) };
    writeSealedSync(ledgerRecordFile(paths), record);
  } catch {
    // a read-only runtime root: later processes check the ledger whole
  }
}

/**
 * Records the closed ledger as it is now as pak2's own: call holding the
 * goals directory's lock, after pak2 wrote the whole ledger from the goal
 * files (a rebuild, `pak2 doctor --fix`).
 */
export function recordLedgerWritten(paths: GardenPaths): void {
  const stamp = ledgerStampNow(paths);
  if (stamp) writeLedgerRecord(paths, stamp);
}

/**
 * Whether the ledger is as pak2 last left it. A mismatch is looked at again
 * holding the goals directory's lock (a pak2 writer may be between its
 * append and its record): only a mismatch that holds then is a change made
 * outside pak2.
 */
async function ledgerIsPak2s(state: LedgerState, stamp: LedgerStamp): Promise<boolean> {
  // Unchanged since this process last found it pak2's: still so (no read of the record on every pass).
  if (sameStamp(state.trusted, stamp)) return true;
  const { paths } = state;
  if (sameStamp(readLedgerRecord(paths), stamp)) {
    state.trusted = stamp;
    return true;
  }
  try {
    // Matching now means every write so far was pak2's (an append after a foreign change finds the record stale and
    // leaves it so), the bytes this read saw included.
    return await withLock(paths.goalsDir, async () => sameStamp(readLedgerRecord(paths), ledgerStampNow(paths)));
  } catch {
    return false;
  }
}

/** The last {@link TAIL_CHECK} bytes before `offset` (the ledger's fingerprint at that point). */
async function bytesBefore(handle: fsp.FileHandle, offset: number): Promise<Buffer> {
  const length = Math.min(TAIL_CHECK, offset);
  const bytes = Buffer.alloc(length);
  if (length > 0) await handle.read(bytes, 0, length, offset - length);
  return bytes;
}

/**
 * What a goal file says of a goal the ledger lists as closed: its status
 * when the file is readable, names that goal and is not closed (the goal
 * file wins), else undefined (closed, missing or unreadable: nothing open
 * is hidden by believing the line; `pak2 doctor` names the rest).
 */
function openStatusOf(dir: string, id: string): string | undefined {
  const value = goalFileValue(dir, id);
  return value && typeof value.status === 'string' && value.status !== 'closed' ? value.status : undefined;
}

function goalFileValue(dir: string, id: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(fs.readFileSync(path.join(dir, `${id}.json`), 'utf8')) as Record<string, unknown>;
    return value && typeof value === 'object' && value.id === id ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Where a ledger entry and its goal file disagree, in words (`its goal file
 * says queued`, `it says closed_reason success; its goal file says
 * failure`), or undefined when they agree or the file cannot say (missing,
 * unreadable). `open` is true when the file says the goal is open.
 */
function disagreement(dir: string, entry: ClosedEntry): { open: boolean; words: string } | undefined {
  const value = goalFileValue(dir, entry.id);
  // No goal file: a close that never happened here (a goal made later with that id would hide behind it).
  if (!value && !fs.existsSync(path.join(dir, `${entry.id}.json`))) return { open: false, words: `lists ${entry.id}, which has no goal file` };
  if (!value || typeof value.status !== 'string') return undefined;
  if (value.status !== 'closed') return { open: true, words: `lists ${entry.id} as closed; its goal file says ${value.status}` };
  const file: Record<string, unknown> = { type: value.type, plant: value.assigned_to, priority: value.priority, closed_reason: value.closed_reason, closed_at: value.closed_at, submitted_at: value.submitted_at };
  for (const key of ['type', 'plant', 'priority', 'closed_reason', 'closed_at', 'submitted_at'] as const) {
    if (entry[key] !== undefined && entry[key] !== file[key]) return { open: false, words: `says ${key} ${String(entry[key])} for ${entry.id}; its goal file says ${String(file[key])}` };
  }
  return undefined;
}

/**
 * Reads what is new in the ledger into the set; on damage, asks for a
 * rebuild (`damaged` says what: the first bad line, a line whose goal file
 * says open, a ledger that shrank or was rewritten in place). Lines from
 * {@link LedgerState.verifyFrom} on are checked against their goal files.
 */
async function readNew(state: LedgerState): Promise<{ missing: boolean; damaged?: string }> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(state.file, 'r');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) {
      if (state.offset > 0 || state.set.size > 0) state.reset();
      state.ino = undefined;
      state.verifyFrom = undefined;
      return { missing: true };
    }
    throw error;
  }
  try {
    const big = await handle.stat({ bigint: true });
    if (!big.isFile()) throw notAFile(state.file, big);
    const stat = { ino: Number(big.ino), size: Number(big.size), birthtimeMs: Number(big.birthtimeMs) };
    const known = state.ino !== undefined;
    const sameFile = stat.ino === state.ino && (stat.birthtimeMs === state.birth || state.birth === 0);
    const tailDiffers = sameFile && state.tail.length > 0 && !(await bytesBefore(handle, state.offset)).equals(state.tail);
    if (known && sameFile && !state.rebuildTried) {
      // The same file, shorter or different before where it was read to: pak2 only appends to it.
      if (stat.size < state.offset) return { missing: false, damaged: `it shrank from ${state.offset} to ${stat.size} bytes` };
      if (tailDiffers) return { missing: false, damaged: `its bytes before ${state.offset} were rewritten in place` };
    }
    if (known && (!sameFile || stat.size < state.offset || tailDiffers)) {
      state.reset();
      state.verifyFrom = undefined;
    }
    // Every byte pak2's own (the record matches): believed as it is. Else it was changed outside pak2 (a hand edit,
    // a copy or restore, a cache removed, an older pak2): read again from its start, each line checked once.
    const stamp = stampOf(big);
    if (await ledgerIsPak2s(state, stamp)) {
      if (state.verifyFrom !== 0 || state.offset >= stat.size) state.verifyFrom = Number.POSITIVE_INFINITY;
    } else if (state.verifyFrom !== 0) {
      // Shorter than pak2 left it: a truncation (lines lost, not only changed).
      const record = readLedgerRecord(state.paths);
      if (!state.rebuildTried && record && record.ino === stamp.ino && stat.size < record.size) return { missing: false, damaged: `it shrank from ${record.size} to ${stat.size} bytes` };
      if (state.offset > 0) state.reset();
      state.verifyFrom = 0;
      const said = JSON.stringify(stamp);
      // Said when the check takes a while (a big ledger): it reads a goal file a line.
      if (state.noticedFor !== said && stat.size >= CHECK_NOTICE_BYTES) {
        state.noticedFor = said;
        notice(`pak2: ${state.file} was changed outside pak2, or pak2 has no record of it (a copied or restored garden, .cache/ removed): checking each line against its goal file once`, state.file);
      }
    }
    state.ino = stat.ino;
    state.birth = stat.birthtimeMs;
    // One buffer for the whole read: what follows the last newline of a chunk moves to its start.
    let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, stat.size - state.offset)));
    let carried = 0;
    let position = state.offset;
    const from = state.offset;
    const verifyFrom = state.verifyFrom;
    let lineNumber = 0;
    while (position < stat.size) {
      if (carried === buf.length) {
        const grown = Buffer.allocUnsafe(buf.length * 2); // a line longer than the buffer
        buf.copy(grown, 0, 0, carried);
        buf = grown;
      }
      const length = Math.min(buf.length - carried, stat.size - position);
      const { bytesRead } = await handle.read(buf, carried, length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const data = buf.subarray(0, carried + bytesRead);
      let start = 0;
      for (;;) {
        const end = data.indexOf(0x0a, start);
        if (end < 0) break;
        lineNumber += 1;
        if (end > start) {
          const at = state.offset + start;
          // Counted from the file's start when it was read from there; else placed by its byte offset (counting the
          // lines before it would read the whole ledger).
          const where = from > 0 ? `the line at byte ${at}` : `line ${lineNumber}`;
          if (at < verifyFrom && idAt(data, start, end)) {
            const s = lineIdStart;
            const e = lineIdEnd;
            state.set.addHashed(lineN, lineHash, () => data.toString('latin1', s, e));
          } else {
            const entry = parseClosedLine(data.toString('utf8', start, end));
            if (!entry) {
              // After the one rebuild, skipped.
              if (!state.rebuildTried) return { missing: false, damaged: `${where} is neither a whole entry nor a goal id: ${preview(data, start, end)}` };
            } else {
              // A line not checked yet: believed only when its goal file does not say open (the goal files win).
              const checking = at >= verifyFrom;
              const differs = checking ? disagreement(state.paths.goalsDir, entry) : undefined;
              if (differs && !state.rebuildTried) return { missing: false, damaged: `${where} ${differs.words}` };
              if (!differs?.open) state.set.add(entry.id);
              else {
                state.falseLineAt ??= at;
                if (!state.warned.has(entry.id)) {
                  state.warned.add(entry.id);
                  notice(`pak2: ${state.file} ${where} ${differs.words.replace('; its goal file says', ', but its goal file says')}: the goal file wins (pak2 doctor --fix rewrites the ledger)`, state.file);
                }
              }
            }
          }
        }
        start = end + 1;
      }
      state.offset += start;
      if (start > 0) state.tail = Buffer.from(data.subarray(Math.max(0, start - TAIL_CHECK), start));
      // Keep what follows the last newline: the next chunk (or a later read) completes it.
      carried = data.length - start;
      data.copy(buf, 0, start, data.length);
    }
    // Checked whole and found true: recorded as pak2's (holding the lock, and only if nothing was written since),
    // so later processes believe it; a line found false and skipped keeps it unrecorded, to be checked again.
    if (verifyFrom === 0 && state.falseLineAt === undefined && state.offset === stat.size) {
      await withLock(state.paths.goalsDir, async () => {
        // Every change since the check began must be one of pak2's appends (an edit in place meanwhile leaves the
        // ledger unrecorded, to be checked again); what they appended is pak2's, read as such next time.
        const now = ledgerStampNow(state.paths);
        let at: LedgerStamp = stamp;
        for (const a of readLedgerRecord(state.paths)?.appends ?? []) if (sameStamp(a.before, at)) at = a.after;
        if (now && sameStamp(at, now)) writeLedgerRecord(state.paths, now);
      }).catch(() => undefined);
    }
    return { missing: false };
  } finally {
    await handle.close();
  }
}

/**
 * A garden's closed-goal ledger as the scanners see it: which goal ids are
 * closed (read once, then only what was appended), and the directory
 * listing of the others. One per garden in a process, shared.
 */
export class ClosedLedger {
  private constructor(private readonly state: LedgerState) {}

  /** The ledger of the garden at `paths` (one shared reader per goals directory in this process). */
  static of(paths: GardenPaths): ClosedLedger {
    return new ClosedLedger(stateOf(paths));
  }

  /** Increases whenever the ledger is read again from scratch. */
  get generation(): number {
    return this.state.generation;
  }

  /**
   * Reads what was appended since the last call. A missing ledger (with goal
   * files beside it) or a damaged one is rebuilt from the goal files once
   * per process ({@link rebuildClosedLedger}); after that, damaged lines are
   * skipped, and the goals they named are read from their files.
   */
  async refresh(damage?: string): Promise<void> {
    const state = this.state;
    while (state.busy) await state.busy;
    const run = (async () => {
      const read = await readNew(state);
      const damaged = read.damaged ?? damage;
      const why = read.missing ? 'missing' : damaged ? `damaged (${damaged})` : undefined;
      if (!why || state.rebuildTried) return;
      state.rebuildTried = true;
      const rebuilt = await rebuildClosedLedger(state.paths, why).catch((error: unknown) => {
        notice(`pak2: ${state.file}: ${why}; rebuilding it from the goal files failed (${(error as Error).message}); reading the goal files instead`, state.file);
        return undefined;
      });
      if (rebuilt) {
        // Read again from its start; the rebuild recorded it as pak2's, so it is believed, not checked.
        state.reset();
        state.verifyFrom = undefined;
      }
      await readNew(state);
    })();
    state.busy = run;
    try {
      await run;
    } finally {
      if (state.busy === run) state.busy = undefined;
    }
  }

  /**
   * Rebuilds the ledger for `damage` (words for the notice) unless this
   * process already rebuilt it once; true when it did.
   */
  async rebuildFor(damage: string): Promise<boolean> {
    if (this.state.rebuildTried) return false;
    await this.refresh(damage);
    return true;
  }

  /** True when the ledger (as last read) lists `id` and its goal file was not found open. */
  has(id: string): boolean {
    return this.state.set.has(id) && !this.state.notClosed.has(id);
  }

  /**
   * Appends goals found closed but missing from the ledger (a crash between
   * a close's two writes, a close still under way, goal files written
   * outside pak2), and counts them closed. One lock, one read of what was
   * appended since the ledger was last read (a goal its closing writer
   * appended meanwhile is not appended twice) and one append for them all:
   * linear in the goals and the ledger (issue 25, item 10).
   */
  async addAll(goals: readonly GoalRecord[]): Promise<void> {
    if (goals.length === 0) return;
    await appendClosedEntries(this.state.paths, goals, () => idsAppendedSince(this.state));
    for (const goal of goals) this.state.set.add(goal.id);
  }

  /**
   * {@link openOf} of a listing that is current, then the cache brought up
   * to it when the ledger grew since the cache was written: the goals closed
   * since leave its candidates and a cold start reads the ledger from here,
   * so neither grows with history.
   */
  private async openAndKeep(listing: Listing, key: string): Promise<{ ids: string[]; strays: ListingProblem[] }> {
    const state = this.state;
    const open = await this.openOf(listing);
    const disk = state.disk;
    if (disk && disk.key === key && state.offset > disk.ledgerOffset && state.falseLineAt === undefined && state.notClosed.size === 0 && listing === state.listing) {
      state.disk = { key, ledgerOffset: state.offset };
      const ledger = { ino: state.ino, birth: state.birth, offset: state.offset, tail: state.tail };
      if ((await goalsDirKey(state.paths)) === key) await writeListingCache(state.paths, { key, ledger, candidates: listing.candidates, strays: listing.strays }).catch(() => undefined);
    }
    return open;
  }

  /**
   * The open goal ids of a listing: its candidates the ledger does not list.
   * A candidate (a goal file once found open) that the ledger has listed
   * since is checked against its goal file once: closed, it leaves the
   * listing; open, the goal file wins: the ledger is damaged and rebuilt
   * once, and after that the goal stays open with a notice.
   */
  private async openOf(listing: { candidates: string[]; strays: ListingProblem[] }): Promise<{ ids: string[]; strays: ListingProblem[] }> {
    const state = this.state;
    const ids: string[] = [];
    let confirmed = 0;
    let damage: string | undefined;
    for (const id of listing.candidates) {
      if (!state.set.has(id) || state.notClosed.has(id)) {
        ids.push(id);
        continue;
      }
      const status = openStatusOf(state.paths.goalsDir, id);
      if (status === undefined) {
        confirmed += 1;
        continue;
      }
      ids.push(id);
      if (!state.rebuildTried) damage ??= `it lists ${id} as closed; its goal file says ${status}`;
      else {
        state.notClosed.add(id);
        if (!state.warned.has(id)) {
          state.warned.add(id);
          notice(`pak2: ${state.file} lists ${id} as closed, but its goal file says ${status}: the goal file wins (pak2 doctor --fix rewrites the ledger)`, state.file);
        }
      }
    }
    if (damage) {
      await this.refresh(damage);
      return this.openCandidates();
    }
    // Closed since the listing, and checked: not checked again.
    if (confirmed > 0) listing.candidates = listing.candidates.filter((id) => !state.set.has(id) || state.notClosed.has(id));
    return { ids, strays: listing.strays };
  }

  /**
   * The goal ids in the directory that the ledger does not list, and the
   * `.json` names that are not goal ids (strays); reads what was appended to
   * the ledger first ({@link refresh}). The listing streams (no array of
   * every name) and is reused, in this process and by later ones through
   * the listing cache ({@link listingCacheFile}), only while the directory
   * is the same one with the same mtime (ns) and the listing began at least
   * 2 s after that mtime (a same-tick change cannot hide behind it), and the
   * ledger was not replaced. A cold start that finds such a cache reads the
   * ledger only from where the cached listing had read it, and no listing.
   */
  async openCandidates(): Promise<{ ids: string[]; strays: ListingProblem[] }> {
    const state = this.state;
    const dir = state.paths.goalsDir;
    if (!state.cacheChecked) {
      state.cacheChecked = true;
      await adoptListingCache(state).catch(() => undefined);
    }
    await this.refresh();
    let at = await directoryKey(dir);
    if (!at) return { ids: [], strays: [] };
    const l = state.listing;
    if (l && l.settled && l.key === at.key && l.generation === state.generation) return this.openAndKeep(l, at.key);
    // Scanners that start together (recovery, reclaim, the first pass, the snapshot) share one settled listing.
    const f = state.listingInFlight;
    if (f && f.settled && f.key === at.key && f.generation === state.generation) return this.openOf(await f.listing);
    // Another pak2 process wrote into goals/ and kept the cache current: its listing, when it was filtered by this ledger.
    const cached = await readListingCache(state.paths);
    if (cached && cached.key === at.key && cached.ledger.ino === (state.ino ?? null) && (cached.ledger.ino === null || cached.ledger.birth === state.birth)) {
      state.disk = { key: cached.key, ledgerOffset: cached.ledger.offset };
      state.listing = { key: cached.key, generation: state.generation, settled: true, candidates: cached.candidates, strays: cached.strays.map((name) => strayProblem(dir, name)) };
      return this.openAndKeep(state.listing, at.key);
    }
    if (state.partial) {
      // A new listing is filtered by the whole ledger: read it from its start.
      state.reset();
      await this.refresh();
      at = await directoryKey(dir);
      if (!at) return { ids: [], strays: [] };
    }
    const { key } = at;
    const settled = nowNs() - at.mtimeNs >= SETTLE_NS;
    const generation = state.generation;
    // goals/ changed since a key pak2 knew, and not by a pak2 write: a goal file the ledger lists may have been
    // replaced since (a closed goal written back to open by hand). Those changed since then are read, once per key.
    // Only keys of this very directory (a garden copied with its .cache/ carries its original's).
    const storedKey = readGoalsKey(state.paths);
    const ours = (k: string | undefined) => (k !== undefined && sameDirectory(k, key) ? k : undefined);
    const knownKey = ours(storedKey) ?? ours(l?.settled ? l.key : undefined) ?? ours(cached?.key);
    const since = knownKey && key !== state.changeCheckedFor ? BigInt(knownKey.slice(knownKey.lastIndexOf(':') + 1)) : undefined;
    const changedSince: string[] = [];
    const ledgerAt = { ino: state.ino, birth: state.birth, offset: state.offset, tail: state.tail };
    // Goals found open by the listing before this one stay candidates even if the ledger lists them now:
    // openOf checks each against its goal file once.
    const previous = state.listing?.candidates ?? state.wasOpen;
    state.wasOpen = undefined;
    const wasOpen = previous && previous.length > 0 ? new Set(previous) : undefined;
    const listing = (async () => {
      const candidates: string[] = [];
      const strays: ListingProblem[] = [];
      await forEachName(dir, (name) => {
        if (!name.endsWith('.json')) return;
        const id = name.slice(0, -5);
        if (state.set.has(id) && !wasOpen?.has(id)) {
          // closed (the ledger holds goal ids only), unless its file changed since the key pak2 knew
          if (since !== undefined && (fs.statSync(path.join(dir, name), { bigint: true, throwIfNoEntry: false })?.ctimeNs ?? 0n) > since) changedSince.push(id);
          return;
        }
        // Kept as a string of its own: a slice would keep the whole file name alive with it (10,000 names are 1 MB).
        if (GOAL_ID_PATTERN.test(id)) candidates.push(Buffer.from(id, 'latin1').toString('latin1'));
        else strays.push(strayProblem(dir, name));
      });
      // A listed goal whose file now says open stays a candidate: openOf finds the ledger damaged.
      for (const id of changedSince) if (openStatusOf(dir, id) !== undefined) candidates.push(id);
      return { candidates, strays };
    })();
    if (since !== undefined) state.changeCheckedFor = key;
    const reference = knownKey;
    const inFlight = { key, generation, settled, listing };
    state.listingInFlight = inFlight;
    try {
      const { candidates, strays } = await listing;
      // Looked at up to this key: the next change outside pak2 is read against it.
      const foreign = storedKey !== undefined && ours(storedKey) === undefined;
      if (since !== undefined || foreign) await withLock(state.paths.goalsDir, async () => {
        if (readGoalsKey(state.paths) === (foreign ? storedKey : reference) && (await goalsDirKey(state.paths)) === key) writeGoalsKey(state.paths, key);
      }).catch(() => undefined);
      if (generation === state.generation) {
        state.listing = { key, generation, settled, candidates, strays };
        if (settled) {
          await writeListingCache(state.paths, { key, ledger: ledgerAt, candidates, strays }).catch(() => undefined);
          state.disk = { key, ledgerOffset: ledgerAt.offset };
        }
      }
      return this.openOf({ candidates, strays });
    } finally {
      if (state.listingInFlight === inFlight) state.listingInFlight = undefined;
    }
  }
}

function strayProblem(dir: string, name: string): ListingProblem {
  const file = path.join(dir, name);
  return { file, message: `${file}: not a goal file name (goal files are <N-slug>.json); not read` };
}

// ------------------------------------------------------------------ the listing cache

/**
 * Where a settled listing of the goals directory is kept for later
 * processes: under the runtime root, outside goals/ (a write inside would
 * change the mtime the cache is keyed by). A cache, never a record: it is
 * believed only for the directory and mtime it names.
 */
export function listingCacheFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, '.cache', 'goals-listing.json');
}

interface ListingCache {
  version: 1;
  /** The directory's dev, inode and mtime (ns) stat'ed before the listing, which began 2 s or more after that mtime. */
  key: string;
  /** How far the ledger had been read when the listing was filtered by it: a cold start reads only what follows. */
  ledger: { ino: number | null; birth: number; offset: number; tail: string };
  /** Goal ids the ledger did not list. */
  candidates: string[];
  /** `.json` names that are not goal ids. */
  strays: string[];
}

async function writeListingCache(paths: GardenPaths, listing: { key: string; ledger: { ino: number | undefined; birth: number; offset: number; tail: Buffer }; candidates: string[]; strays: ListingProblem[] }): Promise<void> {
  const cache: ListingCache = {
    version: 1,
    key: listing.key,
    ledger: { ino: listing.ledger.ino ?? null, birth: listing.ledger.birth, offset: listing.ledger.offset, tail: listing.ledger.tail.toString('base64') },
    candidates: listing.candidates,
    strays: listing.strays.map((s) => path.basename(s.file)),
  };
  writeSealedSync(listingCacheFile(paths), cache);
}

/**
 * A cold start: takes the cached listing when it is for this goals directory
 * as it is now (same identity, same mtime in ns), and starts reading the
 * ledger where that listing had read it. The ledger checks of every read
 * still apply: a ledger replaced, shrunk or rewritten since is read again
 * from its start, and the cached listing is dropped with it.
 */
async function adoptListingCache(state: LedgerState): Promise<void> {
  if (state.offset !== 0 || state.ino !== undefined || state.set.size !== 0) return;
  const cache = await readListingCache(state.paths);
  if (!cache) return;
  const now = await directoryKey(state.paths.goalsDir);
  if (!now || now.key !== cache.key) return;
  const { ledger } = cache;
  state.offset = ledger.offset;
  state.ino = ledger.ino ?? undefined;
  state.birth = ledger.birth;
  state.tail = Buffer.from(ledger.tail, 'base64');
  state.partial = ledger.offset > 0;
  state.disk = { key: cache.key, ledgerOffset: ledger.offset };
  state.listing = { key: cache.key, generation: state.generation, settled: true, candidates: cache.candidates, strays: cache.strays.map((name) => strayProblem(state.paths.goalsDir, name)) };
}

/** Reads the listing cache (undefined when there is none, or it is not one for this goals directory). */
async function readListingCache(paths: GardenPaths): Promise<ListingCache | undefined> {
  const file = listingCacheFile(paths);
  let read: ReturnType<typeof readSealedSync>;
  try {
    read = readSealedSync(file);
  } catch {
    return undefined; // unreadable: list
  }
  if (read && 'damaged' in read) {
    // Said once: the file goes, and the next settled listing writes a new one.
    notice(`pak2: ${file} was damaged (${read.damaged}): not used; goals/ is listed instead`, path.join(paths.goalsDir, CLOSED_LEDGER));
    await fsp.rm(file, { force: true }).catch(() => undefined);
    return undefined;
  }
  return read && listingCacheOf(read.value);
}

/** A sealed listing cache's content as a cache, its ids and names filtered to well-formed ones; undefined when it is not one (another pak2's). */
function listingCacheOf(value: Record<string, unknown>): ListingCache | undefined {
  const cache = value as unknown as ListingCache;
  const ledger = cache.ledger;
  if (
    cache.version !== 1 ||
    typeof cache.key !== 'string' ||
    !Array.isArray(cache.candidates) ||
    !Array.isArray(cache.strays) ||
    !ledger ||
    !Number.isSafeInteger(ledger.offset) ||
    ledger.offset < 0 ||
    typeof ledger.tail !== 'string' ||
    typeof ledger.birth !== 'number' ||
    (ledger.ino !== null && typeof ledger.ino !== 'number')
  ) {
    return undefined;
  }
  cache.candidates = cache.candidates.filter((id): id is string => typeof id === 'string' && GOAL_ID_PATTERN.test(id));
  cache.strays = cache.strays.filter((name): name is string => typeof name === 'string' && name.endsWith('.json') && !name.includes('/'));
  return cache;
}

/**
 * The listing cache as `pak2 doctor` looks at it, without using it: whether
 * it reads (`damaged`: why not), whether it is for goals/ as it is now
 * (`current`: a listing would believe it), and the goal ids it holds as not
 * listed by the ledger (`candidates`). Undefined when there is none.
 */
export async function inspectListingCache(paths: GardenPaths): Promise<{ file: string; damaged?: string; current: boolean; candidates: string[] } | undefined> {
  const file = listingCacheFile(paths);
  let read: ReturnType<typeof readSealedSync>;
  try {
    read = readSealedSync(file);
  } catch (error) {
    return { file, damaged: (error as Error).message, current: false, candidates: [] };
  }
  if (!read) return undefined;
  if ('damaged' in read) return { file, damaged: read.damaged, current: false, candidates: [] };
  const cache = listingCacheOf(read.value);
  if (!cache) return { file, damaged: 'not a listing cache of this pak2', current: false, candidates: [] };
  const now = await directoryKey(paths.goalsDir);
  return { file, current: now?.key === cache.key, candidates: cache.candidates };
}

/**
 * The goals directory's key (its device, inode and mtime in ns): what a
 * listing of it is kept under. A pak2 write into goals/ takes it before
 * writing, under the goals directory's lock, and hands it to
 * {@link noteGoalsDirWrite} after. Undefined when goals/ is not there.
 */
export async function goalsDirKey(paths: GardenPaths): Promise<string | undefined> {
  return (await directoryKey(paths.goalsDir))?.key;
}

/**
 * Keeps the listing of goals/ current across a write pak2 made there
 * (docs/goal/level2.md, "The listing cache"): call it holding the goals
 * directory's lock (every pak2 write into goals/ holds it), with the key
 * taken before the write and the goal ids the write created. When the
 * listing this process holds, or the one in the cache, was taken at that
 * key, it is moved to the key goals/ has now, with the new ids: the write
 * changed goals/ by exactly that, and no other pak2 writer ran meanwhile.
 * A listing of any other key is left alone (the next read lists goals/).
 * Never throws: the cache only saves a listing.
 */
export async function noteGoalsDirWrite(paths: GardenPaths, before: string | undefined, added: readonly string[]): Promise<void> {
  if (!before) return;
  try {
    const after = await directoryKey(paths.goalsDir);
    if (!after) return;
    // Moved along only from the key it held (a change outside pak2 in between keeps the older key, to be looked at).
    const stored = readGoalsKey(paths);
    // A key of another directory (a garden copied with its .cache/) says nothing of this one.
    if (stored === undefined || stored === before || !sameDirectory(stored, after.key)) await writeSealed(goalsKeyFile(paths), { key: after.key }).catch(() => undefined);
    const state = states.get(paths.goalsDir);
    const l = state?.listing;
    if (l && l.key === before) {
      l.key = after.key;
      for (const id of added) if (!l.candidates.includes(id)) l.candidates.push(id);
    }
    const cache = await readListingCache(paths);
    if (!cache || cache.key !== before) return;
    cache.key = after.key;
    for (const id of added) if (!cache.candidates.includes(id)) cache.candidates.push(id);
    await writeSealed(listingCacheFile(paths), cache);
    if (state) state.disk = { key: cache.key, ledgerOffset: cache.ledger.offset };
  } catch {
    // the next read lists goals/
  }
}

/**
 * Where the key goals/ had when pak2 last wrote there (or last listed it) is
 * kept: the reference a listing reads changed goal files against when
 * goals/ changed outside pak2 (docs/goal/level2.md, "The goal files win").
 */
function goalsKeyFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, '.cache', 'goals-key.json');
}

function readGoalsKey(paths: GardenPaths): string | undefined {
  try {
    const read = readSealedSync(goalsKeyFile(paths));
    return read && 'value' in read && typeof read.value.key === 'string' ? read.value.key : undefined;
  } catch {
    return undefined;
  }
}

function writeGoalsKey(paths: GardenPaths, key: string): void {
  try {
    writeSealedSync(goalsKeyFile(paths), { key });
  } catch {
    // a read-only runtime root
  }
}


/** The highest goal number N among the goals directory's `.json` files (0 when none), listed streaming. */
export async function highestGoalNumber(dir: string): Promise<number> {
  let highest = 0;
  await forEachName(dir, (name) => {
    if (name.endsWith('.json')) highest = Math.max(highest, goalNumber(name));
  });
  return highest;
}

/**
 * Appends a closed goal's entry to the ledger (one write of the whole line;
 * a torn last line is cut first, with a notice: no append is under way
 * while this one holds the lock), holding the goals directory's lock, and
 * moves the ledger record along when it matched the ledger before the
 * append (the append is then the only change); a ledger pak2 creates here
 * is recorded as pak2's. `listed`, asked holding the lock, skips the append
 * when the ledger already lists the goal.
 */
export async function appendClosedEntry(paths: GardenPaths, goal: GoalRecord): Promise<void> {
  await appendClosedEntries(paths, [goal]);
}

/**
 * {@link appendClosedEntry} for many goals at once: one lock, one torn-tail
 * check, the lines appended together (in order), one ledger record update.
 * `listed`, asked once holding the lock, gives the ids the ledger already
 * lists beyond what was read: those goals are not appended again.
 */
export async function appendClosedEntries(paths: GardenPaths, goals: readonly GoalRecord[], listed?: () => Promise<ReadonlySet<string>>): Promise<void> {
  const file = path.join(paths.goalsDir, CLOSED_LEDGER);
  await fsp.mkdir(paths.goalsDir, { recursive: true });
  await withLock(paths.goalsDir, async () => {
    const there = listed ? await listed() : undefined;
    const entries = goals.filter((goal) => !there?.has(goal.id)).map(closedEntryOf);
    if (entries.length === 0) return;
    const record = readLedgerRecord(paths);
    // Every append holds this lock, so a last line without its newline is no append under way: it is torn.
    const cut = await cutTornTail(file);
    if (cut) notice(`pak2: ${file} was damaged (its last line is torn: ${cut}): cut it; a closed goal it named is listed again from its goal file`, file);
    const before = ledgerStampNow(paths);
    await appendJsonLines(file, entries);
    const after = ledgerStampNow(paths);
    if (!after) return;
    if (!before || (!cut && sameStamp(record, before))) writeLedgerRecord(paths, after);
    // The record does not match (a whole check may be under way): the append is said, so the check can tell it from
    // a change made outside pak2; the record's own stamp stays, still not matching.
    else {
      const kept = readLedgerRecord(paths);
      writeLedgerRecord(paths, kept ?? { ino: '', size: -1, ctime_ns: '' }, [...(kept?.appends ?? []).slice(-(APPENDS_KEPT - 1)), { before, after }]);
    }
  });
}

/** Bytes read at a time looking back for a torn line's start. */
const TORN_CHUNK = 64 * 1024;

/**
 * Cuts a torn last line (bytes after the last newline) off the ledger; call
 * holding the goals directory's lock.
 *
 * @returns the cut line's first characters, quoted, or undefined when the
 * ledger ends in a newline, is empty or is not there.
 */
async function cutTornTail(file: string): Promise<string | undefined> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r+');
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size === 0) return undefined;
    let end = stat.size;
    let keep = 0;
    for (;;) {
      const length = Math.min(TORN_CHUNK, end);
      const chunk = Buffer.allocUnsafe(length);
      await handle.read(chunk, 0, length, end - length);
      if (end === stat.size && chunk[length - 1] === 0x0a) return undefined;
      const nl = chunk.lastIndexOf(0x0a);
      if (nl >= 0) {
        keep = end - length + nl + 1;
        break;
      }
      end -= length;
      if (end === 0) break;
    }
    const start = Buffer.allocUnsafe(Math.min(160, stat.size - keep));
    await handle.read(start, 0, start.length, keep);
    await handle.truncate(keep);
    return preview(start, 0, stat.size - keep);
  } finally {
    await handle.close();
  }
}

/**
 * The error of a ledger that is not a regular file (a directory made in its
 * place): one line naming it. Nothing is moved or removed; pak2 rebuilds
 * the ledger once it is a file again, or is gone.
 */
function notAFile(file: string, stat: fs.Stats | fs.BigIntStats): StoreError {
  const what = stat.isDirectory() ? 'a directory' : 'not a regular file';
  return new StoreError('IO_ERROR', `${file}: the closed ledger is ${what}; move it aside and pak2 rebuilds the ledger from the goal files`, file);
}

/** The first 40 characters of a damaged line, quoted (control characters escaped), for a notice. */
function preview(data: Buffer, start: number, end: number): string {
  const text = data.toString('utf8', start, Math.min(end, start + 160));
  const cut = [...text].slice(0, 40).join('');
  return `${JSON.stringify(cut)}${cut.length < text.length || end - start > 160 ? '…' : ''}`;
}

/** Counters of the ledger reads that adoption makes, for the linear-time test (test/store/adopt-external.test.ts). */
export const adoptionReads = { reads: 0, linesParsed: 0 };

/**
 * The ids of the lines appended to the ledger after what `state` has read
 * (a read of the new bytes only, at most 16 MB), parsed once into a set.
 */
async function idsAppendedSince(state: LedgerState): Promise<ReadonlySet<string>> {
  const ids = new Set<string>();
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(state.file, 'r');
  } catch {
    return ids;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return ids;
    const { size } = stat;
    const from = Math.min(state.offset, size);
    const bytes = Buffer.alloc(Math.min(size - from, 16 * 1024 * 1024));
    await handle.read(bytes, 0, bytes.length, from);
    adoptionReads.reads += 1;
    for (const line of bytes.toString('utf8').split('\n')) {
      if (!line) continue;
      adoptionReads.linesParsed += 1;
      const id = parseClosedLine(line)?.id;
      if (id) ids.add(id);
    }
    return ids;
  } finally {
    await handle.close();
  }
}

// ------------------------------------------------------------------ reading from the end

/** Bytes read at a time when walking the ledger backwards. */
const BACK_CHUNK = 64 * 1024;

/**
 * The ledger's lines from the last to the first, read backwards in chunks
 * (memory: one chunk and one line). A last line without its newline (an
 * append in progress, or torn) is left out.
 */
async function* linesBackwards(file: string): AsyncGenerator<string> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch {
    return;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw notAFile(file, stat);
    let position = stat.size;
    let carry = Buffer.alloc(0); // the start of a line whose end is already read
    let first = true;
    while (position > 0) {
      const length = Math.min(BACK_CHUNK, position);
      position -= length;
      const chunk = Buffer.allocUnsafe(length + carry.length);
      await handle.read(chunk, 0, length, position);
      carry.copy(chunk, length);
      let end = chunk.length;
      if (first) {
        first = false;
        const last = chunk.lastIndexOf(0x0a);
        end = last < 0 ? 0 : last; // drop a torn last line
        if (last < 0) {
          carry = Buffer.alloc(0);
          continue;
        }
      }
      for (;;) {
        const nl = end > 0 ? chunk.lastIndexOf(0x0a, end - 1) : -1;
        if (nl < 0) break;
        if (end > nl + 1) yield chunk.toString('utf8', nl + 1, end);
        end = nl;
      }
      carry = Buffer.from(chunk.subarray(0, end));
    }
    if (carry.length > 0) yield carry.toString('utf8');
  } finally {
    await handle.close();
  }
}

/** How many recent ids a backwards walk remembers to drop repeats (a goal appended twice by racing writers). */
const REPEAT_WINDOW = 65536;

/** Closed goals a store query returns at a time. */
const CLOSED_PAGE = 500;

/**
 * Every closed goal's entry, the most recently closed first, streamed from
 * the ledger's end in bounded memory. A goal listed twice (two writers that
 * raced to add it) is given once when the repeats lie within
 * {@link REPEAT_WINDOW} lines of each other; damaged lines are skipped.
 */
export async function* closedEntriesNewestFirst(paths: GardenPaths): AsyncGenerator<ClosedEntry> {
  const store = storeOf(paths);
  if (store) {
    // A store's closed goals are a query, a page at a time; a record that fails validation is left out here as a damaged ledger line is.
    for (let offset = 0; ; offset += CLOSED_PAGE) {
      const page = await store.closedGoalRecords(offset, CLOSED_PAGE);
      for (const record of page) if (validateGoal(record).length === 0) yield closedEntryOf(record as GoalRecord);
      if (page.length < CLOSED_PAGE) return;
    }
  }
  const seen = new Set<string>();
  // The last REPEAT_WINDOW ids, in a ring: the oldest is forgotten in O(1) (an array's shift() copies the window,
  // which made `pak2 goals --all` quadratic past 65,536 closed goals).
  const ring: string[] = [];
  let oldest = 0;
  for await (const line of linesBackwards(path.join(paths.goalsDir, CLOSED_LEDGER))) {
    const entry = parseClosedLine(line);
    if (!entry || seen.has(entry.id)) continue;
    seen.add(entry.id);
    if (ring.length < REPEAT_WINDOW) ring.push(entry.id);
    else {
      seen.delete(ring[oldest]!);
      ring[oldest] = entry.id;
      oldest = (oldest + 1) % REPEAT_WINDOW;
    }
    yield entry;
  }
}

/** The entries of the `limit` most recently closed goals, newest first, from the ledger's end (no goal file is opened). */
export async function recentClosed(paths: GardenPaths, limit: number): Promise<ClosedEntry[]> {
  const entries: ClosedEntry[] = [];
  if (limit <= 0) return entries;
  for await (const entry of closedEntriesNewestFirst(paths)) {
    entries.push(entry);
    if (entries.length >= limit) break;
  }
  return entries;
}

/**
 * The ids of the `limit` most recently closed goals, newest first, read from
 * the end of the closed ledger (no goal file is opened).
 */
export async function recentClosedIds(paths: GardenPaths, limit: number): Promise<string[]> {
  return (await recentClosed(paths, limit)).map((e) => e.id);
}

// ------------------------------------------------------------------ rebuilding

/** Growable parallel arrays of (closed at, N, offset, length), 28 bytes a closed goal. */
class EntryTable {
  count = 0;
  at = new Float64Array(1024);
  n = new Float64Array(1024);
  offset = new Float64Array(1024);
  length = new Uint32Array(1024);

  push(at: number, n: number, offset: number, length: number): void {
    if (this.count === this.at.length) {
      const grow = <T extends Float64Array | Uint32Array>(a: T): T => {
        const b = new (a.constructor as { new (n: number): T })(a.length * 2);
        b.set(a);
        return b;
      };
      this.at = grow(this.at);
      this.n = grow(this.n);
      this.offset = grow(this.offset);
      this.length = grow(this.length);
    }
    this.at[this.count] = at;
    this.n[this.count] = n;
    this.offset[this.count] = offset;
    this.length[this.count] = length;
    this.count += 1;
  }
}

/** Removes the scratch and temp files of rebuilds whose process is gone (killed mid-rebuild: its `finally` never ran). */
function removeDeadRebuildFiles(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.startsWith(`${CLOSED_LEDGER}.scratch-`) || n.startsWith(`${CLOSED_LEDGER}.rebuild-`));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^\.closed\.(?:scratch|rebuild)-(\d+)-/.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    fs.rmSync(path.join(dir, name), { force: true });
  }
}

/** How many goal files a rebuild reads at once. */
const REBUILD_BATCH = 256;

/**
 * Rebuilds the ledger from the goal files, streaming: the goals directory is
 * listed in slices and read in batches; each closed goal's entry is written
 * to a scratch file as it is found, with 28 bytes kept in memory per closed
 * goal (its close time, N and place in the scratch file); the entries are
 * then copied in close order (closed_at, then N) to a temp file that
 * replaces the ledger atomically. Goal files that do not read or validate
 * are left out (`pak2 doctor` names them). Says so in one line.
 *
 * @param why the reason in the notice (`missing`, `damaged (…)`).
 * @returns the counts and the new ledger's size in bytes, or undefined when no goal file says closed and
 *   there was no ledger (nothing is written; a damaged ledger is replaced by an empty one).
 */
export async function rebuildClosedLedger(paths: GardenPaths, why: string): Promise<{ files: number; closed: number; bytes: number } | undefined> {
  const dir = paths.goalsDir;
  const ledger = path.join(dir, CLOSED_LEDGER);
  const stamp = `${process.pid}-${Date.now()}`;
  const scratch = path.join(dir, `${CLOSED_LEDGER}.scratch-${stamp}`);
  const temp = path.join(dir, `${CLOSED_LEDGER}.rebuild-${stamp}`);
  removeDeadRebuildFiles(dir);
  const table = new EntryTable();
  let files = 0;
  let out: number | undefined; // the scratch file
  let scratchSize = 0;
  try {
    let batch: string[] = [];
    // Synchronous reads and writes, a batch at a time, the event loop served between batches: a
    // thread-pool round trip per open, stat, read and close left the rebuild idle most of its time.
    const flush = () => {
      const ids = batch;
      batch = [];
      const lines: Buffer[] = [];
      for (const id of ids) {
        let goal: GoalRecord;
        try {
          goal = JSON.parse(fs.readFileSync(path.join(dir, `${id}.json`), 'utf8')) as GoalRecord;
        } catch {
          continue; // unreadable: left out (pak2 doctor names it)
        }
        if (!goal || typeof goal !== 'object' || goal.status !== 'closed' || goal.id !== id || validateGoal(goal).length > 0) continue;
        const line = Buffer.from(`${JSON.stringify(closedEntryOf(goal))}\n`);
        const at = Date.parse(goal.closed_at ?? goal.updated_at ?? goal.submitted_at);
        table.push(Number.isFinite(at) ? at : 0, goalNumber(id), scratchSize, line.length);
        scratchSize += line.length;
        lines.push(line);
      }
      if (lines.length > 0) {
        out ??= fs.openSync(scratch, 'w+');
        fs.writeSync(out, Buffer.concat(lines));
      }
    };
    const listed = await forEachName(dir, (name) => {
      if (!name.endsWith('.json')) return;
      const id = name.slice(0, -5);
      if (!GOAL_ID_PATTERN.test(id)) return;
      files += 1;
      batch.push(id);
      if (batch.length >= REBUILD_BATCH) flush();
    });
    if (!listed) return undefined;
    flush();
    // Nothing closed: nothing to index (a garden whose goals are all open needs no ledger yet), but a damaged
    // ledger is still replaced, by an empty one.
    if (table.count === 0 && !fs.existsSync(ledger)) return undefined;

    const order = new Uint32Array(table.count);
    for (let i = 0; i < order.length; i += 1) order[i] = i;
    order.sort((a, b) => table.at[a]! - table.at[b]! || table.n[a]! - table.n[b]!);

    const target = fs.openSync(temp, 'w');
    let bytes = 0;
    try {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      let used = 0;
      let copied = 0;
      for (const i of order) {
        const length = table.length[i]!;
        if (used + length > buffer.length) {
          fs.writeSync(target, buffer, 0, used);
          used = 0;
        }
        if (length > buffer.length) {
          const big = Buffer.allocUnsafe(length);
          fs.readSync(out!, big, 0, length, table.offset[i]!);
          fs.writeSync(target, big);
        } else {
          fs.readSync(out!, buffer, used, length, table.offset[i]!);
          used += length;
        }
        bytes += length;
        if (++copied % 65536 === 0) await yieldToLoop();
      }
      if (used > 0) fs.writeSync(target, buffer, 0, used);
      fs.fsyncSync(target);
    } finally {
      fs.closeSync(target);
    }
    // Replaced and recorded as pak2's in one step under the lock (no append lands between the two).
    await withLock(paths.goalsDir, async () => {
      await fsp.rename(temp, ledger);
      recordLedgerWritten(paths);
    });
    notice(`pak2: ${ledger} was ${why}: rebuilt it from ${files} goal file(s), ${table.count} closed`, ledger);
    return { files, closed: table.count, bytes };
  } finally {
    if (out !== undefined) fs.closeSync(out);
    await fsp.rm(scratch, { force: true });
    await fsp.rm(temp, { force: true });
  }
}
