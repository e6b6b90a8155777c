/**
 * The remote-runner protocol over HTTP (docs/runners/level2.md, "The
 * protocol"; source/server/runner-routes.ts): identity headers, claim and
 * its races, heartbeat, log upload, finish and its refusals, lease expiry
 * through the server's reaper, comments and blocking questions, artifacts,
 * documents, cancel and stop of a leased run, and the OpenAPI description.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../source/contracts/index.js';
import type { Garden } from '../../source/garden/index.js';
import { RUNNER_BODY_LIMITS, type RunningServer } from '../../source/server/index.js';
import { operatorActions } from '../../source/session/index.js';
import { commissionPlant, createGoal, endedLeaseFile, leaseFile, readGoal, readLease, readRun, runEventsFile } from '../../source/store/index.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';
import { api, serve, until } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(options: { ttl?: number } = {}) {
  const g = await makeTestGarden(options.ttl ? { extraToml: `[runners]\nlease_ttl_seconds = ${options.ttl}` } : {});
  cleanups.push(() => g.cleanup());
  return g;
}

const RUNNER = { 'pak2-runner': 'r1', 'pak2-runner-host': 'box-1' };

/** One call through fastify's inject, with the token and (unless `runner: null`) the runner headers. */
async function call(server: RunningServer, method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, runner: Record<string, string> | null = RUNNER) {
  const response = await server.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${server.token}`, ...(runner ?? {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: response.statusCode, body: (response.body ? JSON.parse(response.body) : undefined) as Record<string, any> };
}

async function goal(g: Garden, body = 'Fix the flaky test', type: 'fix' | 'spike' = 'fix', priority?: number) {
  return createGoal(g.paths, { type, plant: 'gardener', body, ...(priority !== undefined ? { priority } : {}) });
}

/** A server and one claimed goal. */
async function claimed(options: { ttl?: number } = {}) {
  const g = await garden(options);
  const server = await serve(g, cleanups, { webhooks: false });
  const submitted = await goal(g);
  const claim = await call(server, 'POST', '/tasks/claim', {});
  expect(claim.status).toBe(200);
  const lease = claim.body.lease as LeaseRecord;
  return { g, server, goalId: submitted.id, runId: lease.run, lease };
}

const SUCCESS = {
  status: 'success',
  failure_reason: null,
  exit_code: 0,
  cost: { source: 'provider', usd: 0.0123, input_tokens: 1200, output_tokens: 80 },
  session_id: 'sess-1',
  final_text: 'done',
  error: null,
  num_turns: 3,
  reflection: 'Learned: the flake was a race.',
  stream_bytes: { events: 0, stderr: 0 },
  acceptance: [{ item: 'agent process exited 0', verified: true, evidence: 'exit code 0' }],
  lingered: false,
  leftovers: [],
  watchdog: null,
  permission_denials: [],
  operator_stop: null,
};

const types = (g: Garden) => readEventLog(g).map((e) => e.type);

describe('identity', () => {
  it('whoami answers the runner, the garden, the TTL, the heartbeat and the clock; a missing header is 400 naming it', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const who = await call(server, 'GET', '/whoami');
    expect(who.status).toBe(200);
    expect(who.body).toMatchObject({ runner: { name: 'r1', host: 'box-1' }, garden: 'garden', lease_ttl_seconds: 600, heartbeat_seconds: 200 });
    expect(Math.abs(Date.parse(who.body.server_time) - Date.now())).toBeLessThan(5000);

    const noName = await call(server, 'GET', '/whoami', undefined, { 'pak2-runner-host': 'box-1' });
    expect(noName).toMatchObject({ status: 400, body: { field: 'Pak2-Runner' } });
    expect(noName.body.error).toMatch(/^Pak2-Runner: /);
    expect(await call(server, 'GET', '/whoami', undefined, { 'pak2-runner': 'r1' })).toMatchObject({ status: 400, body: { field: 'Pak2-Runner-Host' } });
    expect(await call(server, 'GET', '/whoami', undefined, { 'pak2-runner': 'bad name!', 'pak2-runner-host': 'h' })).toMatchObject({ status: 400, body: { field: 'Pak2-Runner' } });
    // Every runner call needs it, and refuses before anything is written.
    await goal(g);
    const before = fs.readFileSync(g.paths.coordinatorLog, 'utf8');
    expect(await call(server, 'POST', '/tasks/claim', {}, null)).toMatchObject({ status: 400, body: { field: 'Pak2-Runner-Host' } });
    expect(await call(server, 'GET', '/leases', undefined, { 'pak2-runner-host': 'box-1' })).toMatchObject({ status: 400, body: { field: 'Pak2-Runner' } });
    expect(fs.readFileSync(g.paths.coordinatorLog, 'utf8')).toBe(before);
  });
});

describe('tasks_claim', () => {
  it('claims the queued goal under a lease: 200 with lease, goal, run and context; the next claim is 204', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    fs.mkdirSync(path.join(g.paths.plantsDir, 'gardener', 'memory'), { recursive: true });
    fs.writeFileSync(path.join(g.paths.plantsDir, 'gardener', 'memory', 'MEMORY.md'), '# Memory\n');
    const submitted = await goal(g);
    const claim = await call(server, 'POST', '/tasks/claim', { plants: ['gardener'] });
    expect(claim.status).toBe(200);
    const { lease, run, context } = claim.body;
    expect(lease).toMatchObject({ run: `${submitted.id}-r1`, goal: submitted.id, plant: 'gardener', state: 'active', ttl_seconds: 600, runner: { name: 'r1', host: 'box-1' } });
    expect(claim.body.goal).toMatchObject({ id: submitted.id, status: 'running' });
    expect(run).toMatchObject({ id: `${submitted.id}-r1`, status: 'running', runner: { name: 'r1', host: 'box-1', lease: lease.id } });
    expect(context.prompt).toContain('Fix the flaky test');
    expect(context.documents).toEqual([{ path: 'memory/MEMORY.md', content: '# Memory\n' }]);
    expect(context.seed).toMatchObject({ name: 'gardener' });
    expect(context.settings).toEqual({ run_timeout_seconds: 600, watchdog_seconds: 300, tool_silence_seconds: 1800, result_grace_seconds: 10, result_grace_cap_seconds: 1800 });
    expect((await readGoal(g.paths, submitted.id)).status).toBe('running');
    expect((await readRun(g.paths, run.id)).runner).toEqual({ name: 'r1', host: 'box-1', lease: lease.id });
    expect(types(g).slice(-4)).toEqual(['GoalTransitioned', 'RunStarted', 'GoalTransitioned', 'LeaseClaimed']);

    const again = await call(server, 'POST', '/tasks/claim', {});
    expect(again.status).toBe(204);
    expect(again.body).toBeUndefined();

    // The catch-up reads: open leases (all, or one runner's), tasks_get.
    expect((await call(server, 'GET', '/leases?runner=r1')).body.leases.map((l: LeaseRecord) => l.id)).toEqual([lease.id]);
    expect((await call(server, 'GET', '/leases?runner=r2')).body.leases).toEqual([]);
    expect((await call(server, 'GET', '/leases')).body.leases).toHaveLength(1);
    const task = await call(server, 'GET', `/tasks/${submitted.id}`, undefined, null);
    expect(task.status).toBe(200);
    expect(task.body).toMatchObject({ goal: { id: submitted.id }, run: { id: run.id }, lease: { id: lease.id }, comments: [] });
    expect((await call(server, 'GET', '/tasks/99-nope')).status).toBe(404);
    expect((await call(server, 'GET', '/leases?bogus=1')).status).toBe(400);
  });

  it('filters by plant and driver; a body-less claim is a claim without filters', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    await goal(g);
    expect((await call(server, 'POST', '/tasks/claim', { plants: ['other'] })).status).toBe(204);
    expect((await call(server, 'POST', '/tasks/claim', { drivers: ['exit3'] })).status).toBe(204);
    expect((await call(server, 'POST', '/tasks/claim', { unknown: 1 })).status).toBe(400);
    const bare = await server.app.inject({ method: 'POST', url: '/api/v1/tasks/claim', headers: { authorization: `Bearer ${server.token}`, ...RUNNER } });
    expect(bare.statusCode).toBe(200);
  });

  it('two claims at once for one goal (inject): exactly one wins, the other is 204', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const submitted = await goal(g);
    const answers = await Promise.all([call(server, 'POST', '/tasks/claim', {}), call(server, 'POST', '/tasks/claim', {}, { 'pak2-runner': 'r2', 'pak2-runner-host': 'box-2' })]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 204]);
    expect(fs.readdirSync(path.join(g.paths.runtimeRoot, 'runs')).filter((d) => d.startsWith(submitted.id))).toEqual([`${submitted.id}-r1`]);
    expect(types(g).filter((t) => t === 'LeaseClaimed')).toHaveLength(1);
  });

  it('two claims at once for one goal (two real HTTP clients): exactly one wins', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    await goal(g);
    const claimOver = (name: string) => api(server, '/tasks/claim', { method: 'POST', body: '{}', headers: { 'pak2-runner': name, 'pak2-runner-host': `${name}-host` } });
    const [a, b] = await Promise.all([claimOver('ra'), claimOver('rb')]);
    expect([a.status, b.status].sort()).toEqual([200, 204]);
    const winner = a.status === 200 ? ((await a.json()) as { lease: LeaseRecord }) : ((await b.json()) as { lease: LeaseRecord });
    expect((await readRun(g.paths, winner.lease.run)).runner?.name).toBe(winner.lease.runner.name);
  });
});

describe('runs_heartbeat', () => {
  it('renews expires_at; progress out of range and a status with a line break are 400', async () => {
    const { g, server, runId, lease } = await claimed();
    await new Promise((r) => setTimeout(r, 15));
    const beat = await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id, progress: 40, status: 'editing files' });
    expect(beat.status).toBe(200);
    expect(beat.body).toMatchObject({ stop: null, answers: [], lease: { heartbeats: 1, progress: 40, status_line: 'editing files' } });
    expect(Date.parse(beat.body.lease.expires_at)).toBeGreaterThan(Date.parse(lease.expires_at));

    expect(await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id, progress: 101 })).toMatchObject({ status: 400, body: { field: '/progress' } });
    expect(await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id, status: 'two\nlines' })).toMatchObject({ status: 400, body: { field: '/status' } });
    expect(await call(server, 'POST', `/runs/${runId}/heartbeat`, { progress: 1 })).toMatchObject({ status: 400, body: { field: '/lease' } });
    // Another runner, or another lease id: 409, recorded.
    expect(await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id }, { 'pak2-runner': 'r9', 'pak2-runner-host': 'x' })).toMatchObject({ status: 409, body: { field: 'Pak2-Runner' } });
    expect((await call(server, 'POST', '/runs/99-nope-r1/heartbeat', { lease: lease.id })).status).toBe(404);
    expect((await readLease(g.paths, runId))?.heartbeats).toBe(1);
  });

  it('a lease claimed with Pak2-Runner-Instance is refused to another instance of the same name (409, LeaseRefused); a lease without one takes any', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    await goal(g);
    const mine = { ...RUNNER, 'pak2-runner-instance': '01KINSTANCEAAAAAAAAAAAAAAA' };
    const other = { ...RUNNER, 'pak2-runner-instance': '01KINSTANCEBBBBBBBBBBBBBBB' };
    expect(await call(server, 'GET', '/whoami', undefined, { ...RUNNER, 'pak2-runner-instance': 'not one/word' })).toMatchObject({ status: 400, body: { field: 'Pak2-Runner-Instance' } });
    const claim = await call(server, 'POST', '/tasks/claim', {}, mine);
    expect(claim.status).toBe(200);
    const lease = claim.body.lease as LeaseRecord;
    expect(lease.runner).toEqual({ name: 'r1', host: 'box-1', instance: mine['pak2-runner-instance'] });
    const refused = await call(server, 'POST', `/runs/${lease.run}/heartbeat`, { lease: lease.id }, other);
    expect(refused).toMatchObject({ status: 409, body: { field: 'Pak2-Runner-Instance' } });
    expect(refused.body.error).toMatch(/held by another process of runner r1/);
    expect((await call(server, 'POST', `/runs/${lease.run}/finish`, { ...SUCCESS, lease: lease.id }, other)).status).toBe(409);
    expect((await call(server, 'POST', `/goals/${lease.goal}/comments`, { body: 'x', lease: lease.id }, other))).toMatchObject({ status: 409, body: { field: 'Pak2-Runner-Instance' } });
    expect(types(g).filter((t) => t === 'LeaseRefused').length).toBeGreaterThanOrEqual(3);
    // Leaving the header out skips nothing: a call without it is refused too (issue 25).
    const bare = await call(server, 'POST', `/runs/${lease.run}/heartbeat`, { lease: lease.id });
    expect(bare).toMatchObject({ status: 409, body: { field: 'Pak2-Runner-Instance' } });
    expect(bare.body.error).toMatch(/the call names no instance/);
    // Its own instance is accepted; a heartbeat keeps the instance, and the host as claimed whatever host the call names.
    const beat = await call(server, 'POST', `/runs/${lease.run}/heartbeat`, { lease: lease.id }, mine);
    expect(beat).toMatchObject({ status: 200, body: { lease: { runner: { instance: mine['pak2-runner-instance'] } } } });
    expect((await call(server, 'POST', `/runs/${lease.run}/heartbeat`, { lease: lease.id }, { ...mine, 'pak2-runner-host': 'elsewhere' })).status).toBe(200);
    expect((await readLease(g.paths, lease.run))?.runner.host).toBe('box-1');
    expect((await readLease(g.paths, lease.run))?.runner.instance).toBe(mine['pak2-runner-instance']);

    // A lease claimed without an instance (an older runner) accepts any instance of its name.
    await goal(g, 'Another one');
    const old = await call(server, 'POST', '/tasks/claim', {});
    expect(old.status).toBe(200);
    expect(old.body.lease.runner.instance).toBeUndefined();
    expect((await call(server, 'POST', `/runs/${old.body.lease.run}/heartbeat`, { lease: old.body.lease.id }, other)).status).toBe(200);
  });
});

describe('log upload', () => {
  it('appends at the garden size; another offset is 409 {size}; a base64 chunk may split a UTF-8 character', async () => {
    const { g, server, runId, lease } = await claimed();
    const text = Buffer.from('{"type":"text","text":"héllo ✓ wörld"}\n', 'utf8');
    const cut = text.indexOf(Buffer.from('✓')) + 1; // inside the three bytes of ✓
    const first = await call(server, 'POST', `/runs/${runId}/log`, { lease: lease.id, stream: 'events', offset: 0, data: text.subarray(0, cut).toString('base64'), encoding: 'base64' });
    expect(first).toMatchObject({ status: 200, body: { size: cut } });
    const wrong = await call(server, 'POST', `/runs/${runId}/log`, { lease: lease.id, stream: 'events', offset: 0, data: 'x' });
    expect(wrong).toMatchObject({ status: 409, body: { field: '/offset', size: cut } });
    const second = await call(server, 'POST', `/runs/${runId}/log`, { lease: lease.id, stream: 'events', offset: cut, data: text.subarray(cut).toString('base64'), encoding: 'base64' });
    expect(second).toMatchObject({ status: 200, body: { size: text.length } });
    expect(fs.readFileSync(runEventsFile(g.paths, runId)).equals(text)).toBe(true);
    // The live tail reads it.
    expect((await call(server, 'GET', `/runs/${runId}/events`)).body.lines).toEqual([{ type: 'text', text: 'héllo ✓ wörld' }]);
    expect(await call(server, 'POST', `/runs/${runId}/log`, { lease: lease.id, stream: 'stdout', offset: 0, data: 'x' })).toMatchObject({ status: 400, body: { field: '/stream' } });
  });

  it('takes 1 MB of decoded data sent base64 (beyond fastify’s default body limit); more is 400', async () => {
    const { g, server, runId, lease } = await claimed();
    const mb = Buffer.alloc(1024 * 1024, 0xe2);
    const body = { lease: lease.id, stream: 'stderr', offset: 0, data: mb.toString('base64'), encoding: 'base64' };
    expect(JSON.stringify(body).length).toBeGreaterThan(1024 * 1024);
    expect(JSON.stringify(body).length).toBeLessThan(RUNNER_BODY_LIMITS.log);
    expect(await call(server, 'POST', `/runs/${runId}/log`, body)).toMatchObject({ status: 200, body: { size: mb.length } });
    expect(fs.statSync(path.join(g.paths.runtimeRoot, 'runs', runId, 'stderr.log')).size).toBe(mb.length);
    const over = await call(server, 'POST', `/runs/${runId}/log`, { ...body, offset: mb.length, data: Buffer.alloc(1024 * 1024 + 1).toString('base64') });
    expect(over).toMatchObject({ status: 400, body: { field: '/data' } });
    // Beyond the route's body limit: 413 before the body is parsed.
    const huge = await call(server, 'POST', `/runs/${runId}/log`, { ...body, offset: mb.length, data: 'x'.repeat(RUNNER_BODY_LIMITS.log) });
    expect(huge).toMatchObject({ status: 413, body: { field: 'body' } });
    expect(fs.statSync(path.join(g.paths.runtimeRoot, 'runs', runId, 'stderr.log')).size).toBe(mb.length);
  });
});

describe('runs_finish', () => {
  it('refuses contradictions and unobserved outcomes, changing nothing', async () => {
    const { g, server, goalId, runId, lease } = await claimed();
    const events = fs.readFileSync(g.paths.coordinatorLog, 'utf8');
    const finish = (body: Record<string, unknown>) => call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, ...body });
    expect(await finish({ exit_code: 1 })).toMatchObject({ status: 422, body: { field: '/exit_code' } });
    expect(await finish({ status: 'failure', failure_reason: null, reflection: null })).toMatchObject({ status: 422, body: { field: '/failure_reason' } });
    expect(await finish({ status: 'abandoned', failure_reason: 'lease_expired' })).toMatchObject({ status: 400, body: { field: '/status' } });
    expect(await finish({ status: 'failure', failure_reason: 'lease_expired' })).toMatchObject({ status: 400, body: { field: '/failure_reason' } });
    expect(await finish({ reflection: null })).toMatchObject({ status: 422, body: { field: '/reflection' } });
    const ahead = await finish({ stream_bytes: { events: 10, stderr: 0 } });
    expect(ahead).toMatchObject({ status: 409, body: { field: '/stream_bytes', size: { events: 0, stderr: 0 } } });
    expect(await finish({ extra: true })).toMatchObject({ status: 400, body: { field: '/extra' } });
    // Nothing changed: the run is running, the lease active, the goal running, no event.
    expect((await readRun(g.paths, runId)).status).toBe('running');
    expect((await readLease(g.paths, runId))?.state).toBe('active');
    expect(fs.existsSync(leaseFile(g.paths, runId))).toBe(true);
    expect((await readGoal(g.paths, goalId)).status).toBe('running');
    expect(fs.readFileSync(g.paths.coordinatorLog, 'utf8')).toBe(events);
  });

  it('success closes the run by the runner with its facts, ends the lease finished and closes the goal', async () => {
    const { g, server, goalId, runId, lease } = await claimed();
    const line = '{"type":"result"}\n';
    await call(server, 'POST', `/runs/${runId}/log`, { lease: lease.id, stream: 'events', offset: 0, data: line });
    const done = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, stream_bytes: { events: line.length, stderr: 0 } });
    expect(done.status).toBe(200);
    expect(done.body.run).toMatchObject({ id: runId, status: 'success', exit_code: 0, session_id: 'sess-1', num_turns: 3, cost: SUCCESS.cost, reflection: SUCCESS.reflection });
    expect(done.body.goal).toMatchObject({ id: goalId, status: 'closed', closed_reason: 'success' });
    const run = await readRun(g.paths, runId);
    expect(run).toMatchObject({ status: 'success', outputs: { final_text: 'done' }, acceptance: SUCCESS.acceptance });
    expect(fs.existsSync(leaseFile(g.paths, runId))).toBe(false);
    expect(JSON.parse(fs.readFileSync(endedLeaseFile(g.paths, runId), 'utf8'))).toMatchObject({ id: lease.id, state: 'finished' });
    const closed = readEventLog(g).find((e) => e.type === 'RunClosed');
    expect(closed).toMatchObject({ run: runId, status: 'success', detail: 'closed by runner' });
    expect(types(g)).toContain('GoalClosed');
    // A second finish names a finished lease: 409, LeaseRefused.
    expect(await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id })).toMatchObject({ status: 409, body: { field: '/lease', state: 'finished' } });
    expect(types(g).at(-1)).toBe('LeaseRefused');
  });
});

describe('runs_finish: how the agent\'s work ended', () => {
  it('a failure background_unfinished carries its background tasks, how the agent was ended and how its turn stopped into the garden\'s record', async () => {
    const { g, server, runId, lease } = await claimed();
    const background_tasks = [{ id: 'b1', type: 'local_bash', description: 'npm test', status: 'stopped', unfinished: true }];
    const done = await call(server, 'POST', `/runs/${runId}/finish`, {
      ...SUCCESS,
      lease: lease.id,
      status: 'failure',
      failure_reason: 'background_unfinished',
      reflection: null,
      lingered: true,
      linger: { ended_by: 'cap', open_work: ['background task local_bash "npm test"'] },
      background_tasks,
      stop_reason: 'end_turn',
      terminal_reason: 'completed',
    });
    expect(done.status).toBe(200);
    expect(await readRun(g.paths, runId)).toMatchObject({
      status: 'failure',
      failure_reason: 'background_unfinished',
      lingered: true,
      linger: { ended_by: 'cap', open_work: ['background task local_bash "npm test"'] },
      background_tasks,
      stop_reason: 'end_turn',
      terminal_reason: 'completed',
    });
  });
});

describe('lease expiry', () => {
  it('the server reaps a lease past its TTL: the run is abandoned / lease_expired, the goal requeued; late calls are 409; the next claim opens r2', async () => {
    const { g, server, goalId, runId, lease } = await claimed({ ttl: 3 });
    expect(lease.ttl_seconds).toBe(3);
    expect((await call(server, 'GET', '/whoami')).body).toMatchObject({ lease_ttl_seconds: 3, heartbeat_seconds: 1 });
    await until(async () => (await readRun(g.paths, runId)).status !== 'running', 10_000, 'the lease to expire');
    const run = await readRun(g.paths, runId);
    expect(run).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    await until(async () => (await readGoal(g.paths, goalId)).status === 'queued', 5000, 'the goal to be requeued');
    expect(readEventLog(g).find((e) => e.type === 'LeaseExpired')).toMatchObject({ run: runId, goal: goalId });
    expect(readEventLog(g).find((e) => e.type === 'RunClosed')).toMatchObject({ status: 'abandoned', reason: 'lease_expired', detail: 'closed by lease' });
    expect(JSON.parse(fs.readFileSync(endedLeaseFile(g.paths, runId), 'utf8'))).toMatchObject({ state: 'expired' });

    const meta = fs.readFileSync(path.join(g.paths.runtimeRoot, 'runs', runId, 'meta.json'), 'utf8');
    const late = await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id, progress: 90 });
    expect(late).toMatchObject({ status: 409, body: { field: '/lease', state: 'expired' } });
    expect(readEventLog(g).at(-1)).toMatchObject({ type: 'LeaseRefused', run: runId });
    const lateFinish = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id });
    expect(lateFinish).toMatchObject({ status: 409, body: { field: '/lease', state: 'expired' } });
    expect(readEventLog(g).filter((e) => e.type === 'LeaseRefused')).toHaveLength(2);
    expect(fs.readFileSync(path.join(g.paths.runtimeRoot, 'runs', runId, 'meta.json'), 'utf8')).toBe(meta);
    expect((await readGoal(g.paths, goalId)).status).toBe('queued');

    const next = await call(server, 'POST', '/tasks/claim', {}, { 'pak2-runner': 'r2', 'pak2-runner-host': 'box-2' });
    expect(next.status).toBe(200);
    expect(next.body.run.id).toBe(`${goalId}-r2`);
  });

  it("a failing lease check is said once through onNotice and never stops the server", async () => {
    const g = await garden();
    const notices: string[] = [];
    fs.mkdirSync(g.paths.runtimeRoot, { recursive: true });
    fs.writeFileSync(path.join(g.paths.runtimeRoot, 'leases'), 'not a directory');
    const server = await serve(g, cleanups, { webhooks: false, leaseCheckMs: 20, onNotice: (line) => notices.push(line) });
    await until(() => notices.length > 0, 5000, 'a notice');
    await new Promise((r) => setTimeout(r, 200));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^pak2 serve: checking leases failed/);
    expect((await call(server, 'GET', '/whoami')).status).toBe(200);
    fs.rmSync(path.join(g.paths.runtimeRoot, 'leases'));
    await until(() => notices.length > 1, 5000, 'the recovery notice');
    expect(notices[1]).toBe('pak2 serve: checking leases works again');
  });
});

describe('comments', () => {
  it('a blocking comment through a lease blocks the goal; the answer returns it to running while its run lives', async () => {
    const { g, server, goalId, runId, lease } = await claimed();
    const asked = await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'Which branch?', blocking: true, lease: lease.id });
    expect(asked.status).toBe(201);
    expect(asked.body.comment).toMatchObject({ author: `agent:${runId}`, run: runId, blocking: true, goal: goalId });
    expect(asked.body.goal).toMatchObject({ status: 'blocked', blocked_on: { comment: asked.body.comment.id, from: 'running' } });
    expect((await readGoal(g.paths, goalId)).status).toBe('blocked');
    const listed = await call(server, 'GET', `/goals/${goalId}/comments`, undefined, null);
    expect(listed.body.open).toEqual([asked.body.comment.id]);
    // A blocked goal's run keeps heartbeating.
    expect((await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id })).status).toBe(200);

    const answered = await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'main', answers: asked.body.comment.id }, null);
    expect(answered.status).toBe(201);
    expect(answered.body.comment).toMatchObject({ author: 'operator', answers: asked.body.comment.id });
    expect(answered.body.goal.status).toBe('running');
    expect((await call(server, 'GET', `/goals/${goalId}/comments`)).body.open).toEqual([]);
    const beat = await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id });
    expect(beat.body.answers.map((c: { body: string }) => c.body)).toEqual(['main']);
  });

  it('a goal whose run finished while blocked stays blocked; the answer queues it', async () => {
    const { g, server, goalId, runId, lease } = await claimed();
    const asked = await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'Which branch?', blocking: true, lease: lease.id });
    const finished = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, status: 'failure', failure_reason: 'agent_error', exit_code: 1, reflection: null });
    expect(finished.status).toBe(200);
    expect(finished.body.goal.status).toBe('blocked');
    expect((await readGoal(g.paths, goalId)).status).toBe('blocked');
    const answered = await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'main', answers: asked.body.comment.id, author: 'ada' }, null);
    expect(answered.body).toMatchObject({ comment: { author: 'ada' }, goal: { status: 'queued' } });
    // The finished lease cannot post any more.
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'late', lease: lease.id })).toMatchObject({ status: 409, body: { field: '/lease', state: 'finished' } });
  });

  it('refusals name their field: unknown goal, empty body, no open question, a foreign lease, an agent author without a lease', async () => {
    const { g, server, goalId, lease } = await claimed();
    const other = await goal(g, 'Another goal', 'spike');
    expect(await call(server, 'POST', '/goals/99-nope/comments', { body: 'x' }, null)).toMatchObject({ status: 404, body: { field: 'id' } });
    expect((await call(server, 'GET', '/goals/99-nope/comments', undefined, null)).status).toBe(404);
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: '   ' }, null)).toMatchObject({ status: 400, body: { field: '/body' } });
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'an answer', answers: lease.id }, null)).toMatchObject({ status: 409 });
    expect(await call(server, 'POST', `/goals/${other.id}/comments`, { body: 'x', lease: lease.id })).toMatchObject({ status: 409, body: { field: '/lease' } });
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'x', author: 'agent:1-x-r1' }, null)).toMatchObject({ status: 400, body: { field: '/author' } });
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'x', lease: lease.id }, { 'pak2-runner': 'r9', 'pak2-runner-host': 'x' })).toMatchObject({ status: 409, body: { field: 'Pak2-Runner' } });
    const question = await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'Which branch?', blocking: true }, null);
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'main', answers: lease.id }, null)).toMatchObject({ status: 400, body: { field: '/answers' } });
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'main', answers: question.body.comment.id, blocking: true }, null)).toMatchObject({ status: 400, body: { field: '/blocking' } });
    expect(await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'x', lease: lease.id, author: 'ada' })).toMatchObject({ status: 400, body: { field: '/author' } });
    expect((await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'main', answers: question.body.comment.id }, null)).body.goal.status).toBe('running');
    const plain = await call(server, 'POST', `/goals/${goalId}/comments`, { body: 'FYI: the CI is slow' }, null);
    expect(plain).toMatchObject({ status: 201, body: { comment: { author: 'operator', blocking: false }, goal: { status: 'running' } } });
  });
});

describe('artifacts', () => {
  it('attaches a diff (content kept) and a link; a bad name is 400, a duplicate 409; the list reads them back', async () => {
    const { g, server, runId, lease } = await claimed();
    const diff = 'diff --git a/x b/x\n+ü\n';
    const attached = await call(server, 'POST', `/runs/${runId}/artifacts`, { lease: lease.id, name: 'work.diff', kind: 'diff', content: Buffer.from(diff).toString('base64'), encoding: 'base64' });
    expect(attached.status).toBe(201);
    expect(attached.body.artifact).toMatchObject({ name: 'work.diff', kind: 'diff', run: runId, bytes: Buffer.byteLength(diff), by: 'runner:r1' });
    expect(fs.readFileSync(path.join(g.paths.runtimeRoot, 'runs', runId, 'artifacts', 'work.diff'), 'utf8')).toBe(diff);
    const link = await call(server, 'POST', `/runs/${runId}/artifacts`, { lease: lease.id, name: 'pr', kind: 'link', url: 'https://example.test/pr/1' });
    expect(link).toMatchObject({ status: 201, body: { artifact: { kind: 'link', url: 'https://example.test/pr/1' } } });
    expect(await call(server, 'POST', `/runs/${runId}/artifacts`, { lease: lease.id, name: '../x', kind: 'file', content: 'x' })).toMatchObject({ status: 400, body: { field: '/name' } });
    expect(await call(server, 'POST', `/runs/${runId}/artifacts`, { lease: lease.id, name: 'work.diff', kind: 'diff', content: 'again' })).toMatchObject({ status: 409, body: { field: '/name' } });
    expect(await call(server, 'POST', `/runs/${runId}/artifacts`, { lease: lease.id, name: 'l2', kind: 'link', url: 'ftp://x' })).toMatchObject({ status: 400, body: { field: '/url' } });
    const list = await call(server, 'GET', `/runs/${runId}/artifacts`, undefined, null);
    expect(list.body.artifacts.map((a: { name: string }) => a.name)).toEqual(['work.diff', 'pr']);
    expect((await call(server, 'GET', '/runs/99-nope-r1/artifacts')).status).toBe(404);
  });
});

describe('documents_upsert', () => {
  it('writes a plant document with or without a lease; a path outside is 400, an unknown plant 404', async () => {
    const { g, server, runId, lease } = await claimed();
    const written = await call(server, 'PUT', '/plants/gardener/documents', { lease: lease.id, run: runId, path: 'memory/MEMORY.md', content: '# Memory\n\nLearned a thing.\n' });
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ path: 'memory/MEMORY.md', bytes: 27 });
    expect(written.body.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.readFileSync(path.join(g.paths.plantsDir, 'gardener', 'memory', 'MEMORY.md'), 'utf8')).toBe('# Memory\n\nLearned a thing.\n');
    expect(readEventLog(g).at(-1)).toMatchObject({ type: 'DocumentUpserted', plant: 'gardener', run: runId });
    expect(await call(server, 'PUT', '/plants/gardener/documents', { path: '../x.md', content: 'x' })).toMatchObject({ status: 400, body: { field: '/path' } });
    expect(await call(server, 'PUT', '/plants/nobody/documents', { path: 'memory/MEMORY.md', content: 'x' })).toMatchObject({ status: 404, body: { field: 'name' } });
    // With a lease the runner names itself; without one anyone with the token may write.
    expect(await call(server, 'PUT', '/plants/gardener/documents', { lease: lease.id, run: runId, path: 'skills/a.md', content: 'x' }, null)).toMatchObject({ status: 400, body: { field: 'Pak2-Runner' } });
    expect((await call(server, 'PUT', '/plants/gardener/documents', { path: 'knowledge/b.md', content: 'b' }, null)).status).toBe(200);
    // A lease writes only its own plant's documents: another plant's memory goes into that plant's prompts.
    await commissionPlant(g.paths, 'other', 'gardener');
    const foreign = await call(server, 'PUT', '/plants/other/documents', { lease: lease.id, run: runId, path: 'memory/MEMORY.md', content: 'injected' });
    expect(foreign).toMatchObject({ status: 409, body: { field: 'name' } });
    expect(foreign.body.error).toContain(`lease ${lease.id} is for plant gardener`);
    expect(fs.existsSync(path.join(g.paths.plantsDir, 'other', 'memory', 'MEMORY.md')) && fs.readFileSync(path.join(g.paths.plantsDir, 'other', 'memory', 'MEMORY.md'), 'utf8')).not.toBe('injected');
  });
});

describe('documents_upsert stays in the plant', () => {
  it('a symbolic link inside the plant (a directory or a document) is never written through: 400, the target untouched', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const outside = fs.mkdtempSync(path.join(path.dirname(g.paths.gardenRoot), 'pak2-outside-'));
    cleanups.push(() => fs.rmSync(outside, { recursive: true, force: true }));
    const plant = path.join(g.paths.plantsDir, 'gardener');
    fs.mkdirSync(path.join(plant, 'knowledge'), { recursive: true });
    fs.symlinkSync(outside, path.join(plant, 'knowledge', 'elsewhere'));
    fs.writeFileSync(path.join(outside, 'victim.md'), 'theirs\n');
    fs.symlinkSync(path.join(outside, 'victim.md'), path.join(plant, 'knowledge', 'linked.md'));
    const throughDir = await call(server, 'PUT', '/plants/gardener/documents', { path: 'knowledge/elsewhere/new.md', content: 'escaped' });
    expect(throughDir).toMatchObject({ status: 400, body: { field: '/path', error: 'path "knowledge/elsewhere/new.md": knowledge/elsewhere/ in the plant is a symbolic link or not a directory; documents are written inside the plant only' } });
    const throughFile = await call(server, 'PUT', '/plants/gardener/documents', { path: 'knowledge/linked.md', content: 'escaped' });
    expect(throughFile).toMatchObject({ status: 400, body: { field: '/path' } });
    expect(fs.readdirSync(outside)).toEqual(['victim.md']);
    expect(fs.readFileSync(path.join(outside, 'victim.md'), 'utf8')).toBe('theirs\n');
    expect(JSON.stringify(throughDir.body)).not.toContain(outside);
  });

  it('100 concurrent uploads to one path: every one answered 200, the file is one writer’s whole, no temp file left', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const contents = Array.from({ length: 100 }, (_, i) => `# Memory ${i}\n\n${String(i).repeat(20_000)}\n`);
    const answers = await Promise.all(contents.map((content) => api(server, '/plants/gardener/documents', { method: 'PUT', body: JSON.stringify({ path: 'memory/MEMORY.md', content }) })));
    expect(answers.map((a) => a.status)).toEqual(contents.map(() => 200));
    const dir = path.join(g.paths.plantsDir, 'gardener', 'memory');
    expect(contents).toContain(fs.readFileSync(path.join(dir, 'MEMORY.md'), 'utf8'));
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

describe('cancel and stop of a leased run', () => {
  it('POST /goals/:id/cancel tells the runner at its next heartbeat; its finish closes the goal cancelled', async () => {
    const { g, server, goalId, runId, lease } = await claimed();
    const cancelled = await call(server, 'POST', `/goals/${goalId}/cancel`, undefined, null);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.stopped).toMatchObject({ run: runId, by: 'runner' });
    expect((await readRun(g.paths, runId)).status).toBe('running');
    const beat = await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id });
    expect(beat.body.stop).toEqual({ requeue: false });
    const done = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, status: 'killed', failure_reason: 'operator_stopped', exit_code: null, reflection: null, operator_stop: { requeue: false } });
    expect(done.status).toBe(200);
    expect(done.body.goal).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
  });

  it('a stop with requeue: the heartbeat says requeue, the finish puts the goal back in the queue', async () => {
    const { g, server, goalId, runId, lease } = await claimed();
    const stopped = await operatorActions(g).stopRun(runId, { requeue: true });
    expect(stopped.by).toBe('runner');
    const beat = await call(server, 'POST', `/runs/${runId}/heartbeat`, { lease: lease.id });
    expect(beat.body.stop).toEqual({ requeue: true });
    const done = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, status: 'killed', failure_reason: 'operator_stopped', exit_code: null, reflection: null, operator_stop: { requeue: true } });
    expect(done.body.goal.status).toBe('queued');
    expect((await readGoal(g.paths, goalId)).status).toBe('queued');
  });
});

describe('OpenAPI', () => {
  it('lists every runner operation, with the runner headers and the lease, comment and artifact components', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const doc = (await (await api(server, '/openapi.json')).json()) as { paths: Record<string, Record<string, { operationId: string; parameters: { name: string; in: string; required: boolean }[]; responses: Record<string, unknown> }>>; components: { schemas: Record<string, unknown> } };
    const ops = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
    for (const id of ['whoami', 'listLeases', 'claimTask', 'getTask', 'heartbeat', 'uploadLog', 'attachArtifact', 'listArtifacts', 'finishRun', 'listComments', 'postComment', 'upsertDocument', 'cancelGoal']) expect(ops).toContain(id);
    expect(doc.paths['/api/v1/tasks/claim']!.post!.parameters).toContainEqual(expect.objectContaining({ name: 'pak2-runner-host', in: 'header', required: true }));
    expect(doc.paths['/api/v1/tasks/claim']!.post!.parameters).toContainEqual(expect.objectContaining({ name: 'pak2-runner', in: 'header' }));
    expect(Object.keys(doc.paths['/api/v1/tasks/claim']!.post!.responses)).toEqual(expect.arrayContaining(['200', '204']));
    expect(doc.paths['/api/v1/runs/{id}/finish']!.post!.responses).toHaveProperty('422');
    const cancel = doc.paths['/api/v1/goals/{id}/cancel']!.post!.responses['200'] as { content: { 'application/json': { schema: { properties: { stopped: { properties: { by: { enum: string[] } } } } } } } };
    expect(cancel.content['application/json'].schema.properties.stopped.properties.by.enum).toContain('runner');
    expect(doc.components.schemas).toHaveProperty('Lease');
    expect(doc.components.schemas).toHaveProperty('Comment');
    expect(doc.components.schemas).toHaveProperty('Artifact');
  });
});

describe("runs_finish: the goal's acceptance criteria (seed 004: checkboxes that reflect what was actually verified)", () => {
  async function claimedWithCriteria() {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const submitted = await createGoal(g.paths, {
      type: 'fix',
      plant: 'gardener',
      body: 'Fix the flaky test',
      acceptance_criteria: [{ text: 'the test result is green twice in a row', verify: 'npm test && npm test' }, { text: 'the cause is written down' }],
    });
    const claim = await call(server, 'POST', '/tasks/claim', {});
    expect(claim.status).toBe(200);
    expect(claim.body.goal.acceptance_criteria).toEqual(submitted.acceptance_criteria);
    return { g, server, runId: (claim.body.lease as LeaseRecord).run, lease: claim.body.lease as LeaseRecord };
  }

  it('a criterion whose words name a result is the task\'s, not the process\'s: success with it failed is recorded, not refused', async () => {
    const { g, server, runId, lease } = await claimedWithCriteria();
    const acceptance = [
      { item: 'the test result is green twice in a row', verified: false, criterion: true, result: 'failed', verify: 'npm test && npm test', evidence: '`npm test && npm test` exited 1' },
      { item: 'the cause is written down', verified: false, criterion: true, result: 'unverified', evidence: 'not verified: the criterion has no verify command' },
      ...SUCCESS.acceptance,
    ];
    const done = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, acceptance });
    expect(done.status).toBe(200);
    expect((await readRun(g.paths, runId)).acceptance).toEqual(acceptance);
  });

  it('a criterion the runner does not report is recorded unverified, "not reported by the runner"', async () => {
    const { g, server, runId, lease } = await claimedWithCriteria();
    const done = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id });
    expect(done.status).toBe(200);
    expect((await readRun(g.paths, runId)).acceptance).toEqual([
      { item: 'the test result is green twice in a row', verified: false, criterion: true, result: 'unverified', verify: 'npm test && npm test', evidence: 'not reported by the runner' },
      { item: 'the cause is written down', verified: false, criterion: true, result: 'unverified', evidence: 'not reported by the runner' },
      ...SUCCESS.acceptance,
    ]);
  });

  it('a criterion reported verified without evidence is 422 /acceptance, nothing written', async () => {
    const { g, server, runId, lease } = await claimedWithCriteria();
    const acceptance = [{ item: 'the cause is written down', verified: true, criterion: true, result: 'verified' }, ...SUCCESS.acceptance];
    const refused = await call(server, 'POST', `/runs/${runId}/finish`, { ...SUCCESS, lease: lease.id, acceptance });
    expect(refused).toMatchObject({ status: 422, body: { field: '/acceptance', error: 'acceptance criterion "the cause is written down" reported verified without evidence' } });
    expect((await readRun(g.paths, runId)).status).toBe('running');
  });
});
