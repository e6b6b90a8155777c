import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeFailure, runGit, type GitResult } from '../history/index.js';

/**
 * A guarded run's view of the garden's git work tree (seed 001, "baseline",
 * "scope_check", "rollback"). The whole tree is snapshotted into a git tree
 * object through a private index (the operator's index, HEAD and files are
 * not touched), so what changed is a diff of two trees whatever tool made
 * the change, the agent's shell included. Ignored files are not put in git
 * (a `.env` must never reach the object store): they are hashed, and small
 * ones kept in memory so a rollback can restore them.
 */

/** Ignored files larger than this are hashed but not kept for restore (bytes). */
const KEEP_IGNORED_BYTES = 1024 * 1024;
/** At most this many bytes of ignored files are kept in memory per snapshot. */
const KEEP_IGNORED_TOTAL = 64 * 1024 * 1024;
/** Ignored files larger than this are not looked at (bytes): build artefacts, not work. */
const HASH_IGNORED_MAX = 16 * 1024 * 1024;

/** Where the tree is and what pak2 itself writes in it. `excluded` are garden-relative directory paths (`.runtime`, `plants/gardener`). */
export interface TreeScope {
  /** The garden root; every git command runs here, paths are relative to it. */
  root: string;
  excluded: string[];
  /** git's environment (authoredGitEnv). */
  env: Record<string, string>;
}

/** An ignored file as the snapshot saw it. */
interface IgnoredFile {
  hash: string;
  mode: number;
  /** Its bytes, when small enough to restore. */
  bytes?: Buffer;
}

/** The tree before (or after) the agent. */
export interface TreeSnapshot {
  /** HEAD commit, null in a repository without commits. */
  head: string | null;
  /** Current branch name, null when HEAD is detached. */
  branch: string | null;
  /** The operator's index as a tree, null when it cannot be written (unmerged entries). */
  index: string | null;
  /** The work tree (tracked and untracked, not ignored) as a tree object. */
  tree: string;
  /** Ignored files (not under an ignored directory), by garden-relative path. */
  ignored: Map<string, IgnoredFile>;
  /** Tracked paths that were dirty (work tree ≠ HEAD) and untracked paths, garden-relative. */
  dirty: string[];
}

/** One changed path between two snapshots, garden-relative. `A` added, `M` modified, `D` deleted, `T` type change. */
export interface TreeChange {
  status: 'A' | 'M' | 'D' | 'T';
  path: string;
  ignored: boolean;
}

/** A git step that failed, with its one-line description. */
export class GuardGitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GuardGitError';
  }
}

async function git(scope: TreeScope, args: string[], extraEnv: Record<string, string> = {}): Promise<GitResult> {
  return runGit(args, scope.root, { ...scope.env, ...extraEnv });
}

async function must(scope: TreeScope, args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  const result = await git(scope, args, extraEnv);
  if (!result.ok) throw new GuardGitError(describeFailure(args, result));
  return result.stdout;
}

function excludes(scope: TreeScope): string[] {
  return scope.excluded.map((p) => `:(exclude,literal)${p}`);
}

function isExcluded(scope: TreeScope, rel: string): boolean {
  return scope.excluded.some((e) => rel === e || rel.startsWith(`${e.replace(/\/$/, '')}/`));
}

/**
 * True when `root` is inside a git work tree (not bare). Never throws.
 */
export async function isGitWorkTree(root: string, env: Record<string, string>): Promise<boolean> {
  const result = await runGit(['rev-parse', '--is-inside-work-tree'], root, env);
  return result.ok && result.stdout.trim() === 'true';
}

/**
 * Takes a snapshot of the garden's work tree. Writes blob and tree objects
 * for tracked and untracked (not ignored) files into the repository's
 * object store, as `git stash` does; the operator's index is copied, never
 * written.
 *
 * @throws GuardGitError naming the git step that failed (not a repository,
 *   git missing, a corrupt index…).
 */
export async function snapshotTree(scope: TreeScope): Promise<TreeSnapshot> {
  const headResult = await git(scope, ['rev-parse', '--verify', '-q', 'HEAD']);
  const head = headResult.ok ? headResult.stdout.trim() : null;
  const branchResult = await git(scope, ['symbolic-ref', '-q', '--short', 'HEAD']);
  const branch = branchResult.ok ? branchResult.stdout.trim() || null : null;
  const indexResult = await git(scope, ['write-tree']);
  const index = indexResult.ok ? indexResult.stdout.trim() : null;

  const indexPath = path.resolve(scope.root, (await must(scope, ['rev-parse', '--git-path', 'index'])).trim());
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'pak2-guard-'));
  try {
    const tempIndex = path.join(tmp, 'index');
    // Starting from the operator's index keeps git's stat cache: only changed files are hashed again.
    // The copy keeps the index's mtime, which git's racy-entry check compares file times with: a file
    // changed in the same second as the index was written is then hashed, not trusted by its stat.
    try {
      await fsp.copyFile(indexPath, tempIndex);
      const st = await fsp.stat(indexPath);
      await fsp.utimes(tempIndex, st.atime, st.mtime);
    } catch {
      // no index yet (a repository without commits): every file is hashed
    }
    const env = { GIT_INDEX_FILE: tempIndex };
    // git add refuses a pathspec naming an ignored path, even an exclusion: exclude only what git would otherwise add.
    const ignoredExcludes = new Set((await git(scope, ['check-ignore', '--', ...scope.excluded])).stdout.split('\n').map((l) => l.trim()).filter(Boolean));
    const addExcludes = scope.excluded.filter((p) => !ignoredExcludes.has(p)).map((p) => `:(exclude,literal)${p}`);
    await must(scope, ['add', '-A', '--', '.', ...addExcludes], env);
    if (scope.excluded.length > 0) await must(scope, ['rm', '-r', '-q', '--cached', '--ignore-unmatch', '--', ...scope.excluded.map((p) => `:(literal)${p}`)], env);
    const tree = (await must(scope, ['write-tree'], env)).trim();
    const ignored = await readIgnored(scope);
    for (const [rel, file] of await readGitInternals(scope, branch)) ignored.set(rel, file);
    const status = await must(scope, ['--no-optional-locks', 'status', '--porcelain', '-z', '--no-renames', '--untracked-files=all', '--', '.', ...excludes(scope)]);
    const dirty = status
      .split('\0')
      .filter((e) => e.length > 3)
      .map((e) => e.slice(3));
    return { head, branch, index, tree, ignored, dirty: await relativeToRoot(scope, dirty) };
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
}

/** `git status` paths are relative to the cwd already; kept as a seam for prefix handling. */
async function relativeToRoot(_scope: TreeScope, paths: string[]): Promise<string[]> {
  return paths;
}

async function readIgnored(scope: TreeScope): Promise<Map<string, IgnoredFile>> {
  const out = await must(scope, ['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory', '--', '.', ...excludes(scope)]);
  const ignored = new Map<string, IgnoredFile>();
  let kept = 0;
  for (const rel of out.split('\0')) {
    if (!rel || rel.endsWith('/') || isExcluded(scope, rel)) continue;
    const file = path.join(scope.root, rel);
    let stat: fs.Stats;
    try {
      stat = await fsp.lstat(file);
    } catch {
      continue;
    }
    if (!stat.isFile() || stat.size > HASH_IGNORED_MAX) continue;
    const bytes = await fsp.readFile(file);
    const entry: IgnoredFile = { hash: createHash('sha256').update(bytes).digest('hex'), mode: stat.mode & 0o7777 };
    if (bytes.length <= KEEP_IGNORED_BYTES && kept + bytes.length <= KEEP_IGNORED_TOTAL) {
      entry.bytes = bytes;
      kept += bytes.length;
    }
    ignored.set(rel, entry);
  }
  return ignored;
}

/** The files of `.git` an agent could change besides objects: HEAD, config, info/exclude, hooks, the branch's loose ref. */
const GIT_INTERNAL_FILES = ['HEAD', 'config', 'info/exclude', 'packed-refs'];

/**
 * `.git` files that say what git does (hooks, config) and where HEAD is, as
 * `.git/...` paths, when the repository's git directory is `<root>/.git`
 * (a garden that is a subdirectory of its repository has none to check).
 * Objects, logs and the index are not looked at (the index is compared as a
 * tree, HEAD by its commit).
 */
async function readGitInternals(scope: TreeScope, branch: string | null): Promise<Map<string, IgnoredFile>> {
  const out = new Map<string, IgnoredFile>();
  const gitDir = path.join(scope.root, '.git');
  const stat = await fsp.stat(gitDir).catch(() => undefined);
  if (!stat?.isDirectory()) return out;
  const names = [...GIT_INTERNAL_FILES, ...(branch ? [`refs/heads/${branch}`] : [])];
  const hooks = await fsp.readdir(path.join(gitDir, 'hooks')).catch(() => [] as string[]);
  names.push(...hooks.map((h) => `hooks/${h}`));
  for (const name of names) {
    const file = path.join(gitDir, name);
    const st = await fsp.lstat(file).catch(() => undefined);
    if (!st?.isFile() || st.size > KEEP_IGNORED_BYTES) continue;
    const bytes = await fsp.readFile(file);
    out.set(`.git/${name}`, { hash: createHash('sha256').update(bytes).digest('hex'), mode: st.mode & 0o7777, bytes });
  }
  return out;
}

/** What changed from `before` to `after`, sorted by path. */
export async function diffSnapshots(scope: TreeScope, before: TreeSnapshot, after: TreeSnapshot): Promise<TreeChange[]> {
  const changes: TreeChange[] = [];
  if (before.tree !== after.tree) {
    const out = await must(scope, ['diff', '--no-ext-diff', '--no-textconv', '--relative', '--no-renames', '--name-status', '-z', before.tree, after.tree]);
    const parts = out.split('\0');
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const status = parts[i]!.charAt(0) as TreeChange['status'];
      const rel = parts[i + 1]!;
      if (rel && !isExcluded(scope, rel)) changes.push({ status: status === 'T' ? 'M' : status, path: rel, ignored: false });
    }
  }
  for (const [rel, file] of before.ignored) {
    const now = after.ignored.get(rel);
    if (!now) changes.push({ status: 'D', path: rel, ignored: true });
    else if (now.hash !== file.hash) changes.push({ status: 'M', path: rel, ignored: true });
  }
  for (const rel of after.ignored.keys()) if (!before.ignored.has(rel)) changes.push({ status: 'A', path: rel, ignored: true });
  // A file that moved between tracked/untracked and ignored shows on both sides: one entry per path.
  const seen = new Map<string, TreeChange>();
  for (const c of changes) if (!seen.has(c.path) || !c.ignored) seen.set(c.path, c);
  return [...seen.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The patch of `paths` from `before` to `after`: git's binary diff of the
 * tracked and untracked files (an untracked file's whole contents as an added
 * file), then ignored files as added-file sections.
 */
export async function patchOf(scope: TreeScope, before: TreeSnapshot, after: TreeSnapshot, changes: TreeChange[]): Promise<string> {
  const tracked = changes.filter((c) => !c.ignored).map((c) => `:(literal)${c.path}`);
  let patch = '';
  if (tracked.length > 0) patch += await must(scope, ['diff', '--no-ext-diff', '--no-textconv', '--binary', '--relative', '--no-renames', before.tree, after.tree, '--', ...tracked]);
  for (const c of changes.filter((x) => x.ignored)) {
    if (c.status === 'D') {
      patch += `diff --git a/${c.path} b/${c.path}\ndeleted file (ignored by git; ${before.ignored.get(c.path)?.bytes ? 'restored from pak2\'s copy' : 'too large to keep'})\n`;
      continue;
    }
    const bytes = await fsp.readFile(path.join(scope.root, c.path)).catch(() => Buffer.alloc(0));
    const text = bytes.includes(0) ? `(binary, ${bytes.length} bytes)\n` : bytes.toString('utf8');
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const what = c.path.startsWith('.git/') ? "git's own file" : 'ignored by git';
    patch += `diff --git a/${c.path} b/${c.path}\n${c.status === 'A' ? `new file (${what})` : `modified file (${what})`}\n--- ${c.status === 'A' ? '/dev/null' : `a/${c.path}`}\n+++ b/${c.path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}`).join('\n')}\n`;
  }
  return patch;
}

/** What a rollback did: git's output, and the paths it could not put back. */
export interface RollbackResult {
  stdout: string;
  stderr: string;
  unrestored: string[];
}

/**
 * Puts every changed path back as `before` had it: files present before are
 * written from the snapshot (the operator's dirty bytes included), files the
 * agent added are removed (and directories left empty by that), ignored
 * files are restored from memory; a moved branch is set back and a changed
 * index re-read from its tree. Touches no path outside `changes`.
 */
export async function rollback(scope: TreeScope, before: TreeSnapshot, after: TreeSnapshot, changes: TreeChange[]): Promise<RollbackResult> {
  const out: string[] = [];
  const err: string[] = [];
  const unrestored: string[] = [];
  const note = (args: string[], r: GitResult) => {
    out.push(`$ git ${args.join(' ')}`);
    if (r.stdout.trim()) out.push(r.stdout.trim());
    if (!r.ok) err.push(describeFailure(args, r));
  };

  // The branch the agent moved (a commit, a reset) goes back first, so the files below are compared with the operator's HEAD.
  if (before.head && after.head !== before.head) {
    const args = before.branch && after.branch === before.branch ? ['update-ref', '-m', 'pak2 guarded run rollback', `refs/heads/${before.branch}`, before.head] : ['update-ref', '--no-deref', '-m', 'pak2 guarded run rollback', 'HEAD', before.head];
    note(args, await git(scope, args));
    if (before.branch && after.branch !== before.branch) {
      const sym = ['symbolic-ref', 'HEAD', `refs/heads/${before.branch}`];
      note(sym, await git(scope, sym));
    }
  }
  if (before.index && before.index !== after.index) {
    const args = ['read-tree', before.index];
    note(args, await git(scope, args));
  }

  const restore = changes.filter((c) => !c.ignored && c.status !== 'A').map((c) => c.path);
  const remove = changes.filter((c) => !c.ignored && c.status === 'A').map((c) => c.path);
  if (restore.length > 0) {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'pak2-rollback-'));
    try {
      const env = { GIT_INDEX_FILE: path.join(tmp, 'index') };
      const read = ['read-tree', before.tree];
      note(read, await git(scope, read, env));
      for (const rel of restore) {
        // A directory the agent put where a file was must go first.
        await fsp.rm(path.join(scope.root, rel), { recursive: true, force: true }).catch(() => undefined);
      }
      for (let i = 0; i < restore.length; i += 500) {
        const args = ['checkout-index', '-f', '-q', '--', ...restore.slice(i, i + 500)];
        note(args, await git(scope, args, env));
      }
    } finally {
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  }
  for (const rel of remove) {
    await fsp.rm(path.join(scope.root, rel), { force: true, recursive: true }).catch((e: Error) => err.push(`rm ${rel}: ${e.message}`));
    out.push(`removed ${rel}`);
  }
  for (const c of changes.filter((x) => x.ignored)) {
    const file = path.join(scope.root, c.path);
    if (c.status === 'A') {
      await fsp.rm(file, { force: true }).catch((e: Error) => err.push(`rm ${c.path}: ${e.message}`));
      out.push(`removed ${c.path}`);
      continue;
    }
    const was = before.ignored.get(c.path);
    if (!was?.bytes) {
      unrestored.push(c.path);
      err.push(`${c.path}: ignored file larger than ${KEEP_IGNORED_BYTES} bytes; pak2 kept no copy to restore`);
      continue;
    }
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, was.bytes, { mode: was.mode });
    await fsp.chmod(file, was.mode).catch(() => undefined);
    out.push(`restored ${c.path}`);
  }
  await removeEmptyParents(scope, [...remove, ...changes.filter((c) => c.ignored && c.status === 'A').map((c) => c.path)], before);
  return { stdout: out.join('\n'), stderr: err.join('\n'), unrestored };
}

/** Removes directories that only the removed files made, deepest first, never the root or a directory that existed before (non-empty). */
async function removeEmptyParents(scope: TreeScope, removed: string[], _before: TreeSnapshot): Promise<void> {
  const dirs = new Set<string>();
  for (const rel of removed) {
    for (let d = path.posix.dirname(rel); d !== '.' && d !== '/' && d !== ''; d = path.posix.dirname(d)) dirs.add(d);
  }
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    await fsp.rmdir(path.join(scope.root, d)).catch(() => undefined); // fails (kept) unless empty
  }
}
