import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile, type DispatchFn } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import { UserError } from '../../source/errors.js';
import type { Garden } from '../../source/garden/index.js';
import { archivePlant, commissionPlant, createGoal, readGoal, readRun, replyDir } from '../../source/store/index.js';
import { cancelGoal, RETROSPECTIVE_PRIORITY, submitRetrospectiveGoal } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
afterEach(() => garden?.cleanup());

const realDispatch =
  (g: Garden): DispatchFn =>
  (goal, runId) =>
    dispatch(goal, runId, { garden: g, onStderr: () => undefined });
const pass = (g: Garden) => reconcile({ garden: g, dispatch: realDispatch(g), awaitDispatch: true });

async function rejection(promise: Promise<unknown>): Promise<UserError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UserError);
  return error as UserError;
}

describe('submitRetrospectiveGoal: validation', () => {
  it.each([
    [{ since: 'last week' }, /^since "last week": must be an ISO date/],
    [{ since: '0d' }, /^since "0d": the duration must be more than zero/],
    [{ since: '2999-01-01' }, /^since "2999-01-01": the window must start before now/],
    [{ since: '2026-13-45' }, /^since "2026-13-45"/],
    [{ plant: 'nobody' }, /^plant nobody: no such plant in this garden \(plants: gardener\)/],
    [{ plant: '../evil' }, /^plant \.\.\/evil: not a valid plant name/],
    [{ focus: '   ' }, /^focus: empty/],
    [{ focus: 'x'.repeat(5000) }, /^focus: 5000 characters/],
  ])('refuses %j with a one-line error naming the field, writing nothing', async (input, message) => {
    garden = await makeTestGarden();
    const error = await rejection(submitRetrospectiveGoal(garden, input));
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('\n');
    expect(error.exitCode).toBe(2);
    expect(fs.existsSync(garden.paths.goalsDir) ? fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json')) : []).toEqual([]);
  });

  it('refuses an archived plant', async () => {
    garden = await makeTestGarden();
    await commissionPlant(garden.paths, 'reviewer', 'gardener');
    await archivePlant(garden.paths, 'reviewer');
    expect((await rejection(submitRetrospectiveGoal(garden, { plant: 'reviewer' }))).message).toMatch(/^plant reviewer: the plant is archived/);
  });
});

describe('submitRetrospectiveGoal: the window', () => {
  it('puts the closed goals of the window, their runs and the totals in the body and the metadata', async () => {
    garden = await makeTestGarden();
    const ok = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'build the thing' });
    const bad = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'fail please', driver: 'exit3' });
    const gone = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'never mind' });
    await cancelGoal(garden, gone.id);
    const summary = await pass(garden);
    expect(summary.closed).toEqual(expect.arrayContaining([{ goal: ok.id, reason: 'success' }, { goal: bad.id, reason: 'failure' }]));
    const okRun = await readRun(garden.paths, `${ok.id}-r1`);
    const open = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'still queued' });

    const retro = await submitRetrospectiveGoal(garden, { since: '1h', focus: 'why fixes fail' });
    expect(retro).toMatchObject({ type: 'retrospective', status: 'queued', assigned_to: 'gardener', priority: RETROSPECTIVE_PRIORITY });
    const meta = (retro as Record<string, unknown>).retrospective as { since: string; until: string; goals: string[]; focus: string };
    expect(meta.focus).toBe('why fixes fail');
    expect(new Set(meta.goals)).toEqual(new Set([ok.id, bad.id, gone.id]));
    expect(meta.goals).not.toContain(open.id);
    expect(Date.parse(meta.until) - Date.parse(meta.since)).toBe(3_600_000);
    // The record on disk keeps the metadata.
    expect((await readGoal(garden.paths, retro.id)) as Record<string, unknown>).toMatchObject({ retrospective: meta });

    const body = retro.body;
    expect(body).toContain(`from ${meta.since} to ${meta.until}`);
    for (const id of meta.goals) expect(body).toContain(`- ${id} (`);
    expect(body).toContain(`${ok.id}-r1: success, $${okRun.cost!.usd!.toFixed(4)}`);
    expect(body).toContain(`${bad.id}-r1: failure`);
    expect(body).toContain('failure_reason nonzero_exit');
    expect(body).toContain(`reflection: ${okRun.reflection!.trim().slice(0, 20)}`);
    expect(body).toMatch(/Goals closed: 3 \(success 1, failure 1, cancelled 1\); runs: 2/);
    expect(body).toContain('Focus: why fixes fail');
    for (const ask of ['what went well', 'what failed and why', 'patterns in the reflections', 'cost', 'the goals you would queue next']) expect(body).toContain(ask);
    expect(body).toContain(`reply directory ${replyDir(garden.paths, garden.config)}`);
  });

  it('leaves out goals closed before the window; an empty window says so', async () => {
    garden = await makeTestGarden();
    const old = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'old one' }, new Date(Date.now() - 10 * 86_400_000));
    await cancelGoal(garden, old.id, new Date(Date.now() - 10 * 86_400_000));
    const retro = await submitRetrospectiveGoal(garden, { since: '7d' });
    expect((retro as Record<string, unknown>).retrospective).toMatchObject({ goals: [] });
    expect(retro.body).toContain('Goals closed: 0');
    expect(retro.body).toContain('None.');
    expect(retro.body).not.toContain(old.id);
    const iso = await submitRetrospectiveGoal(garden, { since: new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10), plant: await commissionPlant(garden.paths, 'reviewer', 'gardener').then(() => 'reviewer') });
    expect((iso as Record<string, unknown>).retrospective).toMatchObject({ goals: [old.id] });
  });
});

describe('submitRetrospectiveGoal: one at a time', () => {
  it('refuses a second while one for the same plant is open; another plant, or after a cancel, is fine', async () => {
    garden = await makeTestGarden();
    const first = await submitRetrospectiveGoal(garden);
    const error = await rejection(submitRetrospectiveGoal(garden, { since: '2d' }));
    expect(error.message).toBe(`plant gardener: retrospective ${first.id} is still queued; one at a time`);
    expect(error.exitCode).toBe(1);
    await commissionPlant(garden.paths, 'reviewer', 'gardener');
    await expect(submitRetrospectiveGoal(garden, { plant: 'reviewer' })).resolves.toMatchObject({ assigned_to: 'reviewer' });
    await cancelGoal(garden, first.id);
    await expect(submitRetrospectiveGoal(garden)).resolves.toMatchObject({ assigned_to: 'gardener', type: 'retrospective' });
  });
});

describe('a retrospective goal runs through reconcile', () => {
  it('dispatches with the command driver and closes success; its prompt carries the task and the reply directory', async () => {
    garden = await makeTestGarden();
    const retro = await submitRetrospectiveGoal(garden);
    const summary = await pass(garden);
    expect(summary.dispatched).toEqual([`${retro.id}-r1`]);
    expect(summary.closed).toEqual([{ goal: retro.id, reason: 'success' }]);
    expect(await readGoal(garden.paths, retro.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    expect(await readRun(garden.paths, `${retro.id}-r1`)).toMatchObject({ status: 'success' });
    const prompt = fs.readFileSync(path.join(garden.paths.runsDir, `${retro.id}-r1`, 'prompt.md'), 'utf8');
    expect(prompt).toContain('write a retrospective');
    expect(prompt).toContain(replyDir(garden.paths, garden.config));
    // Closed, it no longer blocks the next one.
    await expect(submitRetrospectiveGoal(garden)).resolves.toMatchObject({ type: 'retrospective' });
  });
});

describe('pak2 retrospective', () => {
  it('prints the goal id; --json prints the record', async () => {
    garden = await makeTestGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const r = await runCli(['retrospective', ...g, '--since', '3d', '--focus', 'costs']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const id = r.stdout.trim();
    expect(id).toMatch(/^1-retrospective-since-\d{4}-\d{2}-\d{2}$/);
    const goal = JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, `${id}.json`), 'utf8'));
    expect(goal).toMatchObject({ type: 'retrospective', assigned_to: 'gardener', retrospective: { goals: [], focus: 'costs' } });
    await commissionPlant(garden.paths, 'reviewer', 'gardener');
    const json = await runCli(['retrospective', ...g, '--plant', 'reviewer', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ type: 'retrospective', assigned_to: 'reviewer' });
  });

  it.each([
    [['--since', 'soon'], 2, '--since "soon": must be an ISO date'],
    [['--plant', 'nobody'], 2, '--plant nobody: no such plant in this garden'],
    [['--focus', ' '], 2, '--focus: empty'],
  ])('refuses %j with a one-line error naming the flag', async (args, code, message) => {
    garden = await makeTestGarden();
    const r = await runCli(['retrospective', '--garden', garden.paths.gardenRoot, ...args]);
    expect(r.code).toBe(code);
    const lines = r.stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`pak2: ${message}`);
    expect(r.stdout).toBe('');
  });

  it('refuses a second open retrospective with exit 1, naming --plant', async () => {
    garden = await makeTestGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const first = (await runCli(['retrospective', ...g])).stdout.trim();
    const r = await runCli(['retrospective', ...g]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`pak2: --plant gardener: retrospective ${first} is still queued; one at a time`);
    expect(r.stderr).toContain(`hint: wait for it, or pak2 cancel ${first}`);
  });
});
