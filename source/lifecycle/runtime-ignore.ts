/**
 * The runtime root kept out of the garden's git (docs/startup/level2.md,
 * "pak2 in your own repository"; docs/doctor/level2.md, "ignore"): `pak2
 * init` makes `.runtime/` ignored, `pak2 doctor` says when it is not and
 * `--fix` ignores it the same way. Goals, runs and the agents' worktrees under
 * `.runtime/worktrees/` would otherwise all show in `git status` as untracked.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GardenPaths } from '../garden/index.js';
import { authoredGitEnv, describeFailure, runGit } from '../history/index.js';

/** Where a garden sits in git: the top of its work tree and the repository's exclude file. */
export interface GardenRepo {
  /** `git rev-parse --show-toplevel`, a real path. */
  top: string;
  /** `git rev-parse --git-path info/exclude`, absolute (shared by every worktree of the repository). */
  excludeFile: string;
}

/** The comment line above what pak2 adds to an ignore file. */
export const IGNORE_COMMENT = '# pak2 runtime state: goals, runs, events, worktrees (not authored files)';

/** The real path of `file`, or of its nearest existing ancestor joined with the rest. */
function realish(file: string): string {
  const rest: string[] = [];
  for (let dir = path.resolve(file); ; dir = path.dirname(dir)) {
    try {
      return path.join(fs.realpathSync(dir), ...rest.reverse());
    } catch {
      if (path.dirname(dir) === dir) return path.resolve(file);
      rest.push(path.basename(dir));
    }
  }
}

/** `dir` relative to `top`, with `/`, or undefined when it is `top` itself or outside it. */
function inside(top: string, dir: string): string | undefined {
  const rel = path.relative(realish(top), realish(dir));
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join('/');
}

/**
 * The git work tree holding `dir` (any depth), or undefined when there is
 * none, git is absent, or the repository is bare. Never throws.
 */
export async function gardenRepo(dir: string, env: NodeJS.ProcessEnv = process.env): Promise<GardenRepo | undefined> {
  const result = await runGit(['rev-parse', '--is-inside-work-tree', '--show-toplevel', '--git-path', 'info/exclude'], dir, authoredGitEnv(env));
  if (!result.ok) return undefined;
  const [insideTree, top, exclude] = result.stdout.split('\n').map((l) => l.trim());
  if (insideTree !== 'true' || !top || !exclude) return undefined;
  return { top: realish(top), excludeFile: path.resolve(dir, exclude) };
}

/**
 * Whether git ignores the runtime root (`git check-ignore --no-index`: the
 * patterns alone, whatever is tracked). True when there is nothing to ignore:
 * the runtime root is the garden root (the legacy layout) or lies outside
 * the work tree.
 *
 * @returns `{ ignored, by }`: `by` is where the matching pattern is (`.gitignore:3:.runtime/`).
 * @throws Error when git cannot answer.
 */
export async function runtimeIgnored(paths: GardenPaths, repo: GardenRepo, env: NodeJS.ProcessEnv = process.env): Promise<{ ignored: boolean; by?: string }> {
  const rel = inside(repo.top, paths.runtimeRoot);
  if (!paths.split || rel === undefined) return { ignored: true };
  const args = ['check-ignore', '--no-index', '-v', '--', `${rel}/`];
  const result = await runGit(args, repo.top, authoredGitEnv(env));
  if (result.ok) {
    const [source] = result.stdout.split('\t');
    return { ignored: true, ...(source ? { by: source.trim() } : {}) };
  }
  if (result.exitCode === 1 && !result.spawnError) return { ignored: false };
  throw new Error(describeFailure(args, result));
}

/** How pak2 ignores the runtime root: in the repository's `.git/info/exclude` (an adopted repository), or in the garden's own `.gitignore` (a fresh garden). */
export type IgnoreWay = 'exclude' | 'gitignore';

/** The way a garden's runtime root is ignored: `exclude` when pak2 adopted the repository (`[garden].home` set), `gitignore` for a garden of its own. */
export function ignoreWayOf(paths: GardenPaths): IgnoreWay {
  return paths.homeDir !== paths.gardenRoot ? 'exclude' : 'gitignore';
}

/** What {@link ignoreRuntime} appends, and where. */
export interface IgnorePlan {
  file: string;
  /** The pattern line (`/.runtime/` in the exclude file, `.runtime/` in a garden's .gitignore). */
  pattern: string;
}

/**
 * What ignoring the runtime root would write, without writing it: the
 * exclude file with a pattern anchored at the top of the work tree
 * (`/.runtime/`), or the garden's `.gitignore` with the runtime root
 * relative to the garden (`.runtime/`, as `pak2 init` writes it).
 * Undefined when the runtime root is not inside the work tree.
 */
export function planIgnore(paths: GardenPaths, repo: GardenRepo, way: IgnoreWay): IgnorePlan | undefined {
  if (way === 'exclude') {
    const rel = inside(repo.top, paths.runtimeRoot);
    return rel === undefined ? undefined : { file: repo.excludeFile, pattern: `/${rel}/` };
  }
  const rel = inside(paths.gardenRoot, paths.runtimeRoot);
  return rel === undefined ? undefined : { file: path.join(paths.gardenRoot, '.gitignore'), pattern: `${rel}/` };
}

/**
 * Appends the plan's comment and pattern to its file (created when absent,
 * with its directory), after a newline when the file does not end with one.
 * Every line already there stays as it was.
 */
export async function appendIgnore(plan: IgnorePlan): Promise<void> {
  let before = '';
  try {
    before = await fsp.readFile(plan.file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await fsp.mkdir(path.dirname(plan.file), { recursive: true });
  const lead = before === '' || before.endsWith('\n') ? '' : '\n';
  await fsp.appendFile(plan.file, `${lead}${IGNORE_COMMENT}\n${plan.pattern}\n`);
}
