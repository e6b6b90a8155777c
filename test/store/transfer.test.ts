/**
 * Moving a garden between stores (issue 27, scope 4; docs/store/level2.md,
 * "Moving between stores"): a realistic file garden — goals run through the
 * coordinator with the command driver's fake agent, 2,000 closed goals
 * written in pak2's own format, open and closed goals, runs with their
 * seals, remote runs with an active and an ended lease, comment threads —
 * imported into an empty PostgreSQL store, exported into a new directory,
 * and compared file by file, byte for byte. The store it made then works
 * as the garden's store, continuing its goal numbers and event ids.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error a plain ES module of the benches, shared with this test
import { writeClosedGoals } from '../../bench/lib/closed-garden.mjs';
import type { LeaseRecord, RunRecord } from '../../source/contracts/index.js';
import {
  appendComment,
  attachStore,
  closeRun,
  createGoal,
  detachStore,
  endLease,
  listActiveLeases,
  listGoals,
  listRuns,
  openRun,
  readComments,
  readEvents,
  readLease,
  transitionGoal,
  writeLease,
} from '../../source/store/index.js';
import { openPostgresStore } from '../../source/store/postgres/store.js';
import { compareRecordFiles, exportGarden, importGarden, RECORD_KINDS } from '../../source/store/postgres/transfer.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';
import { testDatabase } from '../support/pg-test.js';

type Garden = Awaited<ReturnType<typeof makeTestGarden>>;

const CLOSED = 2000;
let garden: Garden;
let exported: string;
const databases: { drop(): Promise<void> }[] = [];

/** A remote run of a new goal, running, with its lease written (active). */
async function remoteRun(body: string, expiresInMs: number): Promise<{ run: RunRecord; lease: LeaseRecord }> {
  const { paths } = garden;
  const goal = await createGoal(paths, { type: 'build', plant: 'gardener', body });
  await transitionGoal(paths, goal.id, 'dispatched');
  const lease = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const run = await openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'default', runner: { name: 'box-1', host: 'box-1.test', lease } });
  await transitionGoal(paths, goal.id, 'running');
  const now = new Date();
  const record: LeaseRecord = {
    id: lease,
    run: run.id,
    goal: goal.id,
    plant: 'gardener',
    runner: { name: 'box-1', host: 'box-1.test' },
    state: 'active',
    ttl_seconds: 60,
    claimed_at: now.toISOString(),
    renewed_at: now.toISOString(),
    expires_at: new Date(now.getTime() + expiresInMs).toISOString(),
    heartbeats: 2,
    progress: 40,
    status_line: 'running the tests',
  };
  await writeLease(paths, record);
  return { run, lease: record };
}

beforeAll(async () => {
  garden = await makeTestGarden();
  const { paths } = garden;
  // History first (in the past): the ledger's lines stay in close order.
  writeClosedGoals(paths.runtimeRoot, { count: CLOSED });
  for (const body of ['add the date to the footer', 'fix the flaky clock test', 'write the changelog']) {
    const submitted = await runCli(['submit', '--plant', 'gardener', '--type', 'build', '--body', body], { cwd: paths.gardenRoot });
    expect(submitted.code, submitted.stderr).toBe(0);
  }
  const cycle = await runCli(['cycle', '--no-ui', '--until-idle'], { cwd: paths.gardenRoot, timeoutMs: 60_000 });
  expect(cycle.code, cycle.stderr).toBe(0);
  // Open goals, a thread with a question and its answer, remote runs with an active and an ended lease.
  const queued = await createGoal(paths, { type: 'fix', plant: 'gardener', body: 'still queued', priority: 70 });
  const question = await appendComment(paths, { goal: queued.id, author: 'operator', body: 'Which branch?', blocking: true });
  await appendComment(paths, { goal: queued.id, author: 'agent:x', body: 'main', blocking: false, answers: question.id });
  await appendComment(paths, { goal: `${CLOSED}-closed-goal-${CLOSED}`, author: 'operator', body: 'looks good', blocking: false });
  await remoteRun('a remote run still going', 60_000);
  const ended = await remoteRun('a remote run that finished', 60_000);
  await closeRun(paths, ended.run.id, 'build', { status: 'success', cost: { source: 'provider', usd: 0.02 }, reflection: 'Learned: it ran remotely.', by: 'runner' });
  await endLease(paths, ended.lease, 'finished', new Date());
}, 120_000);

afterAll(async () => {
  garden?.cleanup();
  if (exported) fs.rmSync(exported, { recursive: true, force: true });
  for (const db of databases) await db.drop();
});

describe('pak2 store import, then export: the round trip', () => {
  it('gives every record file back byte for byte, and the store it made goes on as the garden\'s store', async () => {
    const { paths } = garden;
    const db = await testDatabase('pak2_transfer');
    databases.push(db);
    const imported = await importGarden(paths.runtimeRoot, db.url);
    expect(imported.damaged).toEqual([]);
    expect(imported.notes).toEqual([]);
    expect(imported.imported).toBe(true);
    const counts = Object.fromEntries(imported.kinds.map((k) => [k.kind, k.records]));
    expect(counts).toEqual({ goals: CLOSED + 6, runs: CLOSED + 5, events: readEventLog(garden).length, leases: 2, comments: 3 });

    exported = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-export-'));
    const result = await exportGarden(db.url, exported);
    expect(Object.fromEntries(result.kinds.map((k) => [k.kind, k.records]))).toEqual(counts);

    const comparison = compareRecordFiles(paths.runtimeRoot, exported);
    expect(comparison).toMatchObject({ differing: [], onlyInFirst: [], onlyInSecond: [] });
    // Every goal and its .counter and .closed, each run's meta.json and seal, the log, both leases, both threads.
    expect(comparison.identical).toBe(CLOSED + 6 + 2 + 2 * (CLOSED + 5) + 1 + 2 + 2);
    expect(comparison.files).toBe(comparison.identical);
    expect(fs.existsSync(path.join(exported, 'leases', 'ended', `${CLOSED + 6}-a-remote-run-that-finished-r1.json`))).toBe(true);

    // The records read back through the store functions, and the store continues the garden.
    const store = await openPostgresStore(db.url);
    attachStore(paths, store);
    try {
      const { goals, problems } = await listGoals(paths);
      expect(problems).toEqual([]);
      expect(goals).toHaveLength(CLOSED + 6);
      expect((await listRuns(paths)).runs).toHaveLength(CLOSED + 5);
      const { events } = await readEvents(paths);
      expect(events.map((e) => e.id)).toEqual(readEventLog(garden).map((e) => e.id));
      expect((await readComments(paths, `${CLOSED + 4}-still-queued`)).map((c) => c.body)).toEqual(['Which branch?', 'main']);
      expect((await listActiveLeases(paths)).leases.map((l) => l.run)).toEqual([`${CLOSED + 5}-a-remote-run-still-going-r1`]);
      expect((await readLease(paths, `${CLOSED + 6}-a-remote-run-that-finished-r1`))?.state).toBe('finished');
      const next = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'the first goal on the store' });
      expect(next.id).toBe(`${CLOSED + 7}-the-first-goal-on-the-store`);
      const after = (await readEvents(paths)).events;
      expect(after).toHaveLength(events.length + 1);
      expect(after.at(-1)!.id! > events.at(-1)!.id!).toBe(true);
    } finally {
      detachStore(paths);
      await store.close();
    }
  }, 120_000);

  it('refuses a store that holds records, naming it with its password hidden, and writes nothing', async () => {
    const db = await testDatabase('pak2_transfer');
    databases.push(db);
    const withPassword = db.url.replace('postgres@', 'postgres:sekrit@');
    expect((await importGarden(garden.paths.runtimeRoot, withPassword)).imported).toBe(true);
    const error = await importGarden(garden.paths.runtimeRoot, withPassword).catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'StoreError', code: 'IO_ERROR' });
    expect((error as Error).message).toMatch(/^store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+ is not empty \(\d+ goals, \d+ runs, \d+ events, 2 leases, 3 comments\)/);
    expect((error as Error).message).not.toContain('sekrit');
    const store = await openPostgresStore(db.url);
    try {
      expect(await store.goalRecords({})).toHaveLength(CLOSED + 6);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('refuses damaged records before writing anything, and with skipDamaged leaves out exactly those', async () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-damaged-'));
    try {
      writeClosedGoals(copy, { count: 5 });
      fs.writeFileSync(path.join(copy, 'goals', '3-closed-goal-3.json'), '{"id": "3-closed-goal-3", ');
      fs.appendFileSync(path.join(copy, 'events', 'coordinator.jsonl'), '{"type":"NoSuchEvent","ts":"2026-01-01T00:00:00.000Z"}\n');
      const db = await testDatabase('pak2_transfer');
      databases.push(db);
      const refused = await importGarden(copy, db.url);
      expect(refused.imported).toBe(false);
      expect(refused.damaged.map((d) => d.file)).toEqual(['goals/3-closed-goal-3.json', 'events/coordinator.jsonl: line 41']);
      expect(refused.damaged[0]!.message).toMatch(/^malformed JSON/);
      expect(refused.damaged[1]!.message).toMatch(/INVALID_EVENT_TYPE/);
      const store = await openPostgresStore(db.url);
      try {
        expect(await store.goalRecords({})).toEqual([]);
      } finally {
        await store.close();
      }
      const skipped = await importGarden(copy, db.url, { skipDamaged: true });
      expect(skipped.imported).toBe(true);
      expect(Object.fromEntries(skipped.kinds.map((k) => [k.kind, k.records]))).toMatchObject({ goals: 4, runs: 5, events: 40 });
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  }, 60_000);

  it('says which files will not come back byte for byte, and why', async () => {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-notes-'));
    try {
      writeClosedGoals(copy, { count: 3 });
      const goalFile = path.join(copy, 'goals', '1-closed-goal-1.json');
      fs.writeFileSync(goalFile, JSON.stringify(JSON.parse(fs.readFileSync(goalFile, 'utf8'))));
      fs.writeFileSync(path.join(copy, 'runs', '2-closed-goal-2-r1', 'meta.json'), '{"edited": true}\n');
      fs.rmSync(path.join(copy, 'runs', '.seals', '3-closed-goal-3-r1.json'));
      fs.writeFileSync(path.join(copy, 'goals', 'notes.json'), '{}\n');
      const db = await testDatabase('pak2_transfer');
      databases.push(db);
      const imported = await importGarden(copy, db.url);
      expect(imported.damaged).toEqual([]);
      expect(imported.notes.map((n) => n.file)).toEqual(['goals/notes.json', 'goals/1-closed-goal-1.json', 'runs/2-closed-goal-2-r1/meta.json', 'runs/.seals/3-closed-goal-3-r1.json']);
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-notes-out-'));
      try {
        await exportGarden(db.url, out);
        const comparison = compareRecordFiles(copy, out);
        expect(comparison.differing).toEqual(['goals/1-closed-goal-1.json', 'runs/2-closed-goal-2-r1/meta.json']);
        expect(comparison.onlyInSecond).toEqual(['runs/.seals/3-closed-goal-3-r1.json']);
      } finally {
        fs.rmSync(out, { recursive: true, force: true });
      }
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  }, 60_000);

  it('exports into a new or empty directory only', async () => {
    const db = await testDatabase('pak2_transfer');
    databases.push(db);
    const full = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-full-'));
    try {
      fs.writeFileSync(path.join(full, 'keep.txt'), 'mine\n');
      await expect(exportGarden(db.url, full)).rejects.toMatchObject({ name: 'UserError', message: `${full}: not empty` });
      await expect(exportGarden(db.url, path.join(full, 'keep.txt'))).rejects.toMatchObject({ message: `${path.join(full, 'keep.txt')}: not a directory` });
      expect(fs.readdirSync(full)).toEqual(['keep.txt']);
    } finally {
      fs.rmSync(full, { recursive: true, force: true });
    }
  });

  it('knows every record kind by its layout', () => {
    expect(RECORD_KINDS.map((k) => k.name)).toEqual(['goals', 'runs', 'events', 'leases', 'comments']);
  });
});
