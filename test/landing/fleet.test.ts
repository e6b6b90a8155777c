/**
 * A fleet on one repository (docs/landing/level2.md): a worktree per run,
 * work landed through the merge queue, the operator's checkout never
 * written over.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readGoal, readLanding, readRun } from '../../source/store/index.js';
import { readEventLog } from '../support/garden.js';
import { git, makeGitGarden, runUntil, submitWork, type GitGarden } from './support.js';

let garden: GitGarden | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

describe('three goals at once on one repository', () => {
  it('overlap, each in its own worktree; all three land; verify ran on each merged result; the operator\'s dirty file is byte-identical', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 3 }, toml: '[merge]\nverify = "test -f README.md"\n' }));
    // The operator is in the middle of something: a dirty tracked file and an untracked one.
    const dirty = 'README.md';
    fs.writeFileSync(path.join(g.root, dirty), '# Project\n\nA line.\nThe operator\'s own edit, not committed.\n');
    fs.writeFileSync(path.join(g.root, 'notes.txt'), 'operator scratch\n');
    const before = { readme: fs.readFileSync(path.join(g.root, dirty)), notes: fs.readFileSync(path.join(g.root, 'notes.txt')) };
    const log = path.join(g.paths.runtimeRoot, 'wt.log');
    const goals = await Promise.all([1, 2, 3].map((n) => submitWork(g, [`write src/feature-${n}.txt feature ${n}`, 'sleep 1500'])));
    await runUntil(g, goals.map((x) => x.id), undefined, 60_000, { ...process.env, WT_LOG: log });

    const runs = await Promise.all(goals.map((x) => readRun(g.paths, `${x.id}-r1`)));
    // Each worked in its own worktree, on its own branch, and the three overlapped in time.
    const seen = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { run: string; cwd: string; started: number; ended: number });
    expect(new Set(seen.map((s) => s.cwd)).size).toBe(3);
    for (const run of runs) {
      expect(run.status).toBe('success');
      expect(run.worktree).toMatchObject({ branch: `pak2/${run.id}`, base_branch: 'main' });
      expect(seen.find((s) => s.run === run.id)!.cwd).toBe(path.join(fs.realpathSync(g.paths.runtimeRoot), 'worktrees', run.id));
    }
    const latestStart = Math.max(...seen.map((s) => s.started));
    const earliestEnd = Math.min(...seen.map((s) => s.ended));
    expect(latestStart).toBeLessThan(earliestEnd);
    // All three landed, verify ran on each merged result, and the goals closed success.
    for (const [i, goal] of goals.entries()) {
      const landing = await readLanding(g.paths, runs[i]!.id);
      expect(landing).toMatchObject({ state: 'landed', verify: { command: 'test -f README.md', ok: true } });
      expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    }
    // main holds all three changes; the operator's checkout was fast-forwarded around their edits.
    const files = git(g.root, 'ls-tree', '-r', '--name-only', 'main');
    for (const n of [1, 2, 3]) expect(files).toContain(`src/feature-${n}.txt`);
    for (const n of [1, 2, 3]) expect(fs.readFileSync(path.join(g.root, `src/feature-${n}.txt`), 'utf8')).toBe(`feature ${n}\n`);
    expect(fs.readFileSync(path.join(g.root, dirty)).equals(before.readme)).toBe(true);
    expect(fs.readFileSync(path.join(g.root, 'notes.txt')).equals(before.notes)).toBe(true);
    // No worktree left behind; the branches are kept (keep_days).
    for (const run of runs) expect(fs.existsSync(run.worktree!.path)).toBe(false);
    expect(git(g.root, 'worktree', 'list').split('\n')).toHaveLength(1);
    const types = readEventLog(g).map((e) => e.type);
    expect(types.filter((t) => t === 'Landed')).toHaveLength(3);
    expect(types.filter((t) => t === 'LandingVerified')).toHaveLength(3);
  });
});
