import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { askHolder, coordinatorSocketName, lockPaths, type LockHolder } from '../coordinator/lock.js';
import type { GardenPaths } from '../garden/index.js';
import { commandOf, otherProcesses, processAlive } from '../proc.js';

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

/** A `pak2 serve` (or `pak2 cycle --serve`) process of a garden, as {@link gardenServeProcesses} finds it. */
export interface ServeProcess {
  pid: number;
  command: string;
}

/** The garden a pak2 command line acts on: `--garden DIR` resolved against its working directory, else the nearest ancestor of it holding PAK2.toml (cli/context.ts gardenOf). */
function gardenOfCommandLine(gardenFlag: string | undefined, cwd: string): string | undefined {
  if (gardenFlag !== undefined) return path.resolve(cwd, gardenFlag);
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'PAK2.toml'))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

function realpathOr(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * Live `pak2 serve` processes (and `pak2 cycle --serve`) serving this
 * garden, found by their command line (Linux `/proc/<pid>/cmdline` and
 * `/proc/<pid>/cwd`): a `pak2` or `pak2.js` script whose command is `serve`
 * (or `cycle` with `--serve`), acting on this garden as pak2 picks it
 * (`--garden DIR`, else the nearest PAK2.toml above its working directory).
 * A standalone `pak2 serve` holds no coordinator lock, yet runs the lease
 * reaper (docs/runners/level2.md). Elsewhere than Linux: none.
 */
export function gardenServeProcesses(gardenRoot: string): ServeProcess[] {
  const root = realpathOr(gardenRoot);
  const found: ServeProcess[] = [];
  for (const name of otherProcesses()) {
    let argv: string[];
    let cwd: string;
    try {
      argv = fs.readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0');
      cwd = fs.readlinkSync(`/proc/${name}/cwd`);
    } catch {
      continue;
    }
    if (argv.at(-1) === '') argv.pop();
    const script = argv.slice(0, 2).findIndex((arg) => /^pak2(\.js)?$/.test(path.basename(arg)));
    if (script < 0) continue;
    let gardenFlag: string | undefined;
    let command: string | undefined;
    const rest = argv.slice(script + 1);
    for (let i = 0; i < rest.length && command === undefined; i += 1) {
      const arg = rest[i]!;
      if (arg === '--garden') gardenFlag = rest[(i += 1)];
      else if (arg.startsWith('--garden=')) gardenFlag = arg.slice('--garden='.length);
      else if (!arg.startsWith('-')) command = arg;
    }
    if (command !== 'serve' && !(command === 'cycle' && rest.includes('--serve'))) continue;
    const serves = gardenOfCommandLine(gardenFlag, cwd);
    if (!serves || realpathOr(serves) !== root) continue;
    const pid = Number(name);
    if (processAlive(pid)) found.push({ pid, command: commandOf(pid) });
  }
  return found.sort((a, b) => a.pid - b.pid);
}
