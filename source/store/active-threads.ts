import path from 'node:path';
import fsp from 'node:fs/promises';
import {
  formatIssue,
  validateActiveThreads,
  type ActiveThread,
  type ActiveThreads,
  type ThreadStatus,
} from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readJsonFile, StoreError, withLock, writeJsonAtomic } from './files.js';
import { plantDir, readPlant } from './plants.js';

/** `plants/<plant>/memory/active-threads.json`, after checking the name (seed 002, "File layout"). */
export function activeThreadsFile(paths: GardenPaths, plant: string): string {
  return path.join(plantDir(paths, plant), 'memory', 'active-threads.json');
}

/**
 * Reads and validates a plant's Active Threads file (docs/active-threads/level2.md).
 * A missing file is no threads. Does not require the plant's meta.json.
 *
 * @throws StoreError INVALID_PLANT_NAME; INVALID_RECORD naming the file and
 *   the first failing field (malformed JSON, a contract issue, or a `plant`
 *   that is not this plant); IO_ERROR when the file cannot be read.
 */
export async function readActiveThreads(paths: GardenPaths, plant: string): Promise<ActiveThread[]> {
  const file = activeThreadsFile(paths, plant);
  const read = await readJsonFile(file);
  if (!read.ok) {
    if (read.missing) return [];
    throw new StoreError(read.message.includes('malformed JSON') ? 'INVALID_RECORD' : 'IO_ERROR', read.message, file);
  }
  const issues = validateActiveThreads(read.value, { plant });
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return (read.value as ActiveThreads).threads;
}

/**
 * Replaces a plant's Active Threads file with `threads`, stamped with
 * `updated_at: now`: validated first, then written atomically. The plant
 * must exist.
 *
 * @throws StoreError INVALID_PLANT_NAME, PLANT_NOT_FOUND, INVALID_RECORD
 *   (naming the file and field; nothing is written), IO_ERROR.
 */
export async function writeActiveThreads(paths: GardenPaths, plant: string, threads: ActiveThread[], now: Date = new Date()): Promise<ActiveThreads> {
  await readPlant(paths, plant);
  return writeChecked(paths, plant, threads, now);
}

async function writeChecked(paths: GardenPaths, plant: string, threads: ActiveThread[], now: Date): Promise<ActiveThreads> {
  const file = activeThreadsFile(paths, plant);
  const document: ActiveThreads = { plant, updated_at: now.toISOString(), threads };
  const issues = validateActiveThreads(document, { plant });
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  await writeJsonAtomic(file, document);
  return document;
}

/** Read-modify-write of a plant's threads under `memory/active-threads.json.lock`. */
async function updateThreads(paths: GardenPaths, plant: string, now: Date, change: (threads: ActiveThread[]) => ActiveThread[]): Promise<ActiveThreads> {
  await readPlant(paths, plant);
  const file = activeThreadsFile(paths, plant);
  const memory = path.dirname(file);
  await fsp.mkdir(memory, { recursive: true });
  return withLock(memory, async () => writeChecked(paths, plant, change(await readActiveThreads(paths, plant)), now), `${file}.lock`);
}

/** The fields a caller gives {@link upsertThread}; `updated_at` is stamped by the store. */
export interface ThreadInput {
  id: string;
  title?: string;
  status?: ThreadStatus;
  summary?: string;
  goals?: string[];
  next?: string;
}

/**
 * Adds a thread, or updates the one with the same id (the given fields
 * replace the stored ones, the others are kept), stamping its `updated_at`.
 * A new thread needs `title` and `status`. Existing order is kept; a new
 * thread goes last.
 *
 * @throws StoreError as {@link writeActiveThreads}; INVALID_RECORD when the
 *   stored file is malformed or the result is invalid.
 * @returns the thread as written.
 */
export async function upsertThread(paths: GardenPaths, plant: string, input: ThreadInput, now: Date = new Date()): Promise<ActiveThread> {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as ThreadInput;
  let written: ActiveThread | undefined;
  await updateThreads(paths, plant, now, (threads) => {
    const at = threads.findIndex((t) => t.id === input.id);
    const next = { ...(at >= 0 ? threads[at] : {}), ...defined, updated_at: now.toISOString() } as ActiveThread;
    written = next;
    return at >= 0 ? threads.map((t, i) => (i === at ? next : t)) : [...threads, next];
  });
  return written!;
}

/**
 * Marks a thread `done` (it stays in the file until removed), stamping its
 * `updated_at`; with `remove`, drops it from the file instead.
 *
 * @throws StoreError THREAD_NOT_FOUND for an id the file does not hold
 *   (nothing is written), and as {@link upsertThread}.
 */
export async function closeThread(paths: GardenPaths, plant: string, id: string, options: { remove?: boolean; now?: Date } = {}): Promise<ActiveThreads> {
  const now = options.now ?? new Date();
  return updateThreads(paths, plant, now, (threads) => {
    if (!threads.some((t) => t.id === id)) {
      throw new StoreError('THREAD_NOT_FOUND', `plant ${plant} has no thread ${id} (${activeThreadsFile(paths, plant)})`, activeThreadsFile(paths, plant));
    }
    if (options.remove) return threads.filter((t) => t.id !== id);
    return threads.map((t) => (t.id === id ? { ...t, status: 'done', updated_at: now.toISOString() } : t));
  });
}
