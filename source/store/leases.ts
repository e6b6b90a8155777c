import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { formatIssue, validateLease, type LeaseRecord, type LeaseState } from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { readJsonFile, StoreError, withLock, writeJsonAtomic, type JsonRead } from './files.js';
import { storeOf } from './backend.js';

/** `<runtime-root>/leases/`: one file per active lease (docs/runners/level2.md, "Leases"). */
export function leasesDir(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'leases');
}

/** `<runtime-root>/leases/<run-id>.json`: an active lease. */
export function leaseFile(paths: GardenPaths, runId: string): string {
  return path.join(leasesDir(paths), `${runId}.json`);
}

/** `<runtime-root>/leases/ended/<run-id>.json`: a lease that finished or expired, kept so a late call is refused by name. */
export function endedLeaseFile(paths: GardenPaths, runId: string): string {
  return path.join(leasesDir(paths), 'ended', `${runId}.json`);
}

async function readLeaseAt(file: string, stored?: JsonRead): Promise<LeaseRecord | undefined> {
  const read = stored ?? (await readJsonFile(file));
  if (!read.ok) {
    if (read.missing) return undefined;
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateLease(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return read.value as LeaseRecord;
}

/**
 * The lease of a run: the active one, else the ended one, else undefined
 * (a local run, or a run that never had a lease).
 *
 * @throws StoreError INVALID_RECORD naming the file when it is damaged.
 */
export async function readLease(paths: GardenPaths, runId: string): Promise<LeaseRecord | undefined> {
  const store = storeOf(paths);
  if (store) {
    const value = await store.leaseRecord(runId);
    return readLeaseAt(`${store.where} lease of ${runId}`, value === undefined ? { ok: false, missing: true, message: '' } : { ok: true, value });
  }
  return (await readLeaseAt(leaseFile(paths, runId))) ?? (await readLeaseAt(endedLeaseFile(paths, runId)));
}

/**
 * Every active lease, oldest claim first. A damaged file is reported in
 * `problems`, never deleted.
 */
export async function listActiveLeases(paths: GardenPaths): Promise<{ leases: LeaseRecord[]; problems: { file: string; message: string }[] }> {
  const store = storeOf(paths);
  if (store) {
    const leases: LeaseRecord[] = [];
    const problems: { file: string; message: string }[] = [];
    for (const { run, record } of await store.activeLeaseRecords()) {
      const where = `${store.where} lease of ${run}`;
      try {
        const lease = await readLeaseAt(where, { ok: true, value: record });
        if (lease) leases.push(lease);
      } catch (error) {
        problems.push({ file: where, message: (error as Error).message });
      }
    }
    leases.sort((a, b) => a.claimed_at.localeCompare(b.claimed_at));
    return { leases, problems };
  }
  let names: string[];
  try {
    names = await fsp.readdir(leasesDir(paths));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { leases: [], problems: [] };
    throw error;
  }
  const leases: LeaseRecord[] = [];
  const problems: { file: string; message: string }[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const file = path.join(leasesDir(paths), name);
    try {
      const lease = await readLeaseAt(file);
      if (lease) leases.push(lease);
    } catch (error) {
      problems.push({ file, message: (error as Error).message });
    }
  }
  leases.sort((a, b) => a.claimed_at.localeCompare(b.claimed_at));
  return { leases, problems };
}

/**
 * Writes an active lease (atomic, validated).
 *
 * @throws StoreError INVALID_RECORD, IO_ERROR.
 */
export async function writeLease(paths: GardenPaths, lease: LeaseRecord): Promise<void> {
  const issues = validateLease(lease);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `lease of ${lease.run}: ${formatIssue(issues[0]!)}`, leaseFile(paths, lease.run));
  const store = storeOf(paths);
  if (store) {
    await store.putLease(lease, lease.state);
    return;
  }
  await writeJsonAtomic(leaseFile(paths, lease.run), lease);
}

/**
 * Ends a lease: writes it with `state` and `ended_at` to `leases/ended/`,
 * then removes the active file (a crash between the two leaves both; the
 * ended one wins in {@link readLease}'s callers that check `state`).
 */
export async function endLease(paths: GardenPaths, lease: LeaseRecord, state: Exclude<LeaseState, 'active'>, now: Date): Promise<LeaseRecord> {
  const ended: LeaseRecord = { ...lease, state, ended_at: now.toISOString() };
  const store = storeOf(paths);
  if (store) return store.putLease(ended, state);
  await writeJsonAtomic(endedLeaseFile(paths, lease.run), ended);
  await fsp.rm(leaseFile(paths, lease.run), { force: true });
  return ended;
}

/**
 * Runs `fn` holding the inter-process lock of one run's lease, so a
 * heartbeat, a finish and the expiry never interleave (the lock directory is
 * `leases/<run-id>.lock`; its target is the run's meta.json, a target no
 * other lock uses). A run that has no record has no lease to guard: `fn`
 * runs unlocked and finds nothing.
 */
export async function withLeaseLock<T>(paths: GardenPaths, runId: string, fn: () => Promise<T>): Promise<T> {
  const store = storeOf(paths);
  // A store's transaction rethrows `fn`'s own error as it is (a runner's 409, 422): store/postgres/db.ts.
  if (store) return store.withLeaseLock(runId, fn);
  const target = path.join(runDir(paths, runId), 'meta.json');
  if (!fs.existsSync(target)) return fn();
  await fsp.mkdir(leasesDir(paths), { recursive: true });
  return withLock(target, fn, path.join(leasesDir(paths), `${runId}.lock`));
}
