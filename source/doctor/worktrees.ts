import fs from 'node:fs';
import path from 'node:path';
import { isTerminalLandingState, isTerminalRunStatus, RUN_ID_PATTERN, type RunRecord } from '../contracts/index.js';
import { landingsDir } from '../garden/index.js';
import { listLandings, readGoal, readLanding, readRun } from '../store/index.js';
import { branchTip, commitRunWork, gardenIsolationNow, git, POOL_DIR, removeWorktree, TRASH_DIR } from '../worktree/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** A worktree registered with git (`git worktree list --porcelain`). */
interface Listed {
  path: string;
  branch?: string;
  prunable: boolean;
}

async function listWorktrees(repo: string, env: NodeJS.ProcessEnv): Promise<Listed[]> {
  const out = (await git(['worktree', 'list', '--porcelain', '-z'], repo, env)).stdout;
  const list: Listed[] = [];
  for (const field of out.split('\0')) {
    if (field.startsWith('worktree ')) list.push({ path: field.slice(9), prunable: false });
    else if (field.startsWith('branch ') && list.length) list.at(-1)!.branch = field.slice('branch refs/heads/'.length);
    else if (field.startsWith('prunable') && list.length) list.at(-1)!.prunable = true;
  }
  return list;
}

/**
 * Worktrees and landings (docs/landing/level2.md, "Nothing left behind";
 * docs/doctor/level2.md): a run worktree whose run ended and whose goal no
 * longer waits on it (an orphan: `--fix` commits what it holds onto its
 * branch, then removes it), a worktree directory git no longer knows or a
 * registration whose directory is gone (`--fix` prunes), a landing's
 * scratch worktree left by a kill (`--fix` removes it), a landing
 * interrupted while `verifying` with no coordinator running (the next
 * coordinator resumes it; doctor says so), and branches `pak2/<run>` of
 * landings that ended more than `[worktree] keep_days` ago (`--fix` deletes
 * them; a branch holding work that never landed is named, never deleted).
 * Nothing to say outside a git work tree.
 */
export async function checkWorktrees(ctx: DoctorContext): Promise<Problem[]> {
  const { garden, env } = ctx;
  const { paths, config } = garden;
  const repo = paths.gardenRoot;
  let listed: Listed[];
  try {
    listed = await listWorktrees(repo, env);
  } catch {
    return []; // not a git work tree (or no git): nothing of this kind to check
  }
  const problems: Problem[] = [];
  const root = path.join(paths.runtimeRoot, 'worktrees');

  // How runs are isolated: worktrees asked for and impossible hold every run; a [merge] base that is no branch holds every worktree run.
  const isolation = await gardenIsolationNow(garden, env);
  if (isolation.held) problems.push({ check: 'worktrees', file: paths.configFile, field: 'coordinator.isolation', message: isolation.reason! });
  else if (isolation.mode === 'worktree' && config.merge.base && !(await branchTip(repo, config.merge.base, env).catch(() => undefined))) {
    problems.push({ check: 'worktrees', file: paths.configFile, field: 'merge.base', message: `[merge] base = ${JSON.stringify(config.merge.base)} is no branch of the repository: no run starts until it is (create the branch, or name another)` });
  }
  // What is in pak2's worktrees folder and is neither a run's worktree nor pak2's own (.pool, .trash).
  const stray = fs.existsSync(root) ? fs.readdirSync(root).filter((n) => !RUN_ID_PATTERN.test(n) && n !== POOL_DIR && n !== TRASH_DIR) : [];
  for (const name of stray) {
    const dir = path.join(root, name);
    problems.push({
      check: 'worktrees',
      file: dir,
      message: "something in pak2's worktrees folder that is not a run's worktree",
      fix: 'move it aside (its files are kept under the doctor directory)',
      // Moved, never deleted: a worktree of git's there becomes prunable, its files kept.
      repair: async () => `moved to ${await ctx.aside.move(dir)}`,
    });
  }
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const known = new Set(listed.map((w) => real(w.path)));
  const coordinatorRuns = ctx.presence.held;

  // Registrations whose directory is gone, and run worktrees git no longer knows.
  if (listed.some((w) => w.prunable)) {
    problems.push({
      check: 'worktrees',
      file: repo,
      message: `git lists ${listed.filter((w) => w.prunable).length} worktree(s) whose directory is gone: ${listed.filter((w) => w.prunable).map((w) => w.path).join(', ')}`,
      fix: 'git worktree prune',
      repair: async () => {
        await git(['worktree', 'prune'], repo, env);
        return 'pruned with git worktree prune';
      },
    });
  }
  const dirs = fs.existsSync(root) ? fs.readdirSync(root).filter((n) => RUN_ID_PATTERN.test(n)) : [];
  for (const name of dirs) {
    const dir = path.join(root, name);
    if (!known.has(real(dir))) {
      problems.push({
        check: 'worktrees',
        file: dir,
        message: 'a run worktree directory git does not know (a worktree add or remove was interrupted)',
        fix: 'move it aside (its files are kept under the doctor directory)',
        repair: async () => `moved to ${await ctx.aside.move(dir)}`,
      });
      continue;
    }
    let run: RunRecord | undefined;
    try {
      run = await readRun(paths, name);
    } catch {
      run = undefined;
    }
    if (run && !isTerminalRunStatus(run.status)) continue; // its run is live (or reclaim ends it at the next start)
    const landing = run ? await readLanding(paths, run.id).catch(() => undefined) : undefined;
    const goal = run ? await readGoal(paths, run.goal).catch(() => undefined) : undefined;
    // A completed goal whose run's work is on its way (queued, held for review, landing): the worktree is still its.
    if (run?.status === 'success' && goal?.status === 'completed' && (!landing || !isTerminalLandingState(landing.state))) continue;
    if (coordinatorRuns) continue; // the coordinator settles it at its next pass
    problems.push({
      check: 'worktrees',
      file: dir,
      message: run ? `an orphaned worktree: its run ended ${run.status} and its goal is ${goal?.status ?? 'gone'}` : 'an orphaned worktree: no run record names it',
      fix: `commit what it holds onto ${run?.worktree?.branch ?? 'its branch'}, then remove the worktree (the branch is kept)`,
      repair: async () => {
        if (run?.worktree) await commitRunWork(run.worktree, `pak2 doctor: what ${run.id} left in its worktree`, run.plant, config.worktree.copy, env).catch(() => undefined);
        await removeWorktree(repo, dir, env);
        return `removed${run?.worktree ? `; its work is on ${run.worktree.branch}` : ''}`;
      },
    });
  }

  // A landing's scratch worktree left by a kill during verify.
  const scratchRoot = landingsDir(paths);
  const scratch = fs.existsSync(scratchRoot) ? fs.readdirSync(scratchRoot).filter((n) => RUN_ID_PATTERN.test(n)).map((n) => path.join(scratchRoot, n, 'scratch')).filter((p) => fs.existsSync(p)) : [];
  for (const dir of scratch) {
    if (coordinatorRuns) continue;
    problems.push({
      check: 'worktrees',
      file: dir,
      message: "a landing's scratch worktree left behind (its verify was interrupted)",
      fix: 'remove it (the landing merges again when it resumes)',
      repair: async () => {
        await removeWorktree(repo, dir, env);
        return 'removed';
      },
    });
  }

  // Landings: interrupted ones, and branches past keep_days.
  const { landings, problems: unreadable } = await listLandings(paths);
  for (const p of unreadable) problems.push({ check: 'worktrees', file: p.file, message: p.message });
  const cutoff = Date.now() - config.worktree.keepDays * 86_400_000;
  for (const landing of landings) {
    const file = path.join(scratchRoot, `${landing.run}.json`);
    if (landing.state === 'verifying' && !coordinatorRuns) {
      problems.push({ check: 'worktrees', file, field: 'state', message: `landing of ${landing.run} was interrupted while verifying; the next coordinator (pak2 cycle) resumes it: the base branch ${landing.base_branch} is either before it or after it, never between` });
    }
    if (!isTerminalLandingState(landing.state) || landing.branch_pruned_at || Date.parse(landing.updated_at) > cutoff) continue;
    const tip = await git(['rev-parse', '--verify', '--quiet', `refs/heads/${landing.branch}`], repo, env, [1, 128]);
    if (!tip.ok || !tip.stdout.trim()) continue;
    problems.push({
      check: 'worktrees',
      file,
      field: 'branch',
      message: `branch ${landing.branch} is kept past [worktree] keep_days (${config.worktree.keepDays}): its landing ended ${landing.state} on ${landing.updated_at.slice(0, 10)}`,
      fix: `delete branch ${landing.branch}${landing.state === 'landed' ? '' : ' (its work never landed; it is gone with the branch)'}`,
      repair: async () => {
        const deleted = await git(['branch', '-D', landing.branch], repo, env, [1]);
        if (!deleted.ok) throw new NotFixed(deleted.stderr.trim().split('\n')[0] ?? 'git branch -D failed');
        return `deleted ${landing.branch}`;
      },
    });
  }
  return problems;
}
