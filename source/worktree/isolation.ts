import fsp from 'node:fs/promises';
import path from 'node:path';
import type { GardenConfig } from '../garden/index.js';
import { git } from './git.js';

/** What pak2 saw of the garden's repository, for {@link decideIsolation}. */
export interface RepositoryFacts {
  /** Why the garden is not a usable git work tree (no git, not a repository, a bare one), or undefined. */
  problem?: string;
  /** The repository's top level (realpath), when it is one. */
  topLevel?: string;
  /** The garden root (realpath). */
  gardenRoot: string;
  /** The branch the garden checkout has checked out (`main`), undefined when HEAD is detached or unborn. */
  branch?: string;
  /** Whether the repository has a commit to branch from. */
  hasCommit: boolean;
  /** Whether git can merge without a work tree (`git merge-tree --write-tree`, git 2.38+). */
  mergeTree: boolean;
}

/** How runs are isolated, and why when it is not what was asked or expected. */
export interface Isolation {
  mode: 'worktree' | 'tree';
  /** The branch runs start from and land on (worktree mode). */
  base?: string;
  /** Why the mode is `tree` although worktrees were asked for, or are the default (one line). */
  reason?: string;
  /**
   * Worktrees were asked for (`isolation = "worktree"`) and cannot apply:
   * no run starts in this garden (its agents would otherwise work in the
   * operator's own checkout, side by side, which the operator ruled out).
   */
  held?: boolean;
}

/**
 * Decides how runs are isolated (pure; docs/landing/level2.md, "Worktrees"):
 * `[coordinator] isolation` as written, else `worktree` in a garden that is
 * the top of a git work tree with a commit and a branch to land on, else
 * `tree` (the seeds' single tree), with the reason said when the garden is
 * a git work tree that cannot have them (a detached HEAD). Asked for
 * worktrees in a garden that cannot have them, it is `held`: no run starts
 * until it can, never a silent change to the one tree.
 */
export function decideIsolation(configured: GardenConfig['isolation'], base: string | undefined, facts: RepositoryFacts): Isolation {
  if (configured === 'tree') return { mode: 'tree' };
  const why =
    facts.problem ??
    (facts.topLevel !== facts.gardenRoot
      ? `the garden is a subdirectory of the repository at ${facts.topLevel}; worktrees need the garden at the repository's top`
      : !facts.hasCommit
        ? 'the repository has no commit yet to branch from (commit once)'
        : !(base ?? facts.branch)
          ? 'HEAD is detached and [merge] base is not set: no branch to land on'
          : !facts.mergeTree
            ? 'git is older than 2.38 (no `git merge-tree --write-tree`)'
            : undefined);
  if (why && configured === 'worktree') return { mode: 'tree', held: true, reason: `isolation = "worktree" cannot apply: ${why}; no run starts here until it can (fix that and start pak2 again, or set [coordinator] isolation = "tree")` };
  // The default in a git work tree that cannot have worktrees: the one tree, and why (outside git there is nothing to explain).
  if (why) return { mode: 'tree', ...(facts.topLevel ? { reason: `runs work in the garden's own tree: ${why}` } : {}) };
  return { mode: 'worktree', base: base ?? facts.branch! };
}

/**
 * Probes the garden's repository for {@link decideIsolation}: its top level,
 * branch, whether it has a commit, whether git has `merge-tree
 * --write-tree`. A few git commands; never throws.
 */
export async function probeRepository(gardenRoot: string, env: NodeJS.ProcessEnv): Promise<RepositoryFacts> {
  const root = await fsp.realpath(gardenRoot).catch(() => path.resolve(gardenRoot));
  try {
    const top = await git(['rev-parse', '--is-inside-work-tree', '--show-toplevel'], root, env, [128]);
    const [inside, topLevel] = top.stdout.split('\n').map((l) => l.trim());
    if (!top.ok || inside !== 'true' || !topLevel) return { problem: 'the garden is not a git work tree', gardenRoot: root, hasCommit: false, mergeTree: false };
    const real = await fsp.realpath(topLevel).catch(() => topLevel);
    const head = await git(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], root, env, [1, 128]);
    const branch = await git(['symbolic-ref', '--quiet', '--short', 'HEAD'], root, env, [1, 128]);
    const version = await git(['version'], root, env);
    const [major = 0, minor = 0] = (/(\d+)\.(\d+)/.exec(version.stdout) ?? []).slice(1).map(Number);
    return {
      topLevel: real,
      gardenRoot: root,
      ...(branch.ok && branch.stdout.trim() ? { branch: branch.stdout.trim() } : {}),
      hasCommit: head.ok && head.stdout.trim().length > 0,
      mergeTree: major > 2 || (major === 2 && minor >= 38),
    };
  } catch (error) {
    return { problem: (error as Error).message, gardenRoot: root, hasCommit: false, mergeTree: false };
  }
}

/** The commit a branch points at now (`git rev-parse refs/heads/<branch>`), or undefined when there is no such branch. */
export async function branchTip(repo: string, branch: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const result = await git(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], repo, env, [1, 128]);
  return result.ok ? result.stdout.trim() || undefined : undefined;
}

/**
 * How runs in `garden` are isolated now: its repository probed
 * ({@link probeRepository}) and {@link decideIsolation} over it with the
 * garden's `[coordinator] isolation` and `[merge] base`; a garden that keeps
 * its runtime state in its own root cannot have worktrees. The one place
 * the coordinator, the startup note, doctor and a runner's claim decide it.
 */
export async function gardenIsolationNow(garden: { paths: { gardenRoot: string; split: boolean }; config: Pick<GardenConfig, 'isolation' | 'merge'> }, env: NodeJS.ProcessEnv): Promise<Isolation> {
  const facts = await probeRepository(garden.paths.gardenRoot, env);
  return decideIsolation(garden.config.isolation, garden.config.merge.base, { ...facts, ...(garden.paths.split ? {} : { problem: 'the garden keeps its runtime state in its own root (no [runtime] root): worktrees need a runtime root apart' }) });
}
