import fs from 'node:fs';
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
    const prefix = await prefixInWorkTree(gardenRoot, gitEnv);
    if (prefix === undefined) return undefined;
    const pathspec = ['.'];
    const excluded = await runtimeExclusion(gardenRoot, runtimeRoot);
    if (excluded) pathspec.push(`:(exclude,literal)${excluded}`);
    const status = await runGit(['--no-optional-locks', 'status', '--porcelain', '-z', '--no-renames', '--untracked-files=all', '--', ...pathspec], gardenRoot, gitEnv);
    if (!status.ok) {
      whereCache.delete(gardenRoot);
      return undefined;
    }
    return parseBaseline(status.stdout, prefix);
  } catch {
    return undefined;
  } finally {
    end();
  }
}

/** Garden roots found inside a work tree: their prefix there, under the {@link discoverySignature} it was read at. */
const whereCache = new Map<string, { signature: string; env: string; prefix: string }>();

/**
 * The garden root's path inside its git work tree (`git rev-parse
 * --is-inside-work-tree --show-prefix`), or undefined when it is in none.
 * A prefix read once is used again while nothing git's discovery looks at
 * has changed ({@link discoverySignature}) and the status that follows
 * succeeds: one git command per baseline instead of two.
 */
async function prefixInWorkTree(gardenRoot: string, gitEnv: Record<string, string>): Promise<string | undefined> {
  const env = JSON.stringify(gitEnv);
  const cached = whereCache.get(gardenRoot);
  const signature = discoverySignature(gardenRoot);
  if (cached && cached.env === env && signature !== undefined && cached.signature === signature) return cached.prefix;
  const where = await runGit(['rev-parse', '--is-inside-work-tree', '--show-prefix'], gardenRoot, gitEnv);
  if (!where.ok) return undefined;
  const [inside, prefix = ''] = where.stdout.split('\n');
  if (inside?.trim() !== 'true') return undefined;
  if (signature !== undefined) whereCache.set(gardenRoot, { signature, env, prefix: prefix.trim() });
  return prefix.trim();
}

/**
 * What git's discovery of the repository holding `dir` depends on, as one
 * string: every `.git` from `dir` up to `/` (type, device, inode; or
 * absent), and for a `.git` directory its `config` and `commondir` (a
 * `core.worktree` there moves the work tree); for a gitfile, its own size
 * and mtime. Undefined when `dir` cannot be resolved.
 */
function discoverySignature(dir: string): string | undefined {
  let current: string;
  try {
    current = fs.realpathSync(dir);
  } catch {
    return undefined;
  }
  const parts: string[] = [];
  const stamp = (file: string, content: boolean) => {
    try {
      const st = fs.lstatSync(file);
      const type = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : 'f';
      return content ? `${type}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}` : `${type}:${st.dev}:${st.ino}`;
    } catch {
      return '-';
    }
  };
  for (;;) {
    const dotGit = path.join(current, '.git');
    const found = stamp(dotGit, false);
    parts.push(found);
    if (found.startsWith('d')) parts.push(stamp(path.join(dotGit, 'config'), true), stamp(path.join(dotGit, 'commondir'), true));
    else if (found !== '-') parts.push(stamp(dotGit, true));
    const parent = path.dirname(current);
    if (parent === current) return parts.join('|');
    current = parent;
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
