import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { git, identityArgs } from '../worktree/index.js';

/** What merging a run's branch onto the base tip gave, computed without a work tree. */
export type MergeResult =
  | { kind: 'merged'; result: string; fastForward: boolean; upToDate: boolean }
  | { kind: 'conflict'; paths: string[] };

/** The plant document pak2 merges itself, thread by thread (JSON: a line-wise union would break it): `<plants>/<plant>/memory/active-threads.json`. */
function isActiveThreads(file: string, plantsRel: string): boolean {
  return file.startsWith(`${plantsRel}/`) && /^[^/]+\/memory\/active-threads\.json$/.test(file.slice(plantsRel.length + 1));
}

/**
 * Merges `head` (a run's branch tip) onto `onto` (the base branch's tip) in
 * the object database only: `git merge-tree --write-tree` (git 2.38+), so
 * no work tree is touched. A fast-forward is taken as it is; otherwise one
 * merge commit with both parents (`message`). A conflict in a plant's
 * active-threads.json is resolved thread by thread ({@link mergeThreads});
 * any other conflict is reported with its paths and nothing is written to
 * any branch. Plant markdown documents merge by union (the repository's
 * info/attributes, set when worktrees were prepared).
 */
export async function mergeOnto(repo: string, onto: string, head: string, message: string, env: NodeJS.ProcessEnv, plantsRel = 'plants'): Promise<MergeResult> {
  const ancestor = async (a: string, b: string) => (await git(['merge-base', '--is-ancestor', a, b], repo, env, [1])).ok;
  if (await ancestor(head, onto)) return { kind: 'merged', result: onto, fastForward: true, upToDate: true };
  if (await ancestor(onto, head)) return { kind: 'merged', result: head, fastForward: true, upToDate: false };
  const merged = await git(['merge-tree', '--write-tree', '--name-only', '-z', '--no-messages', onto, head], repo, env, [1]);
  const [tree, ...rest] = merged.stdout.split('\0').filter(Boolean);
  if (!tree) throw new Error(`git merge-tree gave no tree for ${onto.slice(0, 12)} and ${head.slice(0, 12)}`);
  let resultTree = tree;
  if (!merged.ok) {
    const conflicted = [...new Set(rest)];
    const others = conflicted.filter((p) => !isActiveThreads(p, plantsRel));
    if (others.length > 0) return { kind: 'conflict', paths: conflicted.sort() };
    resultTree = await resolveThreads(repo, onto, head, tree, conflicted, env);
  }
  const who = await identityArgs(repo, env);
  const commit = await git([...who, 'commit-tree', resultTree, '-p', onto, '-p', head, '-m', message], repo, env);
  return { kind: 'merged', result: commit.stdout.trim(), fastForward: false, upToDate: false };
}

/** The blob of `file` at `rev`, as text, or undefined when it is not there. */
async function blobAt(repo: string, rev: string, file: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const shown = await git(['show', `${rev}:${file}`], repo, env, [128]);
  return shown.ok ? shown.stdout : undefined;
}

/**
 * Writes a tree equal to `tree` but with each conflicted active-threads.json
 * replaced by {@link mergeThreads} of its base, ours (`onto`) and theirs
 * (`head`): through a scratch index file, never the repository's index.
 */
async function resolveThreads(repo: string, onto: string, head: string, tree: string, files: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const base = (await git(['merge-base', onto, head], repo, env)).stdout.trim();
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'pak2-merge-'));
  const index = path.join(dir, 'index');
  try {
    const pin = { GIT_INDEX_FILE: index };
    await git(['read-tree', tree], repo, env, [], pin);
    for (const file of files) {
      const merged = mergeThreads(await blobAt(repo, base, file, env), await blobAt(repo, onto, file, env), await blobAt(repo, head, file, env));
      const blobFile = path.join(dir, 'blob');
      fs.writeFileSync(blobFile, merged);
      const blob = (await git(['hash-object', '-w', blobFile], repo, env)).stdout.trim();
      await git(['update-index', '--add', '--cacheinfo', `100644,${blob},${file}`], repo, env, [], pin);
    }
    return (await git(['write-tree'], repo, env, [], pin)).stdout.trim();
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

interface ThreadsFile {
  threads?: Array<Record<string, unknown> & { id?: unknown; updated_at?: unknown }>;
  [key: string]: unknown;
}

function parseThreads(text: string | undefined): ThreadsFile | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as ThreadsFile) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A three-way merge of a plant's active-threads.json (pure; docs/landing/level2.md,
 * "Plant documents"), thread by thread by `id`: a thread only one side
 * changed (added, edited, removed) takes that side; one both changed takes
 * the later `updated_at` (ours on a tie); the file's other fields are ours.
 * A side that is not valid JSON is taken as it is not: ours stands.
 *
 * @returns the merged file's text (two-space JSON and a newline).
 */
export function mergeThreads(baseText: string | undefined, oursText: string | undefined, theirsText: string | undefined): string {
  const base = parseThreads(baseText);
  const ours = parseThreads(oursText);
  const theirs = parseThreads(theirsText);
  if (!ours && !theirs) return oursText ?? theirsText ?? '';
  if (!ours || !theirs) return (ours ? oursText : theirsText) ?? '';
  const byId = (file: ThreadsFile | undefined) => new Map((file?.threads ?? []).filter((t) => typeof t.id === 'string').map((t) => [t.id as string, t]));
  const b = byId(base);
  const o = byId(ours);
  const t = byId(theirs);
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  const order = [...new Set([...o.keys(), ...t.keys()])];
  const threads: ThreadsFile['threads'] = [];
  for (const id of order) {
    const [bt, ot, tt] = [b.get(id), o.get(id), t.get(id)];
    let pick: (typeof threads)[number] | undefined;
    if (same(ot, tt)) pick = ot;
    else if (same(bt, ot)) pick = tt; // only theirs changed it (or added it, or removed it)
    else if (same(bt, tt)) pick = ot; // only ours changed it
    else if (!ot || !tt) pick = ot ?? tt; // one side removed it, the other changed it: the change stands
    else pick = String(tt.updated_at ?? '') > String(ot.updated_at ?? '') ? tt : ot;
    if (pick) threads.push(pick);
  }
  return `${JSON.stringify({ ...ours, threads }, null, 2)}\n`;
}
