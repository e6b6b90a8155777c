import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeAll } from '../checked-write.js';
import { isErrno } from '../errors.js';
import type { GardenPaths } from '../garden/index.js';

/** Store failure codes (seed 002, "Failure modes"), plus INVALID_RECORD for a file that fails validation. */
export type StoreErrorCode =
  | 'GOAL_NOT_FOUND'
  | 'RUN_NOT_FOUND'
  | 'PLANT_NOT_FOUND'
  | 'THREAD_NOT_FOUND'
  | 'INVALID_TRANSITION'
  | 'MISSING_CLOSED_REASON'
  | 'INVALID_GARDEN_NAME'
  | 'INVALID_PLANT_NAME'
  | 'PLANT_EXISTS'
  | 'SEED_NOT_FOUND'
  | 'IO_ERROR'
  | 'INVALID_RECORD'
  | 'SCHEMA_TOO_NEW';

/**
 * A store operation that was refused; `code` is a seed reason code, `file`
 * the record concerned, `cause` (when given) the errno error underneath an
 * IO_ERROR (`errnoOf` in source/checked-write.ts reads its ENOSPC / EIO).
 */
export class StoreError extends Error {
  readonly code: StoreErrorCode;
  readonly file: string | undefined;

  constructor(code: StoreErrorCode, message: string, file?: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'StoreError';
    this.code = code;
    this.file = file;
  }
}

/** SQLSTATE classes and codes that mean the database cannot be reached now, not that the call was wrong. */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1-4]|53300|53400)/;
/** Socket errors of a connection that could not be made or was lost. */
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);

/**
 * True when `error` says the garden's store (PostgreSQL) could not be
 * reached: a refused or lost connection, a server shutting down or not yet
 * accepting connections (SQLSTATE class 08, 57P01–57P04, 53300). A caller
 * that sees it should try again later (HTTP 503), never read it as "no
 * record" or "not allowed". Always false for the file store's errors.
 */
export function storeUnavailable(error: unknown): boolean {
  if (!(error instanceof StoreError) || error.code !== 'IO_ERROR') return false;
  const cause = error.cause as { code?: unknown; errors?: unknown[]; message?: unknown } | undefined;
  if (!cause) return false;
  const codes = [cause, ...(Array.isArray(cause.errors) ? cause.errors : [])].map((c) => (c as { code?: unknown }).code);
  if (codes.some((code) => typeof code === 'string' && (UNAVAILABLE_ERRNO.has(code) || UNAVAILABLE_SQLSTATE.test(code)))) return true;
  return /Connection terminated|connection error|Client was closed|timeout exceeded when trying to connect/i.test(String(cause.message ?? ''));
}

type WriteFileAtomic = typeof import('../atomic-write.js').writeFileAtomic;
let writeFileAtomicModule: Promise<WriteFileAtomic> | undefined;

/**
 * The atomic writer (source/atomic-write.ts; temp files named `*.tmp`),
 * imported on the first atomic write: a command that only reads never loads
 * it (nor proper-lockfile, see {@link withLock}).
 */
export function loadWriteFileAtomic(): Promise<WriteFileAtomic> {
  writeFileAtomicModule ??= import('../atomic-write.js').then((m) => m.writeFileAtomic);
  return writeFileAtomicModule;
}

/**
 * Fault injection for the crash tests (test/reliability/crash-points.test.ts):
 * when `PAK2_CRASH_AT` names this point, the process kills itself with
 * SIGKILL right here, as a power cut or `kill -9` would. The points sit
 * between a record's write and its event. Inert otherwise.
 */
export function crashPoint(name: string): void {
  if (process.env.PAK2_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}

/** The mode of a split runtime root (docs/run/level2.md, "Secrets"): the owner's alone. */
export const RUNTIME_ROOT_MODE = 0o700;

/**
 * Makes the runtime root (and its parents) when missing and, in a split
 * garden, sets its mode to {@link RUNTIME_ROOT_MODE} explicitly (not left to
 * the umask): what lies under it (runs' streams and logs while they are
 * live, webhook secrets) is the owner's alone. The legacy layout's runtime
 * root is the garden root, the operator's: its mode is left alone.
 *
 * @throws StoreError IO_ERROR naming the directory.
 */
export async function ensureRuntimeRoot(paths: Pick<GardenPaths, 'runtimeRoot' | 'split'>): Promise<void> {
  try {
    await fsp.mkdir(paths.runtimeRoot, { recursive: true, ...(paths.split ? { mode: RUNTIME_ROOT_MODE } : {}) });
    if (paths.split) await fsp.chmod(paths.runtimeRoot, RUNTIME_ROOT_MODE);
  } catch (error) {
    throw new StoreError('IO_ERROR', `${paths.runtimeRoot}: cannot make the runtime root the owner's alone (${(error as Error).message})`, paths.runtimeRoot);
  }
}

/** The mode of the files pak2 writes in the runtime root (docs/run/level2.md, "Secrets"): the owner's alone. */
export const RUNTIME_FILE_MODE = 0o600;

/**
 * The text of a record file (a goal, a run's meta.json and seal, a lease):
 * pretty JSON, two spaces, and a newline. Every writer of such a file uses
 * it, `pak2 store export` too (its round trip is byte for byte).
 */
export function recordText(data: unknown): string {
  return `${JSON.stringify(data, null, 2)}\n`;
}

/** One line of a JSON-lines file (the event log, a comment thread): compact JSON and a newline. */
export function recordLine(data: unknown): string {
  return `${JSON.stringify(data)}\n`;
}

/**
 * Writes `data` as pretty JSON atomically (temp file `*.tmp`, every byte
 * checked written, fsync, rename), so a reader never sees half a record: a
 * write that fails (ENOSPC, EROFS, EIO, a short write) leaves the old file
 * and no temp file. Creates the parent directory. `mode` (e.g.
 * {@link RUNTIME_FILE_MODE}) is set explicitly; without it the file keeps
 * the mode of the one it replaces.
 *
 * @throws StoreError IO_ERROR naming the file, with the errno error as `cause`.
 */
export async function writeJsonAtomic(file: string, data: unknown, mode?: number): Promise<void> {
  try {
    const writeFileAtomic = await loadWriteFileAtomic();
    await writeFileAtomic(file, recordText(data), { fsync: true, mkdir: true, ...(mode !== undefined ? { mode } : {}) });
  } catch (error) {
    throw new StoreError('IO_ERROR', `${file}: write failed (${(error as Error).message})`, file, error);
  }
}

/**
 * Writes a new JSON file that must not exist yet: written to a temp file,
 * fsynced, then hard-linked into place, which fails if the name is taken.
 *
 * @throws StoreError IO_ERROR naming the file (EEXIST included).
 */
export async function createJsonExclusive(file: string, data: unknown): Promise<void> {
  const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const handle = await fsp.open(temp, 'wx', RUNTIME_FILE_MODE);
    try {
      await handle.chmod(RUNTIME_FILE_MODE);
      await writeAll(handle, Buffer.from(recordText(data)), temp);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.link(temp, file);
  } catch (error) {
    throw new StoreError('IO_ERROR', `${file}: create failed (${(error as Error).message})`, file, error);
  } finally {
    await fsp.rm(temp, { force: true });
  }
}

/**
 * Reads a JSON-lines file, keeping the lines `accept` takes; a missing file
 * is empty, and blank, torn or foreign lines are skipped (never rewritten).
 */
export async function readJsonLines<T>(file: string, accept: (value: unknown) => boolean): Promise<T[]> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch {
    return [];
  }
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const value: unknown = JSON.parse(line);
      if (accept(value)) out.push(value as T);
    } catch {
      // a torn or foreign line
    }
  }
  return out;
}

/** Result of reading a JSON file: the value, or why it could not be had. */
export type JsonRead =
  | { ok: true; value: unknown }
  | { ok: false; missing: boolean; message: string };

/** Reads and parses a JSON file; never throws. `message` names the file. */
export async function readJsonFile(file: string): Promise<JsonRead> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (error) {
    return unreadable(file, error);
  }
  return parseJsonText(file, text);
}

/**
 * {@link readJsonFile}, synchronously: for many small files read a slice at
 * a time (a scan of goal files), where four trips through the thread pool
 * per file cost more than the read.
 */
export function readJsonFileSync(file: string): JsonRead {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    return unreadable(file, error);
  }
  return parseJsonText(file, text);
}

function unreadable(file: string, error: unknown): JsonRead {
  return { ok: false, missing: isErrno(error, 'ENOENT'), message: `${file}: ${isErrno(error, 'ENOENT') ? 'no such file' : (error as Error).message}` };
}

function parseJsonText(file: string, text: string): JsonRead {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, missing: false, message: `${file}: malformed JSON (${(error as Error).message})` };
  }
}

const appending = new Map<string, Promise<unknown>>();

/**
 * Appends one JSON line with O_APPEND in a single write(2) of the whole
 * line, whatever its size (Node's appendFile splits large data into 512 KB
 * writes that concurrent writers interleave). Appends to one file from this
 * process are queued, so the torn-line repair below runs once, not once per
 * racing writer. Creates the parent directory; a file it creates gets
 * {@link RUNTIME_FILE_MODE} (every JSON-lines file is pak2's runtime record).
 *
 * @throws StoreError IO_ERROR naming the file.
 */
export async function appendJsonLine(file: string, data: unknown): Promise<void> {
  return appendJsonLines(file, [data]);
}

/**
 * {@link appendJsonLine} for several values: their lines appended together
 * in one checked write, in order (the closed ledger adopting many goals at
 * once).
 *
 * @throws StoreError IO_ERROR naming the file.
 */
export async function appendJsonLines(file: string, values: readonly unknown[]): Promise<void> {
  if (values.length === 0) return;
  const previous = appending.get(file) ?? Promise.resolve();
  const task = previous.catch(() => undefined).then(() => appendNow(file, values));
  appending.set(file, task);
  try {
    await task;
  } finally {
    if (appending.get(file) === task) appending.delete(file);
  }
}

async function appendNow(file: string, values: readonly unknown[]): Promise<void> {
  try {
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(file, 'a+', RUNTIME_FILE_MODE);
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) throw error;
      await fsp.mkdir(path.dirname(file), { recursive: true });
      handle = await fsp.open(file, 'a+', RUNTIME_FILE_MODE);
    }
    try {
      // A torn last line (a writer that died mid-line) must not swallow this one.
      const { size } = await handle.stat();
      // A file this append made is the owner's alone, whatever the umask (docs/run/level2.md, "Secrets").
      if (size === 0) await handle.chmod(RUNTIME_FILE_MODE).catch(() => undefined);
      let lead = '';
      if (size > 0) {
        const last = Buffer.alloc(1);
        await handle.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) lead = '\n';
      }
      // All of it, or an error: a write that makes no progress fails instead of looping.
      await writeAll(handle, Buffer.from(`${lead}${values.map(recordLine).join('')}`), file);
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new StoreError('IO_ERROR', `${file}: append failed (${(error as Error).message})`, file, error);
  }
}

/**
 * Runs `fn` holding an inter-process lock on `target` (an existing directory
 * or file; the lock is the directory `lockPath`, default `<target>.lock`).
 * Waits up to about 21 s: longer than a lock left by a killed process takes
 * to go stale (10 s) and be taken over. proper-lockfile keeps its in-process state by `target`,
 * so one target must always go with one `lockPath` (two locks of one
 * target with different lock paths overwrite each other's state).
 *
 * A lock found compromised while held (its directory removed or its mtime
 * not refreshed, e.g. under a stalled event loop) is said in one stderr line
 * and never crashes the process; a failed release after `fn` finished does
 * not turn its result into an error (the lock goes stale and is taken over).
 *
 * Holders in this process take their turns in order before they take the
 * file lock: one waiting for another here starts the moment it is released,
 * not at proper-lockfile's next retry (20 to 200 ms later). `fn` must not
 * ask for the same lock again (it would wait for itself).
 */
export function withLock<T>(target: string, fn: () => Promise<T>, lockPath = `${target}.lock`): Promise<T> {
  const previous = lockTurns.get(lockPath) ?? Promise.resolve();
  const turn = previous.then(() => withFileLock(target, fn, lockPath));
  const settled = turn.then(
    () => undefined,
    () => undefined,
  );
  lockTurns.set(lockPath, settled);
  void settled.then(() => {
    if (lockTurns.get(lockPath) === settled) lockTurns.delete(lockPath);
  });
  return turn;
}

/** The last turn asked for at each lock path in this process. */
const lockTurns = new Map<string, Promise<void>>();

/**
 * The file system proper-lockfile works through: node's, with the native
 * realpath (one call where the default walks the path one lstat per
 * component, twice a lock). One object for the process, so the mtime
 * precision proper-lockfile probes once is kept on it.
 */
const lockFs = { mkdir: fs.mkdir, stat: fs.stat, utimes: fs.utimes, rmdir: fs.rmdir, rmdirSync: fs.rmdirSync, realpath: fs.realpath.native };

async function withFileLock<T>(target: string, fn: () => Promise<T>, lockPath: string): Promise<T> {
  const { default: lockfile } = await import('proper-lockfile');
  const release = await lockfile.lock(target, {
    fs: lockFs,
    lockfilePath: lockPath,
    retries: { retries: 110, minTimeout: 20, maxTimeout: 200 },
    stale: 10_000,
    onCompromised: (error) => process.stderr.write(`pak2: lock ${lockPath} was compromised while held (${error.message})\n`),
  });
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
  }
}
