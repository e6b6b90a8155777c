import path from 'node:path';
import { GitError, simpleGit } from 'simple-git';
import { span } from '../timing.js';

/** What one git command did. `spawnError` is set when git could not be started at all (not on PATH, say). */
export interface GitResult {
  ok: boolean;
  exitCode: number;
  stdout: string;
  stderr: string;
  spawnError?: string;
}

/** A git command that ran and exited non-zero (a GitError, so simple-git passes it through unwrapped). */
class GitExit extends GitError {
  constructor(
    readonly exitCode: number,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(undefined, stderr.trim() || `git exited with code ${exitCode}`);
  }
}

/** How long one git command may take before it is stopped (ms of silence). */
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

/** The `GIT_*` variables pak2 itself sets; simple-git refuses any other. */
const ALLOWED_ENV = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_CEILING_DIRECTORIES', 'GIT_CONFIG_NOSYSTEM', 'GIT_INDEX_FILE'];

/**
 * Runs `git <args>` in `cwd` with exactly `env`, through simple-git. Never
 * throws: a non-zero exit is `ok: false` with its code and stderr (exit 1
 * of `git diff --exit-code` included), a git that cannot be started is
 * `spawnError`.
 */
export async function runGit(args: string[], cwd: string, env: Record<string, string>): Promise<GitResult> {
  const end = span(`git ${args.find((a) => !a.startsWith('-')) ?? ''}`);
  try {
    const git = simpleGit({
      baseDir: cwd,
      allowEnvironment: ALLOWED_ENV,
      timeout: { block: GIT_TIMEOUT_MS },
      // Every non-zero exit is an error here, with its code (simple-git's default lets an exit 1 without stderr pass).
      errors: (error, result) => {
        if (result.exitCode > 0) return new GitExit(result.exitCode, Buffer.concat(result.stdOut).toString('utf8'), Buffer.concat(result.stdErr).toString('utf8'));
        return error instanceof Error ? error : undefined;
      },
    }).env(env);
    const stdout = await git.raw(args);
    return { ok: true, exitCode: 0, stdout, stderr: '' };
  } catch (error) {
    const exit = findExit(error);
    if (exit) return { ok: false, exitCode: exit.exitCode, stdout: exit.stdout, stderr: exit.stderr };
    return { ok: false, exitCode: -1, stdout: '', stderr: '', spawnError: firstLine((error as Error)?.message ?? String(error)) };
  } finally {
    end();
  }
}

function findExit(error: unknown): GitExit | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown; task?: unknown }).cause, depth += 1) {
    if (e instanceof GitExit) return e;
  }
  return undefined;
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
