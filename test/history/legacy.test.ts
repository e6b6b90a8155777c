/**
 * The legacy unified layout ([runtime].root not set, runtime root = garden
 * root): closing a run reports runtime_root_not_split and changes no git
 * state anywhere — not the authored repo, not a repo above it, and no new
 * `.git` appears.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { captureRuntimeHistory } from '../../source/history/index.js';
import { closeRun, createGoal, openRun, readRun } from '../../source/store/index.js';
import { cleanupFixtures } from '../helpers/fixtures.js';
import { closeOneRun, git, gitEntriesUnder, makeGitGarden, recordOutcomes, repoState } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

describe('legacy unified root: runtime history is inactive', () => {
  it('a run closed in the legacy layout changes no git state anywhere', async () => {
    // The garden is a subdirectory of an outer repository, and is a repository itself.
    const garden = await makeGitGarden({ toml: '[garden]\nname = "legacy"\n', subdir: 'garden' });
    const outer = garden.base;
    git(outer, 'init', '-q');
    fs.writeFileSync(path.join(outer, 'README'), 'outer\n');
    git(outer, 'add', 'README');
    git(outer, 'commit', '-qm', 'outer: initial');
    expect(garden.paths.split).toBe(false);

    const { results, restore: r } = recordOutcomes();
    restore = r;
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'legacy' });
    const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'command', model: 'scripted' });
    const runId = run.id;
    // Snapshot after the run's files exist (openRun writes them into the worktree by design), before the close.
    const gardenBefore = repoState(garden.root);
    const outerBefore = repoState(outer);
    const entriesBefore = gitEntriesUnder(outer);
    const stderr: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      await closeRun(garden.paths, run.id, goal.type, { status: 'success', cost: { source: 'unknown' } });
    } finally {
      process.stderr.write = write;
    }

    expect(results).toEqual([{ run: runId, result: { outcome: 'runtime_root_not_split' } }]);
    expect((await readRun(garden.paths, runId)).status).toBe('success');
    expect(repoState(garden.root)).toEqual(gardenBefore);
    expect(repoState(outer)).toEqual(outerBefore);
    expect(gitEntriesUnder(outer)).toEqual(entriesBefore);
    expect(gitEntriesUnder(outer)).toEqual(['garden/.git', '.git'].sort());
    expect(fs.existsSync(path.join(garden.root, 'history'))).toBe(false);
    expect(stderr.join('')).not.toContain('runtime history');
  });

  it('the helper itself returns runtime_root_not_split without touching the disk', async () => {
    const garden = await makeGitGarden({ toml: '', init: false });
    const runId = await closeOneRun(garden);
    const before = gitEntriesUnder(garden.base);
    const result = await captureRuntimeHistory(garden.paths, await readRun(garden.paths, runId));
    expect(result).toEqual({ outcome: 'runtime_root_not_split' });
    expect(gitEntriesUnder(garden.base)).toEqual(before);
    expect(before).toEqual([]);
  });
});
