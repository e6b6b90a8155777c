import { afterEach, describe, expect, it } from 'vitest';
import { apiBase, RunnerApiError, RunnerClient } from '../../source/runner/client.js';
import { routeOf, startFakeServer, type FakeServer } from './fake-server.js';

const servers: FakeServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function serve(handler: Parameters<typeof startFakeServer>[0]): Promise<FakeServer> {
  const server = await startFakeServer(handler);
  servers.push(server);
  return server;
}

const identity = { name: 'box-1', host: 'box-1.example' };

describe('runner client', () => {
  it('appends /api/v1 to the server URL once', () => {
    expect(apiBase('http://h:7717')).toBe('http://h:7717/api/v1');
    expect(apiBase('http://h:7717/')).toBe('http://h:7717/api/v1');
    expect(apiBase('http://h:7717/api/v1/')).toBe('http://h:7717/api/v1');
  });

  it('sends the bearer token and both identity headers on every call', async () => {
    const server = await serve(() => ({ status: 200, body: { runner: identity, garden: 'g', lease_ttl_seconds: 600, heartbeat_seconds: 200, server_time: new Date().toISOString() } }));
    const client = new RunnerClient(server.url, 'tok-123', identity);
    const whoami = await client.whoami();
    expect(whoami.lease_ttl_seconds).toBe(600);
    const [request] = server.seen;
    expect(routeOf(request!)).toBe('GET /whoami');
    expect(request!.headers.authorization).toBe('Bearer tok-123');
    expect(request!.headers['pak2-runner']).toBe('box-1');
    expect(request!.headers['pak2-runner-host']).toBe('box-1.example');
  });

  it('maps a refusal to one error naming the call, the URL, the status, the server error and its field', async () => {
    const server = await serve(() => ({ status: 401, body: { error: 'missing or wrong bearer token', field: 'Authorization' } }));
    const client = new RunnerClient(server.url, 'bad', identity);
    const error = await client.whoami().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunnerApiError);
    const e = error as RunnerApiError;
    expect(e.status).toBe(401);
    expect(e.call).toBe('whoami');
    expect(e.field).toBe('Authorization');
    expect(e.unreachable).toBe(false);
    expect(e.message).toBe(`whoami (GET ${server.url}/api/v1/whoami): 401: missing or wrong bearer token (field Authorization)`);
    expect(e.message).not.toContain('\n');
  });

  it('says unreachable (status 0) when nothing listens', async () => {
    const server = await serve(() => undefined);
    const url = server.url;
    await servers.pop()!.close();
    const client = new RunnerClient(url, 't', identity, 2000);
    const e = (await client.claim({}).catch((error: unknown) => error)) as RunnerApiError;
    expect(e).toBeInstanceOf(RunnerApiError);
    expect(e.status).toBe(0);
    expect(e.unreachable).toBe(true);
    expect(e.message).toMatch(new RegExp(`^tasks_claim \\(POST ${url}/api/v1/tasks/claim\\): unreachable \\(`));
  });

  it('a 204 claim is nothing to claim; the filters go in the body only when given', async () => {
    const server = await serve(() => ({ status: 204 }));
    const client = new RunnerClient(server.url, 't', identity);
    expect(await client.claim({})).toBeUndefined();
    expect(await client.claim({ plants: ['gardener'], drivers: ['command'] })).toBeUndefined();
    expect(server.seen.map((r) => r.body)).toEqual([{}, { plants: ['gardener'], drivers: ['command'] }]);
  });

  it("a log upload's 409 carries the garden's size; a 409 on the lease is told apart", async () => {
    let answer = { status: 409, body: { error: 'offset 0 is not the size 12', field: '/offset', size: 12 } as Record<string, unknown> };
    const server = await serve(() => answer);
    const client = new RunnerClient(server.url, 't', identity);
    const e1 = (await client.uploadLog('3-fix-r1', { lease: 'L', stream: 'events', offset: 0, data: 'x' }).catch((e: unknown) => e)) as RunnerApiError;
    expect(e1.status).toBe(409);
    expect(e1.size).toBe(12);
    expect(e1.leaseEnded).toBe(false);
    answer = { status: 409, body: { error: 'the lease has expired', field: 'lease', state: 'expired' } };
    const e2 = (await client.heartbeat('3-fix-r1', { lease: 'L' }).catch((e: unknown) => e)) as RunnerApiError;
    expect(e2.leaseEnded).toBe(true);
    expect(e2.call).toBe('runs_heartbeat');
  });

  it('a body that is not JSON is named by its first line', async () => {
    const server = await startFakeServer(() => ({ status: 502, body: undefined }));
    servers.push(server);
    const client = new RunnerClient(server.url, 't', identity);
    const e = (await client.openLeases().catch((error: unknown) => error)) as RunnerApiError;
    expect(e.status).toBe(502);
    expect(e.message).toBe(`open leases (GET ${server.url}/api/v1/leases?runner=box-1): 502`);
  });
});
