/**
 * An agent that leaves its worktree off the run's branch (it made a branch
 * of its own, or detached HEAD): its work is landed from where it is, or
 * the landing fails saying where the work is — never "landed" with nothing
 * on the base, never closed as a run that changed nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readEvents, readGoal, readLanding } from '../../source/store/index.js';
import { git, makeGitGarden, runUntil, submitWork, type GitGarden } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(): Promise<GitGarden> {
  const g = await makeGitGarden({ toml: '[merge]\nverify = "test -f README.md"\n' });
  cleanups.push(() => g.cleanup());
  return g;
}

describe('work left off the run’s branch', () => {
  it('a branch of the agent’s own, committed: the run’s branch moves up to it, and the work lands (verify ran)', async () => {
    const g = await garden();
    const goal = await submitWork(g, ['git checkout -q -b agent-side', 'write side.txt side', 'commit side']);
    await runUntil(g, [goal.id]);
    expect(await readGoal(g.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    const landing = await readLanding(g.paths, `${goal.id}-r1`);
    expect(landing).toMatchObject({ state: 'landed', files: [{ path: 'side.txt', status: 'A' }], verify: { ok: true } });
    expect(git(g.root, 'show', 'main:side.txt')).toBe('side');
    expect(git(g.root, 'rev-parse', 'agent-side')).toBe(landing!.head_commit);
  });

  it('committed on the run’s branch, then HEAD detached behind it: the branch holds the work, and it lands', async () => {
    const g = await garden();
    const goal = await submitWork(g, ['write det.txt detached', 'commit det', 'git checkout -q --detach HEAD~1']);
    await runUntil(g, [goal.id]);
    expect(await readGoal(g.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    expect(await readLanding(g.paths, `${goal.id}-r1`)).toMatchObject({ state: 'landed', files: [{ path: 'det.txt', status: 'A' }] });
    expect(git(g.root, 'show', 'main:det.txt')).toBe('detached');
  });

  it('HEAD and the run’s branch diverged: the landing fails saying so, the goal closes failure, both commits are kept', async () => {
    const g = await garden();
    const goal = await submitWork(g, ['write one.txt on the branch', 'commit one', 'git checkout -q --detach HEAD~1', 'write two.txt off it', 'commit two']);
    await runUntil(g, [goal.id]);
    const runId = `${goal.id}-r1`;
    expect(await readGoal(g.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    const landing = await readLanding(g.paths, runId);
    expect(landing).toMatchObject({ state: 'failed', failure_reason: 'landing_error', message: expect.stringMatching(/off the run's branch pak2\/.+ and the two have diverged: pak2 lands neither, and keeps both$/) });
    expect(git(g.root, 'show', `pak2/${runId}:one.txt`)).toBe('on the branch');
    expect(() => git(g.root, 'show', 'main:one.txt')).toThrow();
    expect((await readEvents(g.paths)).events.filter((e) => e.run === runId).map((e) => e.type)).toContain('LandingFailed');
  });
});
