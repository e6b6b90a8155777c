/**
 * Serve and webhook health in the session, the snapshot and the status line
 * (issue 11, item 6), and one delivery worker per garden.
 */
import http from 'node:http';
import { render } from 'ink-testing-library';
import React from 'react';
import { stripVTControlCharacters } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { serveForWorkbench } from '../../source/cli/commands/serve.js';
import type { CliIO } from '../../source/cli/main.js';
import { addSubscription, readDeliveries } from '../../source/server/index.js';
import { Session } from '../../source/session/index.js';
import { appendEvent } from '../../source/store/index.js';
import { serveSegment, StatusLine } from '../../source/ui/status-line.js';
import { makeTestGarden } from '../support/garden.js';
import { snapshotOf } from '../ui/fixtures.js';
import { serve, until } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

describe('serve in the session and the status line', () => {
  it('cycle --serve on the workbench session: session.serverStatus and snapshot.server carry the URL and webhook health; the stop clears it', async () => {
    const g = await garden();
    await addSubscription(g.paths, { url: 'http://127.0.0.1:9/never', events: ['GoalClosed'], secret: 's' });
    const session = new Session({ garden: g, command: 'test --serve', noticesToRunLog: true, onStderr: () => undefined });
    cleanups.push(() => session.close());
    await session.open();
    const err: string[] = [];
    const io: CliIO = { out: () => undefined, err: (t) => err.push(t), env: { PAK2_SERVE_PORT: '0' }, cwd: g.paths.gardenRoot, isTTY: false };
    const stop = await serveForWorkbench(g, {}, io)(session);
    cleanups.push(stop);
    expect(session.serverStatus?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    expect(session.serverStatus?.webhooks).toEqual({ running: true, subscriptions: 1, failing: 0, retrying: 0 });
    await until(() => session.source!.getSnapshot().server?.url === session.serverStatus?.url, 5000, 'the snapshot');
    expect(err).toEqual([expect.stringMatching(/^pak2: serving http:\/\/127\.0\.0\.1:\d+\/api\/v1 · bearer token in /)]);
    await stop();
    expect(session.serverStatus).toBeUndefined();
    await until(() => session.source!.getSnapshot().server === undefined, 5000, 'cleared');
  });

  it('the status line shows serve and the webhooks: ok, retrying, failing', () => {
    const url = 'http://127.0.0.1:7717/api/v1';
    expect(serveSegment(undefined)).toBeUndefined();
    expect(serveSegment({ url })).toBe('serve 127.0.0.1:7717');
    expect(serveSegment({ url, webhooks: { running: true, subscriptions: 2, failing: 0, retrying: 0 } })).toBe('serve 127.0.0.1:7717 · webhooks 2 ok');
    expect(serveSegment({ url, webhooks: { running: true, subscriptions: 2, failing: 0, retrying: 1 } })).toBe('serve 127.0.0.1:7717 · webhooks 1 retrying');
    expect(serveSegment({ url, webhooks: { running: true, subscriptions: 2, failing: 1, retrying: 1 } })).toBe('serve 127.0.0.1:7717 · webhooks 1 failing');
    const { lastFrame } = render(<StatusLine snapshot={snapshotOf({ server: { url, webhooks: { running: true, subscriptions: 1, failing: 1, retrying: 0 } } })} message={undefined} width={200} />);
    expect(stripVTControlCharacters(lastFrame()!)).toContain('serve 127.0.0.1:7717 · webhooks 1 failing');
    const without = render(<StatusLine snapshot={snapshotOf()} message={undefined} width={200} />);
    expect(stripVTControlCharacters(without.lastFrame()!)).not.toContain('serve');
  });

  it('one delivery worker per garden: a second server does not deliver, and takes over when the first stops', async () => {
    const g = await garden();
    const got: string[] = [];
    const hook = http.createServer((request, response) => {
      got.push(request.headers['x-pak2-event-id'] as string);
      request.resume();
      response.writeHead(200).end();
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => hook.close(resolve)));
    await addSubscription(g.paths, { url: `http://127.0.0.1:${(hook.address() as { port: number }).port}/`, events: ['*'], secret: 's' });
    const fast = { reloadMs: 50, baseDelayMs: 50, jitter: 0 };
    const first = await serve(g, cleanups, { webhooks: fast });
    const notices: string[] = [];
    const second = await serve(g, cleanups, { webhooks: { ...fast, onNotice: (l) => notices.push(l) } });
    expect(second.status().webhooks?.running).toBe(false);
    expect(notices.join('\n')).toMatch(/another pak2 process of this garden \(serve, cycle or the workbench\) delivers them/);
    const a = await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '1-a' });
    await until(() => got.length === 1, 10_000);
    await first.close();
    const b = await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '2-b' });
    await until(() => got.length === 2, 15_000, 'the second server took over');
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toEqual([a.id, b.id]);
    expect((await readDeliveries(g.paths)).map((d) => d.event)).toEqual([a.id, b.id]);
    expect(second.status().webhooks?.running).toBe(true);
  });
});
