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

/**
 * Takes the garden's coordinator lock (one coordinator per garden, DESIGN.md).
 * The lock is refreshed every 5 s and counts as stale after 20 s, so a
 * crashed holder does not block the garden for long.
 *
 * @returns the release function.
 * @throws UserError naming the holder (pid, host, since when) when another coordinator holds it.
 */
export async function acquireCoordinatorLock(paths: GardenPaths, command: string): Promise<() => Promise<void>> {
  const files = lockPaths(paths);
  fs.mkdirSync(paths.runtimeRoot, { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(paths.runtimeRoot, {
      lockfilePath: files.lock,
      stale: 20_000,
      update: 5_000,
      retries: 0,
      onCompromised: (error) => process.stderr.write(`pak2: coordinator lock compromised: ${error.message}\n`),
    });
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
