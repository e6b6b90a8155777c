/**
 * Review (docs/landing/level2.md, "Review"): `[merge] mode = "review"`
 * holds each landing until the operator accepts or rejects it, through the
 * CLI (`pak2 landings`, `pak2 diff`, `pak2 land`, `pak2 reject`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readComments, readGoal, readLanding, readRun } from '../../source/store/index.js';
import { api, serve } from '../server/support.js';
import { runCli } from '../support/cli.js';
import { readEventLog } from '../support/garden.js';
import { git, makeGitGarden, runUntil, submitWork, type GitGarden } from './support.js';

let garden: GitGarden | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

const cli = (g: GitGarden, ...args: string[]) => runCli([...args, '--garden', g.root]);

describe('review mode through the CLI', () => {
  it('holds the landing until accepted: landings lists it, diff shows it, land lands it; reject --requeue --comment sends the next attempt the comment', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 }, toml: '[merge]\nmode = "review"\n' }));
    const keep = await submitWork(g, ['write src/keep.txt keep me']);
    const redo = await submitWork(g, ['write src/redo.txt with spaces']);
    await runUntil(g, [], async () => (await Promise.all([keep, redo].map((x) => readLanding(g.paths, `${x.id}-r1`)))).every((l) => l?.state === 'awaiting_review'));
    // Held: the goals stay completed, main has neither file.
    for (const x of [keep, redo]) expect((await readGoal(g.paths, x.id)).status).toBe('completed');
    expect(git(g.root, 'ls-tree', '-r', '--name-only', 'main')).not.toContain('src/');

    const listed = await cli(g, 'landings');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${keep.id}-r1\\s+awaiting review\\s+1\\s+main@`));
    const json = JSON.parse((await cli(g, 'landings', '--json')).stdout) as { landings: { run: string; state: string }[] };
    expect(json.landings.map((l) => l.state)).toEqual(['awaiting_review', 'awaiting_review']);

    const diff = await cli(g, 'diff', `${keep.id}-r1`);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain(`work of ${keep.id}-r1 against`);
    expect(diff.stdout).toContain('  A  src/keep.txt  +1 -0');
    expect(diff.stdout).toContain('+keep me');
    expect(diff.stdout).not.toContain('\x1b['); // not a terminal: no colour

    // Accept one with no coordinator running: pak2 land lands it itself and settles its goal.
    const landed = await cli(g, 'land', `${keep.id}-r1`);
    expect(landed).toMatchObject({ code: 0 });
    expect(landed.stdout).toContain('landed:');
    expect(await readLanding(g.paths, `${keep.id}-r1`)).toMatchObject({ state: 'landed', review: { decision: 'accepted', by: 'operator' } });
    expect((await readGoal(g.paths, keep.id)).closed_reason).toBe('success');
    expect(fs.readFileSync(path.join(g.root, 'src/keep.txt'), 'utf8')).toBe('keep me\n');

    // Cancel is not how work awaiting review is discarded: it says which command is.
    const cancelled = await cli(g, 'cancel', redo.id);
    expect(cancelled.code).toBe(1);
    expect(cancelled.stderr).toContain(`ID ${redo.id}: the goal's run is done and its work waits to land (awaiting review); to discard it and close the goal: pak2 reject ${redo.id}-r1`);

    // Reject the other, back to the queue, with a comment for the next attempt.
    const rejected = await cli(g, 'reject', `${redo.id}-r1`, '--requeue', '--comment', 'use tabs, not spaces');
    expect(rejected.code).toBe(0);
    expect(rejected.stdout).toContain(`goal ${redo.id} goes back to the queue`);
    expect(await readLanding(g.paths, `${redo.id}-r1`)).toMatchObject({ state: 'rejected', failure_reason: 'landing_rejected', review: { decision: 'rejected', comment: 'use tabs, not spaces', requeue: true } });
    expect((await readGoal(g.paths, redo.id)).status).toBe('queued');
    expect((await readComments(g.paths, redo.id)).at(-1)).toMatchObject({ author: 'operator', body: `Review of ${redo.id}-r1, rejected: use tabs, not spaces` });
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'worktrees', `${redo.id}-r1`))).toBe(false);
    expect(git(g.root, 'rev-parse', '--verify', `pak2/${redo.id}-r1`)).toMatch(/^[0-9a-f]{40}$/); // the branch is kept

    // The next attempt is told.
    await runUntil(g, [], async () => (await readLanding(g.paths, `${redo.id}-r2`))?.state === 'awaiting_review');
    const prompt = fs.readFileSync(path.join(g.paths.runsDir, `${redo.id}-r2`, 'prompt.md'), 'utf8');
    expect(prompt).toContain('use tabs, not spaces');
    const types = readEventLog(g).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['LandingQueued', 'LandingAccepted', 'Landed', 'LandingRejected']));
  }, 90_000);

  it('refuses with one line: a run with no landing, an ended landing, a bad id', async () => {
    const g = (garden = await makeGitGarden({ toml: '[merge]\nmode = "review"\n' }));
    const goal = await submitWork(g, ['write a.txt a']);
    await runUntil(g, [], async () => (await readLanding(g.paths, `${goal.id}-r1`))?.state === 'awaiting_review');
    expect(await cli(g, 'reject', `${goal.id}-r1`)).toMatchObject({ code: 0 });
    const again = await cli(g, 'land', `${goal.id}-r1`);
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
    expect(again.stderr).toContain(`pak2: RUN ${goal.id}-r1: its landing is rejected`);
    const bad = await cli(g, 'diff', '../x');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('pak2: RUN ../x: not a run id (N-slug-rN)');
    const none = await cli(g, 'land', '99-nope-r1');
    expect(none.code).toBe(2);
    expect(none.stderr.trim()).toBe('pak2: RUN 99-nope-r1: no such run');
    expect((await readRun(g.paths, `${goal.id}-r1`)).status).toBe('success');
  }, 60_000);
});

describe('review over HTTP', () => {
  it('GET /landings, GET /runs/:id/diff, POST /runs/:id/land and /reject; refusals are 4xx with one line and no machine path', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 }, toml: '[merge]\nmode = "review"\n' }));
    const a = await submitWork(g, ['write web/a.txt from a']);
    const b = await submitWork(g, ['write web/b.txt from b']);
    await runUntil(g, [], async () => (await Promise.all([a, b].map((x) => readLanding(g.paths, `${x.id}-r1`)))).every((l) => l?.state === 'awaiting_review'));
    const cleanups: (() => unknown)[] = [];
    try {
      const server = await serve(g, cleanups, { webhooks: false });
      const list = (await (await api(server, '/landings')).json()) as { landings: { run: string; state: string }[] };
      expect(list.landings.map((l) => l.state)).toEqual(['awaiting_review', 'awaiting_review']);
      const diff = (await (await api(server, `/runs/${a.id}-r1/diff`)).json()) as { files: { path: string; status: string }[]; patch: string; source: string };
      expect(diff).toMatchObject({ source: 'landing', files: [{ path: 'web/a.txt', status: 'A', insertions: 1, deletions: 0 }] });
      expect(diff.patch).toContain('+from a');
      const landed = await api(server, `/runs/${a.id}-r1/land`, { method: 'POST' });
      expect(landed.status).toBe(200);
      expect(((await landed.json()) as { landing: { state: string }; by: string })).toMatchObject({ by: 'here', landing: { state: 'landed' } });
      const rejected = await api(server, `/runs/${b.id}-r1/reject`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ comment: 'not this way' }) });
      expect(rejected.status).toBe(200);
      expect(((await rejected.json()) as { goal: string })).toMatchObject({ goal: 'closed' });
      expect((await readGoal(g.paths, b.id))).toMatchObject({ status: 'closed', closed_reason: 'failure' });
      // Refusals: an ended landing is 409, an unknown run 404, a bad id 400; one line, no machine path.
      for (const [route, status] of [
        [`/runs/${b.id}-r1/land`, 409],
        ['/runs/77-none-r1/land', 404],
        ['/runs/..%2Fetc/land', 400],
      ] as const) {
        const res = await api(server, route, { method: 'POST' });
        expect(res.status, route).toBe(status);
        const body = (await res.json()) as { error: string };
        expect(body.error.split('\n')).toHaveLength(1);
        expect(body.error).not.toContain(g.root);
      }
      const badBody = await api(server, `/runs/${a.id}-r1/reject`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ requeue: 'yes' }) });
      expect(badBody.status).toBe(400);
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup();
    }
  }, 90_000);
});
