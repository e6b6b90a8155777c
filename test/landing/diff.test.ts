/**
 * `pak2 diff RUN` says what it shows (docs/landing/level2.md, "Review"):
 * a live worktree's content (new files with their lines), an ended run's
 * kept branch, or nothing left — never "live" for a run long gone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { worktreeDir } from '../../source/garden/index.js';
import { diffHeading } from '../../source/landing-words.js';
import { readGoal } from '../../source/store/index.js';
import { runDiff } from '../../source/submit/index.js';
import { waitFor } from '../support/garden.js';
import { makeGitGarden, runUntil, submitWork, type GitGarden } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(): Promise<GitGarden> {
  const g = await makeGitGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

describe('pak2 diff', () => {
  it('a live worktree: its new file with its content, said to be what the worktree holds now', async () => {
    const g = await garden();
    const goal = await submitWork(g, ['write src/new.txt first line', `hold ${path.join(g.paths.runtimeRoot, 'never')}`]);
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    cleanups.push(() => coordinator.stop());
    const runId = `${goal.id}-r1`;
    await waitFor(() => fs.existsSync(path.join(worktreeDir(g.paths, runId), 'src', 'new.txt')), 30_000);
    const diff = await runDiff(g, runId);
    expect(diff).toMatchObject({ source: 'worktree', files: [{ path: 'src/new.txt', status: 'A', insertions: 1, deletions: 0 }] });
    expect(diff.patch).toContain('+first line');
    expect(diffHeading(diff)).toBe(`the worktree of ${runId} (what it holds now, committed or not) against ${diff.base.slice(0, 12)}`);
  });

  it('a failed run’s kept branch, once its worktree is gone: the branch, not landed', async () => {
    const g = await garden();
    const goal = await submitWork(g, ['write src/tried.txt an attempt', 'fail']);
    await runUntil(g, [goal.id]);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    const runId = `${goal.id}-r1`;
    const diff = await runDiff(g, runId);
    expect(diff).toMatchObject({ source: 'branch', files: [{ path: 'src/tried.txt', status: 'A' }] });
    expect(diffHeading(diff)).toMatch(new RegExp(`^the branch of ${runId} \\(not landed\\) against [0-9a-f]{12} \\(branch tip [0-9a-f]{12}\\)$`));
  });

  it('a run that changed nothing, long closed: nothing left to show, and it says why', async () => {
    const g = await garden();
    const goal = await submitWork(g, ['change nothing']);
    await runUntil(g, [goal.id]);
    const runId = `${goal.id}-r1`;
    const diff = await runDiff(g, runId);
    expect(diff).toMatchObject({ source: 'none', files: [], patch: '' });
    expect(diffHeading(diff)).toMatch(/no work to show: its worktree is removed and its branch is gone \(it held nothing beyond its base [0-9a-f]{12}\)$/);
  });
});
