/**
 * The operator's control of automatic tends (docs/automatic-tend/level2.md,
 * "Operator control"): `[tend]` triggers, priority and daily cap, the pause
 * (tend.json), and the TendWithheld trace of a tend held back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { automaticTendsToday, decideTends, readTendControl, reconcile, type DispatchFn, type TendControl } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, readGoal, tendStateFile } from '../../source/store/index.js';
import { tendView } from '../../source/snapshot/index.js';
import { setTendsPaused } from '../../source/submit/index.js';
import { createToken } from '../../source/server/index.js';
import { runCli } from '../support/cli.js';
import { api, serve } from '../server/support.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  garden?.cleanup();
});

const realDispatch = (g: Garden): DispatchFn => (goal, runId) => dispatch(goal, runId, { garden: g, onStderr: () => undefined });
/** One pass that waits for its runs; with `now`, the pass's clock (the tends' submitted_at). A fresh scanner and no cache each time: a pass as a new process makes it. */
const pass = (g: Garden, now?: Date) => reconcile({ garden: g, dispatch: realDispatch(g), awaitDispatch: true, ...(now ? { now: () => now } : {}) });
const withheldEvents = (g: Garden) => readEventLog(g).filter((e) => e.type === 'TendWithheld');
const tendGoals = (g: Garden) =>
  fs
    .readdirSync(g.paths.goalsDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(fs.readFileSync(path.join(g.paths.goalsDir, f), 'utf8')) as { id: string; type: string; priority: number; status: string })
    .filter((r) => r.type === 'tend');

describe('[tend] triggers and priority', () => {
  it('run_failure = false: a failed run queues no tend; one TendWithheld (trigger_off) names the run', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\nrun_failure = false\n' });
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail please', driver: 'exit3' });
    const summary = await pass(garden);
    expect(summary.closed).toEqual([{ goal: goal.id, reason: 'failure' }]);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld).toEqual([{ key: `run_failure:${goal.id}`, reason: 'trigger_off', detail: `[tend] run_failure = false: no run_failure tend for run ${goal.id}-r1 of ${goal.id} (failure, nonzero_exit)` }]);
    expect(withheldEvents(garden)).toEqual([expect.objectContaining({ goal: goal.id, run: `${goal.id}-r1`, reason: 'trigger_off', detail: `[tend] run_failure = false: no run_failure tend for run ${goal.id}-r1 of ${goal.id} (failure, nonzero_exit)` })]);
    expect(tendGoals(garden)).toEqual([]);
    // Stuck goals are still tended: only the trigger that is off is held back.
    await createGoal(garden.paths, { type: 'build', body: 'nobody owns me' });
    expect((await pass(garden)).tends.map((t) => t.trigger)).toEqual(['queued_attention_needed']);
  });

  it('queued_attention_needed = false: stuck goals queue no tend, said once per set of stuck goals, not once a pass', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\nqueued_attention_needed = false\n' });
    const a = await createGoal(garden.paths, { type: 'build', body: 'unowned A' });
    const first = await pass(garden);
    expect(first.tends).toEqual([]);
    expect(first.tendsWithheld.map((w) => w.reason)).toEqual(['trigger_off']);
    expect(withheldEvents(garden).map((e) => e.detail)).toEqual([`[tend] queued_attention_needed = false: no queued_attention_needed tend for 1 stuck goal (${a.id})`]);
    await pass(garden);
    await pass(garden);
    expect(withheldEvents(garden)).toHaveLength(1);
    const b = await createGoal(garden.paths, { type: 'build', body: 'unowned B' });
    await pass(garden);
    expect(withheldEvents(garden).map((e) => e.detail)).toEqual([
      `[tend] queued_attention_needed = false: no queued_attention_needed tend for 1 stuck goal (${a.id})`,
      `[tend] queued_attention_needed = false: no queued_attention_needed tend for 2 stuck goals (${a.id}, ${b.id})`,
    ]);
    expect(JSON.parse(fs.readFileSync(path.join(garden.paths.runtimeRoot, 'coordinator.tend-withheld.json'), 'utf8'))).toEqual([a.id, b.id]);
    expect(tendGoals(garden)).toEqual([]);
  });

  it('[tend] priority: automatic tends carry it (the default is 70)', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\npriority = 30\n' });
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail', driver: 'exit3' });
    const summary = await pass(garden);
    expect((await readGoal(garden.paths, summary.tends[0]!.goal)).priority).toBe(30);
  });

  it('[tend] is read from the config object on every pass (a reloaded PAK2.toml applies at the next pass)', async () => {
    garden = await makeTestGarden();
    const first = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail one', driver: 'exit3' });
    expect((await pass(garden)).tends.map((t) => t.key)).toEqual([`run_failure:${first.id}`]);
    garden.config.tend = { ...garden.config.tend, triggers: { ...garden.config.tend.triggers, run_failure: false } };
    const second = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail two', driver: 'exit3', priority: 90 });
    const summary = await pass(garden);
    expect(summary.closed).toContainEqual({ goal: second.id, reason: 'failure' });
    expect(summary.tendsWithheld).toEqual([expect.objectContaining({ key: `run_failure:${second.id}`, reason: 'trigger_off' })]);
  });
});

describe('pause', () => {
  it('paused: no tend (TendWithheld paused); resumed: the stuck-goal tend is queued at the next pass; the pause is kept in tend.json', async () => {
    garden = await makeTestGarden();
    const paused = await setTendsPaused(garden, true, 'operator', new Date('2026-05-01T10:00:00.000Z'));
    expect(paused).toEqual({ paused: true, changed: true, woke: false });
    expect(JSON.parse(fs.readFileSync(tendStateFile(garden.paths), 'utf8'))).toEqual({ paused: true, updated_at: '2026-05-01T10:00:00.000Z', by: 'operator' });
    expect(await setTendsPaused(garden, true)).toEqual({ paused: true, changed: false, woke: false });
    expect(readEventLog(garden).filter((e) => e.type === 'TendsPaused').map((e) => e.detail)).toEqual(['automatic tends paused by operator']);

    const failing = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail', driver: 'exit3' });
    const stuck = await createGoal(garden.paths, { type: 'build', body: 'nobody owns me' });
    const first = await pass(garden);
    expect(first.tends).toEqual([]);
    expect(first.tendsWithheld.map((w) => [w.key, w.reason])).toEqual([
      [`run_failure:${failing.id}`, 'paused'],
      ['queued_attention_needed', 'paused'],
    ]);
    expect(withheldEvents(garden).map((e) => [e.reason, e.detail])).toEqual([
      ['paused', `automatic tends are paused (paused by operator at 2026-05-01T10:00:00.000Z; pak2 tend resume): no run_failure tend for run ${failing.id}-r1 of ${failing.id} (failure, nonzero_exit)`],
      ['paused', `automatic tends are paused (paused by operator at 2026-05-01T10:00:00.000Z; pak2 tend resume): no queued_attention_needed tend for 1 stuck goal (${stuck.id})`],
    ]);
    // Said once: the next pass while still paused adds nothing.
    await pass(garden);
    expect(withheldEvents(garden)).toHaveLength(2);

    expect((await setTendsPaused(garden, false)).changed).toBe(true);
    expect(readEventLog(garden).filter((e) => e.type === 'TendsResumed').map((e) => e.detail)).toEqual(['automatic tends resumed by operator']);
    const after = await pass(garden);
    expect(after.tends.map((t) => t.trigger)).toEqual(['queued_attention_needed']);
    // A run_failure held back is not retried later: its goal closed.
    expect(tendGoals(garden)).toHaveLength(1);
  });

  it('a tend.json that cannot be read holds tends back as paused, and pak2 tend pause|resume refuse to write over it', async () => {
    garden = await makeTestGarden();
    fs.writeFileSync(tendStateFile(garden.paths), '{"paused": "yes"}\n');
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail', driver: 'exit3' });
    const summary = await pass(garden);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld).toEqual([expect.objectContaining({ key: `run_failure:${goal.id}`, reason: 'paused', detail: expect.stringContaining('tend.json cannot be read') })]);
    await expect(setTendsPaused(garden, false)).rejects.toThrow(/^tend\.json cannot be read \(.*tend\.json: paused.*\); fix or remove it, then resume again$/);
    expect(fs.readFileSync(tendStateFile(garden.paths), 'utf8')).toBe('{"paused": "yes"}\n');
    const cli = await runCli(['tend', 'resume', '--garden', garden.paths.gardenRoot]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/^pak2: tend\.json cannot be read/);
    const status = await runCli(['tend', 'status', '--garden', garden.paths.gardenRoot]);
    expect(status.stdout).toMatch(/^automatic tends: paused\n/);
    expect(status.stderr).toMatch(/tend\.json.*automatic tends are held back until it is fixed or removed/);
  });

  it('pak2 tend pause / status / resume: one line each, status --json as GET /tend answers', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\ndaily_cap = 4\n' });
    const g = ['--garden', garden.paths.gardenRoot];
    const paused = await runCli(['tend', 'pause', ...g]);
    expect(paused).toMatchObject({ code: 0, stdout: 'automatic tends paused\n' });
    expect((await runCli(['tend', 'pause', ...g])).stdout).toBe('automatic tends were already paused\n');
    const status = await runCli(['tend', ...g]);
    expect(status.stdout).toMatch(/^automatic tends: paused \(paused by operator at \S+; pak2 tend resume\)\n  run_failure: on\n  queued_attention_needed: on\n  priority 70; daily cap 4, 0 queued today \(\d{4}-\d\d-\d\d, UTC\)\n$/);
    const json = JSON.parse((await runCli(['tend', 'status', '--json', ...g])).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ state: 'paused', triggers: { run_failure: true, queued_attention_needed: true }, priority: 70, daily_cap: 4, today: 0, timezone: 'UTC', paused: { by: 'operator' } });
    expect((await runCli(['tend', 'resume', ...g])).stdout).toBe('automatic tends resumed\n');
    expect((await runCli(['tend', 'resume', ...g])).stdout).toBe('automatic tends were already running\n');
    expect(JSON.parse((await runCli(['tend', '--json', ...g])).stdout)).toMatchObject({ state: 'on' });
  });
});

describe('HTTP', () => {
  it('GET /tend takes a read token; POST /tend/pause and /tend/resume only an operator token', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\nqueued_attention_needed = false\n' });
    const g = garden;
    const server = await serve(g, cleanups, { webhooks: false });
    const reader = (await createToken(g.paths, { role: 'read', name: 'dash' })).token;
    const got = await api(server, '/tend', { token: reader });
    expect(got.status).toBe(200);
    expect(await got.json()).toMatchObject({ state: 'partial', triggers: { run_failure: true, queued_attention_needed: false }, priority: 70, daily_cap: null, today: null });
    const refused = await api(server, '/tend/pause', { method: 'POST', token: reader });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^POST \/tend\/pause: the read token dash may call the GET routes.*; this needs an operator token$/);
    const paused = await api(server, '/tend/pause', { method: 'POST' });
    expect(paused.status).toBe(200);
    expect(await paused.json()).toEqual({ paused: true, changed: true, woke: false });
    expect(await (await api(server, '/tend', { token: reader })).json()).toMatchObject({ state: 'paused', paused: { by: 'operator' } });
    expect(readEventLog(g).filter((e) => e.type === 'TendsPaused').map((e) => e.detail)).toEqual(['automatic tends paused by operator']);
    // The GraphQL door's mutations are the same routes, as the caller.
    const gql = async (query: string, token = server.token) =>
      (await (await fetch(`${server.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as { data?: any; errors?: { message: string }[] };
    expect((await gql('mutation { resumeTends { paused changed } }', reader)).errors![0]!.message).toMatch(/^mutation resumeTends: POST \/tend\/resume: the read token dash/);
    expect((await gql('mutation { resumeTends { paused changed } }')).data).toEqual({ resumeTends: { paused: false, changed: true } });
    expect((await gql('mutation { pauseTends { paused changed } }')).data).toEqual({ pauseTends: { paused: true, changed: true } });
    fs.writeFileSync(tendStateFile(g.paths), 'not json');
    const damaged = await api(server, '/tend/resume', { method: 'POST' });
    expect(damaged.status).toBe(409);
    const body = (await damaged.json()) as { error: string };
    expect(body).toEqual({ error: 'tend.json cannot be read; fix or remove it, then try again', field: '/body' });
    expect(await (await api(server, '/tend')).json()).toMatchObject({ state: 'paused', problem: 'tend.json cannot be read; fix or remove it' });
  }, 30_000);
});

describe('[tend] daily_cap', () => {
  it('counted from the goal records, open and closed, across a restart: the next tend over the cap is withheld (daily_cap)', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\ndaily_cap = 1\n' });
    const a = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail A', driver: 'exit3' });
    const first = await pass(garden);
    expect(first.tends.map((t) => t.key)).toEqual([`run_failure:${a.id}`]);
    // The tend runs and closes: it is in the closed ledger now, no longer open.
    const second = await pass(garden);
    expect(second.closed).toEqual([{ goal: first.tends[0]!.goal, reason: 'success' }]);
    // A new process (fresh scanner, no cache): the closed tend still counts.
    const b = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail B', driver: 'exit3' });
    const third = await pass(garden);
    expect(third.closed).toEqual([{ goal: b.id, reason: 'failure' }]);
    expect(third.tends).toEqual([]);
    expect(third.tendsWithheld).toEqual([{ key: `run_failure:${b.id}`, reason: 'daily_cap', detail: `[tend] daily_cap reached: 1/1 automatic tends today: no run_failure tend for run ${b.id}-r1 of ${b.id} (failure, nonzero_exit)` }]);
    expect(withheldEvents(garden)).toEqual([expect.objectContaining({ goal: b.id, run: `${b.id}-r1`, reason: 'daily_cap' })]);
    // Another process reads the same count: the CLI, and the status line's view.
    const status = JSON.parse((await runCli(['tend', 'status', '--json', '--garden', garden.paths.gardenRoot])).stdout) as Record<string, unknown>;
    expect(status).toMatchObject({ state: 'capped', daily_cap: 1, today: 1 });
    expect((await tendView(garden)).state).toBe('capped');
  });

  it('a tend of another day does not count; the day is [budget].timezone\'s', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\ndaily_cap = 1\n' });
    const yesterday = new Date(Date.now() - 86_400_000);
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail yesterday', driver: 'exit3' });
    const old = await pass(garden, yesterday);
    expect(old.tends).toHaveLength(1);
    expect(await automaticTendsToday(garden.paths, [await readGoal(garden.paths, old.tends[0]!.goal)], new Date(), 'UTC')).toBe(0);
    const b = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail today', driver: 'exit3', priority: 90 });
    const today = await pass(garden);
    expect(today.tends.map((t) => t.key)).toEqual([`run_failure:${b.id}`]);

    // The day of the zone, not of UTC: 11:00 UTC on 1 Jan is 2 Jan in Kiritimati (UTC+14), as 09:00 UTC on 2 Jan is.
    const tend = { id: '1-tend', type: 'tend', status: 'queued', priority: 70, body: 'x', submitted_at: '2026-01-01T11:00:00.000Z', tend: { trigger: 'run_failure', key: 'run_failure:9-x', origin: {} } } as never;
    expect(await automaticTendsToday(garden.paths, [tend], new Date('2026-01-02T09:00:00.000Z'), 'Pacific/Kiritimati')).toBe(1);
    expect(await automaticTendsToday(garden.paths, [tend], new Date('2026-01-02T09:00:00.000Z'), 'UTC')).toBe(0);
    // A tend of no automatic trigger (genesis's survey, a plain tend) is not counted.
    const plain = { ...(tend as object), id: '2-tend' } as Record<string, unknown>;
    delete plain.tend;
    expect(await automaticTendsToday(garden.paths, [plain as never], new Date('2026-01-01T12:00:00.000Z'), 'UTC')).toBe(0);
  });

  it('daily_cap = 0 holds back every automatic tend', async () => {
    garden = await makeTestGarden({ extraToml: '[tend]\ndaily_cap = 0\n' });
    await createGoal(garden.paths, { type: 'build', body: 'unowned' });
    const summary = await pass(garden);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld.map((w) => w.reason)).toEqual(['daily_cap']);
    const control = await readTendControl(garden, [], new Date());
    expect(control).toEqual({ triggers: { run_failure: true, queued_attention_needed: true }, priority: 70, dailyCap: 0, today: 0 });
  });
});

describe('decideTends with the operator\'s control (pure)', () => {
  const failed = (id: string) => ({ goal: { id, type: 'build' as const }, run: { id: `${id}-r1`, status: 'failure' as const, failure_reason: 'agent_error' as never } });
  const control = (over: Partial<TendControl> = {}): TendControl => ({ triggers: { run_failure: true, queued_attention_needed: true }, priority: 70, today: 0, ...over });

  it('checks trigger, duplicate, gardener, pause, cap, per-pass limit in that order; the cap counts the tends queued earlier in the pass', () => {
    const capped = decideTends({ closed: [failed('1-a'), failed('2-b'), failed('3-c')], stuck: [], open: [], attentionCovered: [], control: control({ dailyCap: 3, today: 1, priority: 55 }) });
    expect(capped.queue.map((q) => [q.key, q.priority])).toEqual([
      ['run_failure:1-a', 55],
      ['run_failure:2-b', 55],
    ]);
    expect(capped.withheld).toEqual([{ key: 'run_failure:3-c', reason: 'daily_cap', detail: '[tend] daily_cap reached: 3/3 automatic tends today: no run_failure tend for run 3-c-r1 of 3-c (failure, agent_error)' }]);
    expect(capped.traces).toEqual([{ trigger: 'run_failure', key: 'run_failure:3-c', reason: 'daily_cap', detail: capped.withheld[0]!.detail, origin: { goal: '3-c', run: '3-c-r1', status: 'failure', failure_reason: 'agent_error' } }]);
    // A duplicate or a missing gardener is said as before, with no trace; a trigger that is off wins over both.
    const open = [{ id: '9-t', type: 'tend' as const, status: 'queued' as const, tend: { trigger: 'run_failure', key: 'run_failure:1-a', origin: {} } }];
    expect(decideTends({ closed: [failed('1-a')], stuck: [], open, attentionCovered: [], control: control({ paused: 'paused by operator at x' }) })).toMatchObject({ withheld: [{ key: 'run_failure:1-a', reason: 'duplicate_open_tend' }], traces: [] });
    expect(decideTends({ closed: [failed('1-a')], stuck: [], open, attentionCovered: [], control: control({ triggers: { run_failure: false, queued_attention_needed: true } }) }).withheld.map((w) => w.reason)).toEqual(['trigger_off']);
    expect(decideTends({ closed: [failed('1-a')], stuck: [], open: [], attentionCovered: [], gardenerProblem: 'plant gardener is archived', control: control({ paused: 'p' }) }).withheld.map((w) => w.reason)).toEqual(['gardener_unavailable']);
    // Without control: as the seeds have it.
    expect(decideTends({ closed: [failed('1-a')], stuck: [], open: [], attentionCovered: [] }).queue.map((q) => q.priority)).toEqual([undefined]);
  });

  it('a held-back attention tend is traced once per set: the noted set grows with new stuck goals and shrinks with those gone', () => {
    const stuck = [{ goal: '4-d', reason: 'no assigned_to' }];
    const open = [{ id: '4-d', type: 'build' as const, status: 'queued' as const }];
    const first = decideTends({ closed: [], stuck, open, attentionCovered: [], control: control({ paused: 'p' }) });
    expect(first.traces!.map((t) => t.key)).toEqual(['queued_attention_needed']);
    expect(first.attentionNoted).toEqual(['4-d']);
    expect(first.attentionCovered).toEqual([]);
    const again = decideTends({ closed: [], stuck, open, attentionCovered: [], attentionNoted: first.attentionNoted!, control: control({ paused: 'p' }) });
    expect(again.traces).toEqual([]);
    expect(again.attentionNoted).toEqual(['4-d']);
    // Resumed: queued, covered.
    const resumed = decideTends({ closed: [], stuck, open, attentionCovered: [], attentionNoted: ['4-d'], control: control() });
    expect(resumed.queue.map((q) => q.key)).toEqual(['queued_attention_needed']);
    expect(resumed.attentionCovered).toEqual(['4-d']);
    // Dispatched since: it drops out of the noted set.
    expect(decideTends({ closed: [], stuck: [], open: [{ id: '4-d', type: 'build', status: 'running' }], attentionCovered: [], attentionNoted: ['4-d'], control: control() }).attentionNoted).toEqual([]);
  });
});
