/**
 * The race harness (issue 15): two `pak2 cycle --no-ui` started together on
 * a garden whose lock is live, dead (holder pid gone) or stale (an old lock
 * directory with no holder record). Exactly one may run: 0 double starts.
 * CI runs PAK2_HARNESS_ITERATIONS (default 3) per case; `npm run harness --
 * --iterations N` runs more and prints the figures.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lockPaths } from '../../source/coordinator/lock.js';
import { cleanupAll, exitOf, robustGarden, start, waitFor, type Started } from '../robustness/helpers.js';

afterEach(cleanupAll);

const ITERATIONS = Number(process.env.PAK2_HARNESS_ITERATIONS ?? 3);

type Garden = Awaited<ReturnType<typeof robustGarden>>;

/** A pid that is certainly not running: a process that has exited and been reaped. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function plantDeadLock(garden: Garden, withHolder: boolean): void {
  const files = lockPaths(garden.paths);
  fs.mkdirSync(files.lock, { recursive: true });
  if (withHolder) fs.writeFileSync(files.holder, JSON.stringify({ pid: deadPid(), host: os.hostname(), started_at: '2026-11-30T00:00:00.000Z', command: 'pak2 cycle (killed -9)' }));
  else {
    fs.rmSync(files.holder, { force: true });
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(files.lock, old, old);
  }
}

/** Starts `count` coordinators at once and returns which kept running and which refused; waits for `losers` refusals (one winner by default). */
async function race(garden: Garden, count: number, losers = count - 1): Promise<{ running: Started[]; refused: { started: Started; code: number | null }[] }> {
  const all = Array.from({ length: count }, () => start(['cycle', '--garden', garden.paths.gardenRoot, '--no-ui']));
  const exits = new Map<Started, number | null>();
  for (const s of all) void s.exited.then(({ code }) => exits.set(s, code));
  // Every loser refuses within a few seconds; winners keep running until stopped.
  await waitFor(() => exits.size >= losers, 60_000).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 500));
  const refused = all.filter((s) => exits.has(s)).map((started) => ({ started, code: exits.get(started)! }));
  const running = all.filter((s) => !exits.has(s));
  return { running, refused };
}

async function stopAll(running: Started[]): Promise<void> {
  for (const s of running) s.child.kill('SIGTERM');
  for (const s of running) await exitOf(s, 15_000);
}

describe(`race harness: coordinators started together (${ITERATIONS} iterations per case)`, () => {
  for (const lock of ['dead', 'stale'] as const) {
    it(`a ${lock} lock: exactly one of two starts, the other names the winner`, async () => {
      let doubleStarts = 0;
      for (let i = 0; i < ITERATIONS; i += 1) {
        const garden = await robustGarden();
        plantDeadLock(garden, lock === 'dead');
        const { running, refused } = await race(garden, 2);
        if (running.length !== 1) doubleStarts += 1;
        expect(running.length, `iteration ${i}: running ${running.length}`).toBe(1);
        expect(refused).toHaveLength(1);
        expect(refused[0]!.code).toBe(1);
        expect(refused[0]!.started.stderr()).toContain(`another coordinator is running this garden: pid ${running[0]!.child.pid} on ${os.hostname()}`);
        // The loser prints nothing of the winner's (its CoordinatorStarted) before it refuses.
        expect(refused[0]!.started.stdout()).toBe('');
        await stopAll(running);
      }
      expect(doubleStarts).toBe(0);
    }, 60_000 + ITERATIONS * 60_000);
  }

  it('a live lock: neither of two newcomers starts, both name the holder', async () => {
    for (let i = 0; i < ITERATIONS; i += 1) {
      const garden = await robustGarden();
      const holder = start(['cycle', '--garden', garden.paths.gardenRoot, '--no-ui']);
      await waitFor(() => fs.existsSync(lockPaths(garden.paths).holder), 10_000);
      // Both must refuse: wait for both (on a loaded machine the second refusal can come well after the first).
      const { running, refused } = await race(garden, 2, 2);
      expect(running).toHaveLength(0);
      for (const r of refused) {
        expect(r.code).toBe(1);
        expect(r.started.stderr()).toContain(`pid ${holder.child.pid} on ${os.hostname()}`);
        expect(r.started.stdout()).toBe('');
      }
      await stopAll([holder]);
    }
  }, 60_000 + ITERATIONS * 60_000);

  it('a dead lock after a real kill -9 with goals queued: the restarted pair runs each goal once', async () => {
    const garden = await robustGarden();
    const first = start(['cycle', '--garden', garden.paths.gardenRoot, '--no-ui']);
    await waitFor(() => fs.existsSync(lockPaths(garden.paths).holder), 10_000);
    first.child.kill('SIGKILL');
    await exitOf(first);
    const { createGoal } = await import('../../source/store/index.js');
    const goals: { id: string }[] = [];
    for (let i = 0; i < 3; i += 1) goals.push(await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `after the crash ${i}` }));
    const { running } = await race(garden, 2);
    expect(running).toHaveLength(1);
    const { readGoal } = await import('../../source/store/index.js');
    await waitFor(async () => (await Promise.all(goals.map((g) => readGoal(garden.paths, g.id)))).every((g) => g.status === 'closed'), 20_000);
    await stopAll(running);
    for (const goal of goals) expect(fs.existsSync(path.join(garden.paths.runsDir, `${goal.id}-r2`))).toBe(false);
  }, 60_000);
});
