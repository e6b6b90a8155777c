/**
 * Shared helpers of the robustness tests: real `bin/pak2.js` processes, real
 * files. Every process and temp directory made here is recorded and removed
 * by {@link cleanupAll}; call it from `afterEach`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { PAK2_BIN, startCli } from '../support/cli.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';

export { PAK2_BIN, runCli } from '../support/cli.js';
export { isAlive, readEventLog, waitFor } from '../support/garden.js';

/** The repository root. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** An agent for the `command` driver that keeps talking and ignores SIGINT and SIGTERM (only SIGKILL ends it). */
export const STUBBORN_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'stubborn-agent.mjs');

type TestGarden = Awaited<ReturnType<typeof makeTestGarden>>;

const children = new Set<ChildProcess>();
const pidfiles = new Set<string>();
const cleanups: (() => void)[] = [];

/** A {@link makeTestGarden} garden removed by {@link cleanupAll}. */
export async function robustGarden(options: Parameters<typeof makeTestGarden>[0] = {}): Promise<TestGarden> {
  const garden = await makeTestGarden(options);
  cleanups.push(() => garden.cleanup());
  return garden;
}

/** A temp directory removed by {@link cleanupAll}. */
export function tempDir(prefix = 'pak2-robust-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A pidfile path (FAKE_AGENT_PIDFILE) whose pids {@link cleanupAll} kills if they are still alive. */
export function pidfile(dir: string, name = 'agent.pids'): string {
  const file = path.join(dir, name);
  pidfiles.add(file);
  return file;
}

/** Pids written by the fake agent: its own and its grandchild's. */
export function readPids(file: string): number[] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

/** Waits until the pidfile holds both pids (agent and grandchild); `started` adds its output to a failure. */
export async function waitForPids(file: string, started?: Started, timeoutMs = 30_000): Promise<number[]> {
  try {
    await waitFor(() => readPids(file).length >= 2, timeoutMs);
  } catch {
    throw new Error(`no pids in ${file} within ${timeoutMs} ms${started ? `\nstdout:\n${started.stdout()}\nstderr:\n${started.stderr()}` : ''}`);
  }
  return readPids(file);
}

/** A started CLI process with its output collected as it arrives. */
export interface Started {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code and signal once the process has exited (and been reaped). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node bin/pak2.js ...args`, tracked so {@link cleanupAll} kills it. */
export function start(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Started {
  const child = startCli(args, options);
  children.add(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Waits for a started process to exit, failing (and killing it) after `timeoutMs`. */
export async function exitOf(started: Started, timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      started.child.kill('SIGKILL');
      reject(new Error(`process did not exit within ${timeoutMs} ms\nstdout:\n${started.stdout()}\nstderr:\n${started.stderr()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([started.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `sh -c script` to completion (for pipelines), tracked like {@link start}. */
export function runShell(script: string, options: { cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sh -c did not finish within ${options.timeoutMs ?? 60_000} ms; stderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Kills every process started here that is still running, every pid of a recorded pidfile, and removes temp dirs. */
export async function cleanupAll(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      waits.push(new Promise((resolve) => child.once('close', resolve)));
      child.kill('SIGKILL');
    }
  }
  children.clear();
  await Promise.race([Promise.all(waits), new Promise((r) => setTimeout(r, 5000))]);
  for (const file of pidfiles) {
    for (const pid of readPids(file)) {
      if (!isAlive(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  pidfiles.clear();
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      cleanup();
    } catch {
      // best effort
    }
  }
}

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow); returns it. */
export function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines, `stderr was:\n${stderr}`).toHaveLength(1);
  expect(lines[0]).toMatch(/^pak2: /);
  return lines[0]!;
}

/** No stack trace and no "internal error" on stderr. */
export function expectNoCrash(stderr: string): void {
  expect(stderr).not.toContain('internal error');
  expect(stderr).not.toMatch(/^\s+at /m);
}

/** The `*.json` goal files in a garden's goals directory. */
export function goalFiles(garden: Garden): string[] {
  try {
    return fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
}

/** Reads a run's meta.json. */
export function readMeta(garden: Garden, runId: string): Record<string, unknown> & { outputs?: Record<string, unknown> } {
  return JSON.parse(fs.readFileSync(path.join(garden.paths.runsDir, runId, 'meta.json'), 'utf8')) as Record<string, unknown>;
}

/** Reads a goal's file. */
export function readGoalFile(garden: Garden, id: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, `${id}.json`), 'utf8')) as Record<string, unknown>;
}

/** Waits until every pid is gone (dead or a zombie). */
export async function waitAllDead(pids: number[], timeoutMs = 15_000): Promise<void> {
  await waitFor(() => pids.every((pid) => !isAlive(pid)), timeoutMs).catch(() => undefined);
  expect(pids.filter((pid) => isAlive(pid)), 'processes still alive').toEqual([]);
}
