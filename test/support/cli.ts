import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built CLI entry point (test/global-setup.ts builds dist/ first). */
export const PAK2_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/pak2.js');

/** Result of running the real CLI. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/pak2.js ...args` to completion; `signalAfterMs` sends it SIGTERM after that long. */
export function runCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number; signalAfterMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [PAK2_BIN, ...args],
      { cwd: options.cwd, env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
    if (options.signalAfterMs !== undefined) {
      const timer = setTimeout(() => child.kill('SIGTERM'), options.signalAfterMs);
      child.once('exit', () => clearTimeout(timer));
    }
  });
}

/** Starts the real CLI without waiting for it. */
export function startCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  return spawn(process.execPath, [PAK2_BIN, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
}
