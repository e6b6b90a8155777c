/**
 * POST /goals/:id/retry (docs/goal/level2.md, "Retry"; docs/server/level2.md):
 * the same operator action as `pak2 retry` and the workbench's `r`, for an
 * operator token only; `driver` and `model` in the body; a 4xx with one clear
 * line for an unknown goal, an open one, one that closed success, a driver
 * that is not one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../source/server/index.js';
import { createToken } from '../../source/server/tokens.js';
import { createGoal, readGoal, transitionGoal } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { api, serve } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function post(server: RunningServer, url: string, body?: unknown, token?: string) {
  const response = await api(server, url, { method: 'POST', ...(token ? { token } : {}), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: response.status, body: (await response.json()) as Record<string, any>, location: response.headers.get('location') };
}

/** A goal taken through its states to closed with `reason`, as a pass closes one whose run ended. */
async function closedGoal(g: Awaited<ReturnType<typeof makeTestGarden>>, reason: 'failure' | 'success', extra: { model?: string } = {}) {
  const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: `Fix it (${reason})`, priority: 40, driver: 'exit3', ...extra });
  for (const to of ['dispatched', 'running', 'completed'] as const) await transitionGoal(g.paths, goal.id, to);
  await transitionGoal(g.paths, goal.id, 'closed', { closedReason: reason });
  return goal;
}

describe('POST /goals/:id/retry', () => {
  it('a goal that closed failure: 201, a new queued goal naming it, on the driver and model the body asks for; Location names it', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false });
    const old = await closedGoal(g, 'failure', { model: 'm-old' });
    const retried = await post(server, `/goals/${old.id}/retry`, { driver: 'success', model: 'm-new' });
    expect(retried.status).toBe(201);
    expect(retried.body).toMatchObject({ goal: { retry_of: old.id, status: 'queued', type: 'fix', assigned_to: 'gardener', priority: 40, body: old.body, driver: 'success', model: 'm-new' }, moved: [] });
    expect(retried.location).toBe(`/api/v1/goals/${retried.body.goal.id}`);
    expect(await readGoal(g.paths, retried.body.goal.id)).toMatchObject({ retry_of: old.id, driver: 'success', model: 'm-new' });
  });

  it('the GraphQL retryGoal mutation is the same action: driver and model reach it; a refusal is its error with the REST status', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false });
    const old = await closedGoal(g, 'failure');
    const gql = async (query: string) => {
      const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
      return (await response.json()) as { data?: any; errors?: { message: string; extensions?: { status: number } }[] };
    };
    const done = await gql(`mutation { retryGoal(id: "${old.id}", driver: "success", model: "m-gql") { goal { id retry_of driver model status } moved } }`);
    expect(done.errors).toBeUndefined();
    expect(done.data.retryGoal).toMatchObject({ goal: { retry_of: old.id, driver: 'success', model: 'm-gql', status: 'queued' }, moved: [] });
    const refused = await gql(`mutation { retryGoal(id: "${done.data.retryGoal.goal.id}") { goal { id } } }`);
    expect(refused.errors?.[0]).toMatchObject({ message: `goal ${done.data.retryGoal.goal.id}: the goal is queued; only a closed goal is retried`, extensions: { status: 409 } });
  });

  it('refusals: 404 unknown goal, 409 open goal, 409 closed success, 409 an open retry, 400 naming driver or model; 403 for a read token; nothing queued', async () => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const server = await serve(g, cleanups, { webhooks: false });
    const failed = await closedGoal(g, 'failure');
    const succeeded = await closedGoal(g, 'success');
    const open = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Still queued' });
    const { token: read } = await createToken(g.paths, { role: 'read', name: 'viewer' });
    const cases: [string, unknown, number, Record<string, string>][] = [
      ['9-nothing', undefined, 404, { error: 'goal 9-nothing: no such goal', field: 'id' }],
      [open.id, undefined, 409, { error: `goal ${open.id}: the goal is queued; only a closed goal is retried`, field: 'id' }],
      [succeeded.id, undefined, 409, { error: `goal ${succeeded.id}: the goal closed success; nothing to retry`, field: 'id' }],
      [failed.id, { driver: 'trap' }, 400, { error: 'driver trap: not a driver (claude, codex, command, or a [drivers.<name>] entry in PAK2.toml)', field: '/driver' }],
      [failed.id, { model: ' ' }, 400, { error: 'model: empty; name a model or leave it out', field: '/model' }],
    ];
    for (const [id, body, status, answer] of cases) {
      const r = await post(server, `/goals/${id}/retry`, body);
      expect([r.status, r.body], `${id} ${JSON.stringify(body)}`).toEqual([status, expect.objectContaining(answer)]);
    }
    const refused = await post(server, `/goals/${failed.id}/retry`, undefined, read);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toContain('this needs an operator token');
    const listed = (await (await api(server, '/goals')).json()) as { total: number };
    expect(listed.total).toBe(3);

    const first = await post(server, `/goals/${failed.id}/retry`);
    expect(first.status).toBe(201);
    const twice = await post(server, `/goals/${failed.id}/retry`);
    expect([twice.status, twice.body.error]).toEqual([409, `goal ${failed.id}: its retry ${first.body.goal.id} is still open (queued); retry that one once it closes`]);
  });
});
