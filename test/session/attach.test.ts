/**
 * A workbench session attaches to the coordinator another process runs
 * (issue 28, item 3; docs/workbench/level2.md, "Attached"): a real `pak2
 * cycle --no-ui` holds the garden; a session opened with `attach` does not
 * refuse, runs no coordinator of its own, and its operator actions work
 * through the other one (a goal submitted here is run there; a cancel of
 * its live run kills the agent there). The snapshot carries who it is
 * attached to, its state and live runs. kill -9 of it is seen; the next
 * coordinator that starts is attached to; once none runs, a take-over
 * starts this session's own, and a new headless one is refused.
 *
 * Every wait is for a state (a record, a process, the snapshot), never a time.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorHeld } from '../../source/coordinator/index.js';
import { RUN_PROCESS_FILE } from '../../source/driver/dispatch.js';
import { UserError } from '../../source/errors.js';
import { Session } from '../../source/session/index.js';
import { readGoal, readRun } from '../../source/store/index.js';
import { runCli, startCli } from '../support/cli.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c();
    } catch {
      // keep cleaning
    }
  }
});

/** `pak2 cycle --no-ui` on the garden, once it has started (its CoordinatorStarted line); stopped after the test. */
async function startCycle(root: string): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const child = startCli(['cycle', '--no-ui', '--garden', root], { env: { CI: '' } });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  await waitFor(() => /CoordinatorStarted/.test(output) || child.exitCode !== null, 30_000);
  if (child.exitCode !== null) throw new Error(`pak2 cycle did not start: ${output}`);
  return { child, output: () => output, exited };
}

/** The parent pid of a process (from /proc). */
function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

describe('a workbench session attached to a running coordinator', () => {
  it('runs no coordinator of its own; a goal submitted through it is run by the cycle process, and its cancel kills the agent there', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const cycle = await startCycle(garden.paths.gardenRoot);

    const session = new Session({ garden, command: 'pak2 (workbench)', attach: true, noticesToRunLog: true, onStderr: () => undefined });
    cleanups.push(() => session.close());
    await session.open();
    expect(session.attached).toBe(true);
    expect(session.coordinator!.state).toBe('stopped');
    const view = session.attachment!.view!;
    expect(view.holder).toMatchObject({ pid: cycle.child.pid, host: os.hostname(), command: 'pak2 cycle --no-ui' });
    // Its state as it reports it (its first pass may be under way as the session attaches).
    await waitFor(() => session.source!.getSnapshot().coordinator.attached?.state === 'idle', 20_000);
    expect(session.source!.getSnapshot().garden.readOnly).toBe(false);

    // A headless coordinator does not attach: it is refused as before, naming the holder.
    const headless = new Session({ garden, command: 'pak2 cycle --no-ui', snapshot: false });
    const refused = await headless.open().then(
      () => undefined,
      (error: unknown) => error,
    );
    await headless.close();
    expect(refused).toBeInstanceOf(CoordinatorHeld);
    expect((refused as CoordinatorHeld).holder?.pid).toBe(cycle.child.pid);

    // Submitted here, run there: the agent is the cycle process's child, and the snapshot counts it live there.
    const goal = await session.actions!.submitGoal({ type: 'build', plant: 'gardener', body: 'a long job', driver: 'chatty-stall' });
    const runId = `${goal.id}-r1`;
    await waitFor(() => session.source!.getSnapshot().coordinator.attached?.liveRuns.includes(runId) === true, 20_000);
    const agent = (JSON.parse(fs.readFileSync(path.join(garden.paths.runsDir, runId, RUN_PROCESS_FILE), 'utf8')) as { pid: number }).pid;
    expect(parentOf(agent)).toBe(cycle.child.pid);
    expect(session.source!.getSnapshot().coordinator.liveRuns).toEqual([]);

    // Cancelled here: the cycle process stops it (its process group killed) and records it.
    const cancelled = await session.actions!.cancelGoal(goal.id);
    expect(cancelled.stopped?.by).toBe('coordinator');
    await waitFor(async () => (await readGoal(garden.paths, goal.id)).status === 'closed', 20_000);
    expect(await readRun(garden.paths, runId)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped' });
    expect(await readGoal(garden.paths, goal.id)).toMatchObject({ closed_reason: 'cancelled' });
    await waitFor(() => !isAlive(agent), 10_000);
    await waitFor(() => session.source!.getSnapshot().coordinator.attached?.liveRuns.length === 0);
    await waitFor(() => /RunClosed\s+\S+ killed \(operator_stopped\)/.test(cycle.output()));

    // Quitting the attached session leaves the cycle running.
    await session.close();
    expect(cycle.child.exitCode).toBeNull();
    expect(session.attachment!.view).toBeUndefined();
  }, 90_000);

  it('sees the coordinator die (kill -9), attaches to the next one that starts, and takes over once none runs', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const first = await startCycle(garden.paths.gardenRoot);
    const session = new Session({ garden, command: 'pak2 (workbench)', attach: true, noticesToRunLog: true, onStderr: () => undefined });
    cleanups.push(() => session.close());
    await session.open();
    expect(session.attachment!.view?.holder.pid).toBe(first.child.pid);
    // Nothing to take over while it runs.
    await expect(session.takeOver()).rejects.toThrow(UserError);
    await expect(session.takeOver()).rejects.toThrow(`the coordinator of pid ${first.child.pid}`);

    // kill -9: no stop path ran, the kernel closed its socket; the view says it went.
    first.child.kill('SIGKILL');
    await first.exited;
    await waitFor(() => session.source!.getSnapshot().coordinator.attached?.goneAt !== undefined, 10_000);
    expect(session.attachment!.alive).toBe(false);
    expect(session.source!.getSnapshot().coordinator.attached?.holder.pid).toBe(first.child.pid);

    // A restart (systemd): the workbench attaches to it.
    const second = await startCycle(garden.paths.gardenRoot);
    await waitFor(() => session.attachment!.alive && session.attachment!.view?.holder.pid === second.child.pid, 10_000);
    expect(session.source!.getSnapshot().coordinator.attached?.goneAt).toBeUndefined();

    // It stops cleanly (SIGTERM): seen; then take over.
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    await waitFor(() => session.attachment!.view?.goneAt !== undefined, 10_000);
    expect(await session.takeOver()).toBe(`this workbench runs the coordinator now (pid ${process.pid})`);
    expect(session.coordinator!.state).not.toBe('stopped');
    expect(session.attached).toBe(false);
    await waitFor(() => session.source!.getSnapshot().coordinator.attached === undefined && session.source!.getSnapshot().coordinator.state !== 'stopped');

    // Now this session holds the garden: a new headless cycle is refused, naming it.
    const refused = await runCli(['cycle', '--no-ui', '--garden', garden.paths.gardenRoot], { env: { CI: '' } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`another coordinator is running this garden: pid ${process.pid}`);
    expect(refused.stderr).toContain('(pak2 (workbench))');
    expect(refused.stderr).toContain('open the workbench (`pak2`), which attaches to it');

    // And its own goals run here.
    const goal = await session.actions!.submitGoal({ type: 'build', plant: 'gardener', body: 'quick', driver: 'success' });
    await waitFor(async () => (await readGoal(garden.paths, goal.id)).status === 'closed', 20_000);
    expect(await readGoal(garden.paths, goal.id)).toMatchObject({ closed_reason: 'success' });
  }, 90_000);
});
