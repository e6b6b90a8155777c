import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GOAL_STATUSES, validateGoal, type GoalStatus } from '../../source/contracts/index.js';
import type { GardenPaths } from '../../source/garden/index.js';
import {
  CLOSED_LEDGER,
  createGoal,
  dispatchOrder,
  goalFile,
  listGoalIds,
  listGoals,
  loadSlugify,
  makeSlug,
  OpenGoalScanner,
  readGoal,
  StoreError,
  transitionGoal,
} from '../../source/store/index.js';
import { cleanupFixtures, eventsOfType, makeGarden, readJson, readLog, writeJson } from '../helpers/fixtures.js';

afterEach(cleanupFixtures);

const NOW = new Date('2024-05-01T12:00:00.000Z');
const LATER = new Date('2024-05-01T12:30:00.000Z');

/** The N of an `N-slug` id. */
function numberOf(id: string): number {
  const match = /^(\d+)-/.exec(id);
  expect(match, id).not.toBeNull();
  return Number(match![1]);
}

/** Awaits `promise`, expecting a StoreError with `code`; returns it. */
async function storeError(promise: Promise<unknown>, code: string): Promise<StoreError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe(code);
    return error as StoreError;
  }
  return expect.fail(`expected StoreError ${code}`);
}

/** Rewrites a goal file so the goal is in `status` (closed goals get a reason). */
function forceStatus(paths: GardenPaths, id: string, status: GoalStatus): void {
  const file = goalFile(paths, id);
  const record = readJson(file);
  record.status = status;
  if (status === 'closed') {
    record.closed_reason = 'success';
    record.closed_at = NOW.toISOString();
  }
  writeJson(file, record);
}

/** The ids the closed ledger lists, in order (each line is an entry `{"id":…}` or, in old ledgers, a bare id). */
function ledger(paths: GardenPaths): string[] {
  try {
    return fs
      .readFileSync(path.join(paths.goalsDir, CLOSED_LEDGER), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => (line.startsWith('{') ? (JSON.parse(line) as { id: string }).id : line));
  } catch {
    return [];
  }
}

/** The seed state machine (seed 002 "The reconcile loop", plus rollback and cancel; seed 004's blocking questions; landing's requeue). */
const ALLOWED: Array<[GoalStatus, GoalStatus]> = [
  ['queued', 'dispatched'],
  ['dispatched', 'running'],
  ['running', 'completed'],
  ['completed', 'closed'],
  ['dispatched', 'queued'],
  ['running', 'queued'],
  ['queued', 'closed'],
  ['queued', 'blocked'],
  ['running', 'blocked'],
  ['blocked', 'queued'],
  ['blocked', 'running'],
  ['blocked', 'closed'],
  // worktree runs (docs/landing/level2.md): work that did not land sends its goal back to the queue
  ['completed', 'queued'],
];
const DISALLOWED: Array<[GoalStatus, GoalStatus]> = GOAL_STATUSES.flatMap((from) =>
  GOAL_STATUSES.filter((to) => !ALLOWED.some(([f, t]) => f === from && t === to)).map((to): [GoalStatus, GoalStatus] => [from, to]),
);

describe('createGoal', () => {
  it('writes a valid queued goal with N-slug id, defaults and submitted_at', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'Add a README to the repo\n\nWith install steps.' }, NOW);
    expect(goal.id).toBe('1-add-a-readme-to-the-repo');
    expect(goal.status).toBe('queued');
    expect(goal.priority).toBe(50);
    expect(goal.submitted_at).toBe(NOW.toISOString());
    expect(goal.assigned_to).toBeUndefined();
    const onDisk = readJson(path.join(paths.goalsDir, `${goal.id}.json`));
    expect(onDisk).toEqual(goal);
    expect(validateGoal(onDisk)).toEqual([]);
  });

  it('keeps the optional inputs', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(
      paths,
      {
        type: 'fix',
        plant: 'gardener',
        body: 'b',
        priority: 90,
        driver: 'claude',
        model: 'm',
        reasoning_effort: 'high',
        conversation_id: 'c1',
        post_reply_hop: true,
      },
      NOW,
    );
    expect(goal).toMatchObject({
      assigned_to: 'gardener',
      priority: 90,
      driver: 'claude',
      model: 'm',
      reasoning_effort: 'high',
      conversation_id: 'c1',
      post_reply_hop: true,
    });
    expect(await readGoal(paths, goal.id)).toEqual(goal);
  });

  it('numbers goals 1, 2, 3 …', async () => {
    const { paths } = makeGarden();
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await createGoal(paths, { type: 'spike', body: `goal ${i}` })).id);
    expect(ids.map(numberOf)).toEqual([1, 2, 3, 4, 5]);
  });

  it('stays monotonic after the highest goal file is deleted', async () => {
    const { paths } = makeGarden();
    await createGoal(paths, { type: 'build', body: 'one' });
    await createGoal(paths, { type: 'build', body: 'two' });
    const third = await createGoal(paths, { type: 'build', body: 'three' });
    fs.rmSync(goalFile(paths, third.id));
    const next = await createGoal(paths, { type: 'build', body: 'four' });
    expect(numberOf(next.id)).toBe(4);
  });

  it('continues after the highest existing file when there is no counter, or it holds no number', async () => {
    const { paths } = makeGarden();
    const seeded = await createGoal(paths, { type: 'build', body: 'seed' });
    const record = readJson(goalFile(paths, seeded.id));
    writeJson(path.join(paths.goalsDir, '41-imported.json'), { ...record, id: '41-imported' });
    fs.rmSync(path.join(paths.goalsDir, '.counter'));
    const next = await createGoal(paths, { type: 'build', body: 'after import' });
    expect(numberOf(next.id)).toBe(42);
    writeJson(path.join(paths.goalsDir, '77-imported.json'), { ...record, id: '77-imported' });
    fs.writeFileSync(path.join(paths.goalsDir, '.counter'), '');
    expect(numberOf((await createGoal(paths, { type: 'build', body: 'after a torn counter' })).id)).toBe(78);
  });

  it('takes N from the counter without listing the directory; an id already taken sends it to the directory', async () => {
    const { paths } = makeGarden();
    const seeded = await createGoal(paths, { type: 'build', body: 'seed' });
    const record = readJson(goalFile(paths, seeded.id));
    // A file put there by hand with a higher N: the counter (1) is the record of what pak2 assigned.
    writeJson(path.join(paths.goalsDir, '41-imported.json'), { ...record, id: '41-imported' });
    const listed = vi.spyOn(fs, 'opendirSync');
    expect(numberOf((await createGoal(paths, { type: 'build', body: 'next' })).id)).toBe(2);
    expect(listed).not.toHaveBeenCalled();
    // A counter behind a goal of the very id it would make (restored from a backup): the directory decides.
    fs.writeFileSync(path.join(paths.goalsDir, '.counter'), '2\n');
    writeJson(path.join(paths.goalsDir, '3-again.json'), { ...record, id: '3-again' });
    expect((await createGoal(paths, { type: 'build', body: 'again' })).id).toBe('42-again');
    expect(listed).toHaveBeenCalled();
    listed.mockRestore();
  });

  it('20 concurrent creates all get distinct N', async () => {
    const { paths } = makeGarden();
    const goals = await Promise.all(Array.from({ length: 20 }, (_, i) => createGoal(paths, { type: 'build', body: `parallel goal ${i}` })));
    const numbers = goals.map((g) => numberOf(g.id));
    expect(new Set(numbers).size).toBe(20);
    expect([...numbers].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect((await listGoalIds(paths)).length).toBe(20);
    for (const goal of goals) expect(await readGoal(paths, goal.id)).toEqual(goal);
    expect(eventsOfType(paths, 'GoalSubmitted')).toHaveLength(20);
  });

  it('takes the slug from the title, else the first non-blank line of the body', async () => {
    const { paths } = makeGarden();
    const titled = await createGoal(paths, { type: 'build', title: 'Short Title!', body: 'A much longer body' });
    expect(titled.id).toBe('1-short-title');
    const fromBody = await createGoal(paths, { type: 'build', body: '\n\n  Fix the login bug  \nmore text' });
    expect(fromBody.id).toBe('2-fix-the-login-bug');
  });

  it('caps the slug at six words', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'one two three four five six seven eight' });
    expect(goal.id).toBe('1-one-two-three-four-five-six');
  });

  it.each([
    ['CJK only', '修复登录错误', 'fix'],
    ['emoji only', '🔥🚀✨', 'spike'],
    ['CJK and emoji', '你好 🎉', 'research'],
    ['punctuation only', '!!! ???', 'build'],
  ])('falls back to the goal type for a body of %s', async (_label, body, type) => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: type as 'fix', body });
    expect(goal.id).toBe(`1-${type}`);
    expect(goal.body).toBe(body);
    expect(validateGoal(readJson(goalFile(paths, goal.id)))).toEqual([]);
  });

  it('makeSlug keeps ids path-safe', async () => {
    const slugify = await loadSlugify();
    for (const title of ['../../etc/passwd', 'a/b\\c', 'Ünïcödé façade', 'x'.repeat(200)]) {
      const slug = makeSlug(title, 'build', slugify);
      expect(slug).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
      expect(slug.length).toBeLessThanOrEqual(48);
    }
  });

  it('appends GoalSubmitted naming the goal, its plant and type', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'tend', plant: 'gardener', body: 'tend it' }, NOW);
    const events = eventsOfType(paths, 'GoalSubmitted');
    expect(events).toEqual([{ ts: NOW.toISOString(), type: 'GoalSubmitted', goal: goal.id, plant: 'gardener', detail: 'tend' }]);
  });

  it('refuses a bad type, plant name or priority without writing anything', async () => {
    const { paths } = makeGarden();
    await storeError(createGoal(paths, { type: 'chore' as 'build', body: 'x' }), 'INVALID_RECORD');
    await storeError(createGoal(paths, { type: 'build', plant: '../evil', body: 'x' }), 'INVALID_PLANT_NAME');
    await storeError(createGoal(paths, { type: 'build', body: 'x', priority: 101 }), 'INVALID_RECORD');
    expect(await listGoalIds(paths)).toEqual([]);
    expect(readLog(paths)).toEqual([]);
  });
});

describe('readGoal', () => {
  it('GOAL_NOT_FOUND for an unknown id', async () => {
    const { paths } = makeGarden();
    await storeError(readGoal(paths, '99-nope'), 'GOAL_NOT_FOUND');
  });

  it.each([['../../etc/passwd'], ['../goals/1-a'], ['1-a/../../x'], [''], ['.closed'], ['1-A']])(
    'GOAL_NOT_FOUND for an id that is not N-slug: %j',
    async (id) => {
      const { paths } = makeGarden();
      await storeError(readGoal(paths, id), 'GOAL_NOT_FOUND');
    },
  );

  it('INVALID_RECORD naming the file for malformed JSON', async () => {
    const { paths } = makeGarden();
    const file = path.join(paths.goalsDir, '5-broken.json');
    fs.mkdirSync(paths.goalsDir, { recursive: true });
    fs.writeFileSync(file, '{"id": "5-broken", ');
    const error = await storeError(readGoal(paths, '5-broken'), 'INVALID_RECORD');
    expect(error.file).toBe(file);
    expect(error.message).toContain(file);
  });

  it('INVALID_RECORD naming the file and the field for a record that fails validation', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' });
    const file = goalFile(paths, goal.id);
    writeJson(file, { ...readJson(file), priority: 500 });
    const error = await storeError(readGoal(paths, goal.id), 'INVALID_RECORD');
    expect(error.file).toBe(file);
    expect(error.message).toContain(file);
    expect(error.message).toContain('priority');
    expect(error.message).toContain('INVALID_PRIORITY');
  });
});

describe('transitionGoal', () => {
  it('takes over the goals directory\'s lock a killed process left (stale after 10 s), and keeps the goal\'s own lock out of goals/', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'after a crash' });
    // What a writer killed with SIGKILL 9 s ago leaves: the lock directory, no longer refreshed.
    const lock = `${paths.goalsDir}.lock`;
    fs.mkdirSync(lock);
    const then = new Date(Date.now() - 9_000);
    fs.utimesSync(lock, then, then);
    const closed = await transitionGoal(paths, goal.id, 'closed', { closedReason: 'cancelled' });
    expect(closed.status).toBe('closed');
    expect(fs.existsSync(lock)).toBe(false);
    expect(fs.readdirSync(paths.goalsDir).filter((n) => n.endsWith('.lock'))).toEqual([]);
  });

  it.each(ALLOWED)('allows %s → %s, writes it and appends GoalTransitioned', async (from, to) => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' }, NOW);
    forceStatus(paths, goal.id, from);
    const next = await transitionGoal(paths, goal.id, to, { closedReason: 'success', now: LATER });
    expect(next.status).toBe(to);
    expect(next.updated_at).toBe(LATER.toISOString());
    const onDisk = readJson(goalFile(paths, goal.id));
    expect(onDisk).toEqual(next);
    expect(validateGoal(onDisk)).toEqual([]);
    expect(eventsOfType(paths, 'GoalTransitioned')).toEqual([
      { ts: LATER.toISOString(), type: 'GoalTransitioned', goal: goal.id, from, to },
    ]);
  });

  it.each(DISALLOWED)('refuses %s → %s with INVALID_TRANSITION, changing nothing', async (from, to) => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' }, NOW);
    forceStatus(paths, goal.id, from);
    const file = goalFile(paths, goal.id);
    const before = fs.readFileSync(file);
    const logBefore = readLog(paths);
    const error = await storeError(transitionGoal(paths, goal.id, to, { closedReason: 'failure' }), 'INVALID_TRANSITION');
    expect(error.message).toContain(goal.id);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(readLog(paths)).toEqual(logBefore);
  });

  it('nothing leaves closed', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' });
    await transitionGoal(paths, goal.id, 'closed', { closedReason: 'cancelled' });
    for (const to of GOAL_STATUSES) {
      await storeError(transitionGoal(paths, goal.id, to, { closedReason: 'success' }), 'INVALID_TRANSITION');
    }
    expect((await readGoal(paths, goal.id)).closed_reason).toBe('cancelled');
  });

  it('MISSING_CLOSED_REASON when closing without a reason, changing nothing', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' });
    forceStatus(paths, goal.id, 'completed');
    const before = fs.readFileSync(goalFile(paths, goal.id));
    await storeError(transitionGoal(paths, goal.id, 'closed'), 'MISSING_CLOSED_REASON');
    await storeError(transitionGoal(paths, goal.id, 'closed', {}), 'MISSING_CLOSED_REASON');
    expect(fs.readFileSync(goalFile(paths, goal.id)).equals(before)).toBe(true);
    expect(eventsOfType(paths, 'GoalTransitioned')).toEqual([]);
    expect(ledger(paths)).toEqual([]);
  });

  it('GOAL_NOT_FOUND for an unknown goal', async () => {
    const { paths } = makeGarden();
    await storeError(transitionGoal(paths, '3-missing', 'dispatched'), 'GOAL_NOT_FOUND');
    await storeError(transitionGoal(paths, '../../etc/passwd', 'dispatched'), 'GOAL_NOT_FOUND');
  });

  it('walks the whole lifecycle with GoalTransitioned for each step and GoalClosed at the end', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' }, NOW);
    const steps: GoalStatus[] = ['dispatched', 'running', 'completed', 'closed'];
    let last = goal;
    for (const to of steps) last = await transitionGoal(paths, goal.id, to, { closedReason: 'failure', now: LATER });
    expect(last).toMatchObject({ status: 'closed', closed_reason: 'failure', closed_at: LATER.toISOString() });
    const transitions = eventsOfType(paths, 'GoalTransitioned').map((e) => [e.from, e.to]);
    expect(transitions).toEqual([
      ['queued', 'dispatched'],
      ['dispatched', 'running'],
      ['running', 'completed'],
      ['completed', 'closed'],
    ]);
    expect(eventsOfType(paths, 'GoalClosed')).toEqual([{ ts: LATER.toISOString(), type: 'GoalClosed', goal: goal.id, reason: 'failure' }]);
    const types = readLog(paths).map((e) => e.type);
    expect(types.lastIndexOf('GoalTransitioned')).toBeLessThan(types.indexOf('GoalClosed'));
    expect(ledger(paths)).toEqual([goal.id]);
  });

  it('a closed_reason given for a non-closing transition is not recorded', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' });
    const next = await transitionGoal(paths, goal.id, 'dispatched', { closedReason: 'success' });
    expect(next.closed_reason).toBeUndefined();
    expect(eventsOfType(paths, 'GoalClosed')).toEqual([]);
    expect(ledger(paths)).toEqual([]);
  });
});

describe('listGoals', () => {
  it('lists every goal, closed ones included', async () => {
    const { paths } = makeGarden();
    const a = await createGoal(paths, { type: 'build', body: 'a' });
    const b = await createGoal(paths, { type: 'build', body: 'b' });
    await transitionGoal(paths, b.id, 'closed', { closedReason: 'cancelled' });
    const list = await listGoals(paths);
    expect(list.problems).toEqual([]);
    expect(list.goals.map((g) => g.id).sort()).toEqual([a.id, b.id].sort());
  });

  it('is empty when the goals directory does not exist', async () => {
    const { paths } = makeGarden();
    expect(await listGoals(paths)).toEqual({ goals: [], problems: [] });
  });

  it('reports malformed files in problems, keeps going and never deletes them', async () => {
    const { paths } = makeGarden();
    const good = await createGoal(paths, { type: 'build', body: 'good' });
    const other = await createGoal(paths, { type: 'fix', body: 'other' });
    const brokenJson = path.join(paths.goalsDir, '10-broken-json.json');
    const badRecord = path.join(paths.goalsDir, '11-bad-record.json');
    fs.writeFileSync(brokenJson, '{ not json');
    writeJson(badRecord, { id: '11-bad-record', type: 'nonsense', status: 'queued', priority: 50, body: '', submitted_at: NOW.toISOString() });
    const bytesBroken = fs.readFileSync(brokenJson);
    const bytesBad = fs.readFileSync(badRecord);

    const list = await listGoals(paths);
    expect(list.goals.map((g) => g.id).sort()).toEqual([good.id, other.id].sort());
    expect(list.problems.map((p) => p.file).sort()).toEqual([brokenJson, badRecord].sort());
    for (const problem of list.problems) expect(problem.message).toContain(problem.file);
    expect(list.problems.find((p) => p.file === badRecord)!.message).toContain('INVALID_GOAL_TYPE');

    expect(fs.readFileSync(brokenJson).equals(bytesBroken)).toBe(true);
    expect(fs.readFileSync(badRecord).equals(bytesBad)).toBe(true);
    const again = await listGoals(paths);
    expect(again.problems).toHaveLength(2);
  });

  it('ignores files that are not JSON, and names a .json file whose name is not a goal id without reading it', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'x' });
    fs.writeFileSync(path.join(paths.goalsDir, 'notes.json'), '{}');
    fs.writeFileSync(path.join(paths.goalsDir, 'README.md'), '# hi');
    fs.writeFileSync(path.join(paths.goalsDir, '3-x.json.tmp'), 'junk');
    const list = await listGoals(paths);
    const stray = path.join(paths.goalsDir, 'notes.json');
    expect(list).toEqual({ goals: [await readGoal(paths, goal.id)], problems: [{ file: stray, message: `${stray}: not a goal file name (goal files are <N-slug>.json); not read` }] });
  });
});

describe('dispatchOrder', () => {
  it('orders by priority high → low, then submitted_at, then N', async () => {
    const { paths } = makeGarden();
    const low = await createGoal(paths, { type: 'build', body: 'low', priority: 10 }, NOW);
    const lateHigh = await createGoal(paths, { type: 'build', body: 'late high', priority: 90 }, LATER);
    const earlyHigh = await createGoal(paths, { type: 'build', body: 'early high', priority: 90 }, NOW);
    const mid = await createGoal(paths, { type: 'build', body: 'mid' }, NOW);
    const midTwin = await createGoal(paths, { type: 'build', body: 'mid twin' }, NOW);
    const ordered = [low, midTwin, lateHigh, mid, earlyHigh].sort(dispatchOrder).map((g) => g.id);
    expect(ordered).toEqual([earlyHigh.id, lateHigh.id, mid.id, midTwin.id, low.id]);
  });
});

describe('OpenGoalScanner', () => {
  it('returns the goals that are not closed', async () => {
    const { paths } = makeGarden();
    const open = await createGoal(paths, { type: 'build', body: 'open' });
    const closed = await createGoal(paths, { type: 'build', body: 'closed' });
    await transitionGoal(paths, closed.id, 'closed', { closedReason: 'cancelled' });
    const scan = await new OpenGoalScanner(paths).scan();
    expect(scan).toEqual({ goals: [await readGoal(paths, open.id)], problems: [] });
  });

  it('is empty for a garden without goals', async () => {
    const { paths } = makeGarden();
    expect(await new OpenGoalScanner(paths).scan()).toEqual({ goals: [], problems: [] });
  });

  it("does not open closed goals' files (a ruined closed file is never reported)", async () => {
    const { paths } = makeGarden();
    const open = await createGoal(paths, { type: 'build', body: 'open' });
    const doomed = await createGoal(paths, { type: 'build', body: 'doomed' });
    const warm = new OpenGoalScanner(paths);
    expect((await warm.scan()).goals).toHaveLength(2);

    for (const to of ['dispatched', 'running', 'completed'] as const) await transitionGoal(paths, doomed.id, to);
    await transitionGoal(paths, doomed.id, 'closed', { closedReason: 'success' });
    fs.writeFileSync(goalFile(paths, doomed.id), '{{{ this is not JSON');

    for (const scanner of [warm, new OpenGoalScanner(paths)]) {
      const scan = await scanner.scan();
      expect(scan.problems).toEqual([]);
      expect(scan.goals.map((g) => g.id)).toEqual([open.id]);
    }
    // listGoals, which reads every file, does see the ruined file.
    expect((await listGoals(paths)).problems.map((p) => p.file)).toEqual([goalFile(paths, doomed.id)]);
  });

  it('reports an unreadable open goal without dropping the others', async () => {
    const { paths } = makeGarden();
    const good = await createGoal(paths, { type: 'build', body: 'good' });
    const bad = await createGoal(paths, { type: 'build', body: 'bad' });
    fs.writeFileSync(goalFile(paths, bad.id), 'nope');
    const scan = await new OpenGoalScanner(paths).scan();
    expect(scan.goals.map((g) => g.id)).toEqual([good.id]);
    expect(scan.problems).toEqual([{ file: goalFile(paths, bad.id), message: expect.stringContaining(goalFile(paths, bad.id)) }]);
    expect(fs.readFileSync(goalFile(paths, bad.id), 'utf8')).toBe('nope');
  });

  it('adds a goal found closed but missing from the ledger to the ledger', async () => {
    const { paths } = makeGarden();
    const open = await createGoal(paths, { type: 'build', body: 'open' });
    const crashed = await createGoal(paths, { type: 'build', body: 'closed before a crash' });
    // A crash between writing the closed goal file and appending to the ledger.
    forceStatus(paths, crashed.id, 'closed');
    expect(ledger(paths)).toEqual([]);

    const scanner = new OpenGoalScanner(paths);
    const first = await scanner.scan();
    expect(first.goals.map((g) => g.id)).toEqual([open.id]);
    expect(first.problems).toEqual([]);
    expect(ledger(paths)).toEqual([crashed.id]);

    // From now on the file is never opened again, by this scanner or a fresh one.
    fs.writeFileSync(goalFile(paths, crashed.id), 'garbage');
    for (const s of [scanner, new OpenGoalScanner(paths)]) {
      const scan = await s.scan();
      expect(scan.problems).toEqual([]);
      expect(scan.goals.map((g) => g.id)).toEqual([open.id]);
    }
    expect(ledger(paths)).toEqual([crashed.id]);
  });

  it('a warm scan returns updated content after a goal file changes', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'build', body: 'original body' });
    const scanner = new OpenGoalScanner(paths);
    expect((await scanner.scan()).goals[0]).toMatchObject({ status: 'queued', body: 'original body' });

    await transitionGoal(paths, goal.id, 'dispatched');
    expect((await scanner.scan()).goals[0]).toMatchObject({ status: 'dispatched' });

    const file = goalFile(paths, goal.id);
    writeJson(file, { ...readJson(file), body: 'an edited, longer body', priority: 77 });
    expect((await scanner.scan()).goals).toEqual([await readGoal(paths, goal.id)]);
    expect((await scanner.scan()).goals[0]).toMatchObject({ body: 'an edited, longer body', priority: 77 });
  });

  it('two scans at once read each goal file once; the second sees a change made while it waited', async () => {
    const { paths } = makeGarden();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await createGoal(paths, { type: 'build', body: `goal ${i}` })).id);
    // A closed goal, so the garden has its closed ledger (without one, the first scan of a process rebuilds it from every goal file).
    const done = await createGoal(paths, { type: 'build', body: 'done' });
    await transitionGoal(paths, done.id, 'closed', { closedReason: 'cancelled' });
    const reads: string[] = [];
    // The scanner reads goal files synchronously or not: both are counted.
    let forcing = false;
    const count = (args: unknown[]) => {
      if (!forcing && typeof args[0] === 'string' && args[0].startsWith(paths.goalsDir)) {
        // Changed while the first scan runs: the second, which starts after it, reads it again.
        if (reads.push(args[0]) === 1) {
          forcing = true; // the test's own read and write of it are not the scanner's
          forceStatus(paths, ids[0]!, 'dispatched');
          forcing = false;
        }
      }
    };
    const realSync = fs.readFileSync.bind(fs) as (...args: unknown[]) => unknown;
    vi.spyOn(fs, 'readFileSync').mockImplementation(((...args: unknown[]) => {
      count(args);
      return realSync(...args);
    }) as never);
    const real = fsp.readFile.bind(fsp) as (...args: unknown[]) => unknown;
    vi.spyOn(fsp, 'readFile').mockImplementation(((...args: unknown[]) => {
      count(args);
      return real(...args);
    }) as never);
    const scanner = new OpenGoalScanner(paths);
    const [a, b] = await Promise.all([scanner.scan(), scanner.scan()]);
    expect(a.goals.map((g) => g.id).sort()).toEqual([...ids].sort());
    expect(b.goals.map((g) => g.id).sort()).toEqual([...ids].sort());
    expect(b.goals.find((g) => g.id === ids[0])?.status).toBe('dispatched');
    // Every file once (the cold scan), and the changed one a second time: not every file twice.
    expect(reads.filter((f) => f !== goalFile(paths, ids[0]!) && f !== goalFile(paths, done.id)).sort()).toEqual(ids.slice(1).map((id) => goalFile(paths, id)).sort());
    expect(reads.filter((f) => f === goalFile(paths, ids[0]!)).length).toBeLessThanOrEqual(2);
    // The ledger is as pak2 left it (its record matches): the closed goal's file is not opened.
    expect(reads.filter((f) => f === goalFile(paths, done.id))).toHaveLength(0);
    vi.restoreAllMocks();
  });

  it('a scan of more goal files than one stat slice returns each open goal once, and drops what went away', async () => {
    const { paths } = makeGarden();
    const ids: string[] = [];
    for (let i = 0; i < 2100; i++) {
      const id = `${i + 1}-bulk-goal`;
      writeJson(goalFile(paths, id), { id, type: 'build', status: 'queued', priority: 50, body: `bulk ${i}`, submitted_at: NOW.toISOString() });
      ids.push(id);
    }
    const scanner = new OpenGoalScanner(paths);
    const cold = await scanner.scan();
    expect(cold.problems).toEqual([]);
    expect(cold.goals.map((g) => g.id).sort()).toEqual([...ids].sort());
    fs.rmSync(goalFile(paths, ids[1500]!));
    const warm = await scanner.scan();
    expect(warm.goals).toHaveLength(2099);
    expect(new Set(warm.goals.map((g) => g.id)).size).toBe(2099);
    expect(warm.goals.some((g) => g.id === ids[1500])).toBe(false);
  });

  it('a warm scan sees new goals, closes and deletions', async () => {
    const { paths } = makeGarden();
    const a = await createGoal(paths, { type: 'build', body: 'a' });
    const scanner = new OpenGoalScanner(paths);
    expect((await scanner.scan()).goals.map((g) => g.id)).toEqual([a.id]);

    const b = await createGoal(paths, { type: 'build', body: 'b' });
    expect((await scanner.scan()).goals.map((g) => g.id).sort()).toEqual([a.id, b.id].sort());

    await transitionGoal(paths, a.id, 'closed', { closedReason: 'cancelled' });
    expect((await scanner.scan()).goals.map((g) => g.id)).toEqual([b.id]);

    fs.rmSync(goalFile(paths, b.id));
    expect(await scanner.scan()).toEqual({ goals: [], problems: [] });
  });

  it('re-reads the ledger from the start when it was truncated', async () => {
    const { paths } = makeGarden();
    const a = await createGoal(paths, { type: 'build', body: 'a' });
    await transitionGoal(paths, a.id, 'closed', { closedReason: 'cancelled' });
    const scanner = new OpenGoalScanner(paths);
    expect((await scanner.scan()).goals).toEqual([]);
    // Someone rewrites the ledger shorter, dropping a's line; a's file still says closed.
    fs.writeFileSync(path.join(paths.goalsDir, CLOSED_LEDGER), '');
    const scan = await scanner.scan();
    expect(scan).toEqual({ goals: [], problems: [] });
    expect(ledger(paths)).toEqual([a.id]);
  });
});
