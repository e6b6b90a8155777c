import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { validateEvent, validateGoal, validateSchedulesState } from '../../source/contracts/index.js';
import { Coordinator, decideFiring, MISSED_COUNT_CAP, reconcile, type DispatchFn, type FiringFacts } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { listGoals, readGoal, readSchedulesState, schedulesFile, transitionGoal } from '../../source/store/index.js';
import { submitScheduledGoal } from '../../source/submit/index.js';
import { makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

const at = (iso: string) => new Date(iso);

function facts(overrides: Partial<FiringFacts>): FiringFacts {
  return {
    cron: '* * * * *',
    timezone: 'UTC',
    since: at('2026-01-01T00:00:00Z'),
    lastDueAt: undefined,
    now: at('2026-01-01T00:00:30Z'),
    lastGoalOpen: false,
    overlap: 'skip',
    enabled: true,
    ...overrides,
  };
}

describe('decideFiring (pure)', () => {
  it('a schedule seen for the first time records its baseline and fires nothing, however old its cron line', () => {
    const decision = decideFiring(facts({ since: undefined, now: at('2026-01-01T00:10:30Z') }));
    expect(decision).toEqual({ action: 'baseline', nextDueAt: at('2026-01-01T00:11:00Z') });
  });

  it('every minute: nothing before the first due time, one firing at it, none again for the same due time', () => {
    expect(decideFiring(facts({ now: at('2026-01-01T00:00:59Z') })).action).toBe('none');
    const due = decideFiring(facts({ now: at('2026-01-01T00:01:00Z') }));
    expect(due).toEqual({ action: 'fire', dueAt: at('2026-01-01T00:01:00Z'), missed: 0, nextDueAt: at('2026-01-01T00:02:00Z') });
    expect(decideFiring(facts({ lastDueAt: at('2026-01-01T00:01:00Z'), now: at('2026-01-01T00:01:40Z') })).action).toBe('none');
    expect(decideFiring(facts({ lastDueAt: at('2026-01-01T00:01:00Z'), now: at('2026-01-01T00:02:05Z') }))).toMatchObject({ action: 'fire', dueAt: at('2026-01-01T00:02:00Z'), missed: 0 });
  });

  it('due times missed while no coordinator ran are caught up once: one firing for the latest, counting the others', () => {
    const decision = decideFiring(facts({ lastDueAt: at('2026-01-01T00:01:00Z'), now: at('2026-01-01T00:11:30Z') }));
    expect(decision).toEqual({ action: 'fire', dueAt: at('2026-01-01T00:11:00Z'), missed: 9, nextDueAt: at('2026-01-01T00:12:00Z') });
  });

  it('overlap skip: a due time while the last goal is open is skipped (and moved past); allow fires anyway', () => {
    expect(decideFiring(facts({ now: at('2026-01-01T00:01:00Z'), lastGoalOpen: true }))).toMatchObject({ action: 'skip', dueAt: at('2026-01-01T00:01:00Z') });
    expect(decideFiring(facts({ now: at('2026-01-01T00:01:00Z'), lastGoalOpen: true, overlap: 'allow' }))).toMatchObject({ action: 'fire' });
  });

  it('a disabled schedule passes over its due times silently', () => {
    expect(decideFiring(facts({ now: at('2026-01-01T00:03:10Z'), enabled: false }))).toMatchObject({ action: 'pass', dueAt: at('2026-01-01T00:03:00Z') });
  });

  it('reads its cron line in its timezone, across a DST change: 02:30 New York fires once on the spring-forward day', () => {
    const base = { cron: '30 2 * * *', timezone: 'America/New_York' };
    // 2026-03-07 02:30 EST is 07:30Z.
    expect(decideFiring(facts({ ...base, since: at('2026-03-07T00:00:00Z'), now: at('2026-03-07T07:30:00Z') }))).toMatchObject({ action: 'fire', dueAt: at('2026-03-07T07:30:00Z') });
    // 2026-03-08 has no 02:30 in New York: the day's firing comes once, and the next is 02:30 EDT (06:30Z) on the 9th.
    const spring = decideFiring(facts({ ...base, since: at('2026-03-07T07:30:00Z'), lastDueAt: at('2026-03-07T07:30:00Z'), now: at('2026-03-08T12:00:00Z') }));
    expect(spring).toMatchObject({ action: 'fire', missed: 0, nextDueAt: at('2026-03-09T06:30:00Z') });
    expect(spring.action === 'fire' && spring.dueAt.toISOString()).toBe('2026-03-08T07:00:00.000Z'); // 03:00 EDT, the first time after the jump
    // 2026-11-01 has 01:30 twice in New York (EDT, then EST): it fires once, at the first.
    const fall = { cron: '30 1 * * *', timezone: 'America/New_York' };
    const first = decideFiring(facts({ ...fall, since: at('2026-10-31T12:00:00Z'), now: at('2026-11-01T05:30:00Z') }));
    expect(first).toMatchObject({ action: 'fire', dueAt: at('2026-11-01T05:30:00Z'), nextDueAt: at('2026-11-02T06:30:00Z') });
    expect(decideFiring(facts({ ...fall, since: at('2026-10-31T12:00:00Z'), lastDueAt: at('2026-11-01T05:30:00Z'), now: at('2026-11-01T06:45:00Z') })).action).toBe('none');
  });

  it('an every-second line left for a day is one firing, its count capped, without walking the whole day', () => {
    const decision = decideFiring(facts({ cron: '* * * * * *', now: at('2026-01-02T00:00:00Z') }));
    expect(decision).toMatchObject({ action: 'fire', dueAt: at('2026-01-02T00:00:00Z'), missed: MISSED_COUNT_CAP - 1 });
  });
});

const scheduledGoalsOf = async (g: Garden) => (await listGoals(g.paths)).goals.filter((goal) => goal.schedule === 'minutely');

const EVERY_MINUTE = ['[[schedule]]', 'name = "minutely"', 'cron = "* * * * *"', 'plant = "gardener"', 'type = "tend"', 'body = "Look after the garden"'].join('\n');

describe('schedules through reconcile, under a fake clock', () => {
  let garden: Garden & { cleanup: () => void };
  afterEach(() => garden?.cleanup());

  // max_concurrent_runs = 0: a submitted goal stays queued (open) until the test closes it.
  const pass = (now: Date) =>
    reconcile({ garden, dispatch: (async () => undefined) as DispatchFn, now: () => now, submitScheduled: (schedule, when) => submitScheduledGoal(garden, schedule, when) });
  const scheduledGoals = () => scheduledGoalsOf(garden);
  const closeGoal = (id: string, now: Date) => transitionGoal(garden.paths, id, 'closed', { closedReason: 'cancelled', now });

  it('one goal per firing, none while the last is open, one catch-up after a restart', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 }, extraToml: EVERY_MINUTE });
    // First sight at 10:00:20: the baseline, no goal.
    let summary = await pass(at('2026-05-01T10:00:20Z'));
    expect(summary.schedules).toEqual([]);
    expect(summary.nextScheduleAt).toBe('2026-05-01T10:01:00.000Z');
    expect(await scheduledGoals()).toEqual([]);
    expect((await readSchedulesState(garden.paths)).schedules.minutely).toEqual({ since: '2026-05-01T10:00:20.000Z' });

    // 10:01:00: one goal, carrying the schedule's name and goal fields.
    summary = await pass(at('2026-05-01T10:01:00Z'));
    expect(summary.schedules).toEqual([{ schedule: 'minutely', dueAt: '2026-05-01T10:01:00.000Z', status: 'submitted', goal: expect.any(String), missed: 0 }]);
    const first = summary.schedules[0]!.goal!;
    const goal = await readGoal(garden.paths, first);
    expect(goal).toMatchObject({ schedule: 'minutely', type: 'tend', assigned_to: 'gardener', body: 'Look after the garden', status: 'queued' });
    expect(validateGoal(goal)).toEqual([]);
    // The same minute again: nothing more.
    summary = await pass(at('2026-05-01T10:01:30Z'));
    expect(summary.schedules).toEqual([]);
    expect(await scheduledGoals()).toHaveLength(1);

    // 10:02 and 10:03 while the first goal is open: skipped, once each, no goal.
    summary = await pass(at('2026-05-01T10:02:01Z'));
    expect(summary.schedules).toEqual([{ schedule: 'minutely', dueAt: '2026-05-01T10:02:00.000Z', status: 'skipped', goal: first, missed: 0 }]);
    expect((await pass(at('2026-05-01T10:02:40Z'))).schedules).toEqual([]);
    expect((await pass(at('2026-05-01T10:03:00Z'))).schedules.map((f) => f.status)).toEqual(['skipped']);
    expect(await scheduledGoals()).toHaveLength(1);

    // Closed: the next due time submits the second goal, and the skipped ones are not owed.
    await closeGoal(first, at('2026-05-01T10:03:10Z'));
    summary = await pass(at('2026-05-01T10:04:00Z'));
    expect(summary.schedules).toMatchObject([{ status: 'submitted', dueAt: '2026-05-01T10:04:00.000Z', missed: 0 }]);
    const second = summary.schedules[0]!.goal!;
    expect(await scheduledGoals()).toHaveLength(2);
    await closeGoal(second, at('2026-05-01T10:04:10Z'));

    // A "restart": no coordinator ran for ten minutes; the next pass (a fresh scanner, as a new coordinator) catches up once.
    summary = await pass(at('2026-05-01T10:14:30Z'));
    expect(summary.schedules).toMatchObject([{ status: 'submitted', dueAt: '2026-05-01T10:14:00.000Z', missed: 9 }]);
    expect(await scheduledGoals()).toHaveLength(3);
    expect((await pass(at('2026-05-01T10:14:50Z'))).schedules).toEqual([]);
    expect(await scheduledGoals()).toHaveLength(3);

    // The events: one ScheduleFired per due time handled, each valid, naming the schedule and the due time.
    const fired = readEventLog(garden).filter((e) => e.type === 'ScheduleFired');
    expect(fired.map((e) => [e.status, e.due_at, e.missed])).toEqual([
      ['submitted', '2026-05-01T10:01:00.000Z', 0],
      ['skipped', '2026-05-01T10:02:00.000Z', 0],
      ['skipped', '2026-05-01T10:03:00.000Z', 0],
      ['submitted', '2026-05-01T10:04:00.000Z', 0],
      ['submitted', '2026-05-01T10:14:00.000Z', 9],
    ]);
    for (const event of fired) expect(validateEvent(event)).toEqual([]);
    expect(fired[4]!.detail).toMatch(/^schedule minutely due 2026-05-01T10:14:00.000Z: submitted \S+; caught up 9 missed firings in one goal$/);
    const state = JSON.parse(fs.readFileSync(schedulesFile(garden.paths), 'utf8')) as unknown;
    expect(validateSchedulesState(state)).toEqual([]);
    expect(state).toEqual({ schedules: { minutely: { since: '2026-05-01T10:00:20.000Z', last_due_at: '2026-05-01T10:14:00.000Z', last_fired_at: '2026-05-01T10:14:30.000Z', last_goal: summary.schedules[0]?.goal ?? expect.any(String) } } });
  });

  it('overlap = "allow" submits a goal per due time even while the last is open', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 }, extraToml: `${EVERY_MINUTE}\noverlap = "allow"` });
    await pass(at('2026-05-01T10:00:20Z'));
    await pass(at('2026-05-01T10:01:00Z'));
    await pass(at('2026-05-01T10:02:00Z'));
    expect(await scheduledGoals()).toHaveLength(2);
  });

  it('a firing submit refuses (an archived plant) is one refused event, moved past, not retried every pass', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 }, extraToml: EVERY_MINUTE.replace('plant = "gardener"', 'plant = "nobody"') });
    await pass(at('2026-05-01T10:00:20Z'));
    const summary = await pass(at('2026-05-01T10:01:00Z'));
    expect(summary.schedules).toMatchObject([{ status: 'refused', reason: expect.stringMatching(/^plant nobody: no such plant/) }]);
    expect((await pass(at('2026-05-01T10:01:30Z'))).schedules).toEqual([]);
    expect(await scheduledGoals()).toEqual([]);
  });

  it('a reconcile without submitScheduled runs no schedule step', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 }, extraToml: EVERY_MINUTE });
    const summary = await reconcile({ garden, dispatch: (async () => undefined) as DispatchFn, now: () => at('2026-05-01T10:00:20Z') });
    expect(summary.schedules).toEqual([]);
    expect(fs.existsSync(schedulesFile(garden.paths))).toBe(false);
  });
});

describe('schedules in the coordinator loop', () => {
  let garden: Garden & { cleanup: () => void };
  let coordinator: Coordinator | undefined;
  afterEach(async () => {
    await coordinator?.stop();
    coordinator = undefined;
    garden?.cleanup();
  });
  const start = async (now?: () => Date) => {
    coordinator = new Coordinator({ garden, onStderr: () => undefined, ...(now ? { now } : {}), submitScheduled: (schedule, when) => submitScheduledGoal(garden, schedule, when) });
    await coordinator.start();
  };
  const fired = () => readEventLog(garden).filter((e) => e.type === 'ScheduleFired');

  it('wakes at the next due time, not on its interval timer: an every-two-seconds schedule submits and its goal runs', async () => {
    garden = await makeTestGarden({ coordinator: { interval_seconds: 3600 }, extraToml: ['[[schedule]]', 'name = "often"', 'cron = "*/2 * * * * *"', 'type = "spike"', 'body = "Often"'].join('\n') });
    await start();
    // The timer is an hour away and nothing writes goals/: only the due-time wake can start the pass that fires.
    await waitFor(() => fired().some((e) => e.status === 'submitted'), 15_000);
    const goal = fired().find((e) => e.status === 'submitted')!.goal!;
    await waitFor(async () => (await readGoal(garden.paths, goal)).status === 'closed', 15_000);
    expect((await readGoal(garden.paths, goal)).schedule).toBe('often');
  });

  it('a coordinator started again after ten minutes away catches up once, under a fake clock', async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 }, extraToml: EVERY_MINUTE });
    let clock = at('2026-05-01T10:00:20Z');
    await start(() => clock);
    await waitFor(async () => (await readSchedulesState(garden.paths)).schedules.minutely !== undefined);
    await coordinator!.stop();
    clock = at('2026-05-01T10:10:30Z');
    await start(() => clock);
    await waitFor(() => fired().length > 0);
    // More passes (the goal written wakes one): still the one goal.
    coordinator!.wake(0);
    await waitFor(() => coordinator!.state === 'idle' && coordinator!.summary?.schedules.length === 0);
    expect(fired().map((e) => [e.status, e.due_at, e.missed])).toEqual([['submitted', '2026-05-01T10:10:00.000Z', 9]]);
    expect(await scheduledGoalsOf(garden)).toHaveLength(1);
  });
});
