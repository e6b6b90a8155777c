import path from 'node:path';
import { formatIssue, validateTendState, type TendState } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { storeOf } from './backend.js';
import { GARDEN_KEY, storedWhere } from './documents.js';
import { readJsonFile, StoreError, writeJsonAtomic } from './files.js';
import { storedRead } from './goals.js';

/** `<runtime-root>/tend.json`: whether the operator paused automatic tends (docs/automatic-tend/level2.md, "Operator control"). */
export function tendStateFile(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'tend.json');
}

/**
 * The operator's pause of automatic tends; `undefined` when it was never
 * set (not paused).
 *
 * @throws StoreError INVALID_RECORD naming the file and field when tend.json is malformed.
 */
export async function readTendState(paths: GardenPaths): Promise<TendState | undefined> {
  const store = storeOf(paths);
  const file = store ? storedWhere(store.where, 'tend.json') : tendStateFile(paths);
  const read = store ? storedRead(await store.documentRecord('tend', GARDEN_KEY)) : await readJsonFile(file);
  if (!read.ok) {
    if (read.missing) return undefined;
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateTendState(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return read.value as TendState;
}

/** Writes tend.json whole (atomic; on a store, one document). */
export async function writeTendState(paths: GardenPaths, state: TendState): Promise<void> {
  const store = storeOf(paths);
  if (store) await store.putDocument('tend', GARDEN_KEY, state);
  else await writeJsonAtomic(tendStateFile(paths), state);
}
