import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import picomatch from 'picomatch';
import type { RunRecord } from '../contracts/index.js';
import { crashPoint } from '../store/index.js';
import { commitAs, git, WorktreeGitError } from './git.js';

/** A run's worktree as its record names it. */
export type RunWorktree = NonNullable<RunRecord['worktree']>;

/** First line of pak2's block in the repository's `info/attributes` and `info/exclude`. */
export const REPO_BLOCK_MARKER = '# pak2: worktrees and landing (docs/landing/level2.md)';

/**
 * Plant documents merge by union (docs/landing/level2.md, "Plant
 * documents"): two runs of one plant that each add lines to its memory both
 * land, their lines one after the other, instead of every second landing
 * conflicting. Kept in the repository's `info/attributes` (never in a
 * tracked file of the operator's).
 */
export function plantMergeAttributes(plantsRel: string): string[] {
  return ['memory', 'skills', 'knowledge'].map((dir) => `/${plantsRel}/*/${dir}/*.md merge=union`);
}

async function commonDir(repo: string, env: NodeJS.ProcessEnv): Promise<string> {
  const result = await git(['rev-parse', '--git-common-dir'], repo, env);
  const dir = result.stdout.trim();
  return path.isAbsolute(dir) ? dir : path.join(repo, dir);
}

async function ensureLines(file: string, lines: readonly string[]): Promise<void> {
  const current = await fsp.readFile(file, 'utf8').catch(() => '');
  const have = new Set(current.split('\n'));
  const missing = [...(have.has(REPO_BLOCK_MARKER) ? [] : [REPO_BLOCK_MARKER]), ...lines.filter((l) => !have.has(l))];
  if (missing.length === 0) return;
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.appendFile(file, `${current && !current.endsWith('\n') ? '\n' : ''}${missing.join('\n')}\n`);
}

/**
 * Makes the repository ready for worktrees (idempotent): the union merge of
 * plant documents (under `plantsRel`, the garden's plants directory) in
 * `info/attributes`, and the runtime root (where the
 * worktrees live) in `info/exclude`, so the operator's `git status` never
 * lists them. Only files under the repository's git directory are written.
 */
export async function prepareRepository(repo: string, runtimeRel: string | undefined, env: NodeJS.ProcessEnv, plantsRel = 'plants'): Promise<void> {
  const dir = await commonDir(repo, env);
  await ensureLines(path.join(dir, 'info', 'attributes'), plantMergeAttributes(plantsRel));
  if (runtimeRel) await ensureLines(path.join(dir, 'info', 'exclude'), [`/${runtimeRel}/`]);
}

/** Whether `dir` is a worktree of the repository on `branch` (a `.git` file and the branch checked out). */
async function isWorktreeOn(dir: string, branch: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  if (!fs.existsSync(path.join(dir, '.git'))) return false;
  const head = await git(['symbolic-ref', '--quiet', '--short', 'HEAD'], dir, env, [1, 128]).catch(() => undefined);
  return head?.ok === true && head.stdout.trim() === branch;
}

/** `<worktrees>/.pool/`: clean worktrees parked for the next run (docs/landing/level2.md, "Worktrees"). */
export const POOL_DIR = '.pool';

// One pool operation at a time in this process: two dispatches never take the same parked worktree.
let poolQueue: Promise<unknown> = Promise.resolve();
function inPool<T>(fn: () => Promise<T>): Promise<T> {
  const next = poolQueue.then(fn, fn);
  poolQueue = next.catch(() => undefined);
  return next;
}

/**
 * Takes a parked worktree out of the pool to `dest` (`git worktree move`)
 * and checks out `ref` there (`checkout` args), clean of every untracked and
 * ignored file: only the files that differ from what it held are written,
 * instead of a whole checkout. False when the pool (`pool`, a directory)
 * is empty or the parked tree cannot be used (it is then removed).
 * `otherwise`, when git refuses the checkout, gives the checkout args to
 * try instead (undefined: none, the tree is removed and the answer false).
 */
export async function takeFromPool(repo: string, pool: string, dest: string, checkout: string[], env: NodeJS.ProcessEnv, otherwise?: () => Promise<string[] | undefined>): Promise<boolean> {
  // Only the choice and the move are one at a time: once moved to `dest` the tree is this run's alone.
  const moved = await inPool(async () => {
    const parked = fs.existsSync(pool) ? fs.readdirSync(pool).sort() : [];
    for (const name of parked) {
      const from = path.join(pool, name);
      try {
        await git(['worktree', 'move', from, dest], repo, env);
        return true;
      } catch {
        await removeWorktree(repo, from, env).catch(() => undefined);
      }
    }
    return false;
  });
  if (!moved) return false;
  try {
    // A parked tree is clean (parking ends with the clean and the move is its last step): only the checkout is left.
    const done = await git(['checkout', '--quiet', '--force', ...checkout], dest, env, [128]);
    if (done.ok) return true;
    // The checkout git refused (a branch that already exists): the caller's second way, if it has one.
    const second = await otherwise?.();
    if (!second) throw new WorktreeGitError(['checkout', ...checkout], done);
    await git(['checkout', '--quiet', '--force', ...second], dest, env);
    return true;
  } catch {
    await removeWorktree(repo, dest, env).catch(() => undefined);
    return false;
  }
}

/**
 * Parks a worktree whose run is done in the pool for the next run
 * (`git worktree move` to `<worktrees>/.pool/`), detached and clean, so the
 * next run's worktree costs the files that differ, not a whole checkout.
 * Whatever it still holds (tracked changes, untracked files) is committed
 * onto `branch` first: nothing of a run is lost. Past `poolMax` parked
 * trees, it is removed instead. The caller's goal no longer needs it.
 */
export async function parkWorktree(repo: string, wtPath: string, env: NodeJS.ProcessEnv, options: { branch?: string; plant?: string; poolMax: number; pool?: string }): Promise<void> {
  if (!fs.existsSync(wtPath)) {
    await git(['worktree', 'prune'], repo, env);
    return;
  }
  let ignored = true;
  try {
    // One status says both whether anything is left to keep and whether there is anything (ignored files too) to clean.
    const status = (await git(['status', '--porcelain', '--ignored'], wtPath, env)).stdout.split('\n').filter(Boolean);
    ignored = status.some((line) => line.startsWith('!!'));
    if (status.some((line) => !line.startsWith('!!')) && options.branch) {
      await git(['add', '-A'], wtPath, env);
      await commitAs(['--quiet', '--no-verify', '--author', `pak2 ${options.plant ?? 'pak2'} <pak2-${options.plant ?? 'pak2'}@localhost>`, '-m', `pak2: what was left in the worktree of ${path.basename(wtPath)}`], wtPath, env);
    }
  } catch {
    // A worktree git cannot read is not parked: it is removed below.
    await removeWorktree(repo, wtPath, env);
    return;
  }
  const pool = options.pool ?? path.join(path.dirname(wtPath), POOL_DIR);
  try {
    await git(['checkout', '--quiet', '--detach'], wtPath, env);
    if (ignored) await git(['clean', '-qffdx'], wtPath, env);
  } catch {
    await removeWorktree(repo, wtPath, env);
    return;
  }
  // Only the count and the move are one at a time (the pool's size holds).
  await inPool(async () => {
    const parked = fs.existsSync(pool) ? fs.readdirSync(pool).length : 0;
    if (parked >= options.poolMax) return removeWorktree(repo, wtPath, env);
    try {
      await fsp.mkdir(pool, { recursive: true });
      await git(['worktree', 'move', wtPath, path.join(pool, `${path.basename(wtPath)}-${Date.now()}`)], repo, env);
    } catch {
      await removeWorktree(repo, wtPath, env);
    }
  });
}

/**
 * Creates a run's worktree (docs/landing/level2.md, "Worktrees") on its
 * branch from its base commit: a parked worktree from the pool when there
 * is one (only the files that differ are written), else `git worktree add
 * -b <branch> <path> <base_commit>`. Safe to run again after a crash at any
 * step: a worktree already there on its branch is kept; a branch made by a
 * create that died is checked out as it is; a directory left half made is
 * removed first.
 *
 * @throws WorktreeGitError when git cannot make it.
 */
export async function createWorktree(repo: string, wt: RunWorktree, env: NodeJS.ProcessEnv): Promise<'created' | 'existing'> {
  if (fs.existsSync(wt.path)) {
    if (await isWorktreeOn(wt.path, wt.branch, env)) return 'existing';
    // A directory a killed create left behind (and its stale registration) goes first.
    await removeWorktree(repo, wt.path, env);
  }
  await fsp.mkdir(path.dirname(wt.path), { recursive: true });
  const branchExists = async () => {
    const exists = await git(['rev-parse', '--verify', '--quiet', `refs/heads/${wt.branch}`], repo, env, [1, 128]);
    return exists.ok && exists.stdout.trim().length > 0;
  };
  // The branch is new in the common case: `-b` makes it, and only a refusal (made by a create that died) asks whether it exists.
  const fromPool = await takeFromPool(repo, path.join(path.dirname(wt.path), POOL_DIR), wt.path, ['-b', wt.branch, wt.base_commit], env, async () => ((await branchExists()) ? [wt.branch] : undefined));
  if (fromPool) {
    crashPoint('worktree:after-add');
    return 'created';
  }
  const made = await git(['worktree', 'add', '--quiet', '-b', wt.branch, wt.path, wt.base_commit], repo, env, [128]);
  if (!made.ok) {
    // The branch a killed create made, or a registration of a directory now gone: taken as they are.
    await git(['worktree', 'prune'], repo, env);
    if (await branchExists()) await git(['worktree', 'add', '--quiet', wt.path, wt.branch], repo, env);
    else await git(['worktree', 'add', '--quiet', '-b', wt.branch, wt.path, wt.base_commit], repo, env);
  }
  crashPoint('worktree:after-add');
  return 'created';
}

/**
 * Removes a worktree (and, with `branch`, its branch). Safe to run twice:
 * a worktree already gone is pruned from git's list; a branch already gone
 * is no error.
 */
export async function removeWorktree(repo: string, wtPath: string, env: NodeJS.ProcessEnv, branch?: string): Promise<void> {
  if (fs.existsSync(wtPath)) {
    // Out of the way at once (a rename), then git forgets it; the files go in the background: a large tree takes its time.
    const trash = path.join(path.dirname(wtPath), TRASH_DIR, `${path.basename(wtPath)}-${process.pid}-${Date.now()}`);
    await fsp.mkdir(path.dirname(trash), { recursive: true });
    try {
      await fsp.rename(wtPath, trash);
      void fsp.rm(trash, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
    } catch {
      await fsp.rm(wtPath, { recursive: true, force: true });
    }
  }
  await git(['worktree', 'prune'], repo, env);
  if (branch) await git(['branch', '-D', branch], repo, env, [1]);
}

/** Where removed worktrees wait to be deleted, beside them (`.trash/`): what a process that ended left there is emptied by {@link emptyTrash}. */
export const TRASH_DIR = '.trash';

/** Deletes what removed worktrees left in `<dir>/.trash/` (a process that exited before its background delete finished). */
export async function emptyTrash(dir: string): Promise<void> {
  await fsp.rm(path.join(dir, TRASH_DIR), { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
}

/**
 * Copies the garden's untracked (or ignored) files matching `[worktree]
 * copy` globs into a new worktree (`.env`, local config): files git does
 * not track, so they are not in the worktree, and that a build needs.
 * Never committed: the landing commit leaves them out by path.
 *
 * @returns the copied paths, relative to the garden.
 */
export async function copyIntoWorktree(gardenRoot: string, wtPath: string, globs: string[], env: NodeJS.ProcessEnv): Promise<string[]> {
  if (globs.length === 0) return [];
  const isMatch = picomatch(globs, { dot: true });
  const listed = await git(['ls-files', '-z', '--others', '--exclude-standard'], gardenRoot, env);
  const ignored = await git(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'], gardenRoot, env);
  const candidates = [...listed.stdout.split('\0'), ...ignored.stdout.split('\0')].filter((p) => p && !p.endsWith('/') && isMatch(p));
  const copied: string[] = [];
  for (const rel of [...new Set(candidates)].sort()) {
    const from = path.join(gardenRoot, rel);
    const to = path.join(wtPath, rel);
    if (fs.existsSync(to)) continue;
    await fsp.mkdir(path.dirname(to), { recursive: true });
    await fsp.copyFile(from, to);
    copied.push(rel);
  }
  return copied;
}

/** What `[worktree] setup` did. */
export interface SetupResult {
  ok: boolean;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  /** Why it failed, in one line (the command, the exit or the limit, the log's last line). */
  message?: string;
}

/**
 * Runs `[worktree] setup` in a new worktree before the agent (or before
 * verify on a merged result): argv, the worktree as cwd, its output in
 * `logFile`, killed (its whole group) past `timeoutSeconds`.
 */
export async function runSetup(argv: string[], cwd: string, timeoutSeconds: number, logFile: string, env: NodeJS.ProcessEnv): Promise<SetupResult> {
  const started = Date.now();
  await fsp.mkdir(path.dirname(logFile), { recursive: true });
  const fd = fs.openSync(logFile, 'a');
  try {
    const child = execa(argv[0]!, argv.slice(1), { cwd, env, stdin: 'ignore', stdout: fd as 3, stderr: fd as 3, reject: false, detached: true, timeout: timeoutSeconds * 1000, killSignal: 'SIGKILL', forceKillAfterDelay: false });
    const result = await child;
    if (child.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
    const durationMs = Date.now() - started;
    const timedOut = Boolean(result.timedOut);
    const exitCode = result.exitCode ?? null;
    if (!timedOut && exitCode === 0) return { ok: true, exitCode, timedOut, durationMs };
    const last = lastLogLine(logFile);
    const how = timedOut ? `ran past setup_timeout_seconds (${timeoutSeconds} s)` : result.failed && exitCode === null && !result.signal ? `could not start (${result.shortMessage ?? 'spawn failed'})` : `exited ${exitCode ?? `by ${result.signal ?? 'signal'}`}`;
    return { ok: false, exitCode, timedOut, durationMs, message: `[worktree] setup ${JSON.stringify(argv.join(' '))} ${how}${last ? `: ${last}` : ''} (see ${path.basename(logFile)})` };
  } finally {
    fs.closeSync(fd);
  }
}

function lastLogLine(file: string): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return (
      text
        .slice(-4096)
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .at(-1) ?? ''
    );
  } catch {
    return '';
  }
}

/**
 * Commits what a run changed in its worktree onto its branch, leaving out
 * every untracked file that matches a `[worktree] copy` glob (`copyGlobs`:
 * what was copied in is never committed): `git add -A`, then one commit
 * whose message names the goal and the run, authored by the plant. The
 * agent's own commits stay as they are, under it. Nothing to commit is no
 * error.
 *
 * @returns the branch tip after it (the commit, or the tip as it was).
 */
export async function commitRunWork(wt: RunWorktree, message: string, plant: string, copyGlobs: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const isCopied = copyGlobs.length ? picomatch(copyGlobs, { dot: true }) : () => false;
  // One status first: a worktree with nothing to commit (the common close of a run that changed nothing) costs this one git process.
  const status = (await git(['status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all'], wt.path, env)).stdout.split('\0').filter(Boolean);
  const headOid = status.find((e) => e.startsWith('# branch.oid '))?.slice('# branch.oid '.length);
  const onBranch = status.find((e) => e.startsWith('# branch.head '))?.slice('# branch.head '.length) === wt.branch;
  const changed = status.filter((e) => !e.startsWith('#'));
  // (A rename's entry is followed by its original path, which is not a status entry: any tracked change means a commit anyway.)
  const untracked = changed.filter((e) => e.startsWith('? ')).map((e) => e.slice(2));
  const onlyCopied = changed.length === untracked.length && untracked.every((p) => isCopied(p));
  let head: string;
  if (onlyCopied && headOid && /^[0-9a-f]{40,64}$/.test(headOid)) head = headOid;
  else {
    const excluded = untracked.filter((p) => isCopied(p));
    const pathspec = ['.', ...excluded.map((p) => `:(exclude,literal)${p}`)];
    await git(['add', '-A', '--', ...pathspec], wt.path, env);
    // Nothing staged is git's exit 1 ("nothing to commit"): no commit, no error.
    const committed = await commitAs(['--quiet', '--no-verify', '--author', `pak2 ${plant} <pak2-${plant}@localhost>`, '-m', message], wt.path, env, [1]);
    if (committed.ok) crashPoint('landing:after-commit');
    else if (!/nothing to commit|nothing added to commit|no changes added/i.test(`${committed.stdout}\n${committed.stderr}`)) throw new WorktreeGitError(['commit'], committed);
    head = (await git(['rev-parse', 'HEAD'], wt.path, env)).stdout.trim();
  }
  return onBranch ? head : runBranchHolding(wt, head, env);
}

/**
 * The agent left its worktree off the run's branch (another branch it
 * made, a detached HEAD): the branch is made to hold the run's work, or
 * the work is said to be off it — never taken as nothing. When HEAD holds
 * the branch's tip, the branch moves up to HEAD; when the branch's tip
 * holds HEAD (the agent stepped back after committing), the tip is the
 * work; a branch the agent deleted is made again at HEAD.
 *
 * @returns the run's work: the branch's tip after this.
 * @throws WorkOffBranchError when HEAD and the branch have diverged (both are kept; neither lands).
 */
async function runBranchHolding(wt: RunWorktree, head: string, env: NodeJS.ProcessEnv): Promise<string> {
  const ref = `refs/heads/${wt.branch}`;
  const tip = (await git(['rev-parse', '--verify', '--quiet', ref], wt.path, env, [1, 128])).stdout.trim();
  if (!tip) {
    await git(['update-ref', ref, head, ''], wt.path, env);
    return head;
  }
  if (tip === head) return head;
  const holds = async (a: string, b: string) => (await git(['merge-base', '--is-ancestor', a, b], wt.path, env, [1])).ok;
  if (await holds(tip, head)) {
    await git(['update-ref', ref, head, tip], wt.path, env);
    return head;
  }
  if (await holds(head, tip)) return tip;
  throw new WorkOffBranchError(`the agent left its worktree at ${head.slice(0, 12)}, off the run's branch ${wt.branch} (at ${tip.slice(0, 12)}), and the two have diverged: pak2 lands neither, and keeps both`, tip);
}

/** The agent's work is on a commit the run's branch does not hold, nor holds it ({@link commitRunWork}); `tip` is the branch's. */
export class WorkOffBranchError extends Error {
  constructor(
    message: string,
    readonly tip: string,
  ) {
    super(message);
  }
}
