/**
 * Attaching on a garden in PostgreSQL (issue 28, item 3; docs/workbench/
 * level2.md, "Attached"; docs/store/level2.md, "Many processes, one
 * garden"): two checkouts, each with its own real `pak2 cycle --no-ui`
 * sharing the garden. A workbench session opened in checkout A attaches to
 * A's coordinator (the lock is a checkout's; B's coordinator goes on as
 * before). From it, a cancel of the run A's coordinator runs goes over A's
 * socket; a cancel of the run B's coordinator runs goes on its lease, and
 * B kills its agent at the next renewal: neither is closed while its agent
 * still lives, and neither coordinator stops.
 *
 * Every wait is for a state (a record, a process), never a time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_PROCESS_FILE } from '../../source/driver/dispatch.js';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { Session } from '../../source/session/index.js';
import { attachConfiguredStore } from '../../source/store/attach.js';
import { commissionPlant, detachStore, readGoal, readRun, type GardenStore } from '../../source/store/index.js';
import { FAKE_AGENT, isAlive, waitFor } from '../support/garden.js';
import { testDatabase } from '../support/pg-test.js';
import { makeCheckout, startCycle, stopProcess, type FleetProcess } from './fleet-support.js';

/** A driver whose agent talks and never ends until stopped. */
const STALL = `[drivers.stall]\ncommand = ${JSON.stringify([process.execPath, FAKE_AGENT, 'chatty-stall'])}\n`;

describe('a workbench attached on a PostgreSQL garden run by two coordinators', { timeout: 180_000 }, () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  const dirs: string[] = [];
  const processes: FleetProcess[] = [];
  let garden: Garden;
  let store: GardenStore | undefined;
  let session: Session | undefined;

  beforeAll(async () => {
    db = await testDatabase('pak2_attach');
    for (let i = 0; i < 2; i++) {
      const root = makeCheckout(db.url, { maxRuns: 1, ttl: 3, ...(dirs[0] ? { plantsFrom: dirs[0] } : {}) });
      fs.appendFileSync(path.join(root, 'PAK2.toml'), STALL);
      dirs.push(root);
      if (i === 0) {
        garden = loadGarden(root);
        store = attachConfiguredStore(garden);
        await commissionPlant(garden.paths, 'gardener', 'gardener');
      }
    }
  });

  afterAll(async () => {
    await session?.close();
    await Promise.all(processes.map((p) => stopProcess(p)));
    if (garden) detachStore(garden.paths);
    await store?.close();
    await db?.drop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The pid of the agent of `runId` when `root`'s coordinator launched it (its process.json is in that checkout). */
  const agentIn = (root: string, runId: string): number | undefined => {
    try {
      return (JSON.parse(fs.readFileSync(path.join(root, '.runtime', 'runs', runId, RUN_PROCESS_FILE), 'utf8')) as { pid: number }).pid;
    } catch {
      return undefined;
    }
  };

  it("attaches to its checkout's coordinator; cancels reach the run's own coordinator, over the socket or the lease", async () => {
    const [rootA, rootB] = dirs as [string, string];
    /** A coordinator's own CoordinatorStarted (each cycle prints every event of the garden). */
    const started = (p: FleetProcess) => new RegExp(`CoordinatorStarted[^\\n]*pid ${p.child.pid} `).test(p.output()) || p.child.exitCode !== null;
    const cycleA = startCycle(rootA, 'cycle-a');
    processes.push(cycleA);
    await waitFor(() => started(cycleA), 30_000);
    const cycleB = startCycle(rootB, 'cycle-b');
    processes.push(cycleB);
    await waitFor(() => started(cycleB), 30_000);
    expect(cycleA.child.exitCode).toBeNull();
    expect(cycleB.child.exitCode).toBeNull();

    session = new Session({ garden, command: 'pak2 (workbench)', attach: true, noticesToRunLog: true, onStderr: () => undefined });
    await session.open();
    expect(session.attachment!.view?.holder.pid).toBe(cycleA.child.pid);
    expect(session.coordinator!.state).toBe('stopped');

    // Two stalling goals, one run slot per coordinator: each coordinator runs one.
    const goals = [
      await session.actions!.submitGoal({ type: 'build', plant: 'gardener', body: 'stall one', driver: 'stall' }),
      await session.actions!.submitGoal({ type: 'build', plant: 'gardener', body: 'stall two', driver: 'stall' }),
    ];
    const runs = goals.map((g) => `${g.id}-r1`);
    await waitFor(async () => (await Promise.all(runs.map((r) => readRun(garden.paths, r).catch(() => undefined)))).every((r) => r?.status === 'running') && runs.every((r) => agentIn(rootA, r) ?? agentIn(rootB, r)), 60_000);
    const inA = runs.find((r) => agentIn(rootA, r) !== undefined)!;
    const inB = runs.find((r) => agentIn(rootB, r) !== undefined)!;
    expect(inA, 'one run in each checkout').toBeDefined();
    expect(inB, 'one run in each checkout').toBeDefined();
    const agentA = agentIn(rootA, inA)!;
    const agentB = agentIn(rootB, inB)!;
    await waitFor(() => session!.source!.getSnapshot().coordinator.attached?.liveRuns.includes(inA) === true, 20_000);
    expect(session.source!.getSnapshot().coordinator.attached?.liveRuns).not.toContain(inB);

    // B's run: told through its lease; B stops it and records it.
    const goalB = inB.replace(/-r1$/, '');
    const stoppedB = await session.actions!.cancelGoal(goalB);
    expect(stoppedB.stopped).toMatchObject({ by: 'coordinator' });
    expect(stoppedB.stopped?.detail).toMatch(/is told at its next lease renewal/);
    // Not closed here while B's agent lives.
    expect((await readRun(garden.paths, inB)).status).toBe('running');
    await waitFor(async () => (await readGoal(garden.paths, goalB)).status === 'closed', 60_000);
    expect(await readRun(garden.paths, inB)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped' });
    expect(await readGoal(garden.paths, goalB)).toMatchObject({ closed_reason: 'cancelled' });
    await waitFor(() => !isAlive(agentB), 10_000);

    // A's run: over A's socket.
    const goalA = inA.replace(/-r1$/, '');
    const stoppedA = await session.actions!.cancelGoal(goalA);
    expect(stoppedA.stopped).toMatchObject({ by: 'coordinator' });
    expect(stoppedA.stopped?.detail).toMatch(/SIGINT sent to its process group/);
    await waitFor(async () => (await readGoal(garden.paths, goalA)).status === 'closed', 30_000);
    expect(await readRun(garden.paths, inA)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped' });
    await waitFor(() => !isAlive(agentA), 10_000);

    // Both coordinators still run the garden.
    expect(cycleA.child.exitCode).toBeNull();
    expect(cycleB.child.exitCode).toBeNull();
    expect(session.attachment!.alive).toBe(true);
  });
});
