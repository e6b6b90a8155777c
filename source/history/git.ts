import { spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import fs from 'node:fs';
import path from 'node:path';
import { span } from '../timing.js';

/** What one git command did. `spawnError` is set when git could not be started at all (not on PATH, say). */
export interface GitResult {
  ok: boolean;
  exitCode: number;
  stdout: string;
  stderr: string;
  spawnError?: string;
}

/** How long one git command may stay silent (no output) before it is stopped (ms). */
const GIT_TIMEOUT_MS = 120_000;

/** Variables copied from the caller's environment into every git command; nothing else is inherited. */
const BASE_KEYS = ['PATH', 'TZ', 'TMPDIR', 'SYSTEMROOT'] as const;

function pick(env: NodeJS.ProcessEnv, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const value = env[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * The environment of a probe of the authored repo: PATH, HOME and
 * XDG_CONFIG_HOME (so the operator's own git config, excludes and
 * safe.directory apply), C locale. No inherited `GIT_*` variable reaches it,
 * so a `GIT_DIR` or `GIT_INDEX_FILE` left by a hook cannot redirect it.
 */
export function authoredGitEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return { ...pick(env, [...BASE_KEYS, 'HOME', 'XDG_CONFIG_HOME']), LC_ALL: 'C' };
}

/**
 * The environment of every command on the runtime repo: the git directory
 * and work tree pinned to `<runtime-root>/.git` and `<runtime-root>`,
 * discovery stopped at the runtime root's parent, and no system or global
 * configuration (no HOME): only the runtime repo's own config applies, so
 * a user's hooks path, signing or fsmonitor settings cannot interfere and
 * nothing above the runtime root is ever read or written.
 */
export function runtimeGitEnv(env: NodeJS.ProcessEnv, runtimeRoot: string): Record<string, string> {
  return {
    ...pick(env, BASE_KEYS),
    LC_ALL: 'C',
    GIT_DIR: path.join(runtimeRoot, '.git'),
    GIT_WORK_TREE: runtimeRoot,
    GIT_CEILING_DIRECTORIES: path.dirname(runtimeRoot),
    GIT_CONFIG_NOSYSTEM: '1',
  };
}

/** The `GIT_*` variables pak2 itself sets; any other is refused (one that names an editor, a pager, an ssh command or a hook could run a program). */
const ALLOWED_ENV = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_CEILING_DIRECTORIES', 'GIT_CONFIG_NOSYSTEM', 'GIT_INDEX_FILE'];

/**
 * Runs `git <args>` in `cwd` with exactly `env` (no shell; stdin closed,
 * stdout and stderr read whole). Never throws: a non-zero exit is `ok:
 * false` with its code and stderr (exit 1 of `git diff --exit-code`
 * included); a git that cannot be started, a `cwd` that is not a
 * directory, a `GIT_*` variable pak2 does not set, or a git silent for
 * 120 s (then killed) is `spawnError`. It resolves when git has exited and
 * its output is read: no wait beyond that (simple-git, used before, slept
 * 50 ms after every command that printed nothing, most of a
 * runtime-history capture's time).
 */
export function runGit(args: string[], cwd: string, env: Record<string, string>): Promise<GitResult> {
  const end = span(`git ${args.find((a) => !a.startsWith('-')) ?? ''}`);
  return runGitNow(args, cwd, env).finally(end);
}

/**
 * What a repository's config could run inside pak2's git calls, turned off
 * for every one of them (issue 25, item 6): no hook (`core.hooksPath`
 * points at no directory) and no `core.fsmonitor` program. Given as git's
 * environment config (`GIT_CONFIG_COUNT`, git 2.31+), which outranks the
 * repository's own, so the command line stays the caller's. Clean and
 * smudge filters are kept: they are what make a checkout of the operator's
 * repository right (git-lfs), and pak2's runtime repository has none of its
 * own (docs/runtime-history/level2.md).
 */
export const GIT_NEUTRAL_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_COUNT: '2',
  GIT_CONFIG_KEY_0: 'core.hooksPath',
  GIT_CONFIG_VALUE_0: '/dev/null',
  GIT_CONFIG_KEY_1: 'core.fsmonitor',
  GIT_CONFIG_VALUE_1: 'false',
};

function runGitNow(args: string[], cwd: string, env: Record<string, string>): Promise<GitResult> {
  const refused = Object.keys(env).find((key) => key.startsWith('GIT_') && !ALLOWED_ENV.includes(key));
  if (refused) return Promise.resolve(notStarted(`refused to pass ${refused} to git (pak2 sets only ${ALLOWED_ENV.join(', ')})`));
  try {
    if (!fs.statSync(cwd).isDirectory()) return Promise.resolve(notStarted(`${cwd} is not a directory`));
  } catch (error) {
    return Promise.resolve(notStarted(`cannot run git in ${cwd}: ${(error as Error).message}`));
  }
  return startGit({ args, cwd, env: { ...env, ...GIT_NEUTRAL_ENV }, timeoutMs: GIT_TIMEOUT_MS }).then((ended) => {
    if (ended.error !== undefined) return notStarted(ended.error);
    if (ended.timedOut) return notStarted(`git ${args[0] ?? ''} was silent for ${GIT_TIMEOUT_MS / 1000} s and was stopped`);
    if (ended.code === 0) return { ok: true, exitCode: 0, stdout: ended.stdout, stderr: ended.stderr };
    if (ended.code !== null) return { ok: false, exitCode: ended.code, stdout: ended.stdout, stderr: ended.stderr };
    return { ok: false, exitCode: -1, stdout: ended.stdout, stderr: ended.stderr, spawnError: `git ${args[0] ?? ''} was killed by ${ended.signal}` };
  });
}

/** One git command to start: what {@link spawnGit} is given. */
interface GitRequest {
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/** How a git command ended: its exit (code or signal) and output, or why it never started (`error`), or that it was stopped for silence. */
interface GitEnded {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  error?: string;
  timedOut?: boolean;
}

/**
 * Starts git (no shell, stdin closed, stdout and stderr read whole; killed
 * after `timeoutMs` of silence) and resolves once it has exited and its
 * pipes are drained. Self-contained (it uses only its arguments and
 * globals): its source also runs in the git thread ({@link startGit}).
 */
function spawnGit(start: typeof spawn, request: GitRequest): Promise<GitEnded> {
  return new Promise((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = start('git', request.args, { cwd: request.cwd, env: request.env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      resolve({ code: null, signal: null, stdout: '', stderr: '', error: String((error as Error)?.message ?? error) });
      return;
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let silentFor: NodeJS.Timeout | undefined;
    let timedOut = false;
    const quiet = () => {
      if (silentFor) clearTimeout(silentFor);
      silentFor = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, request.timeoutMs);
      silentFor.unref();
    };
    quiet();
    child.stdout!.on('data', (chunk: Buffer) => {
      out.push(chunk);
      quiet();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      err.push(chunk);
      quiet();
    });
    let failed: string | undefined;
    child.on('error', (error) => (failed = error.message));
    // 'close': git has exited and both pipes are drained (or it never started: 'error' came first).
    child.on('close', (code, signal) => {
      if (silentFor) clearTimeout(silentFor);
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ...(failed !== undefined ? { error: failed } : {}), ...(timedOut ? { timedOut } : {}) });
    });
  });
}

/**
 * The thread git is started from. Starting a process forks pak2's whole
 * process, and the thread that asks waits for the fork and the exec: some
 * milliseconds a process for a coordinator of a hundred megabytes, several
 * times a run. Asked from this thread of its own, the wait leaves the event
 * loop free for the other slots' work. Made on the first git command; it
 * keeps the process alive only while a command is under way.
 */
let gitThread: { worker: Worker; waiting: Map<number, (ended: GitEnded) => void>; next: number } | undefined;
let gitThreadFailed = false;

function startGit(request: GitRequest): Promise<GitEnded> {
  const thread = gitThreadFailed ? undefined : (gitThread ?? makeGitThread());
  if (!thread) return spawnGit(spawn, request);
  return new Promise((resolve) => {
    const id = (thread.next += 1);
    thread.waiting.set(id, resolve);
    thread.worker.ref();
    thread.worker.postMessage({ id, request });
  });
}

function makeGitThread(): typeof gitThread {
  try {
    const source = `const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const spawnGit = ${spawnGit.toString()};
parentPort.on('message', ({ id, request }) => spawnGit(spawn, request).then((ended) => parentPort.postMessage({ id, ended })));`;
    const worker = new Worker(source, { eval: true });
    const thread = { worker, waiting: new Map<number, (ended: GitEnded) => void>(), next: 0 };
    worker.unref();
    worker.on('message', ({ id, ended }: { id: number; ended: GitEnded }) => {
      thread.waiting.get(id)?.(ended);
      thread.waiting.delete(id);
      if (thread.waiting.size === 0) worker.unref();
    });
    const gone = (why: string) => {
      if (gitThread === thread) gitThread = undefined;
      for (const resolve of thread.waiting.values()) resolve({ code: null, signal: null, stdout: '', stderr: '', error: `the git thread ${why}` });
      thread.waiting.clear();
    };
    worker.on('error', (error) => gone(`failed: ${error.message}`));
    worker.on('exit', (code) => gone(`exited (${code})`));
    gitThread = thread;
    return thread;
  } catch {
    // No worker threads here: git is started from this thread.
    gitThreadFailed = true;
    return undefined;
  }
}

function notStarted(message: string): GitResult {
  return { ok: false, exitCode: -1, stdout: '', stderr: '', spawnError: firstLine(message) };
}

/** The first non-empty line of `text`, trimmed. */
export function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean) ?? ''
  );
}

/** One short line saying why a git command failed: `git <subcommand>: <first stderr line>`, or the spawn error. */
export function describeFailure(args: string[], result: GitResult): string {
  const command = `git ${args.find((a) => !a.startsWith('-')) ?? ''}`.trimEnd();
  if (result.spawnError) return `${command}: ${result.spawnError.replace(/^Error: /, '')}`;
  const why = (firstLine(result.stderr) || firstLine(result.stdout)).replace(/^(fatal|error): /, '');
  return why ? `${command}: ${why}` : `${command}: exit code ${result.exitCode}`;
}

/**
 * The top of the git work tree that holds `dir` (`git rev-parse
 * --show-toplevel`, with the authored repo's environment, as the worktree
 * baseline probes it), or why there is none: not a repository, a bare one,
 * or no git. Never throws.
 */
export async function gitWorkTreeOf(dir: string, env: NodeJS.ProcessEnv): Promise<{ root: string } | { problem: string }> {
  const args = ['rev-parse', '--is-inside-work-tree', '--show-toplevel'];
  const result = await runGit(args, dir, authoredGitEnv(env));
  if (result.spawnError) return { problem: `git could not be started (${result.spawnError.replace(/^Error: /, '')})` };
  if (!result.ok) return { problem: /not a git repository/i.test(result.stderr) ? 'not a git repository' : describeFailure(args, result) };
  const [inside, root] = result.stdout.split('\n').map((l) => l.trim());
  if (inside !== 'true' || !root) return { problem: 'not inside a git work tree (a bare repository?)' };
  return { root };
}
