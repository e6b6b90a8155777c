/**
 * The /api/v1 routes over real HTTP on 127.0.0.1 (issue 11, item 4;
 * docs/server/level2.md): the token, 401 that changes nothing, submit and
 * cancel through the operator actions, 4xx naming the field, the reads, and
 * an OpenAPI description that matches the registered routes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runEventsFile } from '../../source/store/index.js';
import { bearerMatches, isLoopbackAddress } from '../../source/server/index.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';
import { api, serve } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

const GOAL = { type: 'fix', plant: 'gardener', body: 'Fix the flaky test', priority: 70 };

describe('auth', () => {
  it('the token is made at first start into a 0600 file and kept across restarts', async () => {
    const g = await garden();
    const first = await serve(g, cleanups, { webhooks: false });
    const file = path.join(g.paths.runtimeRoot, 'serve', 'token');
    expect(first.tokenFile).toBe(file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(first.token.length).toBeGreaterThanOrEqual(40);
    await first.close();
    fs.chmodSync(file, 0o644);
    const second = await serve(g, cleanups, { webhooks: false });
    expect(second.token).toBe(first.token);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('the token and webhook secrets stay out of the runtime history repo (git add -A in the runtime root)', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const { addSubscription } = await import('../../source/server/index.js');
    const { subscription } = await addSubscription(g.paths, { url: 'http://127.0.0.1:9/', events: ['GoalClosed'], secret: 's' });
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['init', '-q'], { cwd: g.paths.runtimeRoot });
    const added = execFileSync('git', ['add', '-A', '-n', '.'], { cwd: g.paths.runtimeRoot }).toString();
    expect(added).toContain('webhooks/subscriptions.json');
    expect(added).not.toContain('serve/token');
    expect(added).not.toContain(`secrets/${subscription.id}`);
    expect(fs.readFileSync(server.tokenFile, 'utf8').trim()).toBe(server.token);
  });

  it('a wrong or missing token is 401 and changes nothing: no goal, no event', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const before = fs.readFileSync(g.paths.coordinatorLog, 'utf8');
    const goalsBefore = fs.existsSync(g.paths.goalsDir) ? fs.readdirSync(g.paths.goalsDir) : [];
    for (const token of [null, 'wrong', `${server.token}x`, server.token.slice(0, -1), '']) {
      for (const [method, route, body] of [
        ['POST', '/goals', JSON.stringify(GOAL)],
        ['POST', '/goals/1-fix-the-flaky-test/cancel', undefined],
        ['GET', '/goals', undefined],
        ['GET', '/events', undefined],
        ['GET', '/openapi.json', undefined],
        ['GET', '/no/such/route', undefined],
      ] as const) {
        const response = await api(server, route, { method, token, ...(body ? { body } : {}) });
        expect(response.status, `${method} ${route} with ${JSON.stringify(token)}`).toBe(401);
        expect(response.headers.get('www-authenticate')).toBe('Bearer');
        expect(await response.json()).toMatchObject({ field: 'Authorization' });
      }
    }
    // A scheme other than Bearer is no better.
    expect((await fetch(`${server.url}/goals`, { headers: { authorization: `Basic ${server.token}` } })).status).toBe(401);
    expect(fs.readFileSync(g.paths.coordinatorLog, 'utf8')).toBe(before);
    expect(fs.existsSync(g.paths.goalsDir) ? fs.readdirSync(g.paths.goalsDir) : []).toEqual(goalsBefore);
  });

  it('bearerMatches compares the whole token; loopback means 127.0.0.0/8 and ::1', () => {
    expect(bearerMatches('Bearer abc', 'abc')).toBe(true);
    expect(bearerMatches('bearer  abc ', 'abc')).toBe(true);
    expect(bearerMatches('Bearer abcd', 'abc')).toBe(false);
    expect(bearerMatches('Bearer ', '')).toBe(false);
    expect(bearerMatches(undefined, 'abc')).toBe(false);
    expect(['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1'].every(isLoopbackAddress)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', '128.0.0.1', 'localhost'].some(isLoopbackAddress)).toBe(false);
  });
});

describe('goals', () => {
  it('POST /goals queues through submit: 201, the record, GoalSubmitted; GET reads it back', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const response = await api(server, '/goals', { method: 'POST', body: JSON.stringify(GOAL) });
    expect(response.status).toBe(201);
    const { goal } = (await response.json()) as { goal: { id: string } };
    expect(goal).toMatchObject({ id: '1-fix-the-flaky-test', type: 'fix', priority: 70, status: 'queued', assigned_to: 'gardener' });
    expect(response.headers.get('location')).toBe('/api/v1/goals/1-fix-the-flaky-test');
    expect(readEventLog(g).some((e) => e.type === 'GoalSubmitted' && e.goal === goal.id)).toBe(true);
    expect(await (await api(server, `/goals/${goal.id}`)).json()).toMatchObject({ goal: { id: goal.id }, runs: [] });
    expect(await (await api(server, '/goals?status=queued')).json()).toMatchObject({ goals: [{ id: goal.id }], total: 1 });
    expect(await (await api(server, '/goals?status=closed')).json()).toMatchObject({ goals: [], total: 0 });
  });

  it.each([
    [{ ...GOAL, priority: 101 }, 400, '/priority'],
    [{ ...GOAL, priority: 'high' }, 400, '/priority'],
    [{ ...GOAL, type: 'chore' }, 400, '/type'],
    [{ type: 'fix', plant: 'gardener' }, 400, '/body'],
    [{ ...GOAL, body: '   ' }, 400, '/body'],
    [{ ...GOAL, plant: 'nobody' }, 400, '/plant'],
    [{ ...GOAL, plant: 'Not A Name' }, 400, '/plant'],
    [{ ...GOAL, driver: 'no-such-driver' }, 400, '/driver'],
    [{ ...GOAL, colour: 'red' }, 400, '/colour'],
  ])('POST /goals with a bad field is a 4xx naming it: %j', async (body, status, field) => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const response = await api(server, '/goals', { method: 'POST', body: JSON.stringify(body) });
    expect(response.status).toBe(status);
    const answer = (await response.json()) as { error: string; field: string };
    expect(answer.field).toBe(field);
    expect(answer.error).toMatch(new RegExp(field.slice(1)));
    expect(fs.existsSync(g.paths.goalsDir) ? fs.readdirSync(g.paths.goalsDir).filter((f) => f.endsWith('.json')) : []).toEqual([]);
  });

  it('a body that is not JSON, or not an object, is a 4xx naming the body or Content-Type', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const broken = await api(server, '/goals', { method: 'POST', body: '{"type":' });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ field: 'body' });
    const xml = await api(server, '/goals', { method: 'POST', body: '<goal/>', headers: { 'content-type': 'application/xml' } });
    expect(xml.status).toBe(415);
    expect(await xml.json()).toMatchObject({ field: 'Content-Type' });
  });

  it('POST /goals/:id/cancel closes a queued goal; again is 409; unknown is 404; a bad id is 400', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    await api(server, '/goals', { method: 'POST', body: JSON.stringify(GOAL) });
    const cancelled = await api(server, '/goals/1-fix-the-flaky-test/cancel', { method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ goal: { status: 'closed', closed_reason: 'cancelled' } });
    const again = await api(server, '/goals/1-fix-the-flaky-test/cancel', { method: 'POST' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ field: 'id' });
    expect((await api(server, '/goals/9-nothing/cancel', { method: 'POST' })).status).toBe(404);
    const bad = await api(server, '/goals/..%2Fetc/cancel', { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: 'id' });
  });
});

describe('runs, plants, events', () => {
  it('runs: 404 for an unknown run, the events.jsonl tail capped by limit', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    expect((await api(server, '/runs')).status).toBe(200);
    const missing = await api(server, '/runs/1-nothing-r1');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ field: 'id' });
    expect(await (await api(server, '/runs?goal=7-nothing')).json()).toMatchObject({ field: 'goal' });
    expect((await api(server, '/runs/not-a-run')).status).toBe(400);
    // A run through the coordinator's own store functions.
    const { createGoal, openRun, readGoal } = await import('../../source/store/index.js');
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'x' });
    await openRun(g.paths, await readGoal(g.paths, goal.id), { plant: 'gardener', driver: 'success', model: 'm' });
    const runId = `${goal.id}-r1`;
    fs.writeFileSync(runEventsFile(g.paths, runId), `${Array.from({ length: 300 }, (_, i) => JSON.stringify({ n: i })).join('\n')}\nnot json\n`);
    expect(await (await api(server, `/runs/${runId}`)).json()).toMatchObject({ run: { id: runId, status: 'running' } });
    const tail = (await (await api(server, `/runs/${runId}/events?limit=3`)).json()) as { lines: unknown[]; truncated: boolean };
    expect(tail).toMatchObject({ lines: [{ n: 298 }, { n: 299 }, 'not json'], truncated: true });
    expect(await (await api(server, `/runs?goal=${goal.id}`)).json()).toMatchObject({ runs: [{ id: runId }] });
    expect((await api(server, `/runs/${runId}/events?limit=0`)).status).toBe(400);
  });

  it('plants lists the gardener', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    expect(await (await api(server, '/plants')).json()).toMatchObject({ plants: [{ name: 'gardener', status: 'active' }], problems: [] });
  });

  it('GET /events pages after a cursor by id; limit, type and goal filters; bad input names the parameter', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const { appendEvent } = await import('../../source/store/index.js');
    const written = [];
    for (let i = 0; i < 25; i += 1) written.push(await appendEvent(g.paths, { type: i % 5 === 0 ? 'GoalClosed' : 'GoalSubmitted', goal: `${i + 1}-e`, ...(i % 5 === 0 ? { reason: 'success' } : {}) }));
    const page1 = (await (await api(server, `/events?since=${written[0]!.id}&limit=10`)).json()) as { events: { id: string }[]; next: string; more: boolean };
    expect(page1.events.map((e) => e.id)).toEqual(written.slice(1, 11).map((e) => e.id));
    expect(page1).toMatchObject({ more: true, next: written[10]!.id });
    const page2 = (await (await api(server, `/events?since=${page1.next}&limit=100`)).json()) as typeof page1;
    expect(page2.events.map((e) => e.id)).toEqual(written.slice(11).map((e) => e.id));
    expect(page2).toMatchObject({ more: false, next: written[24]!.id });
    const closed = (await (await api(server, `/events?since=${written[0]!.id}&type=GoalClosed`)).json()) as typeof page1;
    expect(closed.events.map((e) => e.id)).toEqual([written[5], written[10], written[15], written[20]].map((e) => e!.id));
    const one = (await (await api(server, `/events?goal=7-e`)).json()) as typeof page1;
    expect(one.events.map((e) => e.id)).toEqual([written[6]!.id]);
    for (const [query, field] of [
      ['since=yesterday', 'since'],
      ['limit=0', 'limit'],
      ['limit=many', 'limit'],
      ['type=Nope', 'type'],
      ['goal=../x', 'goal'],
      ['follow=1', 'follow'],
    ]) {
      const response = await api(server, `/events?${query}`);
      expect(response.status, query).toBe(400);
      expect(await response.json(), query).toMatchObject({ field });
    }
  });
});

describe('openapi.json', () => {
  it('describes exactly the registered routes, each with its parameters, body and the 401', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const doc = (await (await api(server, '/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { operationId: string; parameters: { name: string; in: string }[]; requestBody?: unknown; responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    // fastify's own route tree (`└── /api/v1/goals (GET, POST)` with nested segments), flattened.
    const registered: string[] = [];
    const stack: string[] = [];
    for (const line of server.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const m = /^(.*?)[└├]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
      if (!m) continue;
      const depth = m[1]!.length / 4;
      stack.length = depth;
      stack.push(m[2]!);
      for (const method of m[3]?.split(', ') ?? []) registered.push(`${method} ${stack.join('')}`);
    }
    const described = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`));
    expect(described.sort()).toEqual(
      [
        'GET /api/v1/goals',
        'GET /api/v1/goals/:id',
        'POST /api/v1/goals',
        'POST /api/v1/goals/:id/cancel',
        // Dependencies (docs/goal/level2.md, test/server/dependencies.test.ts).
        'POST /api/v1/goals/:id/depends',
        'POST /api/v1/goals/:id/retry',
        'GET /api/v1/runs',
        'GET /api/v1/runs/:id',
        'GET /api/v1/runs/:id/events',
        // Budgets (docs/budget/level2.md).
        'GET /api/v1/budget',
        'POST /api/v1/budget/caps',
        // Review (docs/landing/level2.md).
        'GET /api/v1/landings',
        'GET /api/v1/schedules',
        'GET /api/v1/runs/:id/diff',
        'POST /api/v1/runs/:id/land',
        'POST /api/v1/runs/:id/reject',
        // The needs-you list (docs/attention/level2.md).
        'GET /api/v1/attention',
        'POST /api/v1/attention/ack',
        'GET /api/v1/plants',
        'GET /api/v1/events',
        'GET /api/v1/events/stream',
        'GET /api/v1/openapi.json',
        // The GraphQL door (test/server/graphql.test.ts).
        'GET /api/v1/graphql',
        'POST /api/v1/graphql',
        // The remote-runner protocol (test/server/runner-routes.test.ts).
        'GET /api/v1/whoami',
        'GET /api/v1/leases',
        'POST /api/v1/tasks/claim',
        'GET /api/v1/tasks/:goal',
        'POST /api/v1/runs/:id/heartbeat',
        'POST /api/v1/runs/:id/log',
        'POST /api/v1/runs/:id/artifacts',
        'GET /api/v1/runs/:id/artifacts',
        'POST /api/v1/runs/:id/finish',
        'GET /api/v1/goals/:id/comments',
        'POST /api/v1/goals/:id/comments',
        'PUT /api/v1/plants/:name/documents',
      ].sort(),
    );
    // Every described route answers (not 404) with the token, and every registered route is described.
    for (const entry of described) {
      const [method, route] = entry.split(' ') as [string, string];
      expect(server.app.hasRoute({ method: method as 'GET', url: route }), entry).toBe(true);
    }
    expect(registered.sort()).toEqual(described.sort());
    for (const [, ops] of Object.entries(doc.paths)) {
      for (const op of Object.values(ops)) {
        expect(op.operationId).toBeTruthy();
        expect(op.responses['401']).toBeTruthy();
      }
    }
    expect(doc.paths['/api/v1/goals']!.post!.requestBody).toBeTruthy();
    expect(doc.paths['/api/v1/events']!.get!.parameters.map((p) => p.name)).toEqual(['since', 'type', 'goal', 'limit']);
    expect(doc.paths['/api/v1/events/stream']!.get!.parameters.map((p) => `${p.in}:${p.name}`)).toContain('header:last-event-id');
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['Goal', 'Run', 'Plant', 'Event', 'Error']));
    expect(doc.components.securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'bearer' } });
  });
});
