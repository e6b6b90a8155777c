/**
 * A run's agent streams (seed 000, "Run directory"; issue 27): `events.jsonl`
 * (the agent's stdout as the driver wrote it) and `stderr.log`. On a file
 * garden they are the run directory's files. On a garden with a store
 * attached the store holds them, so every server can tail them: a remote
 * runner's uploads go there and nowhere else, and a local run's files are
 * copied there as they grow ({@link LocalStreamCopier}, driven by the
 * coordinator) and wholly, redacted, before its close is recorded
 * ({@link sealRunStreams}, called by closeRun).
 *
 * Offsets and sizes are bytes. An append names the offset it continues
 * from and is refused at any other one, so a retried or a stale chunk is
 * never stored twice or out of order.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RUN_ID_PATTERN } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { redactRunDir, type Redact } from '../redact.js';
import { storeOf, type GardenStore, type RunStreamName } from './backend.js';
import { StoreError } from './files.js';

export type { RunStreamName } from './backend.js';

/** The file of each stream in the run directory. */
export const RUN_STREAM_FILES = { events: 'events.jsonl', stderr: 'stderr.log' } as const satisfies Record<RunStreamName, string>;

/** Both streams, events first. */
export const RUN_STREAM_NAMES: readonly RunStreamName[] = ['events', 'stderr'];

/** The most bytes one append stores as one chunk (a runner's upload, a copy of a local file, a rewrite). */
export const MAX_STREAM_CHUNK_BYTES = 1024 * 1024;

/**
 * `<runtime-root>/runs/<run-id>/events.jsonl` or `stderr.log`.
 *
 * @throws StoreError RUN_NOT_FOUND for an id that is not `N-slug-rN`.
 */
export function runStreamFile(paths: GardenPaths, runId: string, stream: RunStreamName): string {
  if (!RUN_ID_PATTERN.test(runId)) throw new StoreError('RUN_NOT_FOUND', `run id ${JSON.stringify(runId)} is not of the form N-slug-rN`);
  return path.join(runDir(paths, runId), RUN_STREAM_FILES[stream]);
}

async function fileSize(file: string): Promise<number> {
  return fsp.stat(file).then(
    (s) => s.size,
    () => 0,
  );
}

async function readRange(file: string, from: number, length: number): Promise<Buffer> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, from);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Work on one run's streams in this process, one at a time (keyed by run, or run and stream): a copy never interleaves with the close's, nor an append to a file with another. */
const turns = new Map<string, Promise<unknown>>();

function inTurn<T>(paths: GardenPaths, name: string, fn: () => Promise<T>): Promise<T> {
  const key = `${paths.runtimeRoot}\0${name}`;
  const task = (turns.get(key) ?? Promise.resolve()).catch(() => undefined).then(fn);
  turns.set(key, task);
  void task.then(
    () => turns.get(key) === task && turns.delete(key),
    () => turns.get(key) === task && turns.delete(key),
  );
  return task;
}

/**
 * Appends `data` to a run's stream when `offset` is the size held (the
 * file's, or the store's): `appended` true and the new size. At another
 * offset nothing is written: `appended` false and the size held, where the
 * writer resumes. An empty `data` at the right offset appends nothing.
 * On files, callers serialise appends to one run (a remote run's lease lock).
 *
 * @throws StoreError RUN_NOT_FOUND (no such run), IO_ERROR.
 */
export async function appendRunStream(paths: GardenPaths, runId: string, stream: RunStreamName, offset: number, data: Buffer): Promise<{ appended: boolean; size: number }> {
  const file = runStreamFile(paths, runId, stream);
  const store = storeOf(paths);
  if (store) return store.appendStreamChunk(runId, stream, offset, data);
  // One append to a file at a time in this process: two at one offset never both pass the check.
  return inTurn(paths, `${runId}\0${stream}`, async () => {
    const size = await fileSize(file);
    if (offset !== size) return { appended: false, size };
    if (data.length > 0) {
      await fsp.appendFile(file, data).catch((error: unknown) => {
        if (isErrno(error, 'ENOENT')) throw new StoreError('RUN_NOT_FOUND', `no run ${runId} (looked for ${path.dirname(file)})`, file);
        throw new StoreError('IO_ERROR', `${file}: cannot append (${(error as Error).message})`, file, error);
      });
    }
    return { appended: true, size: size + data.length };
  });
}

/** The size of a run's stream held (the store's on a garden with one, else the file's), bytes; 0 when there is none. */
export async function runStreamSize(paths: GardenPaths, runId: string, stream: RunStreamName): Promise<number> {
  const file = runStreamFile(paths, runId, stream);
  const store = storeOf(paths);
  return store ? store.streamSize(runId, stream) : fileSize(file);
}

/** A run's stream where a reader finds it: its size now, and its bytes. */
interface StreamSource {
  size: number;
  read(from: number, length: number): Promise<Buffer>;
}

/**
 * Where a reader finds a run's stream: on a garden with a store, the
 * store's copy, unless it holds none of it and this machine's run directory
 * has the file (a run imported from a file garden: its stream stayed in the
 * runtime root; a local run before its first copy: the same bytes); else
 * the file.
 */
async function sourceOf(paths: GardenPaths, runId: string, stream: RunStreamName): Promise<StreamSource> {
  const file = runStreamFile(paths, runId, stream);
  const store = storeOf(paths);
  const stored = store ? await store.streamSize(runId, stream) : 0;
  if (store && stored > 0) return { size: stored, read: (from, length) => store.streamBytes(runId, stream, from, length) };
  return { size: await fileSize(file), read: (from, length) => readRange(file, from, length) };
}

/**
 * The bytes of a run's stream from `from`, at most `length` of them (default:
 * to its end as it is now), where a reader finds it ({@link sourceOf}).
 * Fewer, or none, past its end.
 */
export async function readRunStream(paths: GardenPaths, runId: string, stream: RunStreamName, from = 0, length?: number): Promise<Buffer> {
  const source = await sourceOf(paths, runId, stream);
  const want = Math.min(length ?? Number.POSITIVE_INFINITY, source.size - from);
  return want > 0 ? source.read(from, want) : Buffer.alloc(0);
}

/**
 * The last lines of a run's stream (blank ones left out): at most `lines`
 * of them, read from at most the last `maxBytes` (a cut first line is
 * dropped). `truncated`: lines were left out; `size`: the stream's size.
 */
export async function tailRunStream(paths: GardenPaths, runId: string, stream: RunStreamName, options: { lines: number; maxBytes: number }): Promise<{ lines: string[]; truncated: boolean; size: number }> {
  const source = await sourceOf(paths, runId, stream);
  const { size } = source;
  const from = Math.max(0, size - options.maxBytes);
  let text = (size > from ? await source.read(from, size - from) : Buffer.alloc(0)).toString('utf8');
  if (from > 0) text = text.slice(text.indexOf('\n') + 1);
  const all = text.split('\n').filter((l) => l.trim());
  const kept = all.slice(-options.lines);
  return { lines: kept, truncated: from > 0 || all.length > kept.length, size };
}

/** Reads one run's stream as it grows (a run tail on a store garden): its size, then bytes from an offset of what that size measured. */
export interface RunStreamReader {
  size(): Promise<number>;
  read(from: number, length: number): Promise<Buffer>;
}

/** A {@link RunStreamReader} of a run's stream where a reader finds it ({@link sourceOf}, decided again at each `size()`). */
export function runStreamReader(paths: GardenPaths, runId: string, stream: RunStreamName): RunStreamReader {
  let source: StreamSource | undefined;
  return {
    size: async () => (source = await sourceOf(paths, runId, stream)).size,
    read: async (from, length) => (source ?? (await sourceOf(paths, runId, stream))).read(from, length),
  };
}

/**
 * Where to cut `bytes` (read from a stream file at some offset) for one
 * append: at most `max` bytes. While the writer may still append (`final`
 * false), only whole lines go (up to the last newline); a line longer than
 * `max`, or the final rest, is cut at a UTF-8 character boundary so the text
 * sent is the same bytes as the file. Returns 0 when nothing should go yet.
 */
export function cutPoint(bytes: Buffer, final: boolean, max = MAX_STREAM_CHUNK_BYTES): number {
  const window = Math.min(bytes.length, max);
  if (window === 0) return 0;
  if (final && bytes.length <= max) return utf8Boundary(bytes, window);
  const nl = bytes.lastIndexOf(0x0a, window - 1);
  if (nl >= 0) return nl + 1;
  if (bytes.length < max && !final) return 0; // an unfinished short line: wait for its end
  return utf8Boundary(bytes, window);
}

/** The largest cut ≤ `end` that does not split a UTF-8 character. */
function utf8Boundary(bytes: Buffer, end: number): number {
  if (end >= bytes.length) return bytes.length;
  let cut = end;
  // Step back over continuation bytes (10xxxxxx) to the start of the character that `end` falls in.
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut -= 1;
  return cut === 0 ? end : cut;
}

/**
 * Copies a local run's stream files into the store as the driver writes
 * them (a garden with a store; nothing on a file garden). Each stream
 * continues from the store's size, learnt once and then from each append's
 * answer; a refused append moves it to the size the store holds, so a copy
 * never stores a byte twice whoever else appended.
 */
export class LocalStreamCopier {
  /** The store's size of each stream, as last told, bytes. */
  private readonly held: Partial<Record<RunStreamName, number>> = {};

  constructor(
    private readonly paths: GardenPaths,
    private readonly runId: string,
  ) {}

  /**
   * Copies what each file gained beyond the store's size: whole lines only,
   * unless `final` (every byte, a partial last line too). Serialised with
   * the other copies and the seal of this run in this process.
   *
   * @returns the bytes copied.
   * @throws StoreError from the store (the next call tries again).
   */
  copy(final = false): Promise<number> {
    const store = storeOf(this.paths);
    if (!store) return Promise.resolve(0);
    return inTurn(this.paths, this.runId, () => this.copyNow(store, final));
  }

  /** {@link copy} without taking the turn (the seal holds it). */
  async copyNow(store: GardenStore, final: boolean): Promise<number> {
    let copied = 0;
    for (const stream of RUN_STREAM_NAMES) {
      const file = runStreamFile(this.paths, this.runId, stream);
      for (let rounds = 0; rounds < 10_000; rounds += 1) {
        const size = await fileSize(file);
        if (size === 0) break;
        const offset = (this.held[stream] ??= await store.streamSize(this.runId, stream));
        if (offset >= size) break;
        const bytes = await readRange(file, offset, Math.min(size - offset, MAX_STREAM_CHUNK_BYTES));
        const cut = cutPoint(bytes, final && offset + bytes.length >= size);
        if (cut === 0) break;
        const answer = await store.appendStreamChunk(this.runId, stream, offset, bytes.subarray(0, cut));
        this.held[stream] = answer.size;
        if (answer.appended) copied += cut;
      }
    }
    return copied;
  }

  /** The store's size of `stream` as last told (undefined before the first copy that needed it). */
  heldOf(stream: RunStreamName): number | undefined {
    return this.held[stream];
  }
}

/**
 * What closeRun does with a run's streams before the record turns terminal
 * (docs/run/level2.md, "Secrets"): on a file garden, `redactDir()` (the run
 * directory redacted in place). On a garden with a store, also:
 * 1. every byte the local files hold beyond the store's copy is copied
 *    there (the end of a local run's stream: every server sees it whole
 *    once the run is closed);
 * 2. `redactDir()`;
 * 3. the store's copy is made as redacted as the file: a stream whose local
 *    file the store held whole is rewritten from the redacted file when the
 *    redaction replaced it (same bytes, same rules); one with no local file
 *    here (a remote runner's upload, a run closed on another machine) is
 *    redacted by the same rules ({@link redactRunDir} on a private copy) and
 *    rewritten when anything was replaced. `redact` undefined: redaction is
 *    off, the store's copy stays as it is.
 * Serialised with this process's copies of the run's streams.
 */
export async function sealRunStreams(paths: GardenPaths, runId: string, options: { redactDir: () => Promise<unknown>; redact?: Redact }): Promise<void> {
  const store = storeOf(paths);
  if (!store) {
    await options.redactDir();
    return;
  }
  await inTurn(paths, runId, async () => {
    const copier = new LocalStreamCopier(paths, runId);
    await copier.copyNow(store, true);
    const before = new Map<RunStreamName, fs.Stats>();
    for (const stream of RUN_STREAM_NAMES) {
      const stat = await fsp.lstat(runStreamFile(paths, runId, stream)).catch(() => undefined);
      // The store holds exactly this file (a local run's): the file's redaction says what the copy's is.
      if (stat?.isFile() && stat.size > 0 && copier.heldOf(stream) === stat.size) before.set(stream, stat);
    }
    await options.redactDir();
    if (!options.redact) return;
    for (const stream of RUN_STREAM_NAMES) {
      const file = runStreamFile(paths, runId, stream);
      const was = before.get(stream);
      if (was) {
        const now = await fsp.lstat(file).catch(() => undefined);
        // redactFile leaves a file with nothing to redact untouched (same inode); a redacted one is renamed over.
        if (now && (now.ino !== was.ino || now.size !== was.size)) await rewriteStoredStream(store, runId, stream, file);
      } else if ((await store.streamSize(runId, stream)) > 0) await redactStoredStream(store, runId, stream, options.redact);
    }
  });
}

/** Replaces the store's copy of a stream with `file`'s bytes, in one transaction. */
async function rewriteStoredStream(store: GardenStore, runId: string, stream: RunStreamName, file: string): Promise<void> {
  await store.transaction(async () => {
    await store.clearStream(runId, stream);
    let offset = 0;
    for (;;) {
      const chunk = await readRange(file, offset, MAX_STREAM_CHUNK_BYTES);
      if (chunk.length === 0) break;
      await store.appendStreamChunk(runId, stream, offset, chunk);
      offset += chunk.length;
    }
  });
}

/** Redacts the store's copy of a stream by the run directory's rules (on a private copy), rewriting it when anything was replaced. */
async function redactStoredStream(store: GardenStore, runId: string, stream: RunStreamName, redact: Redact): Promise<void> {
  await withStoredCopy(store, runId, stream, async (file) => {
    if ((await redactRunDir(path.dirname(file), redact)) > 0) await rewriteStoredStream(store, runId, stream, file);
  });
}

/** Runs `fn` with a private copy of the store's stream (its own file name, owner-only, in a fresh temp directory), removed after. */
async function withStoredCopy<T>(store: GardenStore, runId: string, stream: RunStreamName, fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'pak2-stream-'));
  try {
    const file = path.join(dir, RUN_STREAM_FILES[stream]);
    const handle = await fsp.open(file, 'wx', 0o600);
    try {
      for (let offset = 0; ; ) {
        const chunk = await store.streamBytes(runId, stream, offset, MAX_STREAM_CHUNK_BYTES);
        if (chunk.length === 0) break;
        await handle.write(chunk);
        offset += chunk.length;
      }
    } finally {
      await handle.close();
    }
    return await fn(file);
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

/**
 * Runs `fn` with a file holding the run's stream: the run directory's own
 * when it is here, else (a garden with a store: a remote run, or a run of
 * another machine) a private copy of the store's, removed after `fn`. On a
 * file garden, or with neither, `fn` gets the run directory's path (which
 * may not exist).
 */
export async function withRunStreamFile<T>(paths: GardenPaths, runId: string, stream: RunStreamName, fn: (file: string) => Promise<T>): Promise<T> {
  const local = runStreamFile(paths, runId, stream);
  const store = storeOf(paths);
  if (!store || fs.existsSync(local) || (await store.streamSize(runId, stream)) === 0) return fn(local);
  return withStoredCopy(store, runId, stream, fn);
}
