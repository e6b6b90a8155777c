import fsp from 'node:fs/promises';
import path from 'node:path';
import { DASHBOARD_INVOCATION_ID_PATTERN, formatIssue, validateDashboardInvocation, type DashboardInvocation } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { storeOf } from './backend.js';
import { DOCUMENT_FILES, storedWhere } from './documents.js';
import { readJsonFile, StoreError, writeJsonAtomic, type JsonRead } from './files.js';
import { storedRead } from './goals.js';

/** `<runtime-root>/dashboard/invocations/`: one record per completed dashboard session (seed 002, "File layout"). */
export function dashboardInvocationsDir(paths: GardenPaths): string {
  return path.join(paths.dashboardDir, 'invocations');
}

/** `<runtime-root>/dashboard/invocations/<id>.json`. */
export function dashboardInvocationFile(paths: GardenPaths, id: string): string {
  return path.join(dashboardInvocationsDir(paths), `${id}.json`);
}

/** Where a record is named in a message: its file, or on a store the store and the file it stands for. */
function whereOf(paths: GardenPaths, id: string): string {
  const store = storeOf(paths);
  return store ? storedWhere(store.where, DOCUMENT_FILES['dashboard-invocation'](id)) : dashboardInvocationFile(paths, id);
}

/** The record a read found, checked: undefined when there is none. @throws StoreError INVALID_RECORD naming `where`. */
function invocationOfRead(where: string, id: string, read: JsonRead): DashboardInvocation | undefined {
  if (!read.ok) {
    if (read.missing) return undefined;
    throw new StoreError('INVALID_RECORD', read.message, where);
  }
  const issues = validateDashboardInvocation(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${where}: ${formatIssue(issues[0]!)}`, where);
  const record = read.value as DashboardInvocation;
  if (record.id !== id) throw new StoreError('INVALID_RECORD', `${where}: id ${JSON.stringify(record.id)} does not match the file name`, where);
  return record;
}

/**
 * Writes one dashboard invocation record, validated (docs/dashboard/
 * level2.md, "Invocation records"): the file atomically, or on a store the
 * `dashboard-invocation` document (inside the caller's transaction, when
 * there is one).
 *
 * @throws StoreError INVALID_RECORD (the record does not validate: nothing
 *   is written), IO_ERROR.
 */
export async function writeDashboardInvocation(paths: GardenPaths, record: DashboardInvocation): Promise<DashboardInvocation> {
  const issues = validateDashboardInvocation(record);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `dashboard invocation ${String(record.id)}: ${formatIssue(issues[0]!)}`);
  const store = storeOf(paths);
  if (store) await store.putDocument('dashboard-invocation', record.id, record);
  else await writeJsonAtomic(dashboardInvocationFile(paths, record.id), record);
  return record;
}

/**
 * One dashboard invocation record, or undefined when there is none.
 *
 * @throws StoreError INVALID_RECORD naming the file (torn JSON, a field
 *   that does not validate, an id that is not the file's name).
 */
export async function readDashboardInvocation(paths: GardenPaths, id: string): Promise<DashboardInvocation | undefined> {
  if (!DASHBOARD_INVOCATION_ID_PATTERN.test(id)) throw new StoreError('INVALID_RECORD', `dashboard invocation id ${JSON.stringify(id)}: not YYYYMMDDTHHMMSS-<8 hex>`);
  const store = storeOf(paths);
  const where = whereOf(paths, id);
  return invocationOfRead(where, id, store ? storedRead(await store.documentRecord('dashboard-invocation', id)) : await readJsonFile(where));
}

/**
 * Every dashboard invocation record, oldest first. A damaged one (or a file
 * in the directory whose name is no invocation id) is reported in
 * `problems` with its file, never deleted; the rest are read.
 */
export async function listDashboardInvocations(paths: GardenPaths): Promise<{ invocations: DashboardInvocation[]; problems: { file: string; message: string }[] }> {
  const invocations: DashboardInvocation[] = [];
  const problems: { file: string; message: string }[] = [];
  const store = storeOf(paths);
  if (store) {
    for (const { key, record } of await store.documentRecords('dashboard-invocation')) {
      const where = storedWhere(store.where, DOCUMENT_FILES['dashboard-invocation'](key));
      try {
        const found = invocationOfRead(where, key, storedRead(record));
        if (found) invocations.push(found);
      } catch (error) {
        problems.push({ file: where, message: (error as Error).message });
      }
    }
  } else {
    let names: string[];
    try {
      names = await fsp.readdir(dashboardInvocationsDir(paths));
    } catch (error) {
      if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) return { invocations, problems };
      throw error;
    }
    for (const name of names.sort()) {
      // atomic-write temp files and dot files are not records
      if (name.startsWith('.') || !name.endsWith('.json')) continue;
      const file = path.join(dashboardInvocationsDir(paths), name);
      const id = name.slice(0, -'.json'.length);
      if (!DASHBOARD_INVOCATION_ID_PATTERN.test(id)) {
        problems.push({ file, message: `${file}: not a dashboard invocation file name (<YYYYMMDDTHHMMSS>-<8 hex>.json); pak2 never reads it` });
        continue;
      }
      try {
        const found = invocationOfRead(file, id, await readJsonFile(file));
        if (found) invocations.push(found);
      } catch (error) {
        problems.push({ file, message: (error as Error).message });
      }
    }
  }
  invocations.sort((a, b) => (a.started_at === b.started_at ? (a.id < b.id ? -1 : 1) : a.started_at < b.started_at ? -1 : 1));
  return { invocations, problems };
}
