import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileHolders } from '../proc.js';
import { runGit, runtimeGitEnv, STALE_GIT_LOCK_MS } from '../history/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** Lock files git leaves at the top of a git directory; `refs/**\/*.lock` are found by walking. */
const TOP_LOCKS = ['index.lock', 'HEAD.lock', 'config.lock', 'packed-refs.lock', 'shallow.lock'];

function refLocks(dir: string): string[] {
  const out: string[] = [];
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...refLocks(full));
    else if (entry.name.endsWith('.lock')) out.push(full);
  }
  return out;
}

/**
 * The runtime git repository `<runtime-root>/.git` of a split garden (the
 * runtime history, docs/runtime-history/level2.md):
 *
 * - a `.git` that is not a directory (a gitfile, a symlink): runtime history
 *   refuses it; no automatic fix.
 * - a stale lock file (`index.lock`, `HEAD.lock`, `config.lock`,
 *   `packed-refs.lock`, `refs/**\/*.lock`) older than STALE_GIT_LOCK_MS
 *   that no live process holds open (fileHolders): git commands that need it
 *   fail. Fix: remove it (a lock, not a record), only if still unheld just
 *   before.
 * - breakage `git fsck --connectivity-only --no-dangling` reports (missing
 *   or broken objects): no automatic fix.
 */
export async function checkRuntimeGit(ctx: DoctorContext): Promise<Problem[]> {
  const { paths } = ctx.garden;
  if (!paths.split) return [];
  const gitDir = path.join(paths.runtimeRoot, '.git');
  let stat: fs.Stats;
  try {
    stat = await fsp.lstat(gitDir);
  } catch {
    return []; // created at the first close
  }
  if (stat.isSymbolicLink() || !stat.isDirectory()) {
    return [
      {
        check: 'runtime-git',
        file: gitDir,
        message: `${stat.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}: runtime history only uses a repository it owns, so no close is committed; move it away by hand`,
      },
    ];
  }
  const problems: Problem[] = [];
  const locks = [...TOP_LOCKS.map((name) => path.join(gitDir, name)).filter((file) => fs.existsSync(file)), ...refLocks(path.join(gitDir, 'refs'))];
  for (const lock of locks) {
    let ageMs: number;
    try {
      ageMs = Date.now() - fs.statSync(lock).mtimeMs;
    } catch {
      continue;
    }
    // Young, or held open: a git command at work (git may close a lock just before renaming it).
    if (ageMs < STALE_GIT_LOCK_MS || fileHolders([lock]).length > 0) continue;
    problems.push({
      check: 'runtime-git',
      file: lock,
      message: `stale lock: no live process holds it open, last written ${Math.round(ageMs / 1000)} s ago; git commands on the runtime repo that need it fail until it is removed`,
      fix: 'remove it',
      repair: async () => {
        if (!fs.existsSync(lock)) return 'it was gone already';
        const holders = fileHolders([lock]);
        if (holders.length > 0) throw new NotFixed(`pid ${holders.join(', ')} holds it open now`);
        await fsp.rm(lock);
        return 'removed it';
      },
    });
  }
  const args = ['fsck', '--connectivity-only', '--no-dangling', '--no-progress'];
  const result = await runGit(args, paths.runtimeRoot, runtimeGitEnv(ctx.env, paths.runtimeRoot));
  // No git on PATH says nothing about the repository: not a finding.
  if (!result.ok && !result.spawnError) {
    const lines = `${result.stdout}\n${result.stderr}`
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !/^notice:/.test(l));
    const shown = lines.find((l) => /^(missing|broken|error|fatal|bad)/.test(l)) ?? lines[0];
    problems.push({
      check: 'runtime-git',
      file: gitDir,
      message: `git fsck --connectivity-only exited ${result.exitCode}: ${shown ?? 'no output'}${lines.length > 1 ? ` (+${lines.length - 1} more line(s))` : ''}; the runtime history repository is damaged: no automatic fix`,
    });
  }
  return problems;
}
