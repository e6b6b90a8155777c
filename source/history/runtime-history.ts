/**
 * Runtime history (seed 000, "Run directory"; seed 002, "File layout"): at
 * terminal run close in a split-runtime-root garden, one provenance record
 * `<runtime-root>/history/commits/<run-id>.json` (the authored HEAD commit
 * and whether authored paths outside the runtime root were clean or dirty),
 * then one commit of the whole runtime tree in the runtime root's own nested
 * git repo. Contract: docs/runtime-history/level2.md.
 *
 * This module depends only on contracts and garden (never on the store), so
 * the store's closeRun can call it right after writing the terminal record.
 * It never throws: every failure is one of the bounded outcome codes, the
 * code of the step that failed.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  formatIssue,
  isTerminalRunStatus,
  validateRuntimeHistoryRecord,
  type RunRecord,
  type RuntimeHistoryOutcome,
  type RuntimeHistoryRecord,
} from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { writeFileAtomic } from '../atomic-write.js';
import { span } from '../timing.js';
import { commandOf, fileHolders } from '../proc.js';
import { sanitize } from '../sanitize.js';
import { authoredGitEnv, describeFailure, runGit, runtimeGitEnv, type GitResult } from './git.js';

/** What one capture did. `commit` is the new runtime HEAD (only with `committed`); `record` the record file once written. */
export interface RuntimeHistoryResult {
  outcome: RuntimeHistoryOutcome;
  detail?: string;
  commit?: string;
  record?: string;
  /** Git locks left by dead processes that this capture removed before staging (paths). */
  cleared?: string[];
}

/** How old (ms) a git lock nobody holds open must be before it counts as left by a dead process. */
export const STALE_GIT_LOCK_MS = 2000;

/**
 * Git's own advice for a lock a crashed git left behind is to remove it.
 * Before staging, every `index.lock`, `HEAD.lock` and `refs/**.lock` in the
 * runtime repo that no live process holds open (/proc) and that is older
 * than {@link STALE_GIT_LOCK_MS} is removed; the paths are returned. A lock
 * a live process holds is left alone, and {@link describeHeldLocks} names it.
 */
export function clearStaleGitLocks(gitDir: string, nowMs = Date.now()): string[] {
  const cleared: string[] = [];
  for (const lock of gitLocks(gitDir)) {
    let mtimeMs: number;
    try {
      mtimeMs = fs.statSync(lock).mtimeMs;
    } catch {
      continue;
    }
    if (nowMs - mtimeMs < STALE_GIT_LOCK_MS || fileHolders([lock]).length > 0) continue;
    try {
      fs.rmSync(lock, { force: true });
      cleared.push(lock);
    } catch {
      // left: the failing git command will name it
    }
  }
  return cleared;
}

/** Locks in a git dir: index.lock, HEAD.lock and any *.lock under refs/. */
function gitLocks(gitDir: string): string[] {
  const found = [path.join(gitDir, 'index.lock'), path.join(gitDir, 'HEAD.lock')].filter((f) => fs.existsSync(f));
  const walk = (dir: string, depth: number) => {
    if (depth > 6) return;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full, depth + 1);
      else if (entry.name.endsWith('.lock')) found.push(full);
    }
  };
  walk(path.join(gitDir, 'refs'), 0);
  return found;
}

/** What to do about the locks still in a git dir: who holds each, or that it is young. Empty when there are none. */
export function describeHeldLocks(gitDir: string): string {
  const parts: string[] = [];
  for (const lock of gitLocks(gitDir)) {
    const holders = fileHolders([lock]);
    parts.push(
      holders.length > 0
        ? `${lock} is held by ${holders.map((pid) => `pid ${pid} (${commandOf(pid)})`).join(', ')}: it goes when that process ends`
        : `${lock} is not held by any process: if no git command is running in ${path.dirname(gitDir)}, remove it (pak2 removes such a lock once it is ${STALE_GIT_LOCK_MS / 1000} s old)`,
    );
  }
  return parts.join('; ');
}

/** Runs one git command; {@link runGit} is the real one. */
export type GitRunner = typeof runGit;

/** Options of {@link captureRuntimeHistory}. */
export interface CaptureOptions {
  /** Where PATH (and HOME for the authored probe) come from; default this process's environment. */
  env?: NodeJS.ProcessEnv;
  /**
   * The git runner every step uses; default {@link runGit}. A test seam: the
   * real runner never throws, so a test passes one that throws at a chosen
   * command to check that an unexpected exception ends in that step's own
   * outcome code.
   */
  runGit?: GitRunner;
}

/** The runtime repo's repo-local identity, written into `<runtime-root>/.git/config` when it is created. */
export const RUNTIME_IDENTITY = { name: 'pak2 runtime history', email: 'pak2-runtime@localhost' } as const;

/** First line of pak2's block in the runtime repo's `.git/info/exclude`. */
export const RUNTIME_EXCLUDE_MARKER = '# pak2 runtime history: lock files and temp files are never committed';
/**
 * Patterns the runtime repo never commits: lock files and lock directories
 * (coordinator.lock, <file>.lock), temp files, caches (`.cache/`: the goals
 * listing cache), the runs' git worktrees (`/worktrees/`: the operator's
 * repository's, not runtime state), the landings' scratch worktrees, the
 * webhook subscriptions (`/webhooks/`: their URLs, secrets and delivery log
 * carry credentials) and the temp files of a redaction (`*.redact`).
 */
export const RUNTIME_EXCLUDES = ['*.lock', '*.tmp', '/.cache/', '/worktrees/', '/landings/*/scratch/', '/webhooks/', '*.redact'] as const;

/** Runtime-root-relative directories the runtime repo stops tracking if an older pak2 committed them ({@link RUNTIME_EXCLUDES}' credentials). */
const UNTRACKED_DIRS = ['webhooks'] as const;

/** Per runs directory: the run ids this process has seen terminal (a terminal record never changes back). */
const closedSeen = new Map<string, Set<string>>();

/**
 * The directories under `runs/` (relative to the runtime root, POSIX) of
 * runs that are not closed: a meta.json that is missing, unreadable or not
 * terminal. A capture never stages them (docs/runtime-history/level2.md,
 * "Only closed runs"): a live run's stream holds its secrets until its close
 * redacts them. Dot entries (`.seals/`) are not runs.
 */
export async function unclosedRunDirs(paths: GardenPaths): Promise<string[]> {
  const seen = closedSeen.get(paths.runsDir) ?? new Set<string>();
  closedSeen.set(paths.runsDir, seen);
  const rel = path.relative(paths.runtimeRoot, paths.runsDir).split(path.sep).join('/');
  const out: string[] = [];
  for (const entry of await fsp.readdir(paths.runsDir, { withFileTypes: true }).catch(() => [] as fs.Dirent[])) {
    if (!entry.isDirectory() || entry.name.startsWith('.') || seen.has(entry.name)) continue;
    let status: unknown;
    try {
      status = (JSON.parse(await fsp.readFile(path.join(paths.runsDir, entry.name, 'meta.json'), 'utf8')) as { status?: unknown }).status;
    } catch {
      status = undefined;
    }
    if (typeof status === 'string' && isTerminalRunStatus(status)) seen.add(entry.name);
    else out.push(`${rel}/${entry.name}`);
  }
  return out;
}

/** `<runtime-root>/history/commits/`. */
export function historyCommitsDir(paths: GardenPaths): string {
  return path.join(paths.historyDir, 'commits');
}

/** `<runtime-root>/history/commits/<run-id>.json`. */
export function historyRecordFile(paths: GardenPaths, runId: string): string {
  return path.join(historyCommitsDir(paths), `${runId}.json`);
}

/** A capture waiting for its turn at a runtime root. */
interface PendingCapture {
  run: RunRecord;
  options: CaptureOptions;
  resolve: (result: RuntimeHistoryResult) => void;
}

/** Per runtime root: whether a capture is under way, and the captures waiting behind it. */
const queues = new Map<string, PendingCapture[]>();

/**
 * Captures the runtime history of one closed run. Captures of one runtime
 * root are serialised within the process (two runs closing together must
 * not race for the runtime repo's index). Never throws.
 *
 * Steps, each ending in its outcome code when it fails: relate the runtime
 * root to the garden root → read the authored HEAD and clean/dirty state
 * (in the garden root, read-only) → write the record → create or check the
 * runtime repo → `git add -A -- . <not-closed runs excluded>` → `git diff --cached --quiet --exit-code`
 * → `git commit` → read the runtime HEAD back. The staging leaves out the
 * directories of runs that are not closed ({@link unclosedRunDirs}). An unexpected exception (a
 * bug, not a failing command) ends in the outcome code of the step it came
 * from, with `unexpected: <message>` as the detail.
 *
 * A capture asked for while another one of the same runtime root is under
 * way waits for it; the captures that waited together then run as one
 * (docs/runtime-history/level2.md, "Closes that wait together"): one
 * authored probe, each run's own record, one commit that adds every
 * record, and each run's result names that commit. A capture that finds
 * the root idle starts at once, alone.
 */
export function captureRuntimeHistory(paths: GardenPaths, run: RunRecord, options: CaptureOptions = {}): Promise<RuntimeHistoryResult> {
  if (!paths.split) return Promise.resolve({ outcome: 'runtime_root_not_split' });
  const key = paths.runtimeRoot;
  return new Promise((resolve) => {
    const waiting = queues.get(key);
    if (waiting) {
      waiting.push({ run, options, resolve });
      return;
    }
    queues.set(key, []);
    void drain(paths, key, [{ run, options, resolve }]);
  });
}

/** Runs `batch`, then the captures that queued meanwhile (those with the same git runner and environment together), until none is left. */
async function drain(paths: GardenPaths, key: string, batch: PendingCapture[]): Promise<void> {
  for (;;) {
    const results = await captureGuarded(paths, batch.map((p) => p.run), batch[0]!.options);
    batch.forEach((p, i) => p.resolve(results[i]!));
    const waiting = queues.get(key)!;
    if (waiting.length === 0) {
      queues.delete(key);
      return;
    }
    const { env, runGit: git } = waiting[0]!.options;
    batch = waiting.filter((p) => p.options.env === env && p.options.runGit === git);
    queues.set(key, waiting.filter((p) => !batch.includes(p)));
  }
}

/** The runtime root relative to the garden root (POSIX separators), or why it cannot be related. */
export async function relateRuntimeRoot(paths: GardenPaths): Promise<{ rel: string } | RuntimeHistoryResult> {
  if (!paths.split) return { outcome: 'runtime_root_not_split' };
  let garden: string;
  let runtime: string;
  try {
    garden = await fsp.realpath(paths.gardenRoot);
    runtime = await fsp.realpath(paths.runtimeRoot);
  } catch (error) {
    return { outcome: 'runtime_root_outside_garden', detail: `cannot resolve ${paths.runtimeRoot} against ${paths.gardenRoot}: ${(error as Error).message}` };
  }
  const rel = path.relative(garden, runtime);
  if (rel === '') return { outcome: 'runtime_root_not_split', detail: `${paths.runtimeRoot} resolves to the garden root` };
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
    return { outcome: 'runtime_root_outside_garden', detail: `runtime root ${runtime} is not under the garden root ${garden}` };
  }
  return { rel: rel.split(path.sep).join('/') };
}

/**
 * The authored HEAD and the clean/dirty state of authored paths outside the
 * runtime root, read in the garden root with `git` (default {@link runGit}):
 * one `git status --porcelain=v2 --branch` gives both (the HEAD commit in
 * its `# branch.oid` header, the changes in its entries). When it cannot
 * (not a repository, no commit yet, no git), `git rev-parse --verify
 * HEAD^{commit}` and the plain status are asked, and say why.
 */
export async function probeAuthored(
  gardenRoot: string,
  runtimeRel: string,
  env: NodeJS.ProcessEnv,
  git: GitRunner = runGit,
): Promise<{ head: string; tree: 'clean' | 'dirty' } | { detail: string }> {
  const gitEnv = authoredGitEnv(env);
  // --no-optional-locks: a probe never refreshes (writes) the authored index.
  const bothArgs = ['--no-optional-locks', 'status', '--porcelain=v2', '--branch', '-z', '--untracked-files=normal', '--', '.', `:(exclude,literal)${runtimeRel}`];
  const both = await git(bothArgs, gardenRoot, gitEnv);
  if (both.ok) {
    const entries = both.stdout.split('\0').filter(Boolean);
    const oid = entries.find((e) => e.startsWith('# branch.oid '))?.slice('# branch.oid '.length);
    if (oid && /^[0-9a-f]{40,64}$/.test(oid)) return { head: oid, tree: entries.some((e) => !e.startsWith('# ')) ? 'dirty' : 'clean' };
  }
  const headArgs = ['rev-parse', '--verify', 'HEAD^{commit}'];
  const head = await git(headArgs, gardenRoot, gitEnv);
  if (!head.ok) return { detail: describeFailure(headArgs, head) };
  const statusArgs = ['--no-optional-locks', 'status', '--porcelain', '-z', '--untracked-files=normal', '--', '.', `:(exclude,literal)${runtimeRel}`];
  const status = await git(statusArgs, gardenRoot, gitEnv);
  if (!status.ok) return { detail: describeFailure(statusArgs, status) };
  return { head: head.stdout.trim(), tree: status.stdout.length === 0 ? 'clean' : 'dirty' };
}

/** Which step a capture is in, so an unexpected exception gets that step's outcome code. */
interface Progress {
  outcome: RuntimeHistoryOutcome;
  /** The records written so far, by run id. */
  records: Map<string, string>;
}

/** {@link captureNow}, with any exception turned into the outcome code of the step that threw (for every run of the batch). Never throws. */
async function captureGuarded(paths: GardenPaths, runs: RunRecord[], options: CaptureOptions): Promise<RuntimeHistoryResult[]> {
  const progress: Progress = { outcome: 'runtime_root_outside_garden', records: new Map() };
  const end = span('runtime history capture');
  try {
    return await captureNow(paths, runs, options, progress);
  } catch (error) {
    return runs.map((run) => {
      const record = progress.records.get(run.id);
      return { outcome: progress.outcome, detail: `unexpected: ${messageOf(error)}`, ...(record ? { record } : {}) };
    });
  } finally {
    end();
  }
}

function messageOf(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'an exception that cannot be printed';
  }
}

/**
 * The capture's steps, for one run or for several that waited together.
 * Each expected failure returns its outcome (for every run still in the
 * capture); before each step `progress.outcome` is set to that step's code
 * (and `progress.records` gains each record written) for {@link captureGuarded}.
 */
async function captureNow(paths: GardenPaths, runs: RunRecord[], options: CaptureOptions, progress: Progress): Promise<RuntimeHistoryResult[]> {
  const env = options.env ?? process.env;
  const git = options.runGit ?? runGit;
  const all = (result: RuntimeHistoryResult) => runs.map(() => ({ ...result }));
  progress.outcome = 'runtime_root_outside_garden';
  const related = await relateRuntimeRoot(paths);
  if ('outcome' in related) return all(related);

  progress.outcome = 'authored_repo_unavailable';
  const authored = await probeAuthored(paths.gardenRoot, related.rel, env, git);
  if ('detail' in authored) return all({ outcome: 'authored_repo_unavailable', detail: authored.detail });

  progress.outcome = 'record_write_failed';
  // Each run's own record; a run whose record cannot be written ends here, the others go on.
  const results = new Map<string, RuntimeHistoryResult>();
  const written: RuntimeHistoryRecord[] = [];
  for (const run of runs) {
    const file = historyRecordFile(paths, run.id);
    const record: RuntimeHistoryRecord = {
      run_id: run.id,
      goal: run.goal,
      plant: run.plant,
      status: run.status as RuntimeHistoryRecord['status'],
      completed_at: run.completed_at ?? '',
      authored_head: authored.head,
      authored_tree: authored.tree,
      runtime_root: related.rel,
    };
    const issues = validateRuntimeHistoryRecord(record);
    if (issues.length > 0) {
      results.set(run.id, { outcome: 'record_write_failed', detail: `${file}: ${formatIssue(issues[0]!)}` });
      continue;
    }
    try {
      await fsp.mkdir(path.dirname(file), { recursive: true });
      await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`, { fsync: true });
    } catch (error) {
      results.set(run.id, { outcome: 'record_write_failed', detail: `${file}: ${(error as Error).message}` });
      continue;
    }
    progress.records.set(run.id, file);
    written.push(record);
  }
  const finish = (result: Omit<RuntimeHistoryResult, 'record'>) =>
    runs.map((run) => results.get(run.id) ?? { ...result, record: progress.records.get(run.id)! });
  if (written.length === 0) return runs.map((run) => results.get(run.id)!);

  progress.outcome = 'runtime_repo_init_failed';
  const rt = paths.runtimeRoot;
  const gitEnv = runtimeGitEnv(env, rt);
  const init = await ensureRuntimeRepo(rt, gitEnv, git);
  if (init) return finish({ outcome: 'runtime_repo_init_failed', detail: init });

  progress.outcome = 'runtime_repo_stage_failed';
  const gitDir = path.join(rt, '.git');
  const cleared = clearStaleGitLocks(gitDir);
  const withCleared = cleared.length ? { cleared } : {};
  const lockAdvice = () => {
    const advice = describeHeldLocks(gitDir);
    return advice ? `; ${advice}` : '';
  };
  // Everything but the runs that are not closed: their files are committed by their own close, redacted.
  const unclosed = await unclosedRunDirs(paths);
  const addArgs = ['add', '-A', '--', '.', ...unclosed.map((dir) => `:(exclude,literal)${dir}`)];
  const add = await git(addArgs, rt, gitEnv);
  if (!add.ok) return finish({ outcome: 'runtime_repo_stage_failed', detail: `${describeFailure(addArgs, add)}${lockAdvice()}`, ...withCleared });

  progress.outcome = 'runtime_repo_diff_failed';
  const diffArgs = ['diff', '--cached', '--quiet', '--exit-code'];
  const diff = await git(diffArgs, rt, gitEnv);
  if (diff.ok) return finish({ outcome: 'no_runtime_changes', detail: 'the runtime tree has nothing new since the last runtime-history commit', ...withCleared });
  if (diff.exitCode !== 1 || diff.spawnError) return finish({ outcome: 'runtime_repo_diff_failed', detail: describeFailure(diffArgs, diff), ...withCleared });

  progress.outcome = 'runtime_repo_commit_failed';
  const commitArgs = ['commit', '--quiet', '--no-verify', '-m', commitMessage(written)];
  const commit = await git(commitArgs, rt, gitEnv);
  if (!commit.ok) return finish({ outcome: 'runtime_repo_commit_failed', detail: `${describeFailure(commitArgs, commit)}${lockAdvice()}`, ...withCleared });

  progress.outcome = 'runtime_repo_head_unavailable';
  const headArgs = ['rev-parse', '--verify', 'HEAD'];
  const head = await git(headArgs, rt, gitEnv);
  const id = head.stdout.trim();
  if (!head.ok || !/^[0-9a-f]{40,64}$/.test(id)) return finish({ outcome: 'runtime_repo_head_unavailable', detail: head.ok ? `git rev-parse HEAD printed ${JSON.stringify(id)}` : describeFailure(headArgs, head), ...withCleared });
  return finish({ outcome: 'committed', commit: id, ...withCleared });
}

/**
 * The runtime-history commit message: a subject, then trailers a reader can
 * query with `git log --format=%(trailers)`. One run: `pak2 run <id> closed:
 * <status>` and its Run, Goal and Plant. Runs that closed together (one
 * commit adds all their records): `pak2 runs closed: <id> (<status>), …`
 * and each run's Run, Goal and Plant in turn. Then the authored HEAD and
 * tree state, which they share (one probe).
 */
export function commitMessage(records: RuntimeHistoryRecord | readonly RuntimeHistoryRecord[]): string {
  const list = Array.isArray(records) ? (records as readonly RuntimeHistoryRecord[]) : [records as RuntimeHistoryRecord];
  const first = list[0]!;
  const subject = list.length === 1 ? `pak2 run ${first.run_id} closed: ${first.status}` : `pak2 runs closed: ${list.map((r) => `${r.run_id} (${r.status})`).join(', ')}`;
  return [
    subject,
    '',
    ...list.flatMap((r) => [`Run: ${r.run_id}`, `Goal: ${r.goal}`, `Plant: ${r.plant}`]),
    `Authored-Head: ${first.authored_head}`,
    `Authored-Tree: ${first.authored_tree}`,
  ].join('\n');
}

/**
 * Creates `<runtime-root>/.git` on first use (repo-local identity, the
 * exclude block), or checks the one there: it must be a real directory (not
 * a gitfile or symlink, which could point into the authored repo) whose git
 * dir and common dir are itself.
 *
 * A repo this git runner found ready is not asked again while nothing it
 * checked has changed ({@link repoSignature}): the capture after the first
 * runs no `rev-parse` or `config` of its own.
 *
 * @returns undefined when the repo is ready, else why not.
 */
async function ensureRuntimeRepo(rt: string, gitEnv: Record<string, string>, git: GitRunner): Promise<string | undefined> {
  const gitDir = path.join(rt, '.git');
  let stat: fs.Stats | undefined;
  try {
    stat = await fsp.lstat(gitDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return `${gitDir}: ${(error as Error).message}`;
  }
  const ready = readyRepos.get(git);
  if (stat && ready?.get(gitDir) === repoSignature(gitDir)) return undefined;
  ready?.delete(gitDir);
  const problem = await checkRuntimeRepo(rt, gitDir, stat, gitEnv, git);
  if (!problem) {
    if (!readyRepos.has(git)) readyRepos.set(git, new Map());
    readyRepos.get(git)!.set(gitDir, repoSignature(gitDir));
  }
  return problem;
}

/** The runtime repos each git runner found ready, by git dir, with the {@link repoSignature} they had then. */
const readyRepos = new WeakMap<GitRunner, Map<string, string>>();

/**
 * What {@link checkRuntimeRepo} looked at, as one string: `.git` and its
 * `objects/` and `refs/` (type, device, inode), and its `HEAD`, `config`,
 * `info/exclude` and `commondir` (type, device, inode, size, mtime; or
 * absent). A runtime-history commit changes none of them (it writes the
 * index, objects and the branch ref); a `.git` removed or replaced, a
 * gitfile or symlink in its place, an edited config (an identity unset),
 * an edited exclude file or a HEAD moved by hand changes it.
 */
function repoSignature(gitDir: string): string {
  return [
    ['', false],
    ['objects', false],
    ['refs', false],
    ['HEAD', true],
    ['config', true],
    ['info/exclude', true],
    ['commondir', true],
  ]
    .map(([name, file]) => {
      try {
        const st = fs.lstatSync(path.join(gitDir, name as string));
        const type = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : 'f';
        return file ? `${type}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}` : `${type}:${st.dev}:${st.ino}`;
      } catch {
        return '-';
      }
    })
    .join('|');
}

/** The checks of {@link ensureRuntimeRepo}, creating the repo when `stat` (of `.git`) is undefined. */
async function checkRuntimeRepo(rt: string, gitDir: string, stat: fs.Stats | undefined, gitEnv: Record<string, string>, git: GitRunner): Promise<string | undefined> {
  if (!stat) {
    // GIT_DIR without GIT_WORK_TREE: init records no core.worktree, so the repo stays valid if the garden moves.
    const { GIT_WORK_TREE: _ignored, ...initEnv } = gitEnv;
    const initArgs = ['init', '--quiet'];
    const init = await git(initArgs, rt, initEnv);
    if (!init.ok) return describeFailure(initArgs, init);
  } else if (stat.isSymbolicLink() || !stat.isDirectory()) {
    return `${gitDir} is ${stat.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}; pak2 only uses a runtime repo it owns and leaves this alone`;
  }

  const whereArgs = ['rev-parse', '--path-format=absolute', '--absolute-git-dir', '--git-common-dir'];
  const where = await git(whereArgs, rt, gitEnv);
  if (!where.ok) return describeFailure(whereArgs, where);
  const expected = await fsp.realpath(gitDir).catch(() => gitDir);
  const dirs = where.stdout.split('\n').filter(Boolean);
  for (const dir of dirs) {
    const real = await fsp.realpath(dir).catch(() => dir);
    if (real !== expected) return `${gitDir} resolves to ${real}, not itself; pak2 leaves it alone`;
  }

  const identity = await git(['config', '--local', '--get-regexp', '^user\\.(name|email)$'], rt, gitEnv);
  if (!identity.ok && identity.exitCode !== 1) return describeFailure(['config'], identity);
  const have = new Set(identity.stdout.split('\n').map((l) => l.split(' ')[0]));
  for (const [key, value] of [
    ['user.name', RUNTIME_IDENTITY.name],
    ['user.email', RUNTIME_IDENTITY.email],
  ] as const) {
    if (have.has(key)) continue;
    const setArgs = ['config', '--local', key, value];
    const set: GitResult = await git(setArgs, rt, gitEnv);
    if (!set.ok) return describeFailure(setArgs, set);
  }

  const excludeFile = path.join(gitDir, 'info', 'exclude');
  try {
    const current = await fsp.readFile(excludeFile, 'utf8').catch(() => '');
    // The block once; a pattern added in a later pak2 is appended to a repo that has the block already.
    const lines = new Set(current.split('\n'));
    const missing = [...(lines.has(RUNTIME_EXCLUDE_MARKER) ? [] : [RUNTIME_EXCLUDE_MARKER]), ...RUNTIME_EXCLUDES.filter((p) => !lines.has(p))];
    if (missing.length > 0) {
      await fsp.mkdir(path.dirname(excludeFile), { recursive: true });
      await fsp.appendFile(excludeFile, `${current && !current.endsWith('\n') ? '\n' : ''}${missing.join('\n')}\n`);
    }
  } catch (error) {
    return `${excludeFile}: ${(error as Error).message}`;
  }
  // Excluded credentials an older pak2 committed leave the index (the commits that hold them stay: docs/runtime-history/level2.md).
  const untrackArgs = ['rm', '-r', '--cached', '--quiet', '--ignore-unmatch', '--', ...UNTRACKED_DIRS];
  const untrack = await git(untrackArgs, rt, gitEnv);
  if (!untrack.ok) return describeFailure(untrackArgs, untrack);
  return undefined;
}

/** The line logged for an attempted capture that did not commit; undefined for `committed` and `runtime_root_not_split`. */
export function historyNotice(runId: string, result: RuntimeHistoryResult): string | undefined {
  const cleared = result.cleared?.length ? ` (removed ${result.cleared.length} stale git lock(s) a dead process left: ${result.cleared.join(', ')})` : '';
  if (result.outcome === 'committed' || result.outcome === 'runtime_root_not_split') return cleared ? `pak2: runtime history ${runId}: ${result.outcome}${cleared}` : undefined;
  // git's own words may quote a path an agent named: sanitized, as everything pak2 prints of text it did not write.
  const detail = result.detail ? ` (${sanitize(result.detail).replace(/\s+/g, ' ').trim()})${cleared}` : cleared;
  const line = `pak2: runtime history ${runId}: ${result.outcome}${detail}`;
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/** Told the result of every capture closeRun makes. */
export type RuntimeHistoryListener = (runId: string, result: RuntimeHistoryResult) => void;

const stderrListener: RuntimeHistoryListener = (runId, result) => {
  const line = historyNotice(runId, result);
  if (line) process.stderr.write(`${line}\n`);
};
let listener: RuntimeHistoryListener = stderrListener;

/**
 * Replaces where closeRun reports capture results (default: one stderr line
 * per attempted, non-committed capture). The workbench routes the line to
 * the run's stderr.log, since stderr would tear its frame.
 *
 * @returns a function restoring the previous listener.
 */
export function setRuntimeHistoryListener(next: RuntimeHistoryListener | undefined): () => void {
  const previous = listener;
  listener = next ?? stderrListener;
  return () => {
    listener = previous;
  };
}

/** Reports one capture result to the current listener; a throwing listener is ignored. */
export function reportRuntimeHistory(runId: string, result: RuntimeHistoryResult): void {
  try {
    listener(runId, result);
  } catch {
    // a report must never fail a close
  }
}
