/**
 * GET /api/v1/events/stream (issue 11, acceptance; docs/server/level2.md):
 * real HTTP on 127.0.0.1. A client that disconnects every 500 events while
 * 10,000 are written gets each exactly once and in order; a client resuming
 * with Last-Event-ID from a week-old id gets the rest; keep-alives come;
 * bad cursors are 400 naming the field.
 */
import fs from 'node:fs';
import { monotonicFactory } from 'ulid';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../source/contracts/index.js';
import { appendEvent } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { api, serve, sseConnect, until, type SseClient } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

describe('the event stream', () => {
  it('a client that disconnects every 500 events while 10,000 are written receives each exactly once, in order', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const url = `${server.url}/events/stream`;
    const received: string[] = [];
    let reconnects = 0;
    let client: SseClient;
    const connect = (lastId?: string) => {
      let inThis = 0;
      client = sseConnect(url, server.token, lastId ? { 'last-event-id': lastId } : {}, (message, self) => {
        if (self !== client) return;
        received.push(message.id!);
        inThis += 1;
        if (inThis === 500) {
          // Drop the connection mid-stream and come back with the last id seen, as EventSource does.
          self.close();
          reconnects += 1;
          connect(message.id);
        }
      });
      cleanups.push(() => client.close());
      return client.ready;
    };
    expect((await connect()).status).toBe(200);
    const written: string[] = [];
    for (let i = 0; i < 10_000; i += 1) written.push((await appendEvent(g.paths, { type: 'GoalSubmitted', goal: `${i + 1}-load`, detail: String(i) })).id!);
    await until(() => received.length >= 10_000, 60_000, '10,000 events received');
    await new Promise((r) => setTimeout(r, 300));
    expect(reconnects).toBeGreaterThanOrEqual(19);
    expect(received.length).toBe(10_000);
    expect(new Set(received).size).toBe(10_000);
    expect(received).toEqual(written);
  }, 120_000);

  it('a client resuming with Last-Event-ID from a week-old id gets the rest, in order, then the new ones', async () => {
    const g = await garden();
    // A log written a week ago by another writer: 1,000 events with week-old ids.
    const weekAgo = Date.now() - 7 * 24 * 3600 * 1000;
    const old = monotonicFactory();
    const lines: EventRecord[] = [];
    for (let i = 0; i < 1000; i += 1) {
      const ts = new Date(weekAgo + i * 1000).toISOString();
      lines.push({ id: old(weekAgo + i * 1000), ts, type: 'GoalSubmitted', goal: `${i + 1}-old` } as EventRecord);
    }
    fs.writeFileSync(g.paths.coordinatorLog, lines.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const server = await serve(g, cleanups, { webhooks: false, keepAliveMs: 100 });
    const fresh = await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-old', reason: 'success' });
    const client = sseConnect(`${server.url}/events/stream?since=${lines[500]!.id}`, server.token, { 'last-event-id': lines[0]!.id! });
    cleanups.push(() => client.close());
    expect((await client.ready).status).toBe(200);
    await until(() => client.messages.length >= 1000, 20_000, 'the rest of the log');
    // Last-Event-ID wins over ?since= (a reconnecting EventSource keeps its first URL).
    expect(client.messages.map((m) => m.id)).toEqual([...lines.slice(1).map((e) => e.id), fresh.id]);
    expect(client.messages[0]).toMatchObject({ event: 'GoalSubmitted' });
    expect(JSON.parse(client.messages.at(-1)!.data)).toMatchObject({ id: fresh.id, type: 'GoalClosed', goal: '1-old' });
    // Nothing more, and the keep-alive comments keep coming while it waits.
    await until(() => client.comments.filter((c) => c === 'keep-alive').length >= 2, 5000, 'keep-alive comments');
    expect(client.messages).toHaveLength(1000);
  });

  it('a client that stops reading is taken off the live feed and caught up from the file: every event once, in order', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const slow = sseConnect(`${server.url}/events/stream`, server.token);
    const brisk = sseConnect(`${server.url}/events/stream`, server.token);
    cleanups.push(() => slow.close(), () => brisk.close());
    await Promise.all([slow.ready, brisk.ready]);
    slow.pause();
    // ~12 MB of events: far more than the socket buffers hold while the slow client does not read.
    const padding = 'x'.repeat(2000);
    const written: string[] = [];
    for (let i = 0; i < 6000; i += 1) written.push((await appendEvent(g.paths, { type: 'GoalSubmitted', goal: `${i + 1}-slow`, detail: padding })).id!);
    await until(() => brisk.messages.length >= 6000, 30_000, 'the brisk client');
    expect(slow.messages.length).toBeLessThan(6000);
    slow.resume();
    await until(() => slow.messages.length >= 6000, 30_000, 'the slow client, caught up');
    await new Promise((r) => setTimeout(r, 200));
    expect(slow.messages.map((m) => m.id)).toEqual(written);
    expect(brisk.messages.map((m) => m.id)).toEqual(written);
  }, 90_000);

  it('filters by type and goal, and starts at the end of the log without a cursor', async () => {
    const g = await garden();
    await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-before', reason: 'success' });
    const server = await serve(g, cleanups, { webhooks: false });
    const client = sseConnect(`${server.url}/events/stream?type=GoalClosed,RunClosed&goal=2-want`, server.token);
    cleanups.push(() => client.close());
    await client.ready;
    await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '2-want' });
    const wanted = await appendEvent(g.paths, { type: 'GoalClosed', goal: '2-want', reason: 'success' });
    await appendEvent(g.paths, { type: 'GoalClosed', goal: '3-other', reason: 'success' });
    const run = await appendEvent(g.paths, { type: 'RunClosed', run: '2-want-r1', goal: '2-want', status: 'success' });
    await until(() => client.messages.length >= 2, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(client.messages.map((m) => m.id)).toEqual([wanted.id, run.id]);
  });

  it('a bad cursor or type is 400 naming the field; no token is 401', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const stream = `${server.url}/events/stream`;
    const cases: [string, Record<string, string>, string | undefined, number, string][] = [
      [`${stream}?since=not-an-id`, {}, server.token, 400, 'since'],
      [stream, { 'last-event-id': 'nope' }, server.token, 400, 'Last-Event-ID'],
      [`${stream}?type=NoSuchType`, {}, server.token, 400, 'type'],
      [`${stream}?sinse=01KB3Q6V1X8Q3C2M0Y5J9S7T4N`, {}, server.token, 400, 'sinse'],
      [stream, {}, undefined, 401, 'Authorization'],
      [stream, {}, 'wrong', 401, 'Authorization'],
    ];
    for (const [url, headers, token, status, field] of cases) {
      const client = sseConnect(url, token, headers);
      cleanups.push(() => client.close());
      const answer = await client.ready;
      expect(answer.status, url).toBe(status);
      expect(JSON.parse(answer.body!), url).toMatchObject({ field });
    }
  });
});
