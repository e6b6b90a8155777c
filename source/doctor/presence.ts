import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { askHolder, coordinatorSocketName, lockPaths, type LockHolder } from '../coordinator/lock.js';
import type { GardenPaths } from '../garden/index.js';

/** How long a coordinator lock directory may go unrefreshed before it is stale (proper-lockfile's `stale` in lock.ts). */
export const LOCK_STALE_MS = 20_000;

/** Who holds a garden, as doctor sees it. */
export interface CoordinatorPresence {
  /** `answered`: a coordinator answered on the socket; `bound`: something holds the socket but did not answer (busy); `free`: nobody. */
  socket: 'answered' | 'bound' | 'free';
  /** The holder record the coordinator answered with. */
  answered?: LockHolder;
  /** `coordinator.holder.json`: the record, `malformed`, or undefined when absent. */
  holderFile?: LockHolder | 'malformed';
  /** The lock directory's last refresh (ms since the epoch), undefined when there is none. */
  lockMtimeMs?: number;
  /** True when a coordinator holds the garden: it is bound on this host, or another host's holder keeps its lock fresh. */
  held: boolean;
  /** Who, in words (for messages), when held. */
  heldBy?: string;
}

/** True while a process with `pid` exists and is not a zombie (signal 0, then `/proc/<pid>/stat`). */
export function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return !/^\d+ \(.*\) Z/s.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: signal 0 is all there is
  }
}

/** True when something accepts connections on the coordinator socket `name` (a coordinator too busy to answer still does). */
export function socketBound(name: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(name);
    const done = (bound: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(bound);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function readHolderFile(file: string): LockHolder | 'malformed' | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const value = JSON.parse(text) as LockHolder;
    return value && typeof value === 'object' && typeof value.pid === 'number' ? value : 'malformed';
  } catch {
    return 'malformed';
  }
}

function describe(holder: LockHolder): string {
  return `pid ${holder.pid} on ${holder.host} (${holder.command}), since ${holder.started_at}`;
}

/**
 * Finds out whether a coordinator holds the garden: asks on the coordinator
 * socket (askHolder), then checks whether the socket is bound at all, and
 * reads the lock directory and holder file. A holder on another host holds
 * the garden while its lock is refreshed (younger than {@link LOCK_STALE_MS}).
 */
export async function coordinatorPresence(paths: GardenPaths, now: number = Date.now()): Promise<CoordinatorPresence> {
  const files = lockPaths(paths);
  const name = coordinatorSocketName(paths);
  const presence: CoordinatorPresence = { socket: 'free', held: false };
  const holderFile = readHolderFile(files.holder);
  if (holderFile !== undefined) presence.holderFile = holderFile;
  try {
    presence.lockMtimeMs = fs.statSync(files.lock).mtimeMs;
  } catch {
    // no lock directory
  }
  const answered = await askHolder(name);
  if (answered) {
    presence.socket = 'answered';
    presence.answered = answered;
    presence.held = true;
    presence.heldBy = describe(answered);
    return presence;
  }
  if (await socketBound(name)) {
    presence.socket = 'bound';
    presence.held = true;
    presence.heldBy = `a coordinator on this host that did not answer on its socket${typeof holderFile === 'object' ? ` (holder file: ${describe(holderFile)})` : ''}`;
    return presence;
  }
  if (typeof holderFile === 'object' && holderFile.host !== os.hostname() && presence.lockMtimeMs !== undefined && now - presence.lockMtimeMs < LOCK_STALE_MS) {
    presence.held = true;
    presence.heldBy = describe(holderFile);
  }
  return presence;
}
