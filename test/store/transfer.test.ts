/**
 * Moving a garden between stores (issue 27, scope 4; docs/store/level2.md,
 * "Moving between stores"): a realistic file garden — goals run through the
 * coordinator with the command driver's fake agent, 2,000 closed goals
 * written in pak2's own format, open and closed goals, runs with their
 * seals, remote runs with an active and an ended lease, comment threads,
 * and every kind of document, each made by its module's own functions on
 * the files (a conversation and its messages, a supplement and the
 * dispatch packet it froze into, artifacts and their bytes, an operator
 * message and its note, a landing, inbox notes and their read marks,
 * budget.json and its warnings, schedules.json, attention.json, the
 * coordinator's blocked and tend-attention sets, a webhook subscription,
 * its secret and delivery log, a named token, a dashboard invocation) —
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
import crypto from 'node:crypto';
import type { LeaseRecord, RunRecord } from '../../source/contracts/index.js';
import { reportBlocked } from '../../source/coordinator/blocked.js';
import { queueTends } from '../../source/coordinator/index.js';
import { setTendsPaused } from '../../source/submit/tend.js';
import { startDashboardInvocation } from '../../source/lifecycle/dashboard-invocations.js';
import { addSubscription, appendDelivery, readDeliveries, readSecret, readSubscriptions } from '../../source/server/webhooks/store.js';
import { createToken, readTokens } from '../../source/server/tokens.js';
import {
  acknowledgeAttention,
  appendArtifact,
  appendComment,
  appendConversationMessage,
  appendGoalSupplement,
  attachStore,
  closeRun,
  createGoal,
  deliverReplyNote,
  detachStore,
  DOCUMENT_FILES,
  emitOperatorMessage,
  endLease,
  freezeDispatchPacket,
  LINE_FILES,
  listActiveLeases,
  listGoals,
  listInbox,
  listLandings,
  listOperatorNotes,
  listRuns,
  localArtifactContent,
  markNoteRead,
  openConversation,
  openRun,
  readArtifacts,
  readBudgetOverrides,
  readComments,
  readConversationMessages,
  readDispatchPacket,
  readEvents,
  readLease,
  readSupplements,
  setConversationContinuity,
  transitionGoal,
  writeArtifactContent,
  writeBudgetOverride,
  writeBudgetWarned,
  writeLanding,
  writeLease,
  writeSchedulesState,
} from '../../source/store/index.js';
import { openPostgresStore } from '../../source/store/postgres/store.js';
import { compareRecordFiles, DOCUMENT_KINDS, documentOfFile, exportGarden, importGarden, RECORD_KINDS } from '../../source/store/postgres/transfer.js';
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
  await writeDocuments(queued.id);
}, 120_000);

/** The bytes of an artifact's content: not UTF-8, so only bytes kept as bytes come back. */
const ARTIFACT_BYTES = Buffer.from([0x64, 0x69, 0x66, 0x66, 0x0a, 0x00, 0xff, 0xfe, 0x80, 0x0a]);

/**
 * Every kind of document, each through its module's functions on the
 * files: a conversation-origin goal (CLOSED + 7) with a supplement,
 * dispatched to a running gardener run that froze its packet, has
 * artifacts, emitted an operator message and has a landing; and the
 * garden-wide ones.
 */
async function writeDocuments(queued: string): Promise<void> {
  const { paths, config } = garden;
  const now = new Date();
  const conversation = await openConversation(paths, 'operator', now);
  await appendConversationMessage(paths, conversation.id, { sender: 'operator', text: 'add a footer, please' });
  await appendConversationMessage(paths, conversation.id, { sender: 'garden', text: 'Queued it.', note: 'reply.md' });
  await setConversationContinuity(paths, conversation.id, 'claude', 'session-1', now, 'gardener');
  const asked = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'add a footer', conversation_id: conversation.id });
  await appendGoalSupplement(paths, asked.id, 'in blue, please');
  await appendGoalSupplement(paths, asked.id, 'and “smaller” — ünïcode too', 'garden');
  await transitionGoal(paths, asked.id, 'dispatched');
  const run = await openRun(paths, asked, { plant: 'gardener', driver: 'success', model: 'default' });
  await freezeDispatchPacket(paths, asked, run.id, now);
  await transitionGoal(paths, asked.id, 'running');
  const sha256 = crypto.createHash('sha256').update(ARTIFACT_BYTES).digest('hex');
  await writeArtifactContent(paths, run.id, 'diff.patch', ARTIFACT_BYTES);
  await appendArtifact(paths, { name: 'diff.patch', kind: 'diff', run: run.id, bytes: ARTIFACT_BYTES.length, sha256, attached_at: now.toISOString(), by: 'runner:box-1' });
  await appendArtifact(paths, { name: 'ci', kind: 'link', run: run.id, url: 'https://ci.test/build/1', attached_at: now.toISOString(), by: 'runner:box-1' });
  await emitOperatorMessage(garden, { run: run.id, kind: 'tend_survey', title: 'All well', body: 'Nothing is stuck.', findings: ['the footer is queued'] }, now);
  const commit = (c: string) => c.repeat(40);
  await writeLanding(paths, { run: run.id, goal: asked.id, plant: 'gardener', state: 'queued', branch: `pak2/${run.id}`, head_commit: commit('a'), base_branch: 'main', base_commit: commit('b'), queued_at: now.toISOString(), updated_at: now.toISOString(), attempts: 0 });

  const note = await deliverReplyNote(paths, config, 'footer', '# Footer\n\nIt is queued.', now);
  await deliverReplyNote(paths, config, 'later', 'No heading, and no newline at the end', new Date(now.getTime() + 1000));
  await markNoteRead(paths, config, path.basename(note));
  await writeBudgetOverride(paths, 'garden_day_usd', 12.5, now);
  await writeBudgetOverride(paths, 'run_usd', null, now);
  await writeBudgetWarned(paths, [`garden_day:${now.toISOString().slice(0, 10)}`]);
  await writeSchedulesState(paths, { schedules: { nightly: { since: now.toISOString(), last_goal: queued } } });
  await acknowledgeAttention(paths, [{ id: `blocked:${queued}:plant`, goal: queued }], new Set([`blocked:${queued}:plant`]), { name: 'operator' }, now);
  await reportBlocked(paths, [{ goal: queued, reason: 'plant gardener is busy' }], now);
  await queueTends(garden, { queue: [], withheld: [], attentionCovered: [queued], attentionNoted: [queued] }, [], now);
  await setTendsPaused(garden, true, 'operator', now);
  const { subscription } = await addSubscription(paths, { url: 'http://127.0.0.1:9/hook', events: ['GoalClosed'], secret: 'sekrit-signing-key' }, now);
  await appendDelivery(paths, { ts: now.toISOString(), subscription: subscription.id, url: subscription.url, event: '01ARZ3NDEKTSV4RRFFQ69G5FAV', event_type: 'GoalClosed', attempt: 1, status_code: null, latency_ms: 12, outcome: 'retry', next_retry_at: now.toISOString(), error: 'connection refused' });
  await createToken(paths, { role: 'runner', name: 'box-1' }, now);
  const finish = await startDashboardInvocation(paths);
  await finish();
}

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
    expect(counts).toMatchObject({ goals: CLOSED + 7, runs: CLOSED + 6, events: readEventLog(garden).length, leases: 2, comments: 3 });
    // Each document kind (the cycle's own startup conversation and notes besides these).
    expect(counts).toMatchObject({
      'conversation messages': expect.any(Number),
      supplements: 2,
      'dispatch packets': 1,
      artifacts: 2,
      'artifact contents': 1,
      'operator messages': 1,
      'operator notes': 1,
      landings: 1,
      'inbox read marks': 1,
      'budget.json': 1,
      'budget.warned.json': 1,
      'schedules.json': 1,
      'attention.json': 1,
      'coordinator.blocked.json': 1,
      'coordinator.tend-attention.json': 1,
      'coordinator.tend-withheld.json': 1,
      'tend.json': 1,
      'webhook subscriptions': 1,
      'webhook secrets': 1,
      'webhook deliveries': 1,
      tokens: 1,
      'dashboard invocations': 1,
    });
    expect(counts.conversations).toBeGreaterThanOrEqual(1);
    expect(counts['inbox notes']).toBeGreaterThanOrEqual(2);
    expect(DOCUMENT_KINDS.filter((k) => !counts[k.name]).map((k) => k.name)).toEqual([]);

    exported = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-export-'));
    const result = await exportGarden(db.url, exported);
    expect(Object.fromEntries(result.kinds.map((k) => [k.kind, k.records]))).toEqual(counts);

    const comparison = compareRecordFiles(paths.runtimeRoot, exported);
    expect(comparison).toMatchObject({ differing: [], onlyInFirst: [], onlyInSecond: [] });
    // Every goal and its .counter and .closed, each run's meta.json and seal, the log, both leases, both threads, and one file per document or line parent.
    const documentFiles = DOCUMENT_KINDS.reduce((sum, kind) => sum + kind.list(paths.runtimeRoot).length, 0);
    expect(comparison.identical).toBe(CLOSED + 7 + 2 + 2 * (CLOSED + 6) + 1 + 2 + 2 + documentFiles);
    expect(comparison.files).toBe(comparison.identical);
    expect(fs.existsSync(path.join(exported, 'leases', 'ended', `${CLOSED + 6}-a-remote-run-that-finished-r1.json`))).toBe(true);
    // File by file: each document file of the garden is back, its bytes the same; notes keep their time; secrets stay out of git and private.
    for (const kind of DOCUMENT_KINDS) {
      for (const rel of kind.list(paths.runtimeRoot)) {
        expect(fs.readFileSync(path.join(exported, rel)).equals(fs.readFileSync(path.join(paths.runtimeRoot, rel))), rel).toBe(true);
        expect(documentOfFile(rel)?.kind, rel).toBe(kind.kind);
        if (kind.form === 'text') expect(fs.statSync(path.join(exported, rel)).mtime.toISOString(), rel).toBe(fs.statSync(path.join(paths.runtimeRoot, rel)).mtime.toISOString());
      }
    }
    expect(fs.readFileSync(path.join(exported, 'runs', `${CLOSED + 7}-add-a-footer-r1`, 'artifacts', 'diff.patch')).equals(ARTIFACT_BYTES)).toBe(true);
    expect(fs.readFileSync(path.join(exported, 'webhooks', 'secrets', '.gitignore'), 'utf8')).toBe('*\n!.gitignore\n');
    const secret = (await readSubscriptions(paths))[0]!.id;
    expect(fs.statSync(path.join(exported, 'webhooks', 'secrets', secret)).mode & 0o077).toBe(0);
    expect(fs.readFileSync(path.join(exported, 'serve', '.gitignore'), 'utf8')).toContain('tokens.json\n');

    // The records read back through the store functions, and the store continues the garden.
    const fileInbox = await listInbox(paths, garden.config);
    const fileNotes = await listOperatorNotes(paths, garden.config);
    const store = await openPostgresStore(db.url);
    attachStore(paths, store);
    try {
      const { goals, problems } = await listGoals(paths);
      expect(problems).toEqual([]);
      expect(goals).toHaveLength(CLOSED + 7);
      expect((await listRuns(paths)).runs).toHaveLength(CLOSED + 6);
      // The documents read back through their modules, as the files read.
      const run = `${CLOSED + 7}-add-a-footer-r1`;
      expect((await readSupplements(paths, `${CLOSED + 7}-add-a-footer`)).map((x) => x.text)).toEqual(['in blue, please', 'and “smaller” — ünïcode too']);
      expect((await readDispatchPacket(paths, run))?.supplements).toHaveLength(2);
      expect((await readArtifacts(paths, run)).map((a) => a.name)).toEqual(['diff.patch', 'ci']);
      const content = await localArtifactContent(paths, run, 'diff.patch');
      expect(content && fs.readFileSync(content).equals(ARTIFACT_BYTES)).toBe(true);
      expect((await listLandings(paths)).landings.map((l) => l.run)).toEqual([run]);
      expect(await listInbox(paths, garden.config)).toEqual(fileInbox);
      expect(await listOperatorNotes(paths, garden.config)).toEqual(fileNotes);
      expect(await readBudgetOverrides(paths)).toEqual({ garden_day_usd: 12.5, run_usd: null });
      const [subscription] = await readSubscriptions(paths);
      expect(await readSecret(paths, subscription!.id)).toBe('sekrit-signing-key');
      expect((await readDeliveries(paths)).map((d) => d.outcome)).toEqual(['retry']);
      expect((await readTokens(paths)).map((t) => t.name)).toEqual(['box-1']);
      const conversationId = fs.readdirSync(paths.conversationsDir).sort().at(-1)!;
      expect((await readConversationMessages(paths, conversationId)).map((m) => m.text)).toContain('Queued it.');
      const { events } = await readEvents(paths);
      expect(events.map((e) => e.id)).toEqual(readEventLog(garden).map((e) => e.id));
      expect((await readComments(paths, `${CLOSED + 4}-still-queued`)).map((c) => c.body)).toEqual(['Which branch?', 'main']);
      expect((await listActiveLeases(paths)).leases.map((l) => l.run)).toEqual([`${CLOSED + 5}-a-remote-run-still-going-r1`]);
      expect((await readLease(paths, `${CLOSED + 6}-a-remote-run-that-finished-r1`))?.state).toBe('finished');
      const next = await createGoal(paths, { type: 'build', plant: 'gardener', body: 'the first goal on the store' });
      expect(next.id).toBe(`${CLOSED + 8}-the-first-goal-on-the-store`);
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
    expect((error as Error).message).toMatch(/^store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+ is not empty \(\d+ goals, \d+ runs, \d+ events, 2 leases, 3 comments, \d+ documents, \d+ document lines\)/);
    expect((error as Error).message).not.toContain('sekrit');
    const store = await openPostgresStore(db.url);
    try {
      expect(await store.goalRecords({})).toHaveLength(CLOSED + 7);
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
      // Documents: a line that is no JSON, a landing failing its contract, one naming another run than its file.
      fs.mkdirSync(path.join(copy, 'supplements'));
      fs.writeFileSync(path.join(copy, 'supplements', '4-closed-goal-4.jsonl'), '{"ts":"2026-01-01T00:00:00.000Z","text":"a","source":"operator"}\n{"ts": \n');
      fs.mkdirSync(path.join(copy, 'landings'));
      fs.writeFileSync(path.join(copy, 'landings', '1-closed-goal-1-r1.json'), '{"run": "1-closed-goal-1-r1"}\n');
      fs.writeFileSync(path.join(copy, 'landings', '2-closed-goal-2-r1.json'), fs.readFileSync(path.join(copy, 'landings', '1-closed-goal-1-r1.json')));
      fs.writeFileSync(path.join(copy, 'budget.json'), '{"caps": {"run_usd": 2}, "updated_at": "2026-01-01T00:00:00.000Z"}');
      const db = await testDatabase('pak2_transfer');
      databases.push(db);
      const refused = await importGarden(copy, db.url);
      expect(refused.imported).toBe(false);
      expect(refused.damaged.map((d) => d.file)).toEqual([
        'goals/3-closed-goal-3.json',
        'events/coordinator.jsonl: line 41',
        'supplements/4-closed-goal-4.jsonl: line 2',
        'landings/1-closed-goal-1-r1.json',
        'landings/2-closed-goal-2-r1.json',
      ]);
      expect(refused.damaged[0]!.message).toMatch(/^malformed JSON/);
      expect(refused.damaged[1]!.message).toMatch(/INVALID_EVENT_TYPE/);
      expect(refused.damaged[2]!.message).toMatch(/^malformed JSON/);
      expect(refused.damaged[3]!.message).toMatch(/^goal: /);
      expect(refused.notes).toContainEqual({ file: 'budget.json', message: "not in pak2's own form (JSON, two spaces, a newline): the export writes it in that form" });
      const store = await openPostgresStore(db.url);
      try {
        expect(await store.goalRecords({})).toEqual([]);
      } finally {
        await store.close();
      }
      const skipped = await importGarden(copy, db.url, { skipDamaged: true });
      expect(skipped.imported).toBe(true);
      expect(Object.fromEntries(skipped.kinds.map((k) => [k.kind, k.records]))).toMatchObject({ goals: 4, runs: 5, events: 40, supplements: 1, landings: 0, 'budget.json': 1 });
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

  it('knows every record kind by its layout, and every document and line kind of the store, both ways', () => {
    expect(RECORD_KINDS.filter((k) => !k.document).map((k) => k.name)).toEqual(['goals', 'runs', 'events', 'leases', 'comments']);
    expect(DOCUMENT_KINDS.map((k) => k.kind).sort()).toEqual([...Object.keys(DOCUMENT_FILES), ...Object.keys(LINE_FILES)].sort());
    const keys: Record<string, string> = {
      conversation: 'c-20260501T100000-0000abcd',
      'conversation-message': 'c-20260501T100000-0000abcd',
      'inbox-note': 'my-garden/20260501T091200Z-startup.md',
      'inbox-read': 'my-garden',
      'operator-note': 'garden/om-12-tidy-up-r2-3',
      'operator-message': '12-tidy-up-r2',
      supplement: '12-tidy-up',
      'dispatch-packet': '12-tidy-up-r2',
      artifact: '12-tidy-up-r2',
      'artifact-content': '12-tidy-up-r2/diff.patch',
      landing: '12-tidy-up-r2',
      'webhook-secret': 'wh-0123abcd',
      tokens: 'tokens.json',
      'dashboard-invocation': '20260501T100000-0123abcd',
    };
    for (const kind of DOCUMENT_KINDS) {
      const key = keys[kind.kind] ?? 'garden';
      expect(documentOfFile(kind.file(key)), kind.kind).toEqual({ kind: kind.kind, key });
    }
    // The run's own files, and what is not a record, stand for no document.
    for (const rel of ['runs/12-tidy-up-r2/meta.json', 'runs/12-tidy-up-r2/agent.jsonl', 'inbox/garden/operator/notes.md', 'webhooks/secrets/.gitignore', 'landings/.lock', 'serve/token']) expect(documentOfFile(rel), rel).toBeUndefined();
  });
});
