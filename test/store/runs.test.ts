import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateRun, type GoalRecord } from '../../source/contracts/index.js';
import { runDir, type GardenPaths } from '../../source/garden/index.js';
import {
  closeRun,
  createGoal,
  latestRun,
  listRuns,
  openRun,
  readRun,
  runEventsFile,
  runIdsForGoal,
  runMetaFile,
  runSealFile,
  readRunChecked,
  StoreError,
  type CloseRunInput,
} from '../../source/store/index.js';
import { cleanupFixtures, eventsOfType, makeGarden, readJson, readLog } from '../helpers/fixtures.js';

afterEach(cleanupFixtures);

const STARTED = new Date('2024-05-01T12:00:00.000Z');
const CLOSED = new Date('2024-05-01T12:10:00.000Z');
const OPEN = { plant: 'gardener', driver: 'codex', model: 'gpt-5.4' };
const SUCCESS: CloseRunInput = { status: 'success', cost: { source: 'unknown' }, reflection: 'Learned to read the tests first.' };

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

async function setup(type: GoalRecord['type'] = 'build'): Promise<{ paths: GardenPaths; goal: GoalRecord }> {
  const { paths } = makeGarden();
  const goal = await createGoal(paths, { type, plant: 'gardener', body: 'Fix the thing' }, STARTED);
  return { paths, goal };
}

describe('openRun', () => {
  it('writes a valid running meta.json and appends RunStarted', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, { ...OPEN, reasoningEffort: 'xhigh' }, STARTED);
    expect(run).toEqual({
      id: `${goal.id}-r1`,
      goal: goal.id,
      plant: 'gardener',
      status: 'running',
      started_at: STARTED.toISOString(),
      driver: 'codex',
      model: 'gpt-5.4',
      reasoning_effort: 'xhigh',
    });
    const file = path.join(paths.runsDir, run.id, 'meta.json');
    expect(runMetaFile(paths, run.id)).toBe(file);
    const onDisk = readJson(file);
    expect(onDisk).toEqual(run);
    expect(validateRun(onDisk)).toEqual([]);
    expect(eventsOfType(paths, 'RunStarted')).toEqual([
      { ts: STARTED.toISOString(), type: 'RunStarted', run: run.id, goal: goal.id, plant: 'gardener', detail: 'codex/gpt-5.4' },
    ]);
  });

  it('puts the run under the runtime root and leaves events.jsonl to the driver', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    expect(runDir(paths, run.id).startsWith(paths.runtimeRoot)).toBe(true);
    expect(fs.existsSync(runEventsFile(paths, run.id))).toBe(false);
    expect(path.dirname(runEventsFile(paths, run.id))).toBe(runDir(paths, run.id));
  });

  it('keeps a worktree baseline', async () => {
    const { paths, goal } = await setup();
    const worktreeBaseline = { tracked_dirty_paths: ['src/a.ts'], untracked_dirty_count: 1, untracked_dirty_roots: ['tmp'] };
    const run = await openRun(paths, goal, { ...OPEN, worktreeBaseline });
    expect(readJson(runMetaFile(paths, run.id)).worktree_baseline).toEqual(worktreeBaseline);
  });

  it('numbers attempts r1, r2, r3', async () => {
    const { paths, goal } = await setup();
    const first = await openRun(paths, goal, OPEN);
    await closeRun(paths, first.id, goal.type, { status: 'failure', cost: { source: 'unknown' }, failureReason: 'agent_error' });
    const second = await openRun(paths, goal, OPEN);
    const third = await openRun(paths, goal, OPEN);
    expect([first.id, second.id, third.id]).toEqual([`${goal.id}-r1`, `${goal.id}-r2`, `${goal.id}-r3`]);
    expect(await runIdsForGoal(paths, goal.id)).toEqual([first.id, second.id, third.id]);
    expect((await latestRun(paths, goal.id))!.id).toBe(third.id);
  });

  it('concurrent opens of one goal get distinct attempts', async () => {
    const { paths, goal } = await setup();
    const runs = await Promise.all(Array.from({ length: 6 }, () => openRun(paths, goal, OPEN)));
    expect(runs.map((r) => r.id).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `${goal.id}-r${i + 1}`).sort());
    expect(eventsOfType(paths, 'RunStarted')).toHaveLength(6);
  });

  it('refuses a record that would not validate, writing nothing', async () => {
    const { paths, goal } = await setup();
    await storeError(openRun(paths, goal, { ...OPEN, plant: '../evil' }), 'INVALID_RECORD');
    await storeError(openRun(paths, goal, { ...OPEN, model: '' }), 'INVALID_RECORD');
    expect(await runIdsForGoal(paths, goal.id)).toEqual([]);
    expect(eventsOfType(paths, 'RunStarted')).toEqual([]);
  });

  it('latestRun is undefined for a goal without runs', async () => {
    const { paths, goal } = await setup();
    expect(await latestRun(paths, goal.id)).toBeUndefined();
  });
});

describe('readRun', () => {
  it('RUN_NOT_FOUND for an unknown run and for an id that is not N-slug-rN', async () => {
    const { paths } = await setup();
    await storeError(readRun(paths, '99-nope-r1'), 'RUN_NOT_FOUND');
    await storeError(readRun(paths, '../../etc/passwd'), 'RUN_NOT_FOUND');
    await storeError(readRun(paths, '1-fix-the-thing'), 'RUN_NOT_FOUND');
  });

  it('a torn meta.json is never believed: the seal is the record, and the damage is named', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    fs.writeFileSync(runMetaFile(paths, run.id), '{"id":');
    expect(await readRun(paths, run.id)).toEqual(run);
    const checked = await readRunChecked(paths, run.id);
    expect(checked.damage).toEqual({ fields: ['(unreadable)'], detail: expect.stringContaining(`${runMetaFile(paths, run.id)}: malformed JSON`) });
  });

  it('a rewritten meta.json names the fields that differ from the seal', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    fs.writeFileSync(runMetaFile(paths, run.id), JSON.stringify({ ...run, status: 'success', reflection: 'forged' }));
    const checked = await readRunChecked(paths, run.id);
    expect(checked.run).toEqual(run);
    expect(checked.damage?.fields).toEqual(['reflection', 'status']);
  });

  it('INVALID_RECORD naming the file for malformed meta.json of a record without a seal (written before seals)', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    fs.rmSync(runSealFile(paths, run.id));
    fs.writeFileSync(runMetaFile(paths, run.id), '{"id":');
    const error = await storeError(readRun(paths, run.id), 'INVALID_RECORD');
    expect(error.file).toBe(runMetaFile(paths, run.id));
    expect(error.message).toContain(runMetaFile(paths, run.id));
  });
});

describe('closeRun', () => {
  it('writes the terminal record once and appends RunClosed', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN, STARTED);
    const closed = await closeRun(
      paths,
      run.id,
      goal.type,
      { ...SUCCESS, cost: { source: 'provider', usd: 0.12, input_tokens: 10, output_tokens: 5 }, finalText: 'done', numTurns: 3, sessionId: 's-1', exitCode: 0, by: 'driver' },
      CLOSED,
    );
    expect(closed).toEqual({
      ...run,
      status: 'success',
      completed_at: CLOSED.toISOString(),
      cost: { source: 'provider', usd: 0.12, input_tokens: 10, output_tokens: 5 },
      reflection: SUCCESS.reflection,
      outputs: { final_text: 'done' },
      num_turns: 3,
      session_id: 's-1',
      exit_code: 0,
    });
    const onDisk = readJson(runMetaFile(paths, run.id));
    expect(onDisk).toEqual(closed);
    expect(validateRun(onDisk)).toEqual([]);
    expect(eventsOfType(paths, 'RunClosed')).toEqual([
      { ts: CLOSED.toISOString(), type: 'RunClosed', run: run.id, goal: goal.id, plant: 'gardener', status: 'success', cost_source: 'provider', cost_usd: 0.12, detail: 'closed by driver' },
    ]);
  });

  it('records the failure reason in the record and the event', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    const closed = await closeRun(paths, run.id, goal.type, { status: 'killed', cost: { source: 'unknown' }, failureReason: 'killed', by: 'watchdog' });
    expect(closed).toMatchObject({ status: 'killed', failure_reason: 'killed', cost: { source: 'unknown' } });
    expect(eventsOfType(paths, 'RunClosed')[0]).toMatchObject({ status: 'killed', reason: 'killed', detail: 'closed by watchdog' });
  });

  it('a second close throws INVALID_TRANSITION and leaves the file byte-identical', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    await closeRun(paths, run.id, goal.type, SUCCESS, CLOSED);
    const file = runMetaFile(paths, run.id);
    const before = fs.readFileSync(file);
    const statBefore = fs.statSync(file);
    const error = await storeError(
      closeRun(paths, run.id, goal.type, { status: 'failure', cost: { source: 'unknown' }, failureReason: 'agent_error' }),
      'INVALID_TRANSITION',
    );
    expect(error.message).toContain(run.id);
    await storeError(closeRun(paths, run.id, goal.type, SUCCESS), 'INVALID_TRANSITION');
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(fs.statSync(file).ino).toBe(statBefore.ino);
    expect(eventsOfType(paths, 'RunClosed')).toHaveLength(1);
  });

  it('a success of a build goal without reflection is INVALID_RECORD (MISSING_REFLECTION) and the run stays running', async () => {
    const { paths, goal } = await setup('build');
    const run = await openRun(paths, goal, OPEN);
    const file = runMetaFile(paths, run.id);
    const before = fs.readFileSync(file);
    const error = await storeError(closeRun(paths, run.id, 'build', { status: 'success', cost: { source: 'unknown' } }), 'INVALID_RECORD');
    expect(error.message).toContain('MISSING_REFLECTION');
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect((await readRun(paths, run.id)).status).toBe('running');
    expect(eventsOfType(paths, 'RunClosed')).toEqual([]);
    // The run can still be closed properly afterwards.
    expect((await closeRun(paths, run.id, 'build', SUCCESS)).status).toBe('success');
  });

  it.each([['build'], ['fix'], ['evaluate'], ['tend']])('a blank reflection does not satisfy a %s goal', async (type) => {
    const { paths, goal } = await setup(type as GoalRecord['type']);
    const run = await openRun(paths, goal, OPEN);
    const error = await storeError(closeRun(paths, run.id, type, { ...SUCCESS, reflection: '   ' }), 'INVALID_RECORD');
    expect(error.message).toContain('MISSING_REFLECTION');
    expect((await readRun(paths, run.id)).status).toBe('running');
  });

  it.each([['spike'], ['research']])('a %s goal closes successfully without reflection', async (type) => {
    const { paths, goal } = await setup(type as GoalRecord['type']);
    const run = await openRun(paths, goal, OPEN);
    const closed = await closeRun(paths, run.id, type, { status: 'success', cost: { source: 'unknown' } });
    expect(closed.status).toBe('success');
    expect(closed.reflection).toBeUndefined();
  });

  it('a failed status without failure reason is INVALID_RECORD (MISSING_FAILURE_REASON), run stays running', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    const error = await storeError(closeRun(paths, run.id, goal.type, { status: 'failure', cost: { source: 'unknown' } }), 'INVALID_RECORD');
    expect(error.message).toContain('MISSING_FAILURE_REASON');
    expect((await readRun(paths, run.id)).status).toBe('running');
  });

  it('a cost with a negative amount is INVALID_RECORD (INVALID_COST_FIELD)', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    const error = await storeError(closeRun(paths, run.id, goal.type, { ...SUCCESS, cost: { source: 'provider', usd: -0.5 } }), 'INVALID_RECORD');
    expect(error.message).toContain('INVALID_COST_FIELD');
    expect((await readRun(paths, run.id)).status).toBe('running');
  });

  it('RUN_NOT_FOUND for an unknown run', async () => {
    const { paths, goal } = await setup();
    await storeError(closeRun(paths, `${goal.id}-r1`, goal.type, SUCCESS), 'RUN_NOT_FOUND');
    await storeError(closeRun(paths, '../../x', goal.type, SUCCESS), 'RUN_NOT_FOUND');
    expect(readLog(paths).filter((e) => e.type === 'RunClosed')).toEqual([]);
  });

  it('concurrent closes of one run: exactly one wins', async () => {
    const { paths, goal } = await setup();
    const run = await openRun(paths, goal, OPEN);
    const inputs: CloseRunInput[] = [
      { ...SUCCESS, by: 'driver' },
      { status: 'killed', cost: { source: 'unknown' }, failureReason: 'killed', by: 'watchdog' },
      { status: 'timeout', cost: { source: 'unknown' }, failureReason: 'timeout', by: 'coordinator' },
      { status: 'failure', cost: { source: 'unknown' }, failureReason: 'coordinator_stopped', by: 'coordinator' },
    ];
    const results = await Promise.allSettled(inputs.map((input) => closeRun(paths, run.id, goal.type, input)));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(inputs.length - 1);
    for (const r of lost) {
      expect(r.reason).toBeInstanceOf(StoreError);
      expect((r.reason as StoreError).code).toBe('INVALID_TRANSITION');
    }
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof closeRun>>>).value;
    expect(readJson(runMetaFile(paths, run.id))).toEqual(winner);
    const closedEvents = eventsOfType(paths, 'RunClosed');
    expect(closedEvents).toHaveLength(1);
    expect(closedEvents[0]!.status).toBe(winner.status);
  });
});

describe('listRuns', () => {
  it('lists runs oldest first and reports unreadable ones', async () => {
    const { paths, goal } = await setup();
    const a = await openRun(paths, goal, OPEN, STARTED);
    const b = await openRun(paths, goal, OPEN, CLOSED);
    const other = await createGoal(paths, { type: 'spike', body: 'other' });
    const c = await openRun(paths, other, OPEN, STARTED);
    fs.rmSync(runSealFile(paths, c.id));
    fs.writeFileSync(runMetaFile(paths, c.id), 'not json');
    fs.mkdirSync(path.join(paths.runsDir, 'not-a-run'), { recursive: true });
    const list = await listRuns(paths);
    expect(list.runs.map((r) => r.id)).toEqual([a.id, b.id]);
    expect(list.problems).toEqual([{ file: runMetaFile(paths, c.id), message: expect.stringContaining(runMetaFile(paths, c.id)) }]);
  });

  it('runs that started at the same instant are ordered by goal number, then attempt (never as strings)', async () => {
    const { paths } = makeGarden();
    const goals: GoalRecord[] = [];
    for (let i = 0; i < 10; i += 1) goals.push(await createGoal(paths, { type: 'spike', body: `goal ${i + 1}` }));
    const same = new Date('2026-01-01T00:00:00.000Z');
    // Goal 10 first and goal 9 after it as strings ("10-…" < "9-…"); r10 before r2 likewise.
    const ids: string[] = [];
    for (const goal of [goals[9]!, goals[8]!]) ids.push((await openRun(paths, goal, OPEN, same)).id);
    for (let k = 1; k <= 10; k += 1) {
      const run = await openRun(paths, goals[0]!, OPEN, same);
      ids.push(run.id);
    }
    const listed = (await listRuns(paths)).runs.map((r) => r.id);
    expect(listed).toEqual([...Array.from({ length: 10 }, (_, k) => `${goals[0]!.id}-r${k + 1}`), `${goals[8]!.id}-r1`, `${goals[9]!.id}-r1`]);
    expect([...ids].sort()).not.toEqual(listed); // the string order differs
  });

  it('is empty without a runs directory', async () => {
    const { paths } = makeGarden();
    expect(await listRuns(paths)).toEqual({ runs: [], problems: [] });
  });
});
