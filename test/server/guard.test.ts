/**
 * `POST /goals` takes a goal's `guard` and `task_class` (issue 10, item 1)
 * through the same submit action as the CLI: the record keeps exactly the
 * guard given, and each refusal names its field as a JSON pointer.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { makeTestGarden } from '../support/garden.js';
import { api, serve } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(git: boolean) {
  const g = await makeTestGarden({ extraToml: '[routing.simple]\ntiers = [{ driver = "success" }]\n' });
  cleanups.push(() => g.cleanup());
  if (git) execFileSync('git', ['init', '-q'], { cwd: g.paths.gardenRoot, stdio: 'ignore' });
  return g;
}

const GOAL = { type: 'fix', plant: 'gardener', body: 'Fix the flaky test' };

describe('POST /goals with a guard', () => {
  it('201 with the guard as given and the task class', async () => {
    const g = await garden(true);
    const server = await serve(g, cleanups, { webhooks: false });
    const guard = { verify: 'npm test', allowed_files: ['src/**'], forbidden_paths: ['.env'], timeout_seconds: 60, env_passthrough: ['API_KEY'], contract_id: 'c-9', redact: false };
    const response = await api(server, '/goals', { method: 'POST', body: JSON.stringify({ ...GOAL, guard, task_class: 'simple' }) });
    expect(response.status).toBe(201);
    const { goal } = (await response.json()) as { goal: Record<string, unknown> };
    expect(goal.guard).toEqual(guard);
    expect(goal.task_class).toBe('simple');
  });

  it.each<[boolean, Record<string, unknown>, number, string]>([
    [false, { guard: { verify: 'npm test' } }, 409, '/guard/verify'],
    [false, { guard: {} }, 409, '/guard'],
    [false, { task_class: 'simple' }, 409, '/task_class'],
    [true, { guard: { allowed_files: ['/etc/**'] } }, 400, '/guard/allowed_files'],
    [true, { guard: { forbidden_paths: ['../x'] } }, 400, '/guard/forbidden_paths'],
    [true, { guard: { env_passthrough: ['1X'] } }, 400, '/guard/env_passthrough'],
    [true, { guard: { verify: ' ' } }, 400, '/guard/verify'],
    [true, { guard: { timeout_seconds: 0 } }, 400, '/guard/timeout_seconds'],
    [true, { task_class: 'medium' }, 400, '/task_class'],
  ])('git %s, %j: %i naming %s, nothing written', async (git, extra, status, field) => {
    const g = await garden(git);
    const server = await serve(g, cleanups, { webhooks: false });
    const response = await api(server, '/goals', { method: 'POST', body: JSON.stringify({ ...GOAL, ...extra }) });
    expect(response.status).toBe(status);
    const answer = (await response.json()) as { error: string; field: string };
    expect(answer.field).toBe(field);
    expect(fs.existsSync(g.paths.goalsDir) ? fs.readdirSync(g.paths.goalsDir).filter((f) => f.endsWith('.json')) : []).toEqual([]);
  });

  it('the OpenAPI description shows the guard body', async () => {
    const g = await garden(false);
    const server = await serve(g, cleanups, { webhooks: false });
    const doc = (await (await api(server, '/openapi.json')).json()) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, { properties?: Record<string, unknown> }> } }> } }>> };
    const body = doc.paths['/api/v1/goals']!.post!.requestBody!.content['application/json']!.schema;
    expect(Object.keys(body.properties.guard!.properties!)).toEqual(['verify', 'allowed_files', 'forbidden_paths', 'timeout_seconds', 'env_passthrough', 'contract_id', 'redact']);
    expect(body.properties).toHaveProperty('task_class');
  });
});
