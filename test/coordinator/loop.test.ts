import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, reconcile } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, listGoals, readGoal, readRun } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { isAlive, makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
let coordinator: Coordinator | undefined;
afterEach(async () => {
  await coordinator?.stop();
  coordinator = undefined;
  garden?.cleanup();
});

function quiet(g: Garden): Coordinator {
  return new Coordinator({ garden: g, onStderr: () => undefined });
}

describe('the coordinator loop', () => {
  it('dispatches a goal written by another process without waiting for the timer', async () => {
    garden = await makeTestGarden({ coordinator: { interval_seconds: 3600 } });
    coordinator = quiet(garden);
    await coordinator.start();
    await waitFor(() => coordinator!.summary !== undefined);
    const submitted = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'from another process']);
    expect(submitted.stderr).toBe('');
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    // The timer is an hour away: only the file watch can have woken the loop.
    await waitFor(async () => (await readGoal(garden.paths, id)).status === 'closed', 15_000);
    expect((await readGoal(garden.paths, id)).closed_reason).toBe('success');
  });

  it('refuses a second coordinator on the same garden, naming the holder', async () => {
    garden = await makeTestGarden();
    coordinator = quiet(garden);
    await coordinator.start();
    const second = await runCli(['cycle', '--no-ui', '--until-idle', '--garden', garden.paths.gardenRoot]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`another coordinator is running this garden: pid ${process.pid}`);
    expect(second.stderr).toContain('coordinator.lock');
  });

  it('the watchdog kills a silent run as a whole process group: no agent child survives', async () => {
    garden = await makeTestGarden({ coordinator: { watchdog_seconds: 1, interval_seconds: 1 } });
    const pidfile = path.join(garden.paths.gardenRoot, 'pids.txt');
    process.env.FAKE_AGENT_PIDFILE = pidfile;
    try {
      const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'stall', driver: 'stall' });
      coordinator = quiet(garden);
      await coordinator.start();
      await waitFor(() => fs.existsSync(pidfile));
      const [agentPid, grandchildPid] = fs.readFileSync(pidfile, 'utf8').trim().split(' ').map(Number);
      expect(isAlive(agentPid!)).toBe(true);
      expect(isAlive(grandchildPid!)).toBe(true);
      await waitFor(async () => (await readGoal(garden.paths, goal.id)).status === 'closed', 15_000);
      const run = await readRun(garden.paths, `${goal.id}-r1`);
      expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed' });
      await waitFor(() => !isAlive(agentPid!) && !isAlive(grandchildPid!), 10_000);
      expect(readEventLog(garden).filter((e) => e.type === 'RunClosed').map((e) => e.detail)).toEqual(['closed by watchdog']);
    } finally {
      delete process.env.FAKE_AGENT_PIDFILE;
    }
  });

  it('stopping the coordinator kills live runs, closes them killed / coordinator_stopped, and requeues their goals', async () => {
    garden = await makeTestGarden();
    const pidfile = path.join(garden.paths.gardenRoot, 'pids.txt');
    process.env.FAKE_AGENT_PIDFILE = pidfile;
    try {
      const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'stall', driver: 'chatty-stall' });
      coordinator = quiet(garden);
      await coordinator.start();
      await waitFor(() => fs.existsSync(pidfile));
      const pids = fs.readFileSync(pidfile, 'utf8').trim().split(' ').map(Number);
      expect(coordinator.live.size).toBe(1);
      await coordinator.stop();
      const run = await readRun(garden.paths, `${goal.id}-r1`);
      expect(run).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
      await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000);
      expect(readEventLog(garden).filter((e) => e.type === 'RunClosed').map((e) => e.detail)).toEqual(['closed by coordinator']);
      // The interruption is not the goal's failure: the stop itself puts it back in the queue, and the next pass runs attempt r2.
      expect((await readGoal(garden.paths, goal.id)).status).toBe('queued');
      const dispatched: string[] = [];
      await reconcile({ garden, dispatch: async (_g, runId) => void dispatched.push(runId) });
      expect(dispatched).toEqual([`${goal.id}-r2`]);
    } finally {
      delete process.env.FAKE_AGENT_PIDFILE;
    }
  });

  it('a process the agent left in a session of its own does not outlive the run', async () => {
    garden = await makeTestGarden();
    const pidfile = path.join(garden.paths.gardenRoot, 'pids.txt');
    process.env.FAKE_AGENT_PIDFILE = pidfile;
    try {
      const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'orphan', driver: 'orphan' });
      coordinator = quiet(garden);
      await coordinator.start();
      await coordinator.untilIdle();
      expect((await readRun(garden.paths, `${goal.id}-r1`)).status).toBe('success');
      const [, orphan] = fs.readFileSync(pidfile, 'utf8').trim().split(' ').map(Number);
      await waitFor(() => !isAlive(orphan!), 5_000);
    } finally {
      delete process.env.FAKE_AGENT_PIDFILE;
    }
  });

  it('untilIdle resolves once every goal is closed', async () => {
    garden = await makeTestGarden();
    const ids = [];
    for (let i = 0; i < 3; i += 1) ids.push((await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `goal ${i}` })).id);
    coordinator = quiet(garden);
    await coordinator.start();
    await coordinator.untilIdle();
    for (const id of ids) expect((await readGoal(garden.paths, id)).status).toBe('closed');
  });

  it('a pass under way when stop() is called ends the loop: the coordinator stays stopping, and no pass follows the stop (CI: a stopped coordinator dispatched the next holder\'s goal)', async () => {
    garden = await makeTestGarden({ coordinator: { interval_seconds: 3600 } });
    const states: string[] = [];
    let passes = 0;
    let stopping: Promise<void> | undefined;
    const c = new Coordinator({
      garden,
      onStderr: () => undefined,
      debounceMs: 0,
      hooks: {
        afterPass: async () => {
          passes += 1;
          // A goal arrives while this pass runs (its watch wakes the loop), and the operator stops: both during the pass.
          if (passes === 1) {
            await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'after the stop' });
            c.wake(0);
            stopping = c.stop();
          }
        },
      },
    });
    c.on('state', (state: string) => states.push(state));
    await c.start();
    await waitFor(() => stopping !== undefined);
    await stopping;
    expect(states.slice(states.indexOf('stopping'))).toEqual(['stopping', 'stopped']);
    expect(c.state).toBe('stopped');
    // A pass begun after the stop would have dispatched the goal written during the last one.
    c.wake(0);
    expect(passes).toBe(1);
    const queued = (await listGoals(garden.paths)).goals.find((g) => g.body === 'after the stop');
    expect(queued?.status).toBe('queued');
  });
});
