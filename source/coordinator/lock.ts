import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import type { GardenPaths } from '../garden/index.js';
import { UserError } from '../errors.js';

/** Who holds a garden's coordinator lock (`<runtime-root>/coordinator.holder.json`). */
export interface LockHolder {
  pid: number;
  host: string;
  started_at: string;
  command: string;
}

/** Files of the single-coordinator lock. */
export function lockPaths(paths: GardenPaths): { lock: string; holder: string } {
  return { lock: path.join(paths.runtimeRoot, 'coordinator.lock'), holder: path.join(paths.runtimeRoot, 'coordinator.holder.json') };
}

/** Reads the holder record, if any. */
export function readHolder(paths: GardenPaths): LockHolder | undefined {
  try {
    return JSON.parse(fs.readFileSync(lockPaths(paths).holder, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

/** True when `pid` names a live process on this host. */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/**
 * Takes the garden's coordinator lock (one coordinator per garden, DESIGN.md).
 * The lock is refreshed every 5 s and counts as stale after 20 s; a holder
 * on this host whose pid is gone is taken over at once. `onCompromised` is
 * told when the lock is lost (its directory deleted, say).
 *
 * @returns the release function.
 * @throws UserError naming the holder (pid, host, since when) when another coordinator holds it.
 */
export async function acquireCoordinatorLock(paths: GardenPaths, command: string, onCompromised?: (error: Error) => void): Promise<() => Promise<void>> {
  const files = lockPaths(paths);
  fs.mkdirSync(paths.runtimeRoot, { recursive: true });
  let release: () => Promise<void>;
  const take = () =>
    lockfile.lock(paths.runtimeRoot, {
      lockfilePath: files.lock,
      stale: 20_000,
      update: 5_000,
      retries: 0,
      onCompromised: (error) => (onCompromised ? onCompromised(error) : process.stderr.write(`pak2: coordinator lock compromised: ${error.message}\n`)),
    });
  try {
    try {
      release = await take();
    } catch (error) {
      // A holder on this host whose process is gone (kill -9, a crash) does not hold the garden.
      const holder = readHolder(paths);
      if ((error as { code?: string }).code !== 'ELOCKED' || !holder || holder.host !== os.hostname() || pidAlive(holder.pid)) throw error;
      fs.rmSync(files.lock, { recursive: true, force: true });
      release = await take();
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'ELOCKED') {
      const holder = readHolder(paths);
      const who = holder ? `pid ${holder.pid} on ${holder.host} (${holder.command}), since ${holder.started_at}` : 'another process';
      throw new UserError(`another coordinator is running this garden: ${who}; lock ${files.lock}`, {
        hint: 'stop it first, or use `pak2 dashboard` for a read-only view',
        exitCode: 1,
      });
    }
    throw error;
  }
  const holder: LockHolder = { pid: process.pid, host: os.hostname(), started_at: new Date().toISOString(), command };
  fs.writeFileSync(files.holder, `${JSON.stringify(holder, null, 2)}\n`);
  return async () => {
    try {
      fs.rmSync(files.holder, { force: true });
    } finally {
      await release().catch(() => undefined);
    }
  };
}
