import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateActiveThreads } from '../../source/contracts/index.js';
import { SnapshotLoader } from '../../source/snapshot/index.js';
import {
  activeThreadsFile,
  closeThread,
  readActiveThreads,
  StoreError,
  upsertThread,
  writeActiveThreads,
} from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let file: string;
beforeEach(async () => {
  garden = await makeTestGarden();
  file = activeThreadsFile(garden.paths, 'gardener');
});
afterEach(() => garden.cleanup());

const T1 = new Date('2026-03-01T10:00:00.000Z');
const T2 = new Date('2026-03-02T10:00:00.000Z');

/** Expects `promise` to reject with a StoreError of `code` whose message contains every one of `parts`. */
async function expectStoreError(promise: Promise<unknown>, code: string, ...parts: string[]): Promise<StoreError> {
  const error = await promise.then(
    () => expect.fail('expected a StoreError'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).code).toBe(code);
  for (const part of parts) expect((error as StoreError).message).toContain(part);
  return error as StoreError;
}

describe('readActiveThreads', () => {
  it('a missing file is no threads', async () => {
    expect(fs.existsSync(file)).toBe(false);
    expect(await readActiveThreads(garden.paths, 'gardener')).toEqual([]);
  });

  it('returns the threads of a valid file', async () => {
    const thread = { id: 't-a', title: 'A', status: 'blocked', updated_at: T1.toISOString() };
    fs.writeFileSync(file, JSON.stringify({ plant: 'gardener', updated_at: T1.toISOString(), threads: [thread] }));
    expect(await readActiveThreads(garden.paths, 'gardener')).toEqual([thread]);
  });

  it.each([
    ['malformed JSON', '{"plant": ', 'malformed JSON'],
    ['a bad status', JSON.stringify({ plant: 'gardener', updated_at: '2026-03-01T10:00:00Z', threads: [{ id: 't-a', title: 'A', status: 'later', updated_at: '2026-03-01T10:00:00Z' }] }), 'threads.0.status: INVALID_STATUS'],
    ['another plant', JSON.stringify({ plant: 'helper', updated_at: '2026-03-01T10:00:00Z', threads: [] }), 'plant: INVALID_PLANT_NAME'],
    ['the old bare list', JSON.stringify([{ title: 'A' }]), '(document): INVALID_SHAPE'],
  ])('%s is INVALID_RECORD naming the file and field', async (_name, text, detail) => {
    fs.writeFileSync(file, text);
    const error = await expectStoreError(readActiveThreads(garden.paths, 'gardener'), 'INVALID_RECORD', file, detail);
    expect(error.file).toBe(file);
  });

  it('refuses a plant name that is not one path segment', async () => {
    await expectStoreError(readActiveThreads(garden.paths, '../x'), 'INVALID_PLANT_NAME');
  });
});

describe('writeActiveThreads', () => {
  it('writes a validated document atomically, stamped with the time', async () => {
    const threads = [{ id: 't-a', title: 'A', status: 'active' as const, updated_at: T1.toISOString() }];
    const written = await writeActiveThreads(garden.paths, 'gardener', threads, T2);
    expect(written).toEqual({ plant: 'gardener', updated_at: T2.toISOString(), threads });
    const onDisk = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(onDisk).toEqual(written);
    expect(validateActiveThreads(onDisk, { plant: 'gardener' })).toEqual([]);
    expect(fs.readdirSync(path.dirname(file)).filter((f) => f.includes('.tmp') || f.startsWith('.'))).toEqual([]);
  });

  it('refuses an invalid thread, naming the file and field, and writes nothing', async () => {
    const bad = [{ id: 'nope', title: 'A', status: 'active', updated_at: T1.toISOString() }] as never;
    await expectStoreError(writeActiveThreads(garden.paths, 'gardener', bad, T2), 'INVALID_RECORD', file, 'threads.0.id: INVALID_ID_FORMAT');
    expect(fs.existsSync(file)).toBe(false);
  });

  it('refuses an unknown plant', async () => {
    await expectStoreError(writeActiveThreads(garden.paths, 'nobody', [], T2), 'PLANT_NOT_FOUND', 'nobody');
  });
});

describe('upsertThread and closeThread', () => {
  it('adds threads in order, updates one in place keeping the fields not given, and closes one', async () => {
    await upsertThread(garden.paths, 'gardener', { id: 't-a', title: 'A', status: 'active', summary: 'first' }, T1);
    await upsertThread(garden.paths, 'gardener', { id: 't-b', title: 'B', status: 'waiting', goals: ['2-b'] }, T1);
    const updated = await upsertThread(garden.paths, 'gardener', { id: 't-a', status: 'blocked', next: 'ask the operator' }, T2);
    expect(updated).toEqual({ id: 't-a', title: 'A', status: 'blocked', summary: 'first', next: 'ask the operator', updated_at: T2.toISOString() });
    let threads = await readActiveThreads(garden.paths, 'gardener');
    expect(threads.map((t) => [t.id, t.status, t.updated_at])).toEqual([
      ['t-a', 'blocked', T2.toISOString()],
      ['t-b', 'waiting', T1.toISOString()],
    ]);

    const closed = await closeThread(garden.paths, 'gardener', 't-b', { now: T2 });
    expect(closed.updated_at).toBe(T2.toISOString());
    threads = await readActiveThreads(garden.paths, 'gardener');
    expect(threads.find((t) => t.id === 't-b')).toMatchObject({ status: 'done', updated_at: T2.toISOString(), goals: ['2-b'] });

    await closeThread(garden.paths, 'gardener', 't-a', { remove: true, now: T2 });
    expect((await readActiveThreads(garden.paths, 'gardener')).map((t) => t.id)).toEqual(['t-b']);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  it('a new thread needs a title and status; a bad update changes nothing', async () => {
    await expectStoreError(upsertThread(garden.paths, 'gardener', { id: 't-a' }, T1), 'INVALID_RECORD', 'threads.0.title: MISSING_REQUIRED_FIELD');
    expect(fs.existsSync(file)).toBe(false);
    await upsertThread(garden.paths, 'gardener', { id: 't-a', title: 'A', status: 'active' }, T1);
    const before = fs.readFileSync(file, 'utf8');
    await expectStoreError(upsertThread(garden.paths, 'gardener', { id: 't-a', title: 'two\nlines' }, T2), 'INVALID_RECORD', 'threads.0.title: INVALID_TITLE');
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
  });

  it('closing an unknown thread is THREAD_NOT_FOUND; a malformed file is never overwritten', async () => {
    await upsertThread(garden.paths, 'gardener', { id: 't-a', title: 'A', status: 'active' }, T1);
    await expectStoreError(closeThread(garden.paths, 'gardener', 't-zz'), 'THREAD_NOT_FOUND', 't-zz');
    fs.writeFileSync(file, '{ torn');
    await expectStoreError(upsertThread(garden.paths, 'gardener', { id: 't-b', title: 'B', status: 'active' }, T2), 'INVALID_RECORD', file);
    expect(fs.readFileSync(file, 'utf8')).toBe('{ torn');
  });

  it('concurrent upserts all land', async () => {
    await Promise.all(Array.from({ length: 8 }, (_, i) => upsertThread(garden.paths, 'gardener', { id: `t-${i}`, title: `T${i}`, status: 'active' }, T1)));
    expect((await readActiveThreads(garden.paths, 'gardener')).map((t) => t.id).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `t-${i}`).sort());
  });
});

describe('the snapshot reads threads through the validated reader', () => {
  it('shows valid threads as ThreadViews', async () => {
    await upsertThread(garden.paths, 'gardener', { id: 't-a', title: 'Flaky test', status: 'waiting', next: 'rerun it' }, T1);
    const snapshot = await new SnapshotLoader(garden).load();
    expect(snapshot.plants[0]!.threads).toEqual([{ title: 'Flaky test', status: 'waiting', detail: 'rerun it' }]);
    expect(snapshot.problems).toEqual([]);
  });

  it('a malformed file is no threads and one problem naming the file and field', async () => {
    fs.writeFileSync(file, JSON.stringify({ plant: 'gardener', updated_at: 'yesterday', threads: [] }));
    const snapshot = await new SnapshotLoader(garden).load();
    expect(snapshot.plants[0]!.threads).toEqual([]);
    expect(snapshot.problems).toEqual([expect.stringContaining(`${file}: updated_at: INVALID_TIMESTAMP`)]);
  });
});
