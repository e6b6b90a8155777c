import fs from 'node:fs';
import path from 'node:path';
import { git } from '../worktree/index.js';

/** How moving the base branch went. */
export type MoveResult =
  | { kind: 'moved'; checkout?: string }
  | { kind: 'base_moved'; tip: string | undefined }
  | { kind: 'waiting'; checkout: string; files: string[]; message: string };

/** The worktrees of a repository and what each has checked out (`git worktree list --porcelain`). */
async function worktrees(repo: string, env: NodeJS.ProcessEnv): Promise<{ path: string; head?: string; branch?: string }[]> {
  const listed = await git(['worktree', 'list', '--porcelain', '-z'], repo, env);
  const out: { path: string; head?: string; branch?: string }[] = [];
  for (const field of listed.stdout.split('\0')) {
    if (field.startsWith('worktree ')) out.push({ path: field.slice('worktree '.length) });
    else if (field.startsWith('HEAD ') && out.length) out.at(-1)!.head = field.slice(5);
    else if (field.startsWith('branch ') && out.length) out.at(-1)!.branch = field.slice('branch refs/heads/'.length);
  }
  return out;
}

/**
 * Paths a landing from `onto` to `result` would add that already sit in
 * `checkout` (whose HEAD is `onto`): not tracked at `onto`, so each is an
 * untracked or ignored file of the operator's, which a fast-forward could
 * overwrite. (A path the landing modifies or deletes is tracked: git itself
 * refuses to overwrite its uncommitted changes.)
 */
async function untrackedInTheWay(checkout: string, onto: string, result: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const added = (await git(['diff', '--name-only', '-z', '--no-renames', '--diff-filter=A', onto, result], checkout, env)).stdout.split('\0').filter(Boolean);
  const inWay = (rel: string) => {
    // Any part of the path that exists is in the way: a file where the landing needs a directory, too.
    const parts = rel.split('/');
    for (let i = parts.length; i > 0; i -= 1) {
      const stat = fs.lstatSync(path.join(checkout, ...parts.slice(0, i)), { throwIfNoEntry: false });
      if (stat) return i === parts.length || !stat.isDirectory();
    }
    return false;
  };
  return added.filter(inWay).sort();
}

/**
 * Moves the base branch from `onto` to `result` (docs/landing/level2.md,
 * "The operator's checkout"), never between: a checkout (the operator's own,
 * or any worktree) with the base branch checked out is fast-forwarded by
 * git itself (`git merge --ff-only`), which never overwrites an uncommitted
 * change of a tracked file; before it, pak2 refuses when an untracked or
 * ignored file of that checkout sits where the landing writes one. Refused,
 * the landing waits (`waiting`, naming the files) and nothing moved. With
 * the base branch checked out nowhere, the ref moves by compare-and-swap
 * (`git update-ref <new> <old>`). Either way, a base that moved since
 * `onto` was read is `base_moved` (the landing merges again).
 */
export async function moveBase(repo: string, base: string, onto: string, result: string, reason: string, env: NodeJS.ProcessEnv): Promise<MoveResult> {
  const holder = (await worktrees(repo, env)).find((w) => w.branch === base);
  if (!holder) {
    const moved = await git(['update-ref', '-m', reason, `refs/heads/${base}`, result, onto], repo, env, [1, 128]);
    if (moved.ok) return { kind: 'moved' };
    const tip = await git(['rev-parse', '--verify', '--quiet', `refs/heads/${base}`], repo, env, [1, 128]);
    return { kind: 'base_moved', tip: tip.stdout.trim() || undefined };
  }
  const checkout = holder.path;
  const head = (await git(['rev-parse', 'HEAD'], checkout, env)).stdout.trim();
  if (head !== onto) return { kind: 'base_moved', tip: head };
  const inTheWay = await untrackedInTheWay(checkout, onto, result, env);
  if (inTheWay.length > 0) {
    return { kind: 'waiting', checkout, files: inTheWay, message: `${checkout} has ${base} checked out with untracked or ignored files where the landing writes: ${inTheWay.slice(0, 5).join(', ')}${inTheWay.length > 5 ? ` (+${inTheWay.length - 5} more)` : ''}. Move them aside (or commit them), and the landing goes on (a running coordinator tries again every few seconds; else the next pak2 cycle).` };
  }
  const merged = await git(['merge', '--ff-only', '--quiet', result], checkout, env, [1, 128]);
  if (merged.ok) return { kind: 'moved', checkout };
  const now = (await git(['rev-parse', 'HEAD'], checkout, env)).stdout.trim();
  if (now !== onto) return { kind: 'base_moved', tip: now };
  // git named the files whose uncommitted changes the landing would overwrite (one per line, indented).
  const files = merged.stderr
    .split('\n')
    .filter((l) => /^\s+\S/.test(l) && !/^\s*(Please|Aborting|hint:)/.test(l))
    .map((l) => l.trim());
  const why = files.length ? `uncommitted changes to ${files.slice(0, 5).join(', ')}${files.length > 5 ? ` (+${files.length - 5} more)` : ''} would be overwritten` : (merged.stderr.trim().split('\n')[0] ?? 'git refused the fast-forward');
  return { kind: 'waiting', checkout, files, message: `${path.resolve(checkout)} has ${base} checked out and ${why}. Commit or stash those changes (git stash), and the landing goes on (a running coordinator tries again every few seconds; else the next pak2 cycle); nothing of yours was touched.` };
}
