/**
 * The operator stops one live run (`pak2 stop RUN`, `pak2 cancel GOAL` on a
 * running goal): killed / operator_stopped, the stream's facts kept, the
 * goal cancelled or requeued, no automatic tend (issue 14, item 2).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { isAlive, makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

const TRUTH_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/truth-agent.mjs');

type TestGarden = Garden & { cleanup: () => void };
let garden: TestGarden | undefined;
let coordinator: Coordinator | undefined;
afterEach(async () => {
  await coordinator?.stop();
  coordinator = undefined;
  garden?.cleanup();
  garden = undefined;
});

async function liveRun(): Promise<{ g: TestGarden; goalId: string; runId: string; pids: number[] }> {
  garden = await makeTestGarden({ extraToml: `[drivers.claude]\ncommand = ${JSON.stringify([process.execPath, TRUTH_AGENT, 'claude-stall-sigint'])}` });
  const g = garden;
  const pidfile = path.join(g.paths.gardenRoot, 'pids.txt');
  process.env.TRUTH_PIDFILE = pidfile;
  const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'work until stopped', driver: 'claude' });
  coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
  await coordinator.start();
  const runId = `${goal.id}-r1`;
  try {
    await waitFor(() => fs.existsSync(pidfile) && fs.existsSync(runEventsPath(g, runId)) && fs.readFileSync(runEventsPath(g, runId), 'utf8').includes('Working on it'), 10_000);
  } finally {
    delete process.env.TRUTH_PIDFILE;
  }
  return { g, goalId: goal.id, runId, pids: fs.readFileSync(pidfile, 'utf8').trim().split('\n').map(Number) };
}

function runEventsPath(g: TestGarden, runId: string): string {
  return path.join(g.paths.runsDir, runId, 'events.jsonl');
}

describe('pak2 stop', () => {
  it('stops a live run from another process: killed / operator_stopped with its session and SIGINT cost, the goal cancelled, no tend', async () => {
    const { g, goalId, runId, pids } = await liveRun();
    const result = await runCli(['stop', runId, '--garden', g.paths.gardenRoot]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`stopping ${runId}: run ${runId}: SIGINT sent to its process group`);
    await waitFor(async () => (await readGoal(g.paths, goalId)).status === 'closed', 15_000);
    const run = await readRun(g.paths, runId);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped', session_id: 'S1', cost: { source: 'provider', usd: 0.3 }, operator_stop: { requeue: false }, outputs: { error: 'stopped by the operator' } });
    expect(await readGoal(g.paths, goalId)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
    expect(readEventLog(g).some((e) => e.type === 'GoalSubmitted' && e.goal?.includes('-tend-'))).toBe(false);
    await waitFor(() => pids.every((pid) => !isAlive(pid)), 5000);
  });

  it('--requeue puts the goal back in the queue for another attempt', async () => {
    const { g, goalId, runId } = await liveRun();
    const result = await runCli(['stop', runId, '--requeue', '--garden', g.paths.gardenRoot]);
    expect(result.code).toBe(0);
    await waitFor(async () => fs.existsSync(path.join(g.paths.runsDir, `${goalId}-r2`)), 15_000);
    expect(await readRun(g.paths, runId)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped', operator_stop: { requeue: true } });
    expect(readEventLog(g).filter((e) => e.type === 'GoalTransitioned' && e.goal === goalId).map((e) => `${e.from}>${e.to}`)).toContain('running>queued');
  });

  it('pak2 cancel on a running goal stops its run and closes it cancelled', async () => {
    const { g, goalId, runId } = await liveRun();
    const result = await runCli(['cancel', goalId, '--garden', g.paths.gardenRoot]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`cancelling ${goalId}: stopping run ${runId}`);
    await waitFor(async () => (await readGoal(g.paths, goalId)).status === 'closed', 15_000);
    expect(await readGoal(g.paths, goalId)).toMatchObject({ closed_reason: 'cancelled' });
  });

  it('a run no coordinator holds (its coordinator was killed -9) is swept and closed by the stop itself', async () => {
    garden = await makeTestGarden({ extraToml: `[drivers.claude]\ncommand = ${JSON.stringify([process.execPath, TRUTH_AGENT, 'claude-stall-sigint'])}` });
    const g = garden;
    const pidfile = path.join(g.paths.gardenRoot, 'pids.txt');
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'orphaned', driver: 'claude' });
    const runId = `${goal.id}-r1`;
    const cycle = spawn(process.execPath, [PAK2_BIN, 'cycle', '--garden', g.paths.gardenRoot, '--no-ui'], { env: { ...process.env, TRUTH_PIDFILE: pidfile }, stdio: 'ignore' });
    const exited = new Promise((r) => cycle.once('close', r));
    await waitFor(() => fs.existsSync(runEventsPath(g, runId)) && fs.readFileSync(runEventsPath(g, runId), 'utf8').includes('Working on it'), 10_000);
    cycle.kill('SIGKILL');
    await exited;
    const pids = fs.readFileSync(pidfile, 'utf8').trim().split('\n').map(Number);
    expect((await readRun(g.paths, runId)).status).toBe('running');
    const result = await runCli(['stop', runId, '--garden', g.paths.gardenRoot]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('no coordinator is running this garden; the run was swept and closed here');
    expect(await readRun(g.paths, runId)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped', session_id: 'S1' });
    expect(await readGoal(g.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
    await waitFor(() => pids.every((pid) => !isAlive(pid)), 5000);
  });

  it.each([
    [['stop', 'nonsense'], 2, 'RUN nonsense: not a run id (N-slug-rN)'],
    [['stop', '9-nope-r1'], 2, 'RUN 9-nope-r1: no such run'],
  ])('pak2 %j: one-line error, exit %i', async (args, code, message) => {
    garden = await makeTestGarden();
    const result = await runCli([...args, '--garden', garden.paths.gardenRoot]);
    expect(result.code).toBe(code);
    expect(result.stderr.trim().split('\n')[0]).toContain(message);
  });
});
