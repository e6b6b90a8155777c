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

/** An ignored file (or one of git's own files) as the snapshot saw it. */
interface IgnoredFile {
  hash: string;
  mode: number;
  size: number;
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
  /** Ignored files not under an ignored directory, and git's own files (`.git/...`), by garden-relative path. */
  ignored: Map<string, IgnoredFile>;
  /** Ignored directories as git collapses them (`node_modules/`). */
  ignoredDirs: Set<string>;
  /** Every ref (`refs/heads/main`, `refs/tags/v1`) and its object. */
  refs: Map<string, string>;
  /** Tracked paths that were dirty (work tree ≠ HEAD) and untracked paths, garden-relative. */
  dirty: string[];
}

/**
 * Where a change was seen: `tree` (a file in the work tree), `ignored` (an
 * ignored file, hashed), `git` (one of git's own files), `ref` (a branch or
 * tag, as `.git/<refname>`), `index` (staged or unstaged in the index only),
 * `commit` (committed by the agent, work tree unchanged).
 */
export type ChangeKind = 'tree' | 'ignored' | 'git' | 'ref' | 'index' | 'commit';

/** One changed path between two snapshots, garden-relative. `A` added, `M` modified, `D` deleted. */
export interface TreeChange {
  status: 'A' | 'M' | 'D';
  path: string;
  kind: ChangeKind;
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
 * Takes a snapshot of the garden's work tree. Writes blob and tree objects
 * for tracked and untracked (not ignored) files into the repository's
 * object store, as `git stash` does; the operator's index is copied, never
 * written. Entries the operator's index marks assume-unchanged or
 * skip-worktree are looked at all the same.
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
  const refs = new Map<string, string>();
  for (const line of (await git(scope, ['for-each-ref', '--format=%(objectname) %(refname)'])).stdout.split('\n')) {
    const at = line.indexOf(' ');
    if (at > 0) refs.set(line.slice(at + 1), line.slice(0, at));
  }

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
    // An entry marked assume-unchanged or skip-worktree is never re-read by `git add`: unmark them in the copy.
    const flagged = (await git(scope, ['ls-files', '-v', '-z'], env)).stdout
      .split('\0')
      .filter((e) => e.length > 2 && (e.charAt(0) === 'S' || /[a-z]/.test(e.charAt(0))))
      .map((e) => e.slice(2));
    // One flag per command: update-index applies only one of the two when both are given. Paths are literal to it.
    for (const flag of ['--no-assume-unchanged', '--no-skip-worktree']) {
      for (let i = 0; i < flagged.length; i += 500) await must(scope, ['update-index', flag, '--', ...flagged.slice(i, i + 500)], env);
    }
    // git add refuses a pathspec naming an ignored path, even an exclusion: exclude only what git would otherwise add.
    const ignoredExcludes = new Set((await git(scope, ['check-ignore', '--', ...scope.excluded])).stdout.split('\n').map((l) => l.trim()).filter(Boolean));
    const addExcludes = scope.excluded.filter((p) => !ignoredExcludes.has(p)).map((p) => `:(exclude,literal)${p}`);
    await must(scope, ['add', '-A', '--', '.', ...addExcludes], env);
    if (scope.excluded.length > 0) await must(scope, ['rm', '-r', '-q', '--cached', '--ignore-unmatch', '--', ...scope.excluded.map((p) => `:(literal)${p}`)], env);
    const tree = (await must(scope, ['write-tree'], env)).trim();
    const { files: ignored, dirs: ignoredDirs } = await readIgnored(scope);
    for (const [rel, file] of await readGitInternals(scope)) ignored.set(rel, file);
    const status = await must(scope, ['--no-optional-locks', 'status', '--porcelain', '-z', '--no-renames', '--untracked-files=all', '--', '.', ...excludes(scope)]);
    const dirty = status
      .split('\0')
      .filter((e) => e.length > 3)
      .map((e) => e.slice(3));
    return { head, branch, index, tree, ignored, ignoredDirs, refs, dirty };
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
}

/** Reads one file for the ignored map: its hash, and its bytes when small enough and the budget allows. */
async function hashFile(file: string, budget: { kept: number }): Promise<IgnoredFile | undefined> {
  let stat: fs.Stats;
  try {
    stat = await fsp.lstat(file);
  } catch {
    return undefined;
  }
  if (!stat.isFile() || stat.size > HASH_IGNORED_MAX) return undefined;
  const bytes = await fsp.readFile(file);
  const entry: IgnoredFile = { hash: createHash('sha256').update(bytes).digest('hex'), mode: stat.mode & 0o7777, size: bytes.length };
  if (bytes.length <= KEEP_IGNORED_BYTES && budget.kept + bytes.length <= KEEP_IGNORED_TOTAL) {
    entry.bytes = bytes;
    budget.kept += bytes.length;
  }
  return entry;
}

async function readIgnored(scope: TreeScope): Promise<{ files: Map<string, IgnoredFile>; dirs: Set<string> }> {
  const out = await must(scope, ['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory', '--', '.', ...excludes(scope)]);
  const files = new Map<string, IgnoredFile>();
  const dirs = new Set<string>();
  const budget = { kept: 0 };
  for (const rel of out.split('\0')) {
    if (!rel || isExcluded(scope, rel.replace(/\/$/, ''))) continue;
    if (rel.endsWith('/')) {
      dirs.add(rel);
      continue;
    }
    const entry = await hashFile(path.join(scope.root, rel), budget);
    if (entry) files.set(rel, entry);
  }
  return { files, dirs };
}

/** At most this many files are read under a directory that became ignored during the run. */
const NEW_IGNORED_DIR_FILES = 10_000;

/**
 * The files under ignored directories that were not ignored directories at
 * the baseline (an agent that adds `secrets/` to .gitignore and writes
 * there): each is an added ignored file, so hiding a change behind a new
 * ignore rule hides nothing.
 */
async function filesUnderNewIgnoredDirs(scope: TreeScope, before: TreeSnapshot, after: TreeSnapshot): Promise<Map<string, IgnoredFile>> {
  const out = new Map<string, IgnoredFile>();
  const budget = { kept: 0 };
  for (const dir of after.ignoredDirs) {
    if (before.ignoredDirs.has(dir)) continue;
    const stack = [dir.replace(/\/$/, '')];
    while (stack.length && out.size < NEW_IGNORED_DIR_FILES) {
      const rel = stack.pop()!;
      const entries = await fsp.readdir(path.join(scope.root, rel), { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const child = `${rel}/${e.name}`;
        if (isExcluded(scope, child)) continue;
        if (e.isDirectory()) stack.push(child);
        else if (e.isFile()) {
          const entry = await hashFile(path.join(scope.root, child), budget);
          if (entry) out.set(child, entry);
        } else if (e.isSymbolicLink()) out.set(child, { hash: `link:${await fsp.readlink(path.join(scope.root, child)).catch(() => '')}`, mode: 0, size: 0 });
      }
    }
  }
  return out;
}

/** The files of `.git` an agent could change to alter what git does: HEAD, config, info/exclude, hooks. Refs are compared as refs. */
const GIT_INTERNAL_FILES = ['HEAD', 'config', 'info/exclude', 'info/attributes'];

/**
 * `.git` files that say what git does (hooks, config) and where HEAD is, as
 * `.git/...` paths, when the repository's git directory is `<root>/.git`
 * (a garden that is a subdirectory of its repository has none to check).
 * Objects, logs and the index are not looked at (the index is compared as a
 * tree, refs by their objects).
 */
async function readGitInternals(scope: TreeScope): Promise<Map<string, IgnoredFile>> {
  const out = new Map<string, IgnoredFile>();
  const gitDir = path.join(scope.root, '.git');
  const stat = await fsp.stat(gitDir).catch(() => undefined);
  if (!stat?.isDirectory()) return out;
  const names = [...GIT_INTERNAL_FILES];
  const hooks = await fsp.readdir(path.join(gitDir, 'hooks')).catch(() => [] as string[]);
  names.push(...hooks.map((h) => `hooks/${h}`));
  const budget = { kept: 0 };
  for (const name of names) {
    const entry = await hashFile(path.join(gitDir, name), budget);
    if (entry) out.set(`.git/${name}`, entry);
  }
  return out;
}

function nameStatus(out: string): { status: TreeChange['status']; path: string }[] {
  const parts = out.split('\0');
  const list: { status: TreeChange['status']; path: string }[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const code = parts[i]!.charAt(0);
    const rel = parts[i + 1]!;
    if (rel) list.push({ status: code === 'A' ? 'A' : code === 'D' ? 'D' : 'M', path: rel });
  }
  return list;
}

/**
 * What changed from `before` to `after`, sorted by path: the work tree's
 * files, ignored files (and those under a directory that became ignored),
 * git's own files, refs (`.git/refs/...`), and paths that changed only in
 * the index or only through a commit (the work tree the same).
 */
export async function diffSnapshots(scope: TreeScope, before: TreeSnapshot, after: TreeSnapshot): Promise<TreeChange[]> {
  const byPath = new Map<string, TreeChange>();
  const add = (c: TreeChange) => {
    if (isExcluded(scope, c.path)) return;
    const had = byPath.get(c.path);
    // A path seen twice (a file that became ignored shows deleted from the tree and present as ignored): one change, modified.
    if (had) byPath.set(c.path, { ...had, status: had.status === c.status ? had.status : 'M' });
    else byPath.set(c.path, c);
  };
  const diff = (a: string, b: string) => must(scope, ['diff', '--no-ext-diff', '--no-textconv', '--relative', '--no-renames', '--name-status', '-z', a, b]);
  if (before.tree !== after.tree) for (const c of nameStatus(await diff(before.tree, after.tree))) add({ ...c, kind: 'tree' });
  const kindOf = (rel: string): ChangeKind => (rel.startsWith('.git/') ? 'git' : 'ignored');
  const afterIgnored = new Map([...after.ignored, ...(await filesUnderNewIgnoredDirs(scope, before, after))]);
  for (const [rel, file] of before.ignored) {
    const now = afterIgnored.get(rel);
    if (!now) add({ status: 'D', path: rel, kind: kindOf(rel) });
    else if (now.hash !== file.hash || now.mode !== file.mode) add({ status: 'M', path: rel, kind: kindOf(rel) });
  }
  for (const rel of afterIgnored.keys()) if (!before.ignored.has(rel)) add({ status: 'A', path: rel, kind: kindOf(rel) });
  after.ignored = afterIgnored;
  for (const [ref, id] of before.refs) {
    const now = after.refs.get(ref);
    if (now === undefined) add({ status: 'D', path: `.git/${ref}`, kind: 'ref' });
    else if (now !== id) add({ status: 'M', path: `.git/${ref}`, kind: 'ref' });
  }
  for (const ref of after.refs.keys()) if (!before.refs.has(ref)) add({ status: 'A', path: `.git/${ref}`, kind: 'ref' });
  // What the agent staged or committed is its change too, even where the work tree ends as it began.
  if (before.index && after.index && before.index !== after.index) {
    for (const c of nameStatus(await diff(before.index, after.index))) if (!byPath.has(c.path)) add({ status: 'M', path: c.path, kind: 'index' });
  }
  if (before.head && after.head && before.head !== after.head) {
    const committed = await git(scope, ['diff', '--no-ext-diff', '--no-textconv', '--relative', '--no-renames', '--name-status', '-z', before.head, after.head]);
    if (committed.ok) for (const c of nameStatus(committed.stdout)) if (!byPath.has(c.path)) add({ status: 'M', path: c.path, kind: 'commit' });
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

const WHAT: Record<Exclude<ChangeKind, 'tree'>, string> = {
  ignored: 'an ignored file; its contents are not recorded',
  git: "one of git's own files; its contents are not recorded",
  ref: 'a ref',
  index: 'changed in the index only (staged or unstaged by the agent)',
  commit: 'committed by the agent; the work tree is as it was',
};

/**
 * The patch of the changes from `before` to `after`: first one `# pak2:`
 * line per change git cannot show as a diff (ignored files and git's own —
 * named, their contents never written, so a `.env` reaches no record —
 * refs, index-only and commit-only paths; `git apply` skips these lines),
 * then git's binary diff of the work tree's changed files (an untracked
 * file's whole contents as an added file).
 */
export async function patchOf(scope: TreeScope, before: TreeSnapshot, after: TreeSnapshot, changes: TreeChange[]): Promise<string> {
  const verbs = { A: 'added', M: 'modified', D: 'deleted' } as const;
  const notes = changes
    .filter((c) => c.kind !== 'tree')
    .map((c) => {
      if (c.kind === 'ref') {
        const ref = c.path.slice('.git/'.length);
        return `# pak2: ${verbs[c.status]} ${ref} (${before.refs.get(ref)?.slice(0, 12) ?? 'none'} → ${after.refs.get(ref)?.slice(0, 12) ?? 'none'})`;
      }
      const size = after.ignored.get(c.path)?.size;
      return `# pak2: ${verbs[c.status]} ${c.path} — ${WHAT[c.kind as Exclude<ChangeKind, 'tree'>]}${size !== undefined && c.status !== 'D' && (c.kind === 'ignored' || c.kind === 'git') ? ` (${size} bytes)` : ''}`;
    });
  const tracked = changes.filter((c) => c.kind === 'tree').map((c) => `:(literal)${c.path}`);
  let patch = notes.length ? `${notes.join('\n')}\n` : '';
  if (tracked.length > 0) patch += await must(scope, ['diff', '--no-ext-diff', '--no-textconv', '--binary', '--relative', '--no-renames', before.tree, after.tree, '--', ...tracked]);
  return patch;
}

/** What a rollback did: git's output, and the paths it could not put back. */
export interface RollbackResult {
  stdout: string;
  stderr: string;
  unrestored: string[];
}

/**
 * True when no directory on the way from the root to `rel` is a symbolic
 * link: a path under a link the agent made must never be written or
 * removed through it (that would touch whatever the link points at).
 */
async function reachable(root: string, rel: string): Promise<boolean> {
  const parts = rel.split('/');
  let dir = root;
  for (const part of parts.slice(0, -1)) {
    dir = path.join(dir, part);
    const st = await fsp.lstat(dir).catch(() => undefined);
    if (!st) return true; // missing: created fresh below the root
    if (st.isSymbolicLink() || !st.isDirectory()) return false;
  }
  return true;
}

/** Removes `rel` itself (a link is unlinked, never followed; a directory with its contents). */
async function removeEntry(root: string, rel: string): Promise<void> {
  const file = path.join(root, rel);
  const st = await fsp.lstat(file).catch(() => undefined);
  if (!st) return;
  if (st.isDirectory()) await fsp.rm(file, { recursive: true, force: true });
  else await fsp.unlink(file);
}

/**
 * Puts every change back as `before` had it (docs/guarded-runs/level2.md,
 * "Rollback"): refs moved, made or deleted by the agent are set back (and
 * HEAD with git's own files), a changed index is read back from its tree;
 * then in the work tree what the agent added is removed first — a link
 * unlinked, never followed — and what it changed or deleted is written
 * from the baseline snapshot (the operator's dirty bytes included);
 * ignored files come back from pak2's copy. Nothing is written or removed
 * through a directory link, and no path outside `changes` is touched.
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

  // Refs first (a commit, a reset, a new tag), then git's own files (HEAD, config, hooks).
  for (const c of changes.filter((x) => x.kind === 'ref')) {
    const ref = c.path.slice('.git/'.length);
    const was = before.refs.get(ref);
    const args = was ? ['update-ref', '-m', 'pak2 guarded run rollback', ref, was] : ['update-ref', '-d', ref];
    note(args, await git(scope, args));
  }
  for (const c of changes.filter((x) => x.kind === 'git')) await restoreHashed(scope, before, c, out, err, unrestored);
  if (before.index && before.index !== after.index) {
    const args = ['read-tree', before.index];
    note(args, await git(scope, args));
  }

  const worktree = changes.filter((c) => c.kind === 'tree' || c.kind === 'ignored');
  // What the agent added goes first, shallowest first: a link it put where a directory was is unlinked before anything is written there.
  const added = worktree.filter((c) => c.status === 'A').sort((a, b) => a.path.length - b.path.length);
  for (const c of added) {
    if (!(await reachable(scope.root, c.path))) continue; // under a link or file that is itself being removed
    await removeEntry(scope.root, c.path).catch((e: Error) => err.push(`rm ${c.path}: ${e.message}`));
    out.push(`removed ${c.path}`);
  }
  const restore = worktree.filter((c) => c.kind === 'tree' && c.status !== 'A').map((c) => c.path);
  if (restore.length > 0) {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'pak2-rollback-'));
    try {
      const env = { GIT_INDEX_FILE: path.join(tmp, 'index') };
      const read = ['read-tree', before.tree];
      note(read, await git(scope, read, env));
      const safe: string[] = [];
      for (const rel of restore) {
        if (!(await reachable(scope.root, rel))) {
          unrestored.push(rel);
          err.push(`${rel}: a directory on its path is a link or a file; not written through it`);
          continue;
        }
        // Whatever the agent put there (a directory where a file was, a link) goes first.
        await removeEntry(scope.root, rel).catch(() => undefined);
        safe.push(rel);
      }
      for (let i = 0; i < safe.length; i += 500) {
        const args = ['checkout-index', '-f', '-q', '--', ...safe.slice(i, i + 500)];
        note(args, await git(scope, args, env));
      }
    } finally {
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  }
  for (const c of worktree.filter((x) => x.kind === 'ignored' && x.status !== 'A')) await restoreHashed(scope, before, c, out, err, unrestored);
  await removeEmptyParents(scope, added.map((c) => c.path));
  return { stdout: out.join('\n'), stderr: err.join('\n'), unrestored };
}

/** Writes back an ignored file or one of git's own from pak2's copy (or removes it when the agent made it). */
async function restoreHashed(scope: TreeScope, before: TreeSnapshot, c: TreeChange, out: string[], err: string[], unrestored: string[]): Promise<void> {
  const file = path.join(scope.root, c.path);
  if (!(await reachable(scope.root, c.path))) {
    unrestored.push(c.path);
    err.push(`${c.path}: a directory on its path is a link or a file; not written through it`);
    return;
  }
  if (c.status === 'A') {
    await removeEntry(scope.root, c.path).catch((e: Error) => err.push(`rm ${c.path}: ${e.message}`));
    out.push(`removed ${c.path}`);
    return;
  }
  const was = before.ignored.get(c.path);
  if (!was?.bytes) {
    unrestored.push(c.path);
    err.push(`${c.path}: larger than ${KEEP_IGNORED_BYTES} bytes; pak2 kept no copy to restore`);
    return;
  }
  await removeEntry(scope.root, c.path).catch(() => undefined);
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, was.bytes, { mode: was.mode });
  await fsp.chmod(file, was.mode).catch(() => undefined);
  out.push(`restored ${c.path}`);
}

/** Removes directories left empty by removed paths, deepest first, never the root; a non-empty one stays. */
async function removeEmptyParents(scope: TreeScope, removed: string[]): Promise<void> {
  const dirs = new Set<string>();
  for (const rel of removed) {
    for (let d = path.posix.dirname(rel); d !== '.' && d !== '/' && d !== ''; d = path.posix.dirname(d)) dirs.add(d);
  }
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    if (!(await reachable(scope.root, `${d}/x`))) continue;
    await fsp.rmdir(path.join(scope.root, d)).catch(() => undefined); // fails (kept) unless empty
  }
}

/** The most bytes of git's own files a stored snapshot keeps in all; past it (and for every ignored file) a file keeps its hash only, and a rollback from it names the file instead of restoring it. */
export const STORED_SNAPSHOT_BYTES_MAX = 8 * 1024 * 1024;

/**
 * A snapshot as plain JSON, for a file in the run directory
 * (`guard-baseline.json`, `guard-after.json`; docs/guarded-runs/level2.md,
 * "Interrupted runs"): maps as entry lists; the bytes of git's own files
 * as base64, at most {@link STORED_SNAPSHOT_BYTES_MAX} of them; ignored
 * files by hash only (their bytes, a .env's secrets, never leave them).
 */
export function snapshotToJson(snapshot: TreeSnapshot): unknown {
  let budget = STORED_SNAPSHOT_BYTES_MAX;
  const ignored = [...snapshot.ignored].map(([rel, file]) => {
    // Only git's own files keep their bytes: an ignored file (a .env) is never copied into the run directory.
    const keep = rel.startsWith('.git/') && file.bytes && file.bytes.length <= budget;
    if (keep) budget -= file.bytes!.length;
    return [rel, { hash: file.hash, mode: file.mode, size: file.size, ...(keep ? { bytes: file.bytes!.toString('base64') } : {}) }];
  });
  return { head: snapshot.head, branch: snapshot.branch, index: snapshot.index, tree: snapshot.tree, ignored, ignoredDirs: [...snapshot.ignoredDirs], refs: [...snapshot.refs], dirty: snapshot.dirty };
}

/**
 * The snapshot {@link snapshotToJson} wrote.
 *
 * @throws Error when `value` is not one.
 */
export function snapshotFromJson(value: unknown): TreeSnapshot {
  const v = value as { head: string | null; branch: string | null; index: string | null; tree: string; ignored: [string, { hash: string; mode: number; size: number; bytes?: string }][]; ignoredDirs: string[]; refs: [string, string][]; dirty: string[] };
  if (!v || typeof v.tree !== 'string' || !Array.isArray(v.ignored) || !Array.isArray(v.refs) || !Array.isArray(v.ignoredDirs) || !Array.isArray(v.dirty)) throw new Error('not a stored tree snapshot');
  return {
    head: v.head,
    branch: v.branch,
    index: v.index,
    tree: v.tree,
    ignored: new Map(v.ignored.map(([rel, f]) => [rel, { hash: f.hash, mode: f.mode, size: f.size, ...(f.bytes !== undefined ? { bytes: Buffer.from(f.bytes, 'base64') } : {}) }])),
    ignoredDirs: new Set(v.ignoredDirs),
    refs: new Map(v.refs),
    dirty: v.dirty,
  };
}
