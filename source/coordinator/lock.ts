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

/** The coordinator's state word (the status line's `coordinator idle`). */
export type CoordinatorState = 'stopped' | 'idle' | 'reconciling' | 'running' | 'stopping';

/** What a coordinator says of itself to a watcher: its state and the runs it has live (run ids). */
export interface CoordinatorStatus {
  state: CoordinatorState;
  live: string[];
}

/**
 * A request to the coordinator over its socket: who holds the garden,
 * `watch` it (docs/workbench/level2.md, "Attached": the connection stays
 * open, one status line each time it changes, closed when the coordinator
 * stops), or an operator action on a live run.
 */
export type CoordinatorRequest = { op: 'who' } | { op: 'watch' } | { op: 'stop'; run: string; requeue?: boolean } | { op: 'wake' };
/** The coordinator's answer: `ok` with the holder for `who` (and its status for `watch`), or whether the action was taken and why not. */
export type CoordinatorReply = { ok: true; holder?: LockHolder; status?: CoordinatorStatus; detail?: string } | { ok: false; error: string };
/** Handles the requests other than `who` and `watch` (the coordinator sets it). */
export type CoordinatorRequestHandler = (request: CoordinatorRequest) => Promise<CoordinatorReply>;

/** What the coordinator behind the socket offers: the request handler, and its status for watchers. */
export interface CoordinatorService {
  handle: CoordinatorRequestHandler;
  status(): CoordinatorStatus;
  /** Tells `listener` each time the status may have changed; returns the unsubscribe function. */
  onStatus(listener: () => void): () => void;
}

/**
 * Another process's coordinator holds the garden (pid, host, command,
 * since when: `holder`, when it could be asked or read). The workbench
 * attaches to it (docs/workbench/level2.md, "Attached"); a second headless
 * coordinator exits 1 with this message.
 */
export class CoordinatorHeld extends UserError {
  constructor(
    message: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(message, { hint: 'stop it first; or open the workbench (`pak2`), which attaches to it; `pak2 dashboard` is the read-only view', exitCode: 1 });
  }
}

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

/** A watch on the garden's coordinator ({@link watchCoordinator}). */
export interface CoordinatorWatch {
  holder: LockHolder;
  /** Its status when the watch began; absent from a holder that runs no coordinator loop (a start's recovery). */
  status: CoordinatorStatus | undefined;
  /** Ends the watch (the coordinator is not told to do anything). */
  close(): void;
}

/**
 * Watches the coordinator listening on `name` (docs/workbench/level2.md,
 * "Attached"): one connection kept open, `onStatus` told each status line
 * it sends, `onGone` once the connection closes — the coordinator stopped
 * (it closes its watchers as it releases the lock) or its process died
 * (the kernel closes the socket, kill -9 included). The connection does
 * not keep this process alive.
 *
 * @returns undefined when nobody answers within `timeoutMs` (no coordinator).
 */
export function watchCoordinator(name: string, handlers: { onStatus?: (status: CoordinatorStatus) => void; onGone?: () => void }, timeoutMs = 2000): Promise<CoordinatorWatch | undefined> {
  return new Promise((resolve) => {
    let data = '';
    let watch: CoordinatorWatch | undefined;
    let closedByUs = false;
    const socket = net.connect(name);
    const fail = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    };
    const timer = setTimeout(fail, timeoutMs);
    socket.on('connect', () => socket.write(`${JSON.stringify({ op: 'watch' })}\n`));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      for (let end = data.indexOf('\n'); end >= 0; end = data.indexOf('\n')) {
        const line = data.slice(0, end);
        data = data.slice(end + 1);
        let reply: CoordinatorReply;
        try {
          reply = JSON.parse(line) as CoordinatorReply;
        } catch {
          return watch ? undefined : fail();
        }
        if (!watch) {
          if (!reply.ok || !reply.holder) return fail();
          clearTimeout(timer);
          socket.unref();
          watch = {
            holder: reply.holder,
            status: reply.status,
            close: () => {
              closedByUs = true;
              socket.destroy();
            },
          };
          resolve(watch);
        } else if (reply.ok && reply.status) handlers.onStatus?.(reply.status);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!watch) return fail();
      if (!closedByUs) handlers.onGone?.();
    });
  });
}

/**
 * Binds the garden's coordinator socket; it answers `who` with the holder
 * record, keeps a `watch` open (the status now and at each change; closed
 * by `closeWatchers`), and hands other requests to the service's handler.
 */
async function bindSocket(name: string, holder: LockHolder, service: () => CoordinatorService | undefined): Promise<{ server: net.Server; closeWatchers: () => void } | { taken: true }> {
  const answer = async (request: CoordinatorRequest): Promise<CoordinatorReply> => {
    if (request.op === 'who') return { ok: true, holder };
    const handler = service()?.handle;
    if (!handler) return { ok: false, error: 'the coordinator is starting; try again' };
    try {
      return await handler(request);
    } catch (error) {
      return { ok: false, error: (error as Error).message };
    }
  };
  const watchers = new Set<net.Socket>();
  const watch = (socket: net.Socket) => {
    // A watcher never keeps the coordinator's process alive.
    socket.unref();
    watchers.add(socket);
    const current = service();
    let sent = '';
    const send = () => {
      const line = `${JSON.stringify({ ok: true, holder, ...(current ? { status: current.status() } : {}) })}\n`;
      if (line === sent || socket.destroyed) return;
      sent = line;
      socket.write(line);
    };
    send();
    const off = current?.onStatus(send);
    socket.on('close', () => {
      off?.();
      watchers.delete(socket);
    });
  };
  const listen = () =>
    new Promise<net.Server | NodeJS.ErrnoException>((resolve) => {
      const server = net.createServer((socket) => {
        let data = '';
        let asked = false;
        socket.on('error', () => undefined);
        socket.on('data', (chunk) => {
          if (asked) return;
          data += chunk.toString();
          const end = data.indexOf('\n');
          if (end < 0) return;
          asked = true;
          let request: CoordinatorRequest;
          try {
            request = JSON.parse(data.slice(0, end)) as CoordinatorRequest;
          } catch {
            socket.end(`${JSON.stringify({ ok: false, error: 'not a JSON request' })}\n`);
            return;
          }
          if (request.op === 'watch') return watch(socket);
          void answer(request).then((reply) => socket.end(`${JSON.stringify(reply)}\n`));
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
  const bound = (server: net.Server) => ({
    server,
    closeWatchers: () => {
      for (const socket of watchers) socket.destroy();
    },
  });
  let result = await listen();
  if (result instanceof net.Server) return bound(result);
  if (result.code !== 'EADDRINUSE') throw result;
  // A socket file (not Linux) outlives a dead holder: nobody answering means it is stale.
  if (!name.startsWith('\0') && !(await askHolder(name, 500))) {
    fs.rmSync(name, { force: true });
    result = await listen();
    if (result instanceof net.Server) return bound(result);
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
 * ({@link requestCoordinator}: `stop` a run) and watches of it
 * ({@link watchCoordinator}: an attached workbench); `service` answers
 * them. Releasing closes the watchers' connections, so they know at once.
 *
 * @returns the release function.
 * @throws CoordinatorHeld naming the holder (pid, host, since when) when another coordinator holds it.
 */
export async function acquireCoordinatorLock(
  paths: GardenPaths,
  command: string,
  onCompromised?: (error: Error) => void,
  service?: () => CoordinatorService | undefined,
): Promise<() => Promise<void>> {
  const files = lockPaths(paths);
  fs.mkdirSync(paths.runtimeRoot, { recursive: true });
  const holder: LockHolder = { pid: process.pid, host: os.hostname(), started_at: new Date().toISOString(), command };
  const refuse = (other: LockHolder | undefined): never => {
    const who = other ? `pid ${other.pid} on ${other.host} (${other.command}), since ${other.started_at}` : 'another process';
    throw new CoordinatorHeld(`another coordinator is running this garden: ${who}; lock ${files.lock}`, other);
  };
  const name = coordinatorSocketName(paths);
  const bound = await bindSocket(name, holder, service ?? (() => undefined));
  if ('taken' in bound) return refuse((await askHolder(name)) ?? readHolder(paths));
  const { server, closeWatchers } = bound;
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
    closeWatchers();
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
      closeWatchers();
    }
  };
}
