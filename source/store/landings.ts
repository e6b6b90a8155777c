import fsp from 'node:fs/promises';
import path from 'node:path';
import { formatIssue, isTerminalLandingState, validateLanding, type LandingRecord } from '../contracts/index.js';
import { landingsDir, type GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { readJsonFile, StoreError, withLock, writeJsonAtomic, type JsonRead } from './files.js';
import { storeOf } from './backend.js';
import { DOCUMENT_FILES, storedWhere } from './documents.js';
import { storedRead } from './goals.js';

/** `<runtime-root>/landings/<run-id>.json`: the landing record of a run (docs/landing/level2.md). */
export function landingFile(paths: GardenPaths, runId: string): string {
  return path.join(landingsDir(paths), `${runId}.json`);
}

/**
 * The landing record of a run, or undefined when it has none (no worktree,
 * nothing to land, or not queued yet).
 *
 * @throws StoreError INVALID_RECORD naming the file when it is damaged.
 */
export async function readLanding(paths: GardenPaths, runId: string): Promise<LandingRecord | undefined> {
  const store = storeOf(paths);
  if (store) return landingOfRead(storedWhere(store.where, DOCUMENT_FILES.landing(runId)), storedRead(await store.documentRecord('landing', runId)));
  const file = landingFile(paths, runId);
  return landingOfRead(file, await readJsonFile(file));
}

function landingOfRead(file: string, read: JsonRead): LandingRecord | undefined {
  if (!read.ok) {
    if (read.missing) return undefined;
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateLanding(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return read.value as LandingRecord;
}

/**
 * Writes a landing record, validated, atomically. A record in a terminal
 * state (landed, conflict, rejected, failed) is never written over.
 *
 * @throws StoreError INVALID_RECORD (not valid), INVALID_TRANSITION (the
 *   record on disk is terminal), IO_ERROR.
 */
export async function writeLanding(paths: GardenPaths, record: LandingRecord): Promise<LandingRecord> {
  const issues = validateLanding(record);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `landing ${record.run}: ${formatIssue(issues[0]!)}`);
  const store = storeOf(paths);
  if (store) {
    return store.withDocumentLock('landing', record.run, async () => {
      const current = await readLanding(paths, record.run).catch(() => undefined);
      if (current && isTerminalLandingState(current.state) && current.state !== record.state) {
        throw new StoreError('INVALID_TRANSITION', `landing ${record.run} is ${current.state}; it is never rewritten`);
      }
      await store.putDocument('landing', record.run, record);
      return record;
    });
  }
  const file = landingFile(paths, record.run);
  // One lock for the directory: the file may not exist yet, and proper-lockfile keys its state by target.
  await fsp.mkdir(landingsDir(paths), { recursive: true });
  return withLock(landingsDir(paths), async () => {
    const current = await readLanding(paths, record.run).catch(() => undefined);
    if (current && isTerminalLandingState(current.state) && current.state !== record.state) {
      throw new StoreError('INVALID_TRANSITION', `landing ${record.run} is ${current.state}; it is never rewritten`);
    }
    await writeJsonAtomic(file, record);
    return record;
  }, path.join(landingsDir(paths), '.lock'));
}

/**
 * Every landing record, oldest queued first. A damaged file is reported in
 * `problems`, never deleted.
 */
export async function listLandings(paths: GardenPaths): Promise<{ landings: LandingRecord[]; problems: { file: string; message: string }[] }> {
  const store = storeOf(paths);
  if (store) {
    const landings: LandingRecord[] = [];
    const problems: { file: string; message: string }[] = [];
    for (const { key, record } of await store.documentRecords('landing')) {
      const file = storedWhere(store.where, DOCUMENT_FILES.landing(key));
      try {
        landings.push(landingOfRead(file, storedRead(record))!);
      } catch (error) {
        problems.push({ file, message: (error as Error).message });
      }
    }
    return { landings: landings.sort(byQueued), problems };
  }
  let names: string[];
  try {
    names = await fsp.readdir(landingsDir(paths));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { landings: [], problems: [] };
    throw error;
  }
  const landings: LandingRecord[] = [];
  const problems: { file: string; message: string }[] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    try {
      const record = await readLanding(paths, name.slice(0, -5));
      if (record) landings.push(record);
    } catch (error) {
      problems.push({ file: path.join(landingsDir(paths), name), message: (error as Error).message });
    }
  }
  landings.sort(byQueued);
  return { landings, problems };
}

function byQueued(a: LandingRecord, b: LandingRecord): number {
  return a.queued_at === b.queued_at ? (a.run < b.run ? -1 : 1) : a.queued_at < b.queued_at ? -1 : 1;
}

/**
 * Runs `fn` holding the lock of one run's landing (`<run-id>.json.lock`):
 * the merge queue's last step (moving the base branch and recording it)
 * and an operator's reject never interleave, so a landing is never both
 * on the base branch and recorded rejected. The record must exist. On a
 * store, `fn` runs in one transaction holding the landing's lock.
 */
export async function withLandingLock<T>(paths: GardenPaths, runId: string, fn: () => Promise<T>): Promise<T> {
  const store = storeOf(paths);
  // The store's lock is a transaction: what `fn` writes (the landed record, its event) commits together.
  if (store) return store.withDocumentLock('landing', runId, fn);
  return withLock(landingFile(paths, runId), fn);
}
