/**
 * The server repairs itself (issue 25, item 7; docs/server/level2.md,
 * "Recovery at start"): a real `pak2 serve`, with no coordinator anywhere,
 * is killed with SIGKILL in the middle of a runner's finish, at each step
 * between the run's close and the goal's; a new `pak2 serve` on the same
 * garden completes what was half done at its start (the missing events
 * appear, the goal settles), and the runner's retried finish gets a proper
 * answer (200 when the lease was still active, 409 when it had ended),
 * never a 500 and never a second close.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readGoal, readRun } from '../../source/store/index.js';
import { createGoal } from '../../source/store/index.js';
import { startCli } from '../support/cli.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';
import { until } from '../server/support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const RUNNER = { 'pak2-runner': 'r1', 'pak2-runner-host': 'box-1' };

const SUCCESS = {
  status: 'success',
  failure_reason: null,
  exit_code: 0,
  cost: { source: 'provider', usd: 0.01, input_tokens: 100, output_tokens: 10 },
  session_id: 'sess-1',
  final_text: 'done',
  error: null,
  num_turns: 1,
  reflection: 'Learned: the retry must not close twice.',
  stream_bytes: { events: 0, stderr: 0 },
};

/** A `pak2 serve` process: its URL once it says it serves, its stderr, its exit. */
async function startServe(root: string, env: NodeJS.ProcessEnv = {}) {
  const child: ChildProcess = startCli(['serve', '--garden', root, '--port', '0'], { env });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  await until(() => /pak2: serving (\S+)/.test(stderr) || child.exitCode !== null, 30_000, 'the start line');
  const url = /pak2: serving (\S+)/.exec(stderr)?.[1];
  if (!url) throw new Error(`no start line: ${stderr}`);
  const token = fs.readFileSync(path.join(root, '.runtime', 'serve', 'token'), 'utf8').trim();
  const call = (route: string, body: unknown) =>
    fetch(`${url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...RUNNER }, body: JSON.stringify(body) });
  return { child, exited, call, stderr: () => stderr };
}

describe('pak2 serve alone repairs a finish it was killed in', () => {
  it.each([
    // The run's record written, its RunClosed not: the lease is still active.
    ['run:success:after-meta', 200],
    // RunClosed written, the lease not ended, the goal still running.
    ['run:closed:after-event', 200],
    // The lease ended, the goal moved to completed without its event, never closed.
    ['goal:completed:after-write', 409],
  ] as const)('killed at %s: the next serve completes it at start; the retried finish is %i', async (point, retried) => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: `crash at ${point}` });

    const first = await startServe(g.paths.gardenRoot, { PAK2_CRASH_AT: point });
    const claim = await first.call('/tasks/claim', {});
    expect(claim.status).toBe(200);
    const { lease } = (await claim.json()) as { lease: { id: string; run: string } };
    const finish = { ...SUCCESS, lease: lease.id };
    await expect(first.call(`/runs/${lease.run}/finish`, finish)).rejects.toThrow();
    expect(await first.exited).toBe('SIGKILL');

    // What the crash left: the run closed, the goal not.
    expect((await readRun(g.paths, lease.run)).status).toBe('success');
    expect((await readGoal(g.paths, goal.id)).status).not.toBe('closed');
    expect(readEventLog(g).some((e) => e.type === 'GoalClosed')).toBe(false);

    const second = await startServe(g.paths.gardenRoot);
    // Repaired before it serves: the goal closed from its run, each missing event there once.
    expect(second.stderr()).toMatch(/pak2: recovered at start: goal \S+: closed success/);
    expect((await readGoal(g.paths, goal.id)).status).toBe('closed');
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    let log = readEventLog(g);
    expect(log.filter((e) => e.type === 'RunClosed' && e.run === lease.run)).toHaveLength(1);
    expect(log.filter((e) => e.type === 'GoalClosed' && e.goal === goal.id)).toHaveLength(1);
    let at = 'queued';
    for (const e of log.filter((e) => e.type === 'GoalTransitioned' && e.goal === goal.id)) {
      expect(e.from).toBe(at);
      at = e.to!;
    }
    expect(at).toBe('closed');

    // The runner, never told, retries its finish: a proper answer, no second close.
    const again = await second.call(`/runs/${lease.run}/finish`, finish);
    expect(again.status).toBe(retried);
    if (retried === 200) expect(await again.json()).toMatchObject({ run: { id: lease.run, status: 'success' }, goal: { id: goal.id, status: 'closed' } });
    else expect(await again.json()).toMatchObject({ state: 'finished' });
    // One that names another status than the record's: 409, nothing changed.
    if (retried === 200) {
      const other = await second.call(`/runs/${lease.run}/finish`, { ...finish, status: 'failure', failure_reason: 'agent_error', exit_code: 1, reflection: null });
      expect(other.status).toBe(409);
    }
    log = readEventLog(g);
    expect(log.filter((e) => e.type === 'RunClosed' && e.run === lease.run)).toHaveLength(1);
    expect(log.filter((e) => e.type === 'GoalClosed' && e.goal === goal.id)).toHaveLength(1);
    expect((await readRun(g.paths, lease.run)).status).toBe('success');
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'coordinator.holder.json'))).toBe(false);
  }, 120_000);
});
