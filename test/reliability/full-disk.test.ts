/**
 * A full disk is an error, not a hang (issue 25, item 8). Faults are
 * injected through PAK2_FAULT_WRITE (source/checked-write.ts) in every run
 * of the suite, and met for real on a small tmpfs where the machine lets a
 * test mount one. Every wait waits for a state (a pass, an event, an exit);
 * "no spin" is counted in passes and events, never timed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WRITE_FAULT_ENV } from '../../source/checked-write.js';
import { Coordinator, type ReconcileSummary } from '../../source/coordinator/index.js';
import type { EventRecord } from '../../source/contracts/index.js';
import { createGoal, latestRun, onEvent, readGoal, readRun } from '../../source/store/index.js';
import { cleanupAll, exitOf, robustGarden, start, waitFor } from '../robustness/helpers.js';
import { canMountTmpfs, fillDisk, mountTmpfs, unmountAll } from '../support/tmpfs.js';

const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  delete process.env[WRITE_FAULT_ENV];
  for (const stop of stops.splice(0)) await stop();
  await cleanupAll();
  unmountAll();
});

/** A coordinator on `garden` whose notices, passes and events are collected. */
function watched(garden: Awaited<ReturnType<typeof robustGarden>>) {
  const notices: string[] = [];
  const passes: ReconcileSummary[] = [];
  const events: EventRecord[] = [];
  const coordinator = new Coordinator({ garden, onStderr: () => undefined, onError: (error) => notices.push(error.message), onPass: (summary) => passes.push(summary) });
  const unlisten = onEvent((event) => events.push(event));
  stops.push(async () => {
    unlisten();
    await coordinator.stop();
  });
  return { coordinator, notices, passes, events };
}

/** Wakes the coordinator `times` times, each time waiting for the pass it asked for: a window bounded by passes, not by time. */
async function passesMore(w: ReturnType<typeof watched>, times: number): Promise<void> {
  for (let i = 0; i < times; i += 1) {
    const before = w.passes.length;
    w.coordinator.wake(0);
    await waitFor(() => w.passes.length > before);
  }
}

describe('a run whose close fails on a full disk', () => {
  it('ENOSPC (injected) on its record: left for recovery with one line naming the file and errno; idle; no pass writes or repeats; closed with what is known once writes succeed', async () => {
    const garden = await robustGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'fill the disk', driver: 'success' });
    const runId = `${goal.id}-r1`;
    const w = watched(garden);
    // The run opens on a healthy disk; from its RunStarted on, no run record can be written.
    const armed = onEvent((event) => {
      if (event.type === 'RunStarted') process.env[WRITE_FAULT_ENV] = 'ENOSPC@.seals/';
    });
    stops.push(armed);
    await w.coordinator.start();
    await w.coordinator.untilIdle();

    const said = w.notices.filter((n) => n.includes('could not be closed'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(new RegExp(`^run ${runId} could not be closed: \\S+/runs/\\.seals/${runId}\\.json: ENOSPC \\(no space left on the device\\); left for recovery`));
    expect((await readRun(garden.paths, runId)).status).toBe('running');
    expect(w.passes.at(-1)!.inFlight).toBe(0);

    // Passes while the fault holds: no event written, nothing said again.
    const events = w.events.length;
    await passesMore(w, 5);
    expect(w.events.length).toBe(events);
    expect(w.notices.filter((n) => n.includes('could not be closed'))).toHaveLength(1);

    // Room again: the backoff's end wakes a pass that closes it with what its closer knew.
    delete process.env[WRITE_FAULT_ENV];
    await waitFor(() => w.events.some((e) => e.type === 'GoalClosed' && e.goal === goal.id), 30_000);
    const run = await readRun(garden.paths, runId);
    expect(run.status).toBe('failure');
    expect(run.failure_reason).toBe('driver_error');
    expect(JSON.stringify(run)).toContain('ENOSPC');
    expect((await readGoal(garden.paths, goal.id)).status).toBe('closed');
  });
});

describe('opening a run fails on I/O', () => {
  it('EIO (injected) on every open: said once, the goal back in the queue, dispatch backs off (no transition per pass), and dispatches once writes succeed', async () => {
    const garden = await robustGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'never opens', driver: 'success' });
    process.env[WRITE_FAULT_ENV] = 'EIO@.seals/';
    const w = watched(garden);
    await w.coordinator.start();
    await waitFor(() => w.passes.some((p) => p.ioHeld.some((h) => h.goal === goal.id)));

    const transitions = () => w.events.filter((e) => e.type === 'GoalTransitioned' && e.goal === goal.id).length;
    expect(transitions()).toBe(2); // queued → dispatched → queued, once
    expect(w.notices.filter((n) => n.startsWith(`opening a run of ${goal.id} failed: `))).toEqual([
      expect.stringMatching(new RegExp(`: \\S+/runs/\\.seals/${goal.id}-r1\\.json: EIO \\(input/output error\\); the goal goes back to the queue`)),
    ]);
    expect((await readGoal(garden.paths, goal.id)).status).toBe('queued');
    // The rollback's own write wakes the watch: the passes after it hold, write nothing and say nothing.
    await passesMore(w, 8);
    expect(transitions()).toBe(2);
    expect(w.notices).toHaveLength(1);
    // (The automatic tend for queued goals that cannot dispatch waits with it.)
    expect(w.passes.at(-1)!.ioHeld).toContainEqual({ goal: goal.id, reason: expect.stringContaining('EIO') });

    delete process.env[WRITE_FAULT_ENV];
    await waitFor(() => w.events.some((e) => e.type === 'GoalClosed' && e.goal === goal.id), 30_000);
    expect((await latestRun(garden.paths, goal.id))?.status).toBe('success');
  });

  it('pak2 cycle --until-idle returns (status 1) with one line naming the file and errno', async () => {
    const garden = await robustGarden();
    await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'never opens', driver: 'success' });
    const cycle = start(['cycle', '--garden', garden.paths.gardenRoot, '--no-ui', '--until-idle'], { env: { [WRITE_FAULT_ENV]: 'ENOSPC@.seals/' } });
    expect((await exitOf(cycle, 60_000)).code).toBe(1);
    const lines = cycle.stderr().split('\n').filter((l) => l.includes('ENOSPC'));
    expect(lines[0]).toMatch(/^pak2: opening a run of 1-\S+ failed: \S+\.seals\/1-\S+-r1\.json: ENOSPC \(no space left on the device\)/);
    expect(lines.filter((l) => l.startsWith('pak2: opening a run'))).toHaveLength(1);
  });
});

describe.skipIf(!canMountTmpfs)('on a real full tmpfs', () => {
  it("an agent's 800 KB line on a nearly full disk: cycle --until-idle returns (status 1) with one line naming the file and ENOSPC, twice; with room again the next start closes the run and the goal's next attempt succeeds", async () => {
    const root = path.join(mountTmpfs(4096)!, 'garden');
    fs.mkdirSync(root);
    const garden = await robustGarden({ root });
    await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'dump a file', driver: 'big-line' });
    fillDisk(path.dirname(root), 500);
    const args = ['cycle', '--garden', root, '--no-ui', '--until-idle'];

    for (const attempt of [1, 2]) {
      const cycle = start(args);
      const { code } = await exitOf(cycle, 60_000);
      const said = cycle.stderr().split('\n').filter((l) => l.includes('ENOSPC'));
      expect({ attempt, code, said: said.length }).toEqual({ attempt, code: 1, said: 1 });
      expect(said[0]).toMatch(/^pak2: run 1-\S+-r1 could not be closed: \S+: ENOSPC \(no space left on the device\); left for recovery/);
    }
    const runId = fs.readdirSync(path.join(garden.paths.runtimeRoot, 'runs')).find((d) => d.endsWith('-r1'))!;
    expect((await readRun(garden.paths, runId)).status).toBe('running');

    fs.rmSync(path.join(path.dirname(root), 'filler'));
    const cycle = start(args);
    expect({ code: (await exitOf(cycle, 60_000)).code, stderr: cycle.stderr() }).toEqual({ code: 0, stderr: expect.any(String) });
    // Reclaimed by the start (the coordinator that ran it stopped without closing it), and the goal's next attempt fits.
    expect((await readRun(garden.paths, runId)).failure_reason).toBe('coordinator_stopped');
    expect((await readGoal(garden.paths, runId.slice(0, -3))).status).toBe('closed');
  });
});
