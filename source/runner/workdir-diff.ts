import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentEnvironment } from '../driver/dispatch.js';
import { GIT_NEUTRAL_ENV } from '../history/git.js';

/**
 * The run's own change to the work tree, for the `diff.patch` artifact
 * (docs/runners/level2.md, "runs_finish"). At claim the runner writes a git
 * tree of the work tree through a temporary index (a copy of the real one,
 * then `git add -A`: untracked files are included, `.gitignore` is
 * respected, the real index and HEAD are never touched); at finish it
 * writes another and the artifact is `git diff --binary <before> <after>`:
 * only what changed during the run, whatever was dirty before it.
 */

/** Bytes of `git diff` output read at most (a larger diff is not attached). */
export const MAX_DIFF_BYTES = 64 * 1024 * 1024;

interface GitResult {
  code: number;
  stdout: string;
  /** stdout as bytes (a diff of files that are not UTF-8 text stays exact). */
  bytes: Buffer;
}

function git(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, env: { ...env, ...GIT_NEUTRAL_ENV }, maxBuffer: MAX_DIFF_BYTES, encoding: 'buffer' }, (error, stdout) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : 1) : 0;
      const bytes = Buffer.isBuffer(stdout) ? stdout : Buffer.alloc(0);
      resolve({ code, stdout: bytes.toString('utf8'), bytes });
    });
  });
}

/** The environment git runs in: the runner's, without variables that point git at another repository. */
function gitEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...agentEnvironment(base).env, GIT_OPTIONAL_LOCKS: '0' };
}

/** True when `workdir` is inside a git work tree (`git rev-parse --is-inside-work-tree`); false when it is not, or git is missing. */
export async function isGitWorkTree(workdir: string, baseEnv: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const inside = await git(['rev-parse', '--is-inside-work-tree'], workdir, gitEnv(baseEnv));
  return inside.code === 0 && inside.stdout.trim() === 'true';
}

/**
 * Writes a tree object of the work tree at `workdir` (untracked files
 * included, ignored ones not, `exclude` paths left out), or null when
 * `workdir` is not in a git work tree or git fails.
 */
export async function snapshotTree(workdir: string, exclude: string[] = [], baseEnv: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const env = gitEnv(baseEnv);
  if (!(await isGitWorkTree(workdir, baseEnv))) return null;
  const indexPath = await git(['rev-parse', '--git-path', 'index'], workdir, env);
  const temp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-runner-index-')), 'index');
  try {
    const real = path.resolve(workdir, indexPath.stdout.trim());
    if (indexPath.code === 0 && fs.existsSync(real)) fs.copyFileSync(real, temp);
    const withIndex = { ...env, GIT_INDEX_FILE: temp };
    const rels = exclude.map((p) => path.relative(workdir, p)).filter((rel) => rel && !rel.startsWith('..') && !path.isAbsolute(rel));
    const added = await git(['add', '-A', '--', '.', ...rels.map((rel) => `:(exclude)${rel}`)], workdir, withIndex);
    if (added.code !== 0) return null;
    const tree = await git(['write-tree'], workdir, withIndex);
    return tree.code === 0 && /^[0-9a-f]{40,64}$/.test(tree.stdout.trim()) ? tree.stdout.trim() : null;
  } finally {
    fs.rmSync(path.dirname(temp), { recursive: true, force: true });
  }
}

/**
 * The diff from the `before` tree to the work tree now (`--binary`, under
 * `workdir`), as bytes; empty when nothing changed or it cannot be made.
 */
export async function workdirDiff(workdir: string, before: string | null, exclude: string[] = [], baseEnv: NodeJS.ProcessEnv = process.env): Promise<Buffer> {
  if (!before) return Buffer.alloc(0);
  const after = await snapshotTree(workdir, exclude, baseEnv);
  if (!after || after === before) return Buffer.alloc(0);
  const diff = await git(['diff', '--binary', '--no-color', '--no-ext-diff', before, after, '--', '.'], workdir, gitEnv(baseEnv));
  return diff.code === 0 ? diff.bytes : Buffer.alloc(0);
}
