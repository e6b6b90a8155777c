/**
 * Watching the coordinator over its socket (issue 28, item 3;
 * docs/garden/level2.md, "One coordinator per garden"; docs/workbench/
 * level2.md, "Attached"): `watch` answers with the holder and the
 * coordinator's status at once, sends it again each time it changed (and
 * only then), and the connection closes as the lock is released. A holder
 * that runs no loop (a start's recovery) is watched without a status; with
 * no coordinator there is nothing to watch. A real coordinator reports its
 * state and live runs, with any number of watchers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { acquireCoordinatorLock, Coordinator, CoordinatorHeld, coordinatorSocketName, watchCoordinator, type CoordinatorService, type CoordinatorStatus } from '../../source/coordinator/index.js';
import { createGoal } from '../../source/store/index.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

describe('watch on the coordinator socket', () => {
  it('the holder and status at once; each change once; closed when the lock is released', async () => {
    const g = await garden();
    let status: CoordinatorStatus = { state: 'idle', live: [] };
    const listeners = new Set<() => void>();
    const service: CoordinatorService = {
      handle: async () => ({ ok: true }),
      status: () => status,
      onStatus: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const release = await acquireCoordinatorLock(g.paths, 'pak2 cycle (test)', undefined, () => service);
    const seen: CoordinatorStatus[] = [];
    let gone = 0;
    const watch = await watchCoordinator(coordinatorSocketName(g.paths), { onStatus: (s) => seen.push(s), onGone: () => (gone += 1) });
    expect(watch?.holder).toMatchObject({ pid: process.pid, command: 'pak2 cycle (test)' });
    expect(watch?.status).toEqual({ state: 'idle', live: [] });
    await waitFor(() => listeners.size === 1);

    status = { state: 'running', live: ['1-x-r1'] };
    for (const listener of listeners) listener();
    // Told again with nothing changed: nothing is sent.
    for (const listener of listeners) listener();
    status = { state: 'idle', live: [] };
    for (const listener of listeners) listener();
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual([
      { state: 'running', live: ['1-x-r1'] },
      { state: 'idle', live: [] },
    ]);

    // A second coordinator is refused, with the holder named: the workbench attaches to it instead.
    const refused = await acquireCoordinatorLock(g.paths, 'pak2 cycle (second)').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CoordinatorHeld);
    expect((refused as CoordinatorHeld).holder).toMatchObject({ pid: process.pid, command: 'pak2 cycle (test)' });
    expect((refused as CoordinatorHeld).exitCode).toBe(1);

    await release();
    await waitFor(() => gone === 1);
    expect(listeners.size).toBe(0);
    // Nothing runs now: nothing to watch.
    expect(await watchCoordinator(coordinatorSocketName(g.paths), {}, 500)).toBeUndefined();
  });

  it('a holder that runs no loop is watched without a status; closing the watch is not a going', async () => {
    const g = await garden();
    const release = await acquireCoordinatorLock(g.paths, 'pak2 serve (recovery at start)');
    cleanups.push(release);
    let gone = 0;
    const watch = await watchCoordinator(coordinatorSocketName(g.paths), { onGone: () => (gone += 1) });
    expect(watch?.holder.command).toBe('pak2 serve (recovery at start)');
    expect(watch?.status).toBeUndefined();
    watch!.close();
    // A new watch still answers: the coordinator side dropped only the closed one.
    const again = await watchCoordinator(coordinatorSocketName(g.paths), {});
    expect(again?.holder.pid).toBe(process.pid);
    again!.close();
    expect(gone).toBe(0);
  });

  it("a real coordinator reports its state and its live runs to a dozen watchers, and closes them as it stops", async () => {
    const g = await garden();
    const coordinator = new Coordinator({ garden: g, command: 'pak2 cycle (test)' });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    cleanups.push(() => void process.off('warning', onWarning));
    cleanups.push(() => coordinator.stop());
    await coordinator.start();
    const latest: CoordinatorStatus[] = [];
    let gone = 0;
    const watches = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        watchCoordinator(coordinatorSocketName(g.paths), {
          onStatus: (s) => void (latest[i] = s),
          onGone: () => (gone += 1),
        }),
      ),
    );
    expect(watches.every((w) => w?.holder.pid === process.pid)).toBe(true);
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'stall', driver: 'stall' });
    await waitFor(() => latest.length === 12 && latest.every((s) => s?.live.includes(`${goal.id}-r1`)), 20_000);
    expect(['running', 'reconciling']).toContain(latest[0]!.state);
    await coordinator.stop();
    await waitFor(() => gone === 12);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});
