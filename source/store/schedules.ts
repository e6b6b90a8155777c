import path from 'node:path';
import { formatIssue, validateSchedulesState, type SchedulesState } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readJsonFile, StoreError, writeJsonAtomic } from './files.js';
import { storeOf } from './backend.js';
import { GARDEN_KEY, storedWhere } from './documents.js';
import { storedRead } from './goals.js';

/** `<runtime-root>/schedules.json`: each `[[schedule]]`'s state by name (docs/schedules/level2.md, "State"). */
export function schedulesFile(paths: Pick<GardenPaths, 'runtimeRoot'>): string {
  return path.join(paths.runtimeRoot, 'schedules.json');
}

/**
 * Reads schedules.json; `{ schedules: {} }` when it does not exist yet.
 *
 * @throws StoreError INVALID_RECORD naming the file and field when it is damaged (never repaired by deleting it).
 */
export async function readSchedulesState(paths: Pick<GardenPaths, 'runtimeRoot'>): Promise<SchedulesState> {
  const store = storeOf(paths);
  const file = store ? storedWhere(store.where, 'schedules.json') : schedulesFile(paths);
  const read = store ? storedRead(await store.documentRecord('schedules', GARDEN_KEY)) : await readJsonFile(file);
  if (!read.ok) {
    if (read.missing) return { schedules: {} };
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateSchedulesState(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return read.value as SchedulesState;
}

/**
 * Writes schedules.json, validated, atomically. Only the coordinator
 * writes it (under its lock), so no file lock is taken.
 *
 * @throws StoreError INVALID_RECORD (not valid), IO_ERROR.
 */
export async function writeSchedulesState(paths: Pick<GardenPaths, 'runtimeRoot'>, state: SchedulesState): Promise<void> {
  const issues = validateSchedulesState(state);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `schedules.json: ${formatIssue(issues[0]!)}`);
  const store = storeOf(paths);
  if (store) await store.putDocument('schedules', GARDEN_KEY, state);
  else await writeJsonAtomic(schedulesFile(paths), state);
}
