/**
 * Git-backed garden fixtures for the runtime-history tests. Every git command
 * here runs with a scrubbed environment (no inherited GIT_*), so a test run
 * inside a git hook or with a user's config cannot leak into the fixtures.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { setRuntimeHistoryListener, type RuntimeHistoryResult } from '../../source/history/index.js';
import { closeRun, commissionPlant, createGoal, openRun } from '../../source/store/index.js';
import { makeTempDir, writeFiles, type FileMap } from '../helpers/fixtures.js';

/** The real git binary, for wrappers that delegate to it. */
export const REAL_GIT = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@example.com', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@example.com' };
}

/** Runs git in `cwd` and returns its stdout (throws on failure). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Options of {@link makeGitGarden}. */
export interface GitGardenOptions {
  /** PAK2.toml text; default the split `.runtime` layout. */
  toml?: string;
  /** Extra files, written before the first commit. */
  files?: FileMap;
  /** `git init` the garden root (default true). */
  init?: boolean;
  /** Make the first commit (default true); false leaves HEAD unborn. */
  commit?: boolean;
  /** Put the garden in a subdirectory of the temp dir (for runtime roots outside it). */
  subdir?: string;
  /** Called with the garden root after the first commit, before the garden is loaded and the plant commissioned. */
  before?: (root: string) => void;
}

/** A temp garden, by default a git repo with one commit and `.runtime/` ignored, with a gardener plant. */
export async function makeGitGarden(options: GitGardenOptions = {}): Promise<Garden & { root: string; base: string }> {
  const base = makeTempDir({}, 'pak2-history-');
  const root = options.subdir ? path.join(base, options.subdir) : base;
  fs.mkdirSync(root, { recursive: true });
  writeFiles(root, {
    'PAK2.toml': options.toml ?? '[runtime]\nroot = ".runtime"\n',
    'MOTIVATION.md': '# Motivation\n\nHistory tests.\n',
    'seeds/gardener.md': '# Seed: gardener\n',
    '.gitignore': '.runtime/\nplants/\n',
    ...options.files,
  });
  if (options.init !== false) {
    git(root, 'init', '-q');
    if (options.commit !== false) {
      git(root, 'add', '-A');
      git(root, 'commit', '-qm', 'authored: initial');
    }
  }
  options.before?.(root);
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  return { ...garden, root, base };
}

/** Collects what closeRun reports, for the duration of one test. */
export function recordOutcomes(): { results: Array<{ run: string; result: RuntimeHistoryResult }>; restore: () => void } {
  const results: Array<{ run: string; result: RuntimeHistoryResult }> = [];
  const restore = setRuntimeHistoryListener((run, result) => results.push({ run, result }));
  return { results, restore };
}

/** Submits, opens and closes one run through the store (closeRun captures the history). */
export async function closeOneRun(garden: Garden, body = 'work'): Promise<string> {
  const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body });
  const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'command', model: 'scripted' });
  await closeRun(garden.paths, run.id, goal.type, { status: 'success', cost: { source: 'unknown' } });
  return run.id;
}

function hashFile(file: string): string {
  try {
    return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  } catch {
    return '(absent)';
  }
}

function listTree(dir: string, rel = ''): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    out.push(p);
    if (e.isDirectory()) out.push(...listTree(dir, p));
  }
  return out.sort();
}

/**
 * Everything git-visible about a repository: HEAD, refs, log of all refs,
 * porcelain status, and hashes of the index, config and every file in the
 * git directory. Equal snapshots mean nothing changed its git state.
 */
export function repoState(root: string): Record<string, string> {
  const gitDir = path.join(root, '.git');
  const files = listTree(gitDir).filter((p) => fs.statSync(path.join(gitDir, p)).isFile());
  return {
    head: (() => {
      try {
        return git(root, 'rev-parse', 'HEAD');
      } catch {
        return '(unborn)';
      }
    })(),
    refs: git(root, 'for-each-ref'),
    log: (() => {
      try {
        return git(root, 'log', '--all', '--format=%H %s');
      } catch {
        return '';
      }
    })(),
    status: git(root, 'status', '--porcelain'),
    index: hashFile(path.join(gitDir, 'index')),
    config: hashFile(path.join(gitDir, 'config')),
    files: files.map((p) => `${p} ${hashFile(path.join(gitDir, p))}`).join('\n'),
  };
}

/** Every `.git` entry (directory, file or link) below `dir`, relative to it. */
export function gitEntriesUnder(dir: string): string[] {
  return listTree(dir).filter((p) => p === '.git' || p.endsWith('/.git'));
}

/** A directory holding a `git` wrapper that delegates to the real git except when `breakWhen` (a sh condition on "$@") holds. */
export function gitWrapper(breakWhen: string, message: string): string {
  const dir = makeTempDir({}, 'pak2-fakegit-');
  const file = path.join(dir, 'git');
  fs.writeFileSync(
    file,
    ['#!/bin/sh', `if ${breakWhen}; then`, `  echo ${JSON.stringify(`fatal: ${message}`)} >&2`, '  exit 128', 'fi', `exec ${JSON.stringify(REAL_GIT)} "$@"`, ''].join('\n'),
  );
  fs.chmodSync(file, 0o755);
  return dir;
}
