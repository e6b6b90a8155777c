/**
 * Goal dependencies over HTTP (docs/server/level2.md; docs/goal/level2.md,
 * "Dependencies"): POST /goals with depends_on, its refusals as 400s naming
 * the key, POST /goals/:id/depends (a cycle is a 400) and /retry, GET
 * /goals's waiting_for and blocked_on, and a runner's claim that never
 * takes a waiting or blocked goal.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../source/server/index.js';
import { createGoal, readGoal, transitionGoal } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
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

const GOAL = { type: 'fix', plant: 'gardener', body: 'Fix the flaky test' };

async function post(server: RunningServer, url: string, body?: unknown) {
  const response = await api(server, url, { method: 'POST', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const RUNNER = { 'pak2-runner': 'r1', 'pak2-runner-host': 'box-1' };

async function claim(server: RunningServer) {
  const response = await server.app.inject({ method: 'POST', url: '/api/v1/tasks/claim', headers: { authorization: `Bearer ${server.token}`, ...RUNNER, 'content-type': 'application/json' }, payload: '{}' });
  return { status: response.statusCode, body: (response.body ? JSON.parse(response.body) : undefined) as Record<string, any> };
}

describe('dependencies over HTTP', () => {
  it('POST /goals takes depends_on; an unknown or malformed one is a 400 naming depends_on, and no goal is made', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const a = await post(server, '/goals', GOAL);
    expect(a.status).toBe(201);
    const b = await post(server, '/goals', { ...GOAL, body: 'Then this', depends_on: [a.body.goal.id] });
    expect(b.status).toBe(201);
    expect(b.body.goal).toMatchObject({ depends_on: [a.body.goal.id], status: 'queued' });
    for (const deps of [['9-nothing'], ['Not An Id']]) {
      const refused = await post(server, '/goals', { ...GOAL, depends_on: deps });
      expect(refused.status).toBe(400);
      expect(refused.body.field).toBe('/depends_on');
      expect(refused.body.error).toMatch(new RegExp(`^depends_on ${deps[0]}: `));
    }
    const listed = (await (await api(server, '/goals?status=queued')).json()) as Record<string, any>;
    expect(listed.total).toBe(2);
    expect(listed.goals.map((x: { id: string }) => x.id)).toEqual([a.body.goal.id, b.body.goal.id]);
    expect(listed.goals[1]).toMatchObject({ waiting_for: [a.body.goal.id] });
  });

  it('POST /goals/:id/depends refuses a cycle with a 400 naming it; drop releases; retry moves the dependents', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const a = (await post(server, '/goals', GOAL)).body.goal;
    const b = (await post(server, '/goals', { ...GOAL, body: 'Second', depends_on: [a.id] })).body.goal;
    const cycle = await post(server, `/goals/${a.id}/depends`, { add: [b.id] });
    expect(cycle.status).toBe(400);
    expect(cycle.body).toMatchObject({ field: '/add', error: `add ${b.id}: a cycle: ${a.id} → ${b.id} → ${a.id}` });
    expect((await post(server, `/goals/${a.id}/depends`, {})).status).toBe(400);
    expect((await post(server, '/goals/9-nothing/depends', { drop: [a.id] })).status).toBe(404);

    await transitionGoal(g.paths, a.id, 'closed', { closedReason: 'cancelled' });
    const listed = (await (await api(server, '/goals?status=queued')).json()) as Record<string, any>;
    expect(listed.goals[0]).toMatchObject({ id: b.id, blocked_on: { goal: a.id, closed_reason: 'cancelled' } });
    const retried = await post(server, `/goals/${a.id}/retry`);
    expect(retried.status).toBe(201);
    expect(retried.body).toMatchObject({ goal: { retry_of: a.id, status: 'queued' }, moved: [b.id] });
    expect((await readGoal(g.paths, b.id)).depends_on).toEqual([retried.body.goal.id]);
    expect((await post(server, `/goals/${b.id}/retry`)).status).toBe(409);
    const dropped = await post(server, `/goals/${b.id}/depends`, { drop: [retried.body.goal.id] });
    expect(dropped.status).toBe(200);
    expect(dropped.body.goal.depends_on).toBeUndefined();
  });

  it('a runner never claims a goal that waits for a dependency or is blocked by one; it claims it once the dependency closed success', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const a = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'First', priority: 10 });
    // Higher priority than its dependency: without the dependency it would be claimed first.
    const b = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Second', priority: 90, depends_on: [a.id] });
    const first = await claim(server);
    expect(first.status).toBe(200);
    expect(first.body.goal.id).toBe(a.id);
    // a is running on the runner: b waits, so there is nothing to claim.
    expect((await claim(server)).status).toBe(204);
    expect((await readGoal(g.paths, b.id)).status).toBe('queued');
    // A dependency that closed failure blocks it: still nothing to claim.
    const c = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Third', priority: 90 });
    await transitionGoal(g.paths, c.id, 'closed', { closedReason: 'cancelled' });
    const d = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Fourth', priority: 90, depends_on: [c.id] });
    expect((await claim(server)).status).toBe(204);
    expect((await readGoal(g.paths, d.id)).status).toBe('queued');
    // A closed success releases b.
    for (const to of ['completed', 'closed'] as const) await transitionGoal(g.paths, a.id, to, to === 'closed' ? { closedReason: 'success' } : {});
    const next = await claim(server);
    expect(next.status).toBe(200);
    expect(next.body.goal.id).toBe(b.id);
  });
});
