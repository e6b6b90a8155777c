import fsp from 'node:fs/promises';
import path from 'node:path';
import type { WorktreeBaseline } from '../contracts/index.js';
import { authoredGitEnv, runGit } from './git.js';
import { span } from '../timing.js';

/**
 * The worktree baseline of a run (seed 000, "Run directory"): which tracked
 * files were already dirty, and how many untracked paths already existed
 * (and under which top-level roots), before the run began. The coordinator
 * captures it for non-converse goals before the goal's `queued → dispatched`
 * transition, so neither the run directory nor this run's coordinator events
 * exist yet.
 *
 * Read-only (`git --no-optional-locks status`) in the garden root. Paths are
 * relative to the garden root; only the garden's subtree is looked at. In a
 * split layout the runtime root is left out (it is runtime state with its own
 * history); in the legacy layout nothing is left out.
 *
 * @returns undefined when the garden root is not in a readable git worktree
 *   (no git, not a repository, a bare repository, status failed): the run
 *   record then has no `worktree_baseline`. Never throws.
 */
export async function captureWorktreeBaseline(gardenRoot: string, runtimeRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<WorktreeBaseline | undefined> {
  const end = span('worktree baseline');
  try {
    const gitEnv = authoredGitEnv(env);
    const where = await runGit(['rev-parse', '--is-inside-work-tree', '--show-prefix'], gardenRoot, gitEnv);
    if (!where.ok) return undefined;
    const [inside, prefix = ''] = where.stdout.split('\n');
    if (inside?.trim() !== 'true') return undefined;
    const pathspec = ['.'];
    const excluded = await runtimeExclusion(gardenRoot, runtimeRoot);
    if (excluded) pathspec.push(`:(exclude,literal)${excluded}`);
    const status = await runGit(['--no-optional-locks', 'status', '--porcelain', '-z', '--no-renames', '--untracked-files=all', '--', ...pathspec], gardenRoot, gitEnv);
    if (!status.ok) return undefined;
    return parseBaseline(status.stdout, prefix.trim());
  } catch {
    return undefined;
  } finally {
    end();
  }
}

/** The runtime root relative to the garden root when it lies strictly inside it; undefined otherwise. */
async function runtimeExclusion(gardenRoot: string, runtimeRoot: string): Promise<string | undefined> {
  const garden = await fsp.realpath(gardenRoot).catch(() => path.resolve(gardenRoot));
  const runtime = await fsp.realpath(runtimeRoot).catch(() => path.resolve(runtimeRoot));
  const rel = path.relative(garden, runtime);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join('/');
}

/**
 * Turns `git status --porcelain -z --no-renames` output into a baseline.
 * `prefix` is the garden root's path inside the repository (`--show-prefix`),
 * stripped so paths are garden-relative.
 */
export function parseBaseline(porcelain: string, prefix = ''): WorktreeBaseline {
  const tracked = new Set<string>();
  const roots = new Set<string>();
  let untracked = 0;
  for (const entry of porcelain.split('\0')) {
    if (entry.length < 4) continue;
    const code = entry.slice(0, 2);
    let file = entry.slice(3);
    if (prefix && file.startsWith(prefix)) file = file.slice(prefix.length);
    if (code === '!!') continue;
    if (code === '??') {
      untracked += 1;
      const root = file.split('/')[0];
      if (root) roots.add(root);
      continue;
    }
    tracked.add(file);
  }
  return {
    tracked_dirty_paths: [...tracked].sort(),
    untracked_dirty_count: untracked,
    untracked_dirty_roots: [...roots].sort(),
  };
}
