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

/** Where a test's agents meet (`meet DIR N`: each waits until N have started, so their runs overlap by state). */
const meet = (g: GitGarden) => path.join(g.paths.runtimeRoot, 'test-meet');
/** The file a held agent waits for (`hold FILE`). */
const release = (g: GitGarden) => path.join(g.paths.runtimeRoot, 'test-release');

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
    const goals = await Promise.all([1, 2, 3].map((n) => submitWork(g, [`meet ${meet(g)} 3`, `write src/feature-${n}.txt feature ${n}`])));
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
    // They met (each waited until all had started): the last start is not after the first end (equal at ms resolution is overlap).
    expect(latestStart).toBeLessThanOrEqual(earliestEnd);
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
    expect(git(g.root, 'worktree', 'list').split('\n').filter((l) => !l.includes('/.pool/')).length).toBe(1); // the main checkout; parked (clean, detached) worktrees wait for the next run
    const types = readEventLog(g).map((e) => e.type);
    expect(types.filter((t) => t === 'Landed')).toHaveLength(3);
    expect(types.filter((t) => t === 'LandingVerified')).toHaveLength(3);
  });
});

describe('conflicts and failures are facts', () => {
  it('two goals editing the same lines: one lands, the other ends conflict naming the path and is requeued on the new base, told why; nothing is lost', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 } }));
    const a = await submitWork(g, [`meet ${meet(g)} 2`, 'write README.md # Project\\n\\nLine by A.']);
    const b = await submitWork(g, [`meet ${meet(g)} 2`, 'write README.md # Project\\n\\nLine by B.']);
    await runUntil(g, [a.id, b.id]);
    const landings = await Promise.all([a, b].map((x) => readLanding(g.paths, `${x.id}-r1`)));
    const landed = landings.find((l) => l?.state === 'landed')!;
    const conflicted = landings.find((l) => l?.state === 'conflict')!;
    expect(landed).toBeDefined();
    expect(conflicted).toMatchObject({ failure_reason: 'landing_conflict', conflict: { paths: ['README.md'] } });
    const loser = conflicted.goal;
    // The loser went back to the queue, ran again from the new base (r2) with the conflict in its prompt, and landed.
    const r2 = await readRun(g.paths, `${loser}-r2`);
    expect(r2.status).toBe('success');
    expect(r2.worktree!.base_commit).not.toBe(conflicted.base_commit);
    const prompt = fs.readFileSync(path.join(g.paths.runsDir, r2.id, 'prompt.md'), 'utf8');
    expect(prompt).toContain(`The work of ${loser}-r1 did not land: merging ${conflicted.branch} onto main`);
    expect(prompt).toContain('conflicts in README.md');
    expect(await readLanding(g.paths, r2.id)).toMatchObject({ state: 'landed' });
    expect((await readGoal(g.paths, loser)).closed_reason).toBe('success');
    // Nothing lost: the conflicted attempt's commit is still on its branch.
    expect(git(g.root, 'show', `${conflicted.branch}:README.md`)).toContain(loser === a.id ? 'Line by A.' : 'Line by B.');
    expect(readEventLog(g).some((e) => e.type === 'LandingConflict' && e.run === conflicted.run)).toBe(true);
  });

  it('with [merge] on_conflict = "fail", the conflicted goal closes failure', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 }, toml: '[merge]\non_conflict = "fail"\n' }));
    const a = await submitWork(g, [`meet ${meet(g)} 2`, 'write README.md A']);
    const b = await submitWork(g, [`meet ${meet(g)} 2`, 'write README.md B']);
    await runUntil(g, [a.id, b.id]);
    const reasons = await Promise.all([a, b].map(async (x) => (await readGoal(g.paths, x.id)).closed_reason));
    expect([...reasons].sort()).toEqual(['failure', 'success']);
    const failed = [a, b][reasons.indexOf('failure')]!;
    expect(await readLanding(g.paths, `${failed.id}-r1`)).toMatchObject({ state: 'conflict', failure_reason: 'landing_conflict' });
    expect(fs.existsSync(path.join(g.paths.runsDir, `${failed.id}-r2`))).toBe(false);
  });

  it('verify passes in each worktree and fails on the merged result: not landed, landing_verify_failed', async () => {
    const verify = "sh -c '! (test -f a.txt && test -f b.txt)'";
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 } }));
    const guard = { verify };
    const a = await submitWork(g, [`meet ${meet(g)} 2`, 'write a.txt a'], { guard });
    const b = await submitWork(g, [`meet ${meet(g)} 2`, 'write b.txt b'], { guard });
    await runUntil(g, [a.id, b.id]);
    const runs = await Promise.all([a, b].map((x) => readRun(g.paths, `${x.id}-r1`)));
    expect(runs.map((r) => r.status)).toEqual(['success', 'success']); // the guard's verify passed in each worktree
    const landings = await Promise.all(runs.map((r) => readLanding(g.paths, r.id)));
    expect(landings.map((l) => l!.state).sort()).toEqual(['failed', 'landed']);
    const failed = landings.find((l) => l!.state === 'failed')!;
    expect(failed).toMatchObject({ failure_reason: 'landing_verify_failed', verify: { command: verify, ok: false, exit_code: 1 } });
    expect((await readGoal(g.paths, failed.goal)).closed_reason).toBe('failure');
    // main has only the landed one's file.
    const files = git(g.root, 'ls-tree', '-r', '--name-only', 'main').split('\n');
    expect(files.filter((f) => f === 'a.txt' || f === 'b.txt')).toHaveLength(1);
    expect(readEventLog(g).some((e) => e.type === 'LandingFailed' && e.run === failed.run && /landing_verify_failed/.test(e.detail ?? ''))).toBe(true);
  });
});

describe('guarded runs in their own worktrees', () => {
  it('the operator edits README.md while a guarded agent works: the edit stays, the run is judged on its own changes only', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 } }));
    const guarded = await submitWork(g, ['write src/x.txt x', `hold ${release(g)}`], { guard: { verify: 'test -f src/x.txt', allowed_files: ['src/**'] } });
    const other = await submitWork(g, ['write docs/y.txt y'], { guard: { allowed_files: ['docs/**'] } });
    let edited = false;
    await runUntil(
      g,
      [guarded.id, other.id],
      async () => {
        // While the guarded agent works in its worktree (its prompt is written: the baseline is taken), the operator edits README.md in their checkout.
        if (!edited && fs.existsSync(path.join(g.paths.runsDir, `${guarded.id}-r1`, 'prompt_bundle.md'))) {
          fs.appendFileSync(path.join(g.root, 'README.md'), 'The operator was here.\n');
          edited = true;
          // Only then may the guarded agent finish: the edit falls inside its run.
          fs.writeFileSync(release(g), '');
        }
        return (await Promise.all([guarded, other].map((x) => readGoal(g.paths, x.id)))).every((x) => x.status === 'closed');
      },
    );
    expect(edited).toBe(true);
    const run = await readRun(g.paths, `${guarded.id}-r1`);
    expect(run.status).toBe('success');
    expect(run.failure_reason).toBeUndefined();
    expect(fs.readFileSync(path.join(g.root, 'README.md'), 'utf8')).toContain('The operator was here.');
    expect(fs.existsSync(path.join(g.paths.runsDir, run.id, 'rejected.patch'))).toBe(false);
    expect(fs.readFileSync(path.join(g.root, 'src/x.txt'), 'utf8')).toBe('x\n');
    // Two guarded goals ran at once: in worktree mode a guarded goal no longer holds back the queue.
    expect((await readRun(g.paths, `${other.id}-r1`)).status).toBe('success');
    expect((await readGoal(g.paths, guarded.id)).closed_reason).toBe('success');
  });
});
