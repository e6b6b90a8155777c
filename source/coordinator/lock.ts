import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
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
 * The host-wide name of a garden's coordinator socket: a Linux abstract
 * socket (no file, released by the kernel when its process dies, however it
 * dies), named from the runtime root's real path. Elsewhere, a socket file
 * in the runtime root.
 */
export function coordinatorSocketName(paths: GardenPaths): string {
  let root = paths.runtimeRoot;
  try {
    root = fs.realpathSync(root);
  } catch {
    // not created yet: the resolved path names it
  }
  const hash = createHash('sha256').update(root).digest('hex').slice(0, 32);
  return process.platform === 'linux' ? `\0pak2-coordinator-${hash}` : path.join(paths.runtimeRoot, 'coordinator.sock');
}

/** A request to the coordinator over its socket: who holds the garden, or an operator action on a live run. */
export type CoordinatorRequest = { op: 'who' } | { op: 'stop'; run: string; requeue?: boolean } | { op: 'wake' };
/** The coordinator's answer: `ok` with the holder for `who`, or whether the action was taken and why not. */
export type CoordinatorReply = { ok: true; holder?: LockHolder; detail?: string } | { ok: false; error: string };
/** Handles the requests other than `who` (the coordinator sets it). */
export type CoordinatorRequestHandler = (request: CoordinatorRequest) => Promise<CoordinatorReply>;

/**
 * Sends one request to the coordinator listening on `name` (one JSON line
 * each way); undefined when nobody answers within `timeoutMs`.
 */
export function requestCoordinator(name: string, request: CoordinatorRequest, timeoutMs = 2000): Promise<CoordinatorReply | undefined> {
  return new Promise((resolve) => {
    let data = '';
    const socket = net.connect(name);
    const done = (reply: CoordinatorReply | undefined) => {
      socket.destroy();
      clearTimeout(timer);
      resolve(reply);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on('connect', () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      const end = data.indexOf('\n');
      if (end < 0) return;
      try {
        done(JSON.parse(data.slice(0, end)) as CoordinatorReply);
      } catch {
        done(undefined);
      }
    });
    socket.on('error', () => done(undefined));
    socket.on('end', () => done(undefined));
  });
}

/** Asks the coordinator listening on `name` who it is; undefined when nobody answers within `timeoutMs`. */
export async function askHolder(name: string, timeoutMs = 1000): Promise<LockHolder | undefined> {
  const reply = await requestCoordinator(name, { op: 'who' }, timeoutMs);
  return reply?.ok ? reply.holder : undefined;
}

/** Binds the garden's coordinator socket; it answers `who` with the holder record and hands other requests to `handle`. */
async function bindSocket(name: string, holder: LockHolder, handle: () => CoordinatorRequestHandler | undefined): Promise<net.Server | { taken: true }> {
  const answer = async (line: string): Promise<CoordinatorReply> => {
    let request: CoordinatorRequest;
    try {
      request = JSON.parse(line) as CoordinatorRequest;
    } catch {
      return { ok: false, error: 'not a JSON request' };
    }
    if (request.op === 'who') return { ok: true, holder };
    const handler = handle();
    if (!handler) return { ok: false, error: 'the coordinator is starting; try again' };
    try {
      return await handler(request);
    } catch (error) {
      return { ok: false, error: (error as Error).message };
    }
  };
  const listen = () =>
    new Promise<net.Server | NodeJS.ErrnoException>((resolve) => {
      const server = net.createServer((socket) => {
        let data = '';
        socket.on('error', () => undefined);
        socket.on('data', (chunk) => {
          data += chunk.toString();
          const end = data.indexOf('\n');
          if (end < 0) return;
          void answer(data.slice(0, end)).then((reply) => socket.end(`${JSON.stringify(reply)}\n`));
        });
      });
      server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
      server.listen(name, () => {
        server.removeAllListeners('error');
        server.on('error', () => undefined);
        server.unref();
        resolve(server);
      });
    });
  let result = await listen();
  if (result instanceof net.Server) return result;
  if (result.code !== 'EADDRINUSE') throw result;
  // A socket file (not Linux) outlives a dead holder: nobody answering means it is stale.
  if (!name.startsWith('\0') && !(await askHolder(name, 500))) {
    fs.rmSync(name, { force: true });
    result = await listen();
    if (result instanceof net.Server) return result;
  }
  return { taken: true };
}

/**
 * Takes the garden's coordinator lock (one coordinator per garden,
 * DESIGN.md; docs/coordinator/level2.md, "One coordinator"). Two parts:
 *
 * 1. The coordinator socket ({@link coordinatorSocketName}): binding it is
 *    atomic and the kernel frees it when its process dies, so of any number
 *    of coordinators starting together on this host exactly one wins,
 *    whether the lock on disk is live, dead or stale. The loser asks the
 *    winner who it is.
 * 2. Holding the socket, the lock directory `<runtime-root>/coordinator.lock`
 *    (proper-lockfile, refreshed every 5 s, stale after 20 s) is taken; one
 *    left by a process of this host is dead by construction and is taken
 *    over. A live holder on another host still refuses.
 *
 * The socket also carries operator requests to the live coordinator
 * ({@link requestCoordinator}: `stop` a run); `handler` answers them.
 *
 * @returns the release function.
 * @throws UserError naming the holder (pid, host, since when) when another coordinator holds it.
 */
export async function acquireCoordinatorLock(
  paths: GardenPaths,
  command: string,
  onCompromised?: (error: Error) => void,
  handler?: () => CoordinatorRequestHandler | undefined,
): Promise<() => Promise<void>> {
  const files = lockPaths(paths);
  fs.mkdirSync(paths.runtimeRoot, { recursive: true });
  const holder: LockHolder = { pid: process.pid, host: os.hostname(), started_at: new Date().toISOString(), command };
  const refuse = (other: LockHolder | undefined): never => {
    const who = other ? `pid ${other.pid} on ${other.host} (${other.command}), since ${other.started_at}` : 'another process';
    throw new UserError(`another coordinator is running this garden: ${who}; lock ${files.lock}`, {
      hint: 'stop it first, or use `pak2 dashboard` for a read-only view',
      exitCode: 1,
    });
  };
  const name = coordinatorSocketName(paths);
  const bound = await bindSocket(name, holder, handler ?? (() => undefined));
  if (!(bound instanceof net.Server)) return refuse((await askHolder(name)) ?? readHolder(paths));
  const server = bound;
  const take = () =>
    lockfile.lock(paths.runtimeRoot, {
      lockfilePath: files.lock,
      stale: 20_000,
      update: 5_000,
      retries: 0,
      onCompromised: (error) => (onCompromised ? onCompromised(error) : process.stderr.write(`pak2: coordinator lock compromised: ${error.message}\n`)),
    });
  let release: () => Promise<void>;
  try {
    try {
      release = await take();
    } catch (error) {
      // We hold this host's socket: a lock left by this host is a dead coordinator's.
      const previous = readHolder(paths);
      if ((error as { code?: string }).code !== 'ELOCKED' || (previous && previous.host !== os.hostname())) throw error;
      fs.rmSync(files.lock, { recursive: true, force: true });
      release = await take();
    }
  } catch (error) {
    server.close();
    if ((error as { code?: string }).code === 'ELOCKED') return refuse(readHolder(paths));
    throw error;
  }
  fs.writeFileSync(files.holder, `${JSON.stringify(holder, null, 2)}\n`);
  return async () => {
    try {
      fs.rmSync(files.holder, { force: true });
    } finally {
      await release().catch(() => undefined);
      server.close();
    }
  };
}
