/**
 * A remote run's agent stream on a PostgreSQL garden served by two servers
 * (issue 27: "Agent streams are stored so every server can tail them"):
 * a runner uploads to server A, reconnects to server B and continues at
 * the offset the garden holds; either server tails it and checks the
 * finish's stream_bytes against it; neither writes it into its own run
 * directory.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../source/contracts/index.js';
import { expireLeases } from '../../source/coordinator/remote.js';
import type { RunningServer } from '../../source/server/index.js';
import { attachStore, createGoal, detachStore, readRun, runStreamFile } from '../../source/store/index.js';
import { openPostgresStore } from '../../source/store/postgres/store.js';
import { makeTestGarden } from '../support/garden.js';
import { gardenOn } from '../store/contract/stores.js';
import { serve } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const RUNNER = { 'pak2-runner': 'r1', 'pak2-runner-host': 'box-1' };

/** One runner call over HTTP to `server`. */
async function call(server: RunningServer, method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${server.token}`, ...RUNNER, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Two machines' gardens on one database, each with its own `pak2 serve`. */
async function twoServers() {
  const a = await gardenOn('postgres');
  cleanups.push(() => a.cleanup());
  const b = await makeTestGarden();
  const storeB = await openPostgresStore(a.url!);
  attachStore(b.paths, storeB);
  cleanups.push(async () => {
    detachStore(b.paths);
    await storeB.close();
    b.cleanup();
  });
  // Stopped before the stores close (cleanups run last first).
  const serverA = await serve(a, cleanups, { webhooks: false, leaseCheckMs: false });
  const serverB = await serve(b, cleanups, { webhooks: false, leaseCheckMs: false });
  return { a, b, serverA, serverB };
}

describe('agent streams on a PostgreSQL garden with two servers', () => {
  it('an upload begun on server A continues on server B at the garden’s offset; both tail it; B checks the finish against it', async () => {
    const { a, b, serverA, serverB } = await twoServers();
    const goal = await createGoal(a.paths, { type: 'spike', plant: 'gardener', body: 'stream across servers' });
    const claim = await call(serverA, 'POST', '/tasks/claim', {});
    expect(claim).toMatchObject({ status: 200 });
    const lease = claim.body.lease as LeaseRecord;
    const runId = lease.run;
    expect(lease.goal).toBe(goal.id);

    const first = '{"type":"text","text":"one"}\n';
    const second = '{"type":"text","text":"twö"}\n';
    const upload = (server: RunningServer, stream: string, offset: number, data: string) => call(server, 'POST', `/runs/${runId}/log`, { lease: lease.id, stream, offset, data: Buffer.from(data).toString('base64'), encoding: 'base64' });
    expect(await upload(serverA, 'events', 0, first)).toMatchObject({ status: 200, body: { size: first.length } });
    // Server A goes away mid-run: the runner's next upload goes to B, still at offset 0 (its answer from A was lost) — B says where the garden is.
    const stale = await upload(serverB, 'events', 0, first);
    expect(stale).toMatchObject({ status: 409, body: { field: '/offset', size: first.length } });
    expect(await upload(serverB, 'events', first.length, second)).toMatchObject({ status: 200, body: { size: first.length + Buffer.byteLength(second) } });
    expect(await upload(serverB, 'stderr', 0, 'a warning\n')).toMatchObject({ status: 200, body: { size: 10 } });

    // Either server tails the whole stream.
    for (const server of [serverA, serverB]) {
      const tail = await call(server, 'GET', `/runs/${runId}/events`);
      expect(tail).toMatchObject({ status: 200, body: { run: runId, lines: [{ type: 'text', text: 'one' }, { type: 'text', text: 'twö' }], truncated: false, size: first.length + Buffer.byteLength(second) } });
    }

    const size = { events: first.length + Buffer.byteLength(second), stderr: 10 };
    const finish = (server: RunningServer, streamBytes: Record<string, number>) =>
      call(server, 'POST', `/runs/${runId}/finish`, {
        lease: lease.id,
        status: 'failure',
        failure_reason: 'agent_error',
        exit_code: 1,
        cost: { source: 'unknown' },
        error: 'gave up',
        stream_bytes: streamBytes,
      });
    // More than the garden holds: refused with the sizes it holds (on A, which never saw the second chunk arrive).
    expect(await finish(serverA, { events: size.events + 5, stderr: 10 })).toMatchObject({ status: 409, body: { field: '/stream_bytes', size } });
    expect(await finish(serverB, size)).toMatchObject({ status: 200, body: { run: { id: runId, status: 'failure' } } });
    expect((await readRun(a.paths, runId)).status).toBe('failure');

    // No server wrote the stream into a run directory of its own.
    for (const g of [a, b]) for (const stream of ['events', 'stderr'] as const) expect(fs.existsSync(runStreamFile(g.paths, runId, stream))).toBe(false);
    expect((await call(serverA, 'GET', `/runs/${runId}/events?limit=1`)).body).toMatchObject({ lines: [{ type: 'text', text: 'twö' }], truncated: true });
  });

  it('a lease that expires on the other server closes the run from the stream uploaded so far (its cost), read from the store', async () => {
    const { a, b, serverA } = await twoServers();
    await createGoal(a.paths, { type: 'spike', plant: 'gardener', body: 'a runner that dies' });
    const claim = await call(serverA, 'POST', '/tasks/claim', {});
    const lease = claim.body.lease as LeaseRecord;
    const line = `${JSON.stringify({ type: 'result', status: 'success', text: 'half done', cost_usd: 0.5, session_id: 'sess-gone' })}\n`;
    expect(await call(serverA, 'POST', `/runs/${lease.run}/log`, { lease: lease.id, stream: 'events', offset: 0, data: line })).toMatchObject({ status: 200 });
    // Machine b's reaper finds it expired (its clock past the lease's end).
    expect(await expireLeases(b, () => new Date(Date.parse(lease.expires_at) + 1000))).toEqual([lease.run]);
    const run = await readRun(b.paths, lease.run);
    expect(run).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired', cost: { usd: 0.5 }, session_id: 'sess-gone' });
  });
});
