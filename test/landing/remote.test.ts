/**
 * Remote runners' work enters the same merge queue (docs/landing/level2.md,
 * "Remote runners"): the runner's diff.patch is applied in the run's
 * worktree in the garden, from the base tip at claim, and lands like a
 * local run's; a patch that no longer applies is a conflict.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../source/contracts/index.js';
import type { RunningServer } from '../../source/server/index.js';
import { superviseRemoteRuns } from '../../source/coordinator/index.js';
import { closeRun, OpenGoalScanner, readGoal, readLanding, readLease, readRun } from '../../source/store/index.js';
import { serve } from '../server/support.js';
import { git, makeGitGarden, runUntil, submitWork, type GitGarden } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function call(server: RunningServer, method: 'GET' | 'POST', url: string, body?: unknown) {
  const response = await server.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${server.token}`, 'pak2-runner': 'r1', 'pak2-runner-host': 'box-1', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: response.statusCode, body: (response.body ? JSON.parse(response.body) : undefined) as Record<string, any> };
}

/** A patch as a runner makes it: its checkout (a clone of the garden) changed, `git diff --binary`. */
function runnerPatch(g: GitGarden, change: (dir: string) => void): string {
  const clone = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-runner-clone-'));
  cleanups.push(() => fs.rmSync(clone, { recursive: true, force: true }));
  execFileSync('git', ['clone', '-q', g.root, clone]);
  change(clone);
  execFileSync('git', ['add', '-A'], { cwd: clone });
  return execFileSync('git', ['diff', '--cached', '--binary'], { cwd: clone, encoding: 'utf8' });
}

async function finishWithPatch(g: GitGarden, server: RunningServer, patch: string) {
  const claim = await call(server, 'POST', '/tasks/claim', {});
  expect(claim.status).toBe(200);
  const lease = claim.body.lease as LeaseRecord;
  const attached = await call(server, 'POST', `/runs/${lease.run}/artifacts`, { lease: lease.id, name: 'diff.patch', kind: 'diff', content: Buffer.from(patch).toString('base64'), encoding: 'base64' });
  expect(attached.status).toBe(201);
  const finished = await call(server, 'POST', `/runs/${lease.run}/finish`, {
    lease: lease.id,
    status: 'success',
    failure_reason: null,
    exit_code: 0,
    cost: { source: 'provider', usd: 0.01 },
    session_id: null,
    final_text: 'done',
    error: null,
    num_turns: 1,
    reflection: null,
    stream_bytes: { events: 0, stderr: 0 },
    acceptance: [],
    lingered: false,
    leftovers: [],
    watchdog: null,
    permission_denials: [],
    operator_stop: null,
  });
  expect(finished.status, JSON.stringify(finished.body)).toBe(200);
  return lease.run;
}

describe("a remote runner's diff.patch lands through the queue", () => {
  it('a finish that died after closing the run, before taking its work in: the lease reaper takes the work in before it settles, so it lands', async () => {
    const g = await makeGitGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false, leaseCheckMs: false });
    const goal = await submitWork(g, ['(run by a remote runner)']);
    const patch = runnerPatch(g, (dir) => fs.writeFileSync(path.join(dir, 'kept.txt'), 'not lost\n'));
    const claim = await call(server, 'POST', '/tasks/claim', {});
    const lease = claim.body.lease as LeaseRecord;
    expect((await call(server, 'POST', `/runs/${lease.run}/artifacts`, { lease: lease.id, name: 'diff.patch', kind: 'diff', content: Buffer.from(patch).toString('base64'), encoding: 'base64' })).status).toBe(201);
    // The finish's close happened; then the garden died: the lease is active, the work not taken in, the goal running.
    const goalType = (await readGoal(g.paths, goal.id)).type;
    await closeRun(g.paths, lease.run, goalType, { status: 'success', cost: { source: 'provider', usd: 0.01 }, finalText: 'done', reflection: 'Learned: runners die.', by: 'runner' });
    expect((await readLease(g.paths, lease.run))?.state).toBe('active');
    expect(await readLanding(g.paths, lease.run)).toBeUndefined();
    const out = await superviseRemoteRuns(g, new OpenGoalScanner(g.paths));
    expect(out.settled).toEqual([goal.id]);
    expect(await readLanding(g.paths, lease.run)).toMatchObject({ state: 'queued', files: [{ path: 'kept.txt', status: 'A' }] });
    expect((await readGoal(g.paths, goal.id)).status).toBe('completed');
    await runUntil(g, [goal.id]);
    expect(git(g.root, 'show', 'main:kept.txt')).toBe('not lost');
  });

  it('applied in the run\'s worktree from the base at claim, committed, landed on main by the coordinator', async () => {
    const g = await makeGitGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false });
    const goal = await submitWork(g, ['(run by a remote runner)']);
    const patch = runnerPatch(g, (dir) => {
      fs.mkdirSync(path.join(dir, 'lib'));
      fs.writeFileSync(path.join(dir, 'lib', 'remote.txt'), 'made on a runner\n');
    });
    const runId = await finishWithPatch(g, server, patch);
    const run = await readRun(g.paths, runId);
    expect(run).toMatchObject({ status: 'success', runner: { name: 'r1' }, worktree: { branch: `pak2/${runId}`, base_branch: 'main' } });
    expect(await readLanding(g.paths, runId)).toMatchObject({ state: 'queued', files: [{ path: 'lib/remote.txt', status: 'A' }] });
    expect((await readGoal(g.paths, goal.id)).status).toBe('completed');
    // The coordinator's queue lands it.
    await runUntil(g, [goal.id]);
    expect(await readLanding(g.paths, runId)).toMatchObject({ state: 'landed' });
    expect(git(g.root, 'show', 'main:lib/remote.txt')).toBe('made on a runner');
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
  });

  it('a patch that no longer applies to the base it was claimed on is a conflict: the goal goes back to the queue', async () => {
    const g = await makeGitGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false });
    const goal = await submitWork(g, ['(run by a remote runner)']);
    // The runner worked from an older README than the garden's base.
    const patch = runnerPatch(g, (dir) => fs.writeFileSync(path.join(dir, 'README.md'), '# Project\n\nA line the runner rewrote.\n'));
    fs.writeFileSync(path.join(g.root, 'README.md'), '# Project\n\nThe operator rewrote it first.\n');
    git(g.root, 'commit', '-qam', 'the operator');
    const runId = await finishWithPatch(g, server, patch);
    expect(await readLanding(g.paths, runId)).toMatchObject({ state: 'conflict', failure_reason: 'landing_conflict' });
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
    expect(fs.readFileSync(path.join(g.root, 'README.md'), 'utf8')).toBe('# Project\n\nThe operator rewrote it first.\n');
  });
});
