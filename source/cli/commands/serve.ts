import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { describeConfigStatus, type ConfigStatus, type Garden } from '../../garden/index.js';
import { UserError } from '../../errors.js';
import { sanitize } from '../../sanitize.js';
import type { RunningServer } from '../../server/index.js';
import type { OperatorActions } from '../../session/index.js';
import type { ServerView } from '../../snapshot/index.js';
import { gardenOf } from '../context.js';
import type { CliIO } from '../main.js';

/** `--host` / `--port` as commander hands them over. */
export interface ServeFlags {
  host?: string;
  port?: string;
}

/** A whole number of milliseconds from the environment, or undefined. */
function envMs(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value)) throw new UserError(`${name}=${value}: must be a whole number`);
  return Number(value);
}

/** Parses `--port` (or PAK2_SERVE_PORT): 0–65535, 0 picks a free port. */
export function parsePort(value: string, from = '--port'): number {
  if (!/^\d+$/.test(value) || Number(value) > 65_535) throw new UserError(`${from} ${value}: must be a port number from 0 to 65535 (0 picks a free one)`);
  return Number(value);
}

/** What {@link startServe} tells its caller. */
export interface ServeHooks {
  onStatus?: (view: ServerView) => void;
  /** Where one-line notices go (default: stderr). */
  onNotice?: (line: string) => void;
  /** Say the start line (default true; the workbench says it before Ink draws). */
  announce?: boolean;
  /** Say each change of PAK2.toml a request finds (`pak2 serve` alone; under `cycle --serve` the coordinator says it). */
  configNotices?: boolean;
}

/**
 * Starts the HTTP server for a garden with the given operator actions
 * (`pak2 serve`, `pak2 cycle --serve`), and writes its URL and token file
 * in one stderr line. The host is `--host`, else PAK2_SERVE_HOST, else
 * 127.0.0.1; only `--host` may name an address beyond loopback. Timings
 * for tests: PAK2_SERVE_KEEPALIVE_MS, PAK2_WEBHOOK_RETRY_BASE_MS,
 * PAK2_WEBHOOK_RETRY_MAX_MS, PAK2_WEBHOOK_MAX_ATTEMPTS.
 *
 * @throws UserError naming `--host`, PAK2_SERVE_HOST, `--port` or the token file.
 */
export async function startServe(garden: Garden, actions: OperatorActions, flags: ServeFlags, io: CliIO, hooks: ServeHooks = {}): Promise<RunningServer> {
  const { startServer, DEFAULT_HOST, DEFAULT_PORT, isLoopbackAddress } = await import('../../server/index.js');
  const envHost = io.env.PAK2_SERVE_HOST || undefined;
  const host = flags.host ?? envHost ?? DEFAULT_HOST;
  const hostFrom = flags.host !== undefined ? '--host' : envHost ? 'PAK2_SERVE_HOST' : '--host';
  const port = flags.port !== undefined ? parsePort(flags.port) : io.env.PAK2_SERVE_PORT ? parsePort(io.env.PAK2_SERVE_PORT, 'PAK2_SERVE_PORT') : DEFAULT_PORT;
  const keepAliveMs = envMs(io.env, 'PAK2_SERVE_KEEPALIVE_MS');
  const baseDelayMs = envMs(io.env, 'PAK2_WEBHOOK_RETRY_BASE_MS');
  const maxDelayMs = envMs(io.env, 'PAK2_WEBHOOK_RETRY_MAX_MS');
  const maxAttempts = envMs(io.env, 'PAK2_WEBHOOK_MAX_ATTEMPTS');
  const notice = hooks.onNotice ?? ((line: string) => io.err(line));
  const server = await startServer({
    garden,
    actions,
    host,
    port,
    allowRemote: flags.host !== undefined,
    hostFrom,
    ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
    webhooks: {
      ...(baseDelayMs !== undefined ? { baseDelayMs } : {}),
      ...(maxDelayMs !== undefined ? { maxDelayMs } : {}),
      ...(maxAttempts !== undefined ? { maxAttempts: Math.max(1, maxAttempts) } : {}),
      onNotice: (line) => notice(`pak2: ${line}`),
    },
    ...(hooks.onStatus ? { onStatus: hooks.onStatus } : {}),
    ...(hooks.configNotices ? { onConfig: (status: ConfigStatus) => describeConfigStatus(status).forEach((line) => notice(`pak2: ${line}`)) } : {}),
    onNotice: notice,
  });
  if (hooks.announce !== false) {
    const beyond = isLoopbackAddress(server.host) ? '' : ' (reachable beyond this machine)';
    io.err(`pak2: serving ${server.url}${beyond} · bearer token in ${server.tokenFile}`);
  }
  return server;
}

/**
 * The workbench's `cycle --serve`: the server on the workbench's session,
 * its notices in `<runtime-root>/serve/serve.log` (the terminal is Ink's).
 */
export function serveForWorkbench(garden: Garden, flags: ServeFlags, io: CliIO) {
  return async (session: { actions: OperatorActions | undefined; setServerStatus(view: ServerView | undefined): void }): Promise<() => Promise<void>> => {
    const log = path.join(garden.paths.runtimeRoot, 'serve', 'serve.log');
    const server = await startServe(garden, session.actions!, flags, io, {
      onStatus: (view) => session.setServerStatus(view),
      onNotice: (line) => {
        try {
          fs.appendFileSync(log, `${new Date().toISOString()} ${sanitize(line)}\n`);
        } catch {
          // nowhere to say it
        }
      },
    });
    return async () => {
      await server.close();
      session.setServerStatus(undefined);
    };
  };
}

/**
 * `pak2 serve [--host H] [--port P]`: the HTTP server alone, headless (no
 * coordinator: goals it queues are dispatched by the garden's running
 * coordinator, or taken by runners). At start, unless a live coordinator
 * holds the garden, it runs the coordinator's recovery (`repairAtStart`:
 * half-done writes completed, orphaned runs closed, ended runs' goals
 * settled), one `pak2: recovered at start: …` line each. SIGINT, SIGTERM or
 * SIGHUP stop it.
 */
export function registerServe(program: Command, io: CliIO): void {
  program
    .command('serve')
    .description('serve the garden over HTTP: REST, server-sent events, webhooks (127.0.0.1:7717, bearer token in <runtime-root>/serve/token)')
    .option('--host <host>', 'listen address (default 127.0.0.1); an address beyond loopback only when given here')
    .option('--port <port>', 'port (default 7717; 0 picks a free one)')
    .action(async (opts: ServeFlags, command: Command) => {
      const garden = gardenOf(command, io);
      const { operatorActions } = await import('../../session/index.js');
      // No coordinator runs in this process: what a crash left half done is repaired here, as a coordinator's start would (unless one lives).
      const { repairAtStart } = await import('../../coordinator/index.js');
      const repaired = await repairAtStart(garden, { env: io.env });
      const words = [...repaired.recovered, ...repaired.reclaimed.map((run) => `run ${run}: closed (no live process held it; pak2 show ${run} says how)`), ...repaired.closed.map((c) => `goal ${c.goal}: closed ${c.reason}`), ...repaired.requeued.map((goal) => `goal ${goal}: back in the queue`)];
      for (const line of words) io.err(`pak2: recovered at start: ${sanitize(line)}`);
      for (const problem of repaired.problems) io.err(`pak2: ${sanitize(problem.file)}: ${sanitize(problem.message)}`);
      const server = await startServe(garden, operatorActions(garden), opts, io, { configNotices: true });
      await new Promise<void>((resolve) => {
        const stop = () => {
          for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(name, stop);
          resolve();
        };
        for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(name, stop);
      });
      await server.close();
    });
}
