import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunnerApiError, RunnerClient } from '../../source/runner/client.js';
import { cutPoint, LogUploader } from '../../source/runner/uploader.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';
import { routeOf, startFakeServer, type FakeServer, type SeenRequest } from './fake-server.js';

const servers: FakeServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
  cleanupFixtures();
});

/** A garden's side of log upload: the bytes it holds per stream, 409 {size} on a wrong offset. */
function logGarden(held: Record<string, Buffer> = {}, options: { leaseEnded?: () => boolean } = {}) {
  const store: Record<string, Buffer> = { events: Buffer.alloc(0), stderr: Buffer.alloc(0), ...held };
  const handler = (request: SeenRequest) => {
    if (routeOf(request) !== 'POST /runs/3-fix-r1/log') return undefined;
    if (options.leaseEnded?.()) return { status: 409, body: { error: 'the lease has expired', field: 'lease', state: 'expired' } };
    const body = request.body as { stream: string; offset: number; data: string; encoding: string };
    const current = store[body.stream]!;
    if (body.offset !== current.length) return { status: 409, body: { error: `offset ${body.offset} is not ${current.length}`, field: '/offset', size: current.length } };
    store[body.stream] = Buffer.concat([current, Buffer.from(body.data, body.encoding === 'base64' ? 'base64' : 'utf8')]);
    return { status: 200, body: { size: store[body.stream]!.length } };
  };
  return { store, handler };
}

async function setup(held: Record<string, Buffer> = {}, options: { leaseEnded?: () => boolean } = {}) {
  const garden = logGarden(held, options);
  const server = await startFakeServer(garden.handler);
  servers.push(server);
  const dir = makeTempDir();
  const files = { events: path.join(dir, 'events.jsonl'), stderr: path.join(dir, 'stderr.log') };
  const uploader = new LogUploader(new RunnerClient(server.url, 't', { name: 'r', host: 'h' }), '3-fix-r1', 'LEASE', files);
  return { ...garden, server, files, uploader };
}

describe('cutPoint', () => {
  it('sends whole lines while the writer may append, and waits on a short unfinished line', () => {
    expect(cutPoint(Buffer.from('a\nb\nc'), false)).toBe(4);
    expect(cutPoint(Buffer.from('abc'), false)).toBe(0);
    expect(cutPoint(Buffer.from('abc'), true)).toBe(3);
  });

  it('cuts a line longer than the limit at a character boundary, never inside a UTF-8 character', () => {
    const text = Buffer.from('ééééé'); // 10 bytes, 2 each
    expect(cutPoint(text, false, 5)).toBe(4);
    expect(cutPoint(text, true, 5)).toBe(4);
    expect(cutPoint(Buffer.from('ab\ncdefgh'), false, 5)).toBe(3);
  });
});

describe('LogUploader', () => {
  it('uploads each stream as it grows, at the offset the garden holds', async () => {
    const { store, files, uploader, server } = await setup();
    fs.writeFileSync(files.events, '{"type":"a"}\n{"type":"b"}\npartial');
    fs.writeFileSync(files.stderr, 'warn 1\n');
    await uploader.flush();
    expect(store.events!.toString()).toBe('{"type":"a"}\n{"type":"b"}\n');
    expect(store.stderr!.toString()).toBe('warn 1\n');
    fs.appendFileSync(files.events, ' line\n{"type":"c"}\n');
    await uploader.flush();
    await uploader.flush(); // nothing new: no call
    expect(store.events!.toString()).toBe(fs.readFileSync(files.events, 'utf8'));
    expect(uploader.offsets).toEqual({ events: store.events!.length, stderr: 7 });
    expect(server.seen.filter((r) => (r.body as { stream: string }).stream === 'events')).toHaveLength(2);
    expect(server.seen.every((r) => (r.body as { lease: string }).lease === 'LEASE')).toBe(true);
  });

  it('a final flush sends a partial last line too', async () => {
    const { store, files, uploader } = await setup();
    fs.writeFileSync(files.events, '{"type":"a"}\nno newline at the end');
    await uploader.flush(true);
    expect(store.events!.toString()).toBe('{"type":"a"}\nno newline at the end');
  });

  it("a 409 moves the offset to the garden's size: a restarted runner resumes without sending a byte twice", async () => {
    const { store, files, uploader, server } = await setup({ events: Buffer.from('line 1\nline 2\n') });
    fs.writeFileSync(files.events, 'line 1\nline 2\nline 3\n');
    await uploader.flush(true);
    expect(store.events!.toString()).toBe('line 1\nline 2\nline 3\n');
    const events = server.seen.map((r) => r.body as { stream: string; offset: number; data: string }).filter((b) => b.stream === 'events');
    expect(events.map((b) => [b.offset, Buffer.from(b.data, 'base64').toString()])).toEqual([
      [0, 'line 1\nline 2\nline 3\n'],
      [14, 'line 3\n'],
    ]);
  });

  it('uploads more than 1 MB in pieces of at most 1 MB, in order', async () => {
    const { store, files, uploader, server } = await setup();
    const line = `${'x'.repeat(999)}\n`;
    fs.writeFileSync(files.events, line.repeat(2500)); // 2.5 MB
    await uploader.flush(true);
    expect(store.events!.equals(fs.readFileSync(files.events))).toBe(true);
    const sizes = server.seen.map((r) => Buffer.from((r.body as { data: string }).data, 'base64').length);
    expect(sizes.length).toBe(3);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1024 * 1024);
  });

  it('a lease that ended is thrown, not retried', async () => {
    const { files, uploader, server } = await setup({}, { leaseEnded: () => true });
    fs.writeFileSync(files.events, 'a\n');
    const error = (await uploader.flush().catch((e: unknown) => e)) as RunnerApiError;
    expect(error).toBeInstanceOf(RunnerApiError);
    expect(error.leaseEnded).toBe(true);
    expect(server.seen).toHaveLength(1);
  });
});
