/**
 * A fleet's closes overlap (issue 24, item 8): each goal's settle (its
 * worktree commit, its landing queued, its worktree parked) is its own, so
 * one held in git does not hold another's. And a repository with no
 * identity of its own still gets pak2's commit of the run's work.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { readGoal, readLanding } from '../../source/store/index.js';
import { REAL_GIT } from '../history/support.js';
import { waitFor } from '../support/garden.js';
import { git, makeGitGarden, submitWork, type GitGarden } from './support.js';

const cleanups: (() => unknown)[] = [];
const savedPath = process.env.PATH;
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  process.env.PATH = savedPath;
});

/** A git on PATH whose `status --porcelain=v2` in a worktree under `held` waits until `release` exists. */
function slowGit(held: string, release: string): void {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-slowgit-'));
  cleanups.push(() => fs.rmSync(bin, { recursive: true, force: true }));
  fs.writeFileSync(
    path.join(bin, 'git'),
    ['#!/bin/sh', `case "$PWD" in *${held}*) if [ "$1" = status ] && [ "$2" = --porcelain=v2 ]; then while [ ! -e ${JSON.stringify(release)} ]; do sleep 0.02; done; fi;; esac`, `exec ${JSON.stringify(REAL_GIT)} "$@"`, ''].join('\n'),
  );
  fs.chmodSync(path.join(bin, 'git'), 0o755);
  process.env.PATH = `${bin}:${savedPath}`;
}

async function garden(options: Parameters<typeof makeGitGarden>[0] = {}): Promise<GitGarden> {
  const g = await makeGitGarden(options);
  cleanups.push(() => g.cleanup());
  return g;
}

describe('settling a fleet', () => {
  it('one goal whose settle is held in git does not hold another: the other lands and closes meanwhile', async () => {
    const g = await garden({ coordinator: { max_concurrent_runs: 2 } });
    const release = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-release-')), 'release');
    cleanups.push(() => fs.rmSync(path.dirname(release), { recursive: true, force: true }));
    const a = await submitWork(g, ['write src/a.txt from a'], { priority: 90 });
    const b = await submitWork(g, ['write src/b.txt from b'], { priority: 10 });
    slowGit(`${a.id}-r1`, release);
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    cleanups.push(async () => {
      if (!fs.existsSync(release)) fs.writeFileSync(release, '');
      await coordinator.stop();
    });
    // B's work lands and its goal closes while A's settle waits in git.
    await waitFor(async () => (await readGoal(g.paths, b.id)).status === 'closed', 60_000);
    expect(await readLanding(g.paths, `${b.id}-r1`)).toMatchObject({ state: 'landed' });
    // A's run is done (its goal completed); its work is not queued yet: the commit waits in git.
    expect((await readGoal(g.paths, a.id)).status).toBe('completed');
    expect(await readLanding(g.paths, `${a.id}-r1`)).toBeUndefined();
    fs.writeFileSync(release, '');
    await waitFor(async () => (await readGoal(g.paths, a.id)).status === 'closed', 60_000);
    expect(git(g.root, 'show', 'main:src/a.txt')).toBe('from a');
    expect(git(g.root, 'show', 'main:src/b.txt')).toBe('from b');
  });

  it('a repository with no identity of its own: pak2 commits the run’s work as itself, and it lands', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const g = await garden();
    // No user.name or user.email anywhere git looks (no global config, none in the repository, no GIT_* identity).
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: home, EMAIL: '' };
    for (const key of Object.keys(env)) if (/^GIT_(AUTHOR|COMMITTER)_/.test(key)) delete env[key];
    const goal = await submitWork(g, ['write src/c.txt from c']);
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined, env });
    await coordinator.start();
    cleanups.push(() => coordinator.stop());
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 60_000);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    expect(git(g.root, 'show', 'main:src/c.txt')).toBe('from c');
    const landing = await readLanding(g.paths, `${goal.id}-r1`);
    expect(git(g.root, 'log', '-1', '--format=%an|%cn|%ce', landing!.head_commit)).toBe('pak2 gardener|pak2|pak2@localhost');
  });
});
