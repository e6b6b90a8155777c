import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, readDependencyViews, reconcile, type DispatchFn, type ReconcileSummary } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import type { Garden } from '../../source/garden/index.js';
import { OpenGoalScanner, readGoal, transitionGoal } from '../../source/store/index.js';
import { changeDependencies, retryGoal, submitGoal } from '../../source/submit/index.js';
import { FAKE_AGENT, makeTestGarden, readEventLog } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
let coordinator: Coordinator | undefined;
afterEach(async () => {
  await coordinator?.stop();
  coordinator = undefined;
  garden?.cleanup();
});

const realDispatch = (g: Garden): DispatchFn => (goal, runId) => dispatch(goal, runId, { garden: g });

/**
 * A garden whose `flaky` driver fails (the fake agent's exit3) until the
 * file `flag` exists, then succeeds: a dependency that fails, is retried,
 * and succeeds.
 */
async function flakyGarden(): Promise<{ flag: string }> {
  const root = fs.mkdtempSync(path.join((await import('node:os')).tmpdir(), 'pak2-deps-'));
  const flag = path.join(root, 'succeed-now');
  const script = `if [ -f "$1" ]; then exec "$2" "$3" success; else exec "$2" "$3" exit3; fi`;
  garden = await makeTestGarden({ root, extraToml: `[drivers.flaky]\ncommand = ${JSON.stringify(['sh', '-c', script, 'sh', flag, process.execPath, FAKE_AGENT])}` });
  return { flag };
}

/** Passes until nothing is dispatched, closed or requeued (at most `max`), each dispatch awaited. */
async function passes(max = 12): Promise<ReconcileSummary[]> {
  const out: ReconcileSummary[] = [];
  for (let i = 0; i < max; i++) {
    const summary = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
    out.push(summary);
    if (summary.dispatched.length === 0 && summary.closed.length === 0 && summary.requeued.length === 0) break;
  }
  return out;
}

const submit = (body: string, after?: string[], driver?: string) => submitGoal(garden, { type: 'build', plant: 'gardener', body, ...(after ? { dependsOn: after } : {}), ...(driver ? { driver } : {}) });
const started = () => readEventLog(garden).filter((e) => e.type === 'RunStarted').map((e) => e.goal);
const viewsNow = async () => Object.fromEntries(await readDependencyViews(garden.paths, (await new OpenGoalScanner(garden.paths).scan()).goals));

describe('goal dependencies through the coordinator', () => {
  it('a chain A → B → C runs in order: each starts only after the one before closed success', async () => {
    garden = await makeTestGarden();
    const c0 = await submit('Chain start');
    // Submitted out of order on purpose: priority and age would start C first.
    const a = await submit('Build a');
    const b = await submit('Build b', [a.id]);
    const c = await submitGoal(garden, { type: 'build', plant: 'gardener', body: 'Build c', priority: 90, dependsOn: [b.id] });
    expect(c.depends_on).toEqual([b.id]);
    const first = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
    expect(first.waiting).toEqual([
      { goal: c.id, waiting_for: [b.id] },
      { goal: b.id, waiting_for: [a.id] },
    ]);
    expect(first.blocked).toEqual([]);
    await passes();
    for (const g of [c0, a, b, c]) expect((await readGoal(garden.paths, g.id)).closed_reason).toBe('success');
    expect(started()).toEqual([c0.id, a.id, b.id, c.id]);
    const log = readEventLog(garden);
    const at = (type: string, goal: string) => log.findIndex((e) => e.type === type && e.goal === goal);
    expect(at('GoalClosed', a.id)).toBeLessThan(at('RunStarted', b.id));
    expect(at('GoalClosed', b.id)).toBeLessThan(at('RunStarted', c.id));
    expect(log.filter((e) => e.type === 'GoalBlocked')).toEqual([]);
  });

  it('A failing blocks B and C with the reason (one GoalBlocked each, not one per pass); retrying A moves them to the retry, which releases them in order', async () => {
    const { flag } = await flakyGarden();
    const a = await submit('Build a', undefined, 'flaky');
    const b = await submit('Build b', [a.id]);
    const c = await submit('Build c', [b.id]);
    await passes();
    expect((await readGoal(garden.paths, a.id)).closed_reason).toBe('failure');
    for (let i = 0; i < 3; i++) {
      const summary = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
      expect(summary.dispatched).toEqual([]);
      expect(summary.blocked).toEqual([
        { goal: b.id, reason: `dependency ${a.id} closed failure` },
        { goal: c.id, reason: `dependency ${a.id} closed failure (through ${b.id})` },
      ]);
      // Nothing queued can run and nothing is in flight: `--until-idle` ends.
      expect([summary.queued, summary.inFlight]).toEqual([0, 0]);
    }
    expect((await readGoal(garden.paths, b.id)).status).toBe('queued');
    expect((await readGoal(garden.paths, c.id)).status).toBe('queued');
    const blocked = readEventLog(garden).filter((e) => e.type === 'GoalBlocked');
    expect(blocked.map((e) => [e.goal, e.reason])).toEqual([
      [b.id, 'dependency'],
      [c.id, 'dependency'],
    ]);
    expect(blocked[0]!.detail).toContain(`dependency ${a.id} closed failure`);
    expect(await viewsNow()).toEqual({ [b.id]: { blocked_on: { goal: a.id, closed_reason: 'failure' } }, [c.id]: { blocked_on: { goal: a.id, closed_reason: 'failure', via: b.id } } });
    // A blocked chain needs the operator: one queued_attention_needed tend covers it.
    expect(readEventLog(garden).filter((e) => e.type === 'GoalSubmitted' && /-tend-queued-attention-needed$/.test(e.goal!))).toHaveLength(1);

    fs.writeFileSync(flag, '');
    const retry = await retryGoal(garden, a.id);
    expect(retry.goal.retry_of).toBe(a.id);
    expect(retry.goal.id).toMatch(/-build-a$/);
    expect(retry.moved).toEqual([b.id]);
    expect((await readGoal(garden.paths, b.id)).depends_on).toEqual([retry.goal.id]);
    const moved = readEventLog(garden).filter((e) => e.type === 'GoalDependencyChanged');
    expect(moved.map((e) => [e.goal, e.detail])).toEqual([[b.id, `depends_on: ${a.id} → ${retry.goal.id} (retry)`]]);
    expect(await viewsNow()).toMatchObject({ [b.id]: { waiting_for: [retry.goal.id] }, [c.id]: { waiting_for: [b.id] } });
    await passes();
    for (const g of [retry.goal, b, c]) expect((await readGoal(garden.paths, g.id)).closed_reason).toBe('success');
    const order = started().filter((id) => [a.id, retry.goal.id, b.id, c.id].includes(id!));
    expect(order).toEqual([a.id, retry.goal.id, b.id, c.id]);
  }, 60_000);

  it('dropping the edge to a failed dependency releases the goal it blocked', async () => {
    await flakyGarden();
    const a = await submit('Build a', undefined, 'flaky');
    const other = await submit('Build other');
    const b = await submit('Build b', [a.id, other.id]);
    await passes();
    expect((await readGoal(garden.paths, b.id)).status).toBe('queued');
    await expect(changeDependencies(garden, b.id, { drop: ['7-not-there'] })).rejects.toThrow(`drop 7-not-there: ${b.id} does not depend on it (depends on: ${a.id}, ${other.id})`);
    const changed = await changeDependencies(garden, b.id, { drop: [a.id] });
    expect(changed.depends_on).toEqual([other.id]);
    expect(readEventLog(garden).filter((e) => e.type === 'GoalDependencyChanged').map((e) => e.detail)).toEqual([`depends_on: dropped ${a.id}`]);
    await passes();
    expect((await readGoal(garden.paths, b.id)).closed_reason).toBe('success');
  }, 60_000);

  it('a dependency that closed success is ready at once; unknown goals and cycles are refused in one line', async () => {
    garden = await makeTestGarden();
    const a = await submit('Build a');
    await passes();
    const b = await submit('Build b', [a.id]);
    const summary = await reconcile({ garden, dispatch: realDispatch(garden), awaitDispatch: true });
    expect(summary.dispatched).toEqual([`${b.id}-r1`]);

    await expect(submit('Build c', ['99-nothing'])).rejects.toThrow(/^after 99-nothing: no such goal$/);
    await expect(submit('Build c', ['not an id'])).rejects.toThrow(/^after not an id: not a goal id \(N-slug\)$/);
    const x = await submit('Build x');
    const y = await submit('Build y', [x.id]);
    const z = await submit('Build z', [y.id]);
    await expect(changeDependencies(garden, x.id, { add: [z.id] })).rejects.toThrow(`add ${z.id}: a cycle: ${x.id} → ${z.id} → ${y.id} → ${x.id}`);
    await expect(changeDependencies(garden, x.id, { add: [x.id] })).rejects.toThrow(`add ${x.id}: a goal cannot wait for itself`);
    expect((await readGoal(garden.paths, x.id)).depends_on).toBeUndefined();
    // A dispatched goal's, or a closed one's, dependencies no longer matter.
    const running = await submit('Build r');
    await transitionGoal(garden.paths, running.id, 'dispatched');
    await expect(changeDependencies(garden, running.id, { add: [x.id] })).rejects.toThrow(`goal ${running.id}: the goal is dispatched; only a queued goal's dependencies change`);
    await expect(changeDependencies(garden, a.id, { add: [x.id] })).rejects.toThrow(/is closed/);
    await expect(retryGoal(garden, a.id)).rejects.toThrow(`goal ${a.id}: the goal closed success; nothing to retry`);
    await expect(retryGoal(garden, x.id)).rejects.toThrow(`goal ${x.id}: the goal is queued; only a closed goal is retried`);
  }, 60_000);

  it('the live coordinator runs a chain to the end, and untilIdle ends while a chain stays blocked on a failure', async () => {
    await flakyGarden();
    const a = await submit('Build a', undefined, 'flaky');
    const b = await submit('Build b', [a.id]);
    const c = await submit('Build c', [b.id]);
    const x = await submit('Build x');
    const y = await submit('Build y', [x.id]);
    coordinator = new Coordinator({ garden, onStderr: () => undefined });
    await coordinator.start();
    await coordinator.untilIdle();
    expect((await readGoal(garden.paths, y.id)).closed_reason).toBe('success');
    expect((await readGoal(garden.paths, a.id)).closed_reason).toBe('failure');
    for (const g of [b, c]) expect((await readGoal(garden.paths, g.id)).status).toBe('queued');
    expect(started()).not.toContain(b.id);
    expect(readEventLog(garden).filter((e) => e.type === 'GoalBlocked' && e.reason === 'dependency').map((e) => e.goal)).toEqual([b.id, c.id]);
  }, 60_000);
});
