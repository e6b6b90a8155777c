/**
 * How runs are isolated (docs/landing/level2.md, "Worktrees"): the decision
 * (pure), what a garden that cannot have the worktrees it asked for does
 * (no run starts; every start says why; doctor names it), a [merge] base
 * that is no branch, and what doctor says of a stray folder among pak2's
 * worktrees.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readGoal } from '../../source/store/index.js';
import { decideIsolation, type RepositoryFacts } from '../../source/worktree/index.js';
import { PAK2_BIN } from '../support/cli.js';
import { git, makeGitGarden, submitWork, type GitGarden } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(options: Parameters<typeof makeGitGarden>[0] = {}): Promise<GitGarden> {
  const g = await makeGitGarden(options);
  cleanups.push(() => g.cleanup());
  return g;
}

function pak2(root: string, args: string[]) {
  return spawnSync(process.execPath, [PAK2_BIN, ...args, '--garden', root], { encoding: 'utf8', timeout: 60_000 });
}

const REPO: RepositoryFacts = { topLevel: '/r', gardenRoot: '/r', branch: 'main', hasCommit: true, mergeTree: true };

describe('decideIsolation', () => {
  it('worktree by default in a repository that can have them; tree when asked', () => {
    expect(decideIsolation(undefined, undefined, REPO)).toEqual({ mode: 'worktree', base: 'main' });
    expect(decideIsolation(undefined, 'trunk', { ...REPO, branch: undefined })).toEqual({ mode: 'worktree', base: 'trunk' });
    expect(decideIsolation('tree', undefined, REPO)).toEqual({ mode: 'tree' });
  });

  it('the default that cannot apply is the one tree, and says why; outside git it has nothing to explain', () => {
    expect(decideIsolation(undefined, undefined, { ...REPO, branch: undefined })).toEqual({ mode: 'tree', reason: "runs work in the garden's own tree: HEAD is detached and [merge] base is not set: no branch to land on" });
    expect(decideIsolation(undefined, undefined, { gardenRoot: '/g', hasCommit: false, mergeTree: false, problem: 'the garden is not a git work tree' })).toEqual({ mode: 'tree' });
  });

  it('worktrees asked for and impossible: held, never the operator’s tree', () => {
    const held = decideIsolation('worktree', undefined, { ...REPO, hasCommit: false });
    expect(held).toMatchObject({ mode: 'tree', held: true });
    expect(held.reason).toBe('isolation = "worktree" cannot apply: the repository has no commit yet to branch from (commit once); no run starts here until it can (fix that and start pak2 again, or set [coordinator] isolation = "tree")');
  });
});

describe('a garden that cannot have the worktrees it asked for', () => {
  it('with HEAD detached: no run starts, the goal waits queued, the start says why on stderr, doctor names it; the operator’s checkout is untouched', async () => {
    const g = await garden({ coordinator: { isolation: 'worktree', max_concurrent_runs: 3 } });
    git(g.root, 'checkout', '-q', '--detach', 'HEAD');
    const goal = await submitWork(g, ['write z.txt would be in the operator’s tree']);
    const cycle = pak2(g.root, ['cycle', '--no-ui', '--until-idle']);
    expect(cycle.status, cycle.stderr).toBe(0);
    expect(cycle.stderr).toContain('isolation = "worktree" cannot apply: HEAD is detached and [merge] base is not set: no branch to land on; no run starts here until it can');
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
    expect(fs.existsSync(path.join(g.root, 'z.txt'))).toBe(false);
    expect(fs.existsSync(path.join(g.paths.runsDir, `${goal.id}-r1`))).toBe(false);
    const doctor = pak2(g.root, ['doctor']);
    expect(doctor.status).toBe(1);
    expect(doctor.stdout + doctor.stderr).toMatch(/coordinator\.isolation.*isolation = "worktree" cannot apply: HEAD is detached/);
  });

  it('by default with HEAD detached: the runs work in the one tree, and every start says why', async () => {
    const g = await garden();
    git(g.root, 'checkout', '-q', '--detach', 'HEAD');
    const goal = await submitWork(g, ['write z.txt in the tree']);
    const cycle = pak2(g.root, ['cycle', '--no-ui', '--until-idle']);
    expect(cycle.stderr).toContain("runs work in the garden's own tree: HEAD is detached and [merge] base is not set");
    expect((await readGoal(g.paths, goal.id)).status).toBe('closed');
    expect(fs.readFileSync(path.join(g.root, 'z.txt'), 'utf8')).toBe('in the tree\n');
  });

  it('a [merge] base that is no branch: doctor says so', async () => {
    const g = await garden({ toml: '[merge]\nbase = "no-such-branch"\n' });
    const doctor = pak2(g.root, ['doctor']);
    expect(doctor.stdout + doctor.stderr).toContain('[merge] base = "no-such-branch" is no branch of the repository');
  });
});

describe('doctor and pak2’s worktrees folder', () => {
  it('a folder there that is no run’s worktree is named, and --fix moves it aside with its files', async () => {
    const g = await garden();
    const stray = path.join(g.paths.runtimeRoot, 'worktrees', 'stray-dir');
    fs.mkdirSync(stray, { recursive: true });
    fs.writeFileSync(path.join(stray, 'keep.txt'), 'mine');
    const doctor = pak2(g.root, ['doctor']);
    expect(doctor.stdout + doctor.stderr).toContain("something in pak2's worktrees folder that is not a run's worktree");
    const fixed = pak2(g.root, ['doctor', '--fix']);
    expect(fixed.stdout + fixed.stderr).toMatch(/moved to .*stray-dir/);
    expect(fs.existsSync(stray)).toBe(false);
    expect(pak2(g.root, ['doctor']).stdout).not.toContain('stray-dir');
  });
});
