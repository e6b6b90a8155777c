/**
 * worktree_baseline (seed 000, "Run directory"): tracked files already dirty,
 * the untracked count and their top-level roots, captured for non-converse
 * runs before the run directory or this run's coordinator events exist.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile, type DispatchFn } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { captureWorktreeBaseline, parseBaseline } from '../../source/history/index.js';
import { closeRun, createGoal, readRun, runMetaFile } from '../../source/store/index.js';
import { cleanupFixtures, makeTempDir, readLog } from '../helpers/fixtures.js';
import { git, makeGitGarden, recordOutcomes } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

const AUTHORED = { 'src/app.ts': 'export const a = 1;\n', 'docs/guide.md': '# Guide\n', 'README.md': '# Readme\n' };

/** Dirties a committed garden: an unstaged edit, a staged edit, a deletion, and untracked files under three roots. */
function dirty(root: string): void {
  fs.writeFileSync(path.join(root, 'src/app.ts'), 'export const a = 2;\n');
  fs.writeFileSync(path.join(root, 'README.md'), '# Readme, edited\n');
  git(root, 'add', 'README.md');
  fs.rmSync(path.join(root, 'docs/guide.md'));
  for (const rel of ['notes/a.md', 'notes/b.md', 'scratch/deep/x.txt', 'todo.txt']) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), 'untracked\n');
  }
}

const DIRTY_BASELINE = {
  tracked_dirty_paths: ['README.md', 'docs/guide.md', 'src/app.ts'],
  untracked_dirty_count: 4,
  untracked_dirty_roots: ['notes', 'scratch', 'todo.txt'],
};
const CLEAN_BASELINE = { tracked_dirty_paths: [], untracked_dirty_count: 0, untracked_dirty_roots: [] };

/** A dispatch function that notes whether the run directory existed when dispatch began, then closes the run. */
function closingDispatch(garden: Garden, seen: Array<{ runId: string; runDirExisted: boolean }>): DispatchFn {
  return async (goal, runId) => {
    seen.push({ runId, runDirExisted: fs.existsSync(path.dirname(runMetaFile(garden.paths, runId))) });
    await closeRun(garden.paths, runId, goal.type, { status: 'success', cost: { source: 'unknown' } });
  };
}

function quiet(): void {
  restore = recordOutcomes().restore;
}

describe('captureWorktreeBaseline', () => {
  it('dirty tracked files (edited, staged, deleted) and untracked files in several roots; the split runtime root is left out', async () => {
    // .runtime is not ignored here, and still never shows up.
    const garden = await makeGitGarden({ files: { ...AUTHORED, '.gitignore': 'plants/\n' } });
    dirty(garden.root);
    fs.mkdirSync(path.join(garden.paths.runtimeRoot, 'goals'), { recursive: true });
    fs.writeFileSync(path.join(garden.paths.runtimeRoot, 'goals', 'stray.json'), '{}');
    expect(await captureWorktreeBaseline(garden.root, garden.paths.runtimeRoot)).toEqual(DIRTY_BASELINE);
  });

  it('a clean tree', async () => {
    const garden = await makeGitGarden({ files: AUTHORED });
    expect(await captureWorktreeBaseline(garden.root, garden.paths.runtimeRoot)).toEqual(CLEAN_BASELINE);
  });

  it('a garden in a subdirectory of the repository: garden-relative paths, nothing outside the garden', async () => {
    const base = makeTempDir({ 'outside.txt': 'x\n', 'garden/PAK2.toml': '', 'garden/src/app.ts': 'a\n' }, 'pak2-sub-');
    git(base, 'init', '-q');
    git(base, 'add', '-A');
    git(base, 'commit', '-qm', 'init');
    fs.writeFileSync(path.join(base, 'outside.txt'), 'changed\n');
    fs.writeFileSync(path.join(base, 'stray.txt'), 'new\n');
    fs.writeFileSync(path.join(base, 'garden/src/app.ts'), 'b\n');
    fs.writeFileSync(path.join(base, 'garden/new.md'), 'new\n');
    const root = path.join(base, 'garden');
    expect(await captureWorktreeBaseline(root, path.join(root, '.runtime'))).toEqual({ tracked_dirty_paths: ['src/app.ts'], untracked_dirty_count: 1, untracked_dirty_roots: ['new.md'] });
  });

  it('no baseline outside a readable git worktree: not a repository, or no git on PATH', async () => {
    const plain = makeTempDir({ 'a.txt': 'x\n' }, 'pak2-plain-');
    expect(await captureWorktreeBaseline(plain, plain)).toBeUndefined();
    const garden = await makeGitGarden({ files: AUTHORED });
    expect(await captureWorktreeBaseline(garden.root, garden.paths.runtimeRoot, { PATH: makeTempDir({}, 'pak2-nogit-') })).toBeUndefined();
    expect(await captureWorktreeBaseline(path.join(garden.root, '.git'), garden.paths.runtimeRoot)).toBeUndefined();
  });

  it('parses porcelain -z output, keeping odd file names intact', () => {
    expect(parseBaseline(' M a b.txt\0?? dir/with space/f\0A  new\0D  gone\0?? top\0!! ignored\0')).toEqual({
      tracked_dirty_paths: ['a b.txt', 'gone', 'new'],
      untracked_dirty_count: 2,
      untracked_dirty_roots: ['dir', 'top'],
    });
  });
});

describe('the coordinator records the baseline in meta.json', () => {
  it('split layout: dirty tracked files and untracked files in several roots', async () => {
    quiet();
    const garden = await makeGitGarden({ files: AUTHORED });
    dirty(garden.root);
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'look around' });
    const seen: Array<{ runId: string; runDirExisted: boolean }> = [];
    const summary = await reconcile({ garden, dispatch: closingDispatch(garden, seen), awaitDispatch: true });
    expect(summary.dispatched).toEqual([`${goal.id}-r1`]);
    expect(seen).toEqual([{ runId: `${goal.id}-r1`, runDirExisted: true }]);
    const run = await readRun(garden.paths, `${goal.id}-r1`);
    expect(run.worktree_baseline).toEqual(DIRTY_BASELINE);
  });

  it('a clean tree gives an empty baseline', async () => {
    quiet();
    const garden = await makeGitGarden({ files: AUTHORED });
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'build' });
    await reconcile({ garden, dispatch: closingDispatch(garden, []), awaitDispatch: true });
    expect((await readRun(garden.paths, `${goal.id}-r1`)).worktree_baseline).toEqual(CLEAN_BASELINE);
  });

  it('legacy layout: captured before the run directory existed (runs/ is not in it), with dirty tracked and untracked files; the next run sees the first one', async () => {
    const garden = await makeGitGarden({ toml: '', files: AUTHORED });
    dirty(garden.root);
    const first = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'first' });
    // Runtime state lives in the garden root here: goals/ and events/ already exist and are untracked; runs/ does not.
    expect(fs.existsSync(garden.paths.runsDir)).toBe(false);
    const logBefore = readLog(garden.paths).length;
    const seen: Array<{ runId: string; runDirExisted: boolean }> = [];
    await reconcile({ garden, dispatch: closingDispatch(garden, seen), awaitDispatch: true });
    expect(seen).toEqual([{ runId: `${first.id}-r1`, runDirExisted: true }]);
    const r1 = await readRun(garden.paths, `${first.id}-r1`);
    expect(r1.worktree_baseline).toEqual({
      tracked_dirty_paths: DIRTY_BASELINE.tracked_dirty_paths,
      // the four untracked files, plus goals/.counter, the goal file, events/coordinator.jsonl and .cache/goals-key.json (the submit's)
      untracked_dirty_count: 8,
      untracked_dirty_roots: ['.cache', 'events', 'goals', 'notes', 'scratch', 'todo.txt'],
    });
    // The dispatch transition and RunStarted came after the capture.
    expect(readLog(garden.paths).slice(logBefore, logBefore + 2).map((e) => e.type)).toEqual(['GoalTransitioned', 'RunStarted']);

    const second = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'second' });
    await reconcile({ garden, dispatch: closingDispatch(garden, []), awaitDispatch: true });
    const r2 = await readRun(garden.paths, `${second.id}-r1`);
    // pak2's caches (.cache/) are runtime state like goals/ here.
    expect(r2.worktree_baseline?.untracked_dirty_roots).toEqual(['.cache', 'events', 'goals', 'notes', 'runs', 'scratch', 'todo.txt']);
  });

  it('converse goals get no baseline; neither does a garden that is not a git repository', async () => {
    quiet();
    const garden = await makeGitGarden({ files: AUTHORED });
    dirty(garden.root);
    const converse = await createGoal(garden.paths, { type: 'converse', plant: 'gardener', body: 'hello' });
    await reconcile({ garden, dispatch: closingDispatch(garden, []), awaitDispatch: true });
    expect(await readRun(garden.paths, `${converse.id}-r1`)).not.toHaveProperty('worktree_baseline');

    const plain = await makeGitGarden({ init: false, files: AUTHORED });
    const spike = await createGoal(plain.paths, { type: 'spike', plant: 'gardener', body: 'no git' });
    await reconcile({ garden: plain, dispatch: closingDispatch(plain, []), awaitDispatch: true });
    expect(await readRun(plain.paths, `${spike.id}-r1`)).not.toHaveProperty('worktree_baseline');
  });
});
