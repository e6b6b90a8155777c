/**
 * The store contract for a run's agent streams (issue 27, "Agent streams
 * are stored so every server can tail them"; source/store/streams.ts):
 * appends at byte offsets with the idempotent offset check, the size,
 * reads from an offset and the last lines, on both stores; a close copies
 * a local run's files whole into the store and leaves no secret there the
 * redacted file no longer has.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { GardenPaths } from '../../../source/garden/index.js';
import {
  appendRunStream,
  attachStore,
  closeRun,
  createGoal,
  detachStore,
  openRun,
  readRunStream,
  runStreamFile,
  runStreamSize,
  tailRunStream,
  type RunStreamName,
} from '../../../source/store/index.js';
import { openPostgresStore } from '../../../source/store/postgres/store.js';
import { makeTestGarden } from '../../support/garden.js';
import { gardenOn, STORE_KINDS } from './stores.js';

async function runOf(paths: GardenPaths, body = 'stream me') {
  const goal = await createGoal(paths, { type: 'spike', plant: 'gardener', body });
  return openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'm' });
}

const text = (b: Buffer) => b.toString('utf8');

describe.each(STORE_KINDS)('store contract: run streams (%s)', (kind) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it('appends at the size held; another offset is refused with the size; a retried chunk is never stored twice', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = await runOf(paths);
    expect(await runStreamSize(paths, run.id, 'events')).toBe(0);
    expect(await readRunStream(paths, run.id, 'events')).toEqual(Buffer.alloc(0));

    const line = Buffer.from('{"type":"text","text":"héllo ✓"}\n', 'utf8');
    const cut = line.indexOf(Buffer.from('✓')) + 1; // inside the three bytes of ✓
    expect(await appendRunStream(paths, run.id, 'events', 0, line.subarray(0, cut))).toEqual({ appended: true, size: cut });
    // The same chunk again (a retry after a lost answer): refused, the size says where to go on.
    expect(await appendRunStream(paths, run.id, 'events', 0, line.subarray(0, cut))).toEqual({ appended: false, size: cut });
    expect(await appendRunStream(paths, run.id, 'events', cut + 5, Buffer.from('x'))).toEqual({ appended: false, size: cut });
    expect(await appendRunStream(paths, run.id, 'events', cut, Buffer.alloc(0))).toEqual({ appended: true, size: cut });
    expect(await appendRunStream(paths, run.id, 'events', cut, line.subarray(cut))).toEqual({ appended: true, size: line.length });
    expect((await readRunStream(paths, run.id, 'events')).equals(line)).toBe(true);
    expect(await runStreamSize(paths, run.id, 'events')).toBe(line.length);
    // The two streams are apart.
    expect(await runStreamSize(paths, run.id, 'stderr')).toBe(0);
    expect(await appendRunStream(paths, run.id, 'stderr', 0, Buffer.from('warn\n'))).toEqual({ appended: true, size: 5 });
    expect(text(await readRunStream(paths, run.id, 'stderr'))).toBe('warn\n');
    expect((await readRunStream(paths, run.id, 'events')).equals(line)).toBe(true);
  });

  it('two appends at one offset at once: one is stored, the other refused with the size', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = await runOf(paths);
    const answers = await Promise.all(['a\n', 'b\n', 'c\n', 'd\n'].map((t) => appendRunStream(paths, run.id, 'events', 0, Buffer.from(t))));
    expect(answers.filter((a) => a.appended)).toHaveLength(1);
    expect(answers.every((a) => a.size === 2)).toBe(true);
    expect(await runStreamSize(paths, run.id, 'events')).toBe(2);
  });

  it('reads bytes from any offset across chunks, and the last lines from at most the last bytes', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = await runOf(paths);
    const lines = Array.from({ length: 30 }, (_, i) => `{"n":${i}}\n`);
    let size = 0;
    // Chunks that end mid-line too.
    const all = Buffer.from(lines.join(''));
    for (const step of [7, 13, 1, 40, 100, 1000]) {
      const chunk = all.subarray(size, size + step);
      if (chunk.length === 0) break;
      size = (await appendRunStream(paths, run.id, 'events', size, chunk)).size;
    }
    expect(size).toBe(all.length);
    for (const [from, length] of [[0, 5], [5, 3], [6, 20], [19, 1], [all.length - 4, 10], [all.length, 5], [all.length + 10, 5]] as const) {
      expect(text(await readRunStream(paths, run.id, 'events', from, length))).toBe(text(all.subarray(from, from + length)));
    }
    expect(text(await readRunStream(paths, run.id, 'events', 100))).toBe(text(all.subarray(100)));

    expect(await tailRunStream(paths, run.id, 'events', { lines: 3, maxBytes: 1024 })).toEqual({ lines: ['{"n":27}', '{"n":28}', '{"n":29}'], truncated: true, size: all.length });
    expect(await tailRunStream(paths, run.id, 'events', { lines: 100, maxBytes: 1024 })).toMatchObject({ lines: lines.map((l) => l.trim()), truncated: false });
    // From the last 20 bytes: the cut line is dropped.
    expect(await tailRunStream(paths, run.id, 'events', { lines: 100, maxBytes: 20 })).toEqual({ lines: ['{"n":28}', '{"n":29}'], truncated: true, size: all.length });
    expect(await tailRunStream(paths, run.id, 'stderr', { lines: 5, maxBytes: 100 })).toEqual({ lines: [], truncated: false, size: 0 });
  });

  it('a stream the store holds none of is read from this machine’s run directory (a run imported from a file garden)', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = await runOf(paths);
    fs.writeFileSync(runStreamFile(paths, run.id, 'events'), '{"n":1}\n{"n":2}\n');
    expect(text(await readRunStream(paths, run.id, 'events', 8))).toBe('{"n":2}\n');
    expect(await tailRunStream(paths, run.id, 'events', { lines: 1, maxBytes: 100 })).toEqual({ lines: ['{"n":2}'], truncated: true, size: 16 });
    // What the garden holds for appends is the store's (nothing yet there), the file's on the files.
    expect(await runStreamSize(paths, run.id, 'events')).toBe(kind === 'postgres' ? 0 : 16);
  });

  it('an append to a run that does not exist is RUN_NOT_FOUND; a malformed run id too', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    await expect(appendRunStream(paths, '9-nothing-r1', 'events', 0, Buffer.from('x\n'))).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    await expect(appendRunStream(paths, '../etc', 'events', 0, Buffer.from('x\n'))).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('a close keeps the whole stream of a local run, redacted as its files are', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = await runOf(paths);
    const secret = 'sk-stream-0123456789abcdef';
    // The driver writes the run directory's files; part of it already reached the store (a copy under way), the rest not.
    const events = `{"type":"assistant","text":"using ${secret} now"}\n{"type":"result","status":"success"}\n`;
    const stderr = `warning: token ${secret}\npartial last line`;
    fs.writeFileSync(runStreamFile(paths, run.id, 'events'), events);
    fs.writeFileSync(runStreamFile(paths, run.id, 'stderr'), stderr);
    if (kind === 'postgres') await appendRunStream(paths, run.id, 'events', 0, Buffer.from(events.slice(0, events.indexOf('\n') + 1)));
    await closeRun(paths, run.id, 'spike', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' }, redaction: { enabled: true, secrets: [{ name: 'STREAM_KEY', value: secret }] } });
    const stored = { events: text(await readRunStream(paths, run.id, 'events')), stderr: text(await readRunStream(paths, run.id, 'stderr')) };
    expect(stored.events).toBe('{"type":"assistant","text":"using [REDACTED:STREAM_KEY] now"}\n{"type":"result","status":"success"}\n');
    expect(stored.stderr).toBe('warning: token [REDACTED:STREAM_KEY]\npartial last line');
    // The store's copy and the file are the same bytes.
    for (const stream of ['events', 'stderr'] as RunStreamName[]) expect(fs.readFileSync(runStreamFile(paths, run.id, stream), 'utf8')).toBe(stored[stream]);
  });

  it('a close redacts a stream that is only in the store (a remote run uploaded it; no file here)', async () => {
    const garden = await gardenOn(kind);
    cleanup = garden.cleanup;
    const { paths } = garden;
    const run = await runOf(paths);
    const secret = 'pw-0123456789-stream';
    const line = `{"type":"assistant","text":"the password is ${secret}"}\n`;
    await appendRunStream(paths, run.id, 'events', 0, Buffer.from(line));
    if (kind === 'postgres') expect(fs.existsSync(runStreamFile(paths, run.id, 'events'))).toBe(false);
    await closeRun(paths, run.id, 'spike', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' }, redaction: { enabled: true, secrets: [{ name: 'DB_PASSWORD', value: secret }] } });
    expect(text(await readRunStream(paths, run.id, 'events'))).toBe('{"type":"assistant","text":"the password is [REDACTED:DB_PASSWORD]"}\n');
    if (kind === 'postgres') expect(fs.existsSync(runStreamFile(paths, run.id, 'events'))).toBe(false);
  });
});

describe('run streams on one PostgreSQL garden, two machines', () => {
  let cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.reverse()) await c();
    cleanup = [];
  });

  it('what one machine appends the other reads and continues; a close on one is seen whole on the other', async () => {
    const a = await gardenOn('postgres');
    cleanup.push(a.cleanup);
    const b = await makeTestGarden();
    const storeB = await openPostgresStore(a.url!);
    attachStore(b.paths, storeB);
    cleanup.push(async () => {
      detachStore(b.paths);
      await storeB.close();
      b.cleanup();
    });
    const run = await runOf(a.paths);
    await appendRunStream(a.paths, run.id, 'events', 0, Buffer.from('one\n'));
    // Machine b has no run directory of it: the store is where it reads and appends.
    expect(fs.existsSync(runStreamFile(b.paths, run.id, 'events'))).toBe(false);
    expect(text(await readRunStream(b.paths, run.id, 'events'))).toBe('one\n');
    expect(await appendRunStream(b.paths, run.id, 'events', 0, Buffer.from('one\n'))).toEqual({ appended: false, size: 4 });
    expect(await appendRunStream(b.paths, run.id, 'events', 4, Buffer.from('two\n'))).toEqual({ appended: true, size: 8 });
    // Racing appends from both machines: one wins.
    const answers = await Promise.all([appendRunStream(a.paths, run.id, 'events', 8, Buffer.from('a\n')), appendRunStream(b.paths, run.id, 'events', 8, Buffer.from('b\n'))]);
    expect(answers.map((x) => x.appended).sort()).toEqual([false, true]);
    expect(await runStreamSize(a.paths, run.id, 'events')).toBe(10);

    // Machine a's local run: its file has more than the store when it closes; b sees all of it once closed.
    const local = await runOf(a.paths, 'local run');
    fs.writeFileSync(runStreamFile(a.paths, local.id, 'events'), 'first\nsecond\nthird, unfinished');
    await closeRun(a.paths, local.id, 'spike', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' } });
    expect(text(await readRunStream(b.paths, local.id, 'events'))).toBe('first\nsecond\nthird, unfinished');
    expect((await tailRunStream(b.paths, local.id, 'events', { lines: 2, maxBytes: 1024 })).lines).toEqual(['second', 'third, unfinished']);
  });
});
