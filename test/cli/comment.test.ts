/**
 * `pak2 comment` run as the real CLI (docs/runners/level2.md, "Comments and
 * blocking questions"): posting, blocking, answering, the thread, --wait,
 * an agent's comments (PAK2_RUN_ID; PAK2_OUTBOX under pak2 runner), bad
 * input; and what `show`, `goals` and `runs` print of threads, blocked
 * goals, abandoned runs, runners and acceptance items.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { readComments as readThread, readGoal as readGoalRecord } from '../../source/store/index.js';
import { submitGoal } from '../../source/submit/index.js';
import { runCli, startCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
let goalId: string;
beforeEach(async () => {
  garden = await makeTestGarden();
  g = ['--garden', garden.paths.gardenRoot];
  goalId = await submitTestGoal(garden, 'Fix the flaky date test');
});
afterEach(() => garden.cleanup());

/** Exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

const readGoal = (garden: Garden, id: string) => readGoalRecord(garden.paths, id);
const readComments = (garden: Garden, id: string) => readThread(garden.paths, id);
async function submitTestGoal(garden: Garden, body: string): Promise<string> {
  return (await submitGoal(garden, { plant: 'gardener', type: 'fix', body })).id;
}

describe('pak2 comment in a garden', () => {
  it('posts a comment (id on stdout), blocks the goal with --blocking, prints the thread, answers: the goal goes back to queued', async () => {
    const note = await runCli(['comment', goalId, 'a', 'plain', 'note', ...g]);
    expect(note).toMatchObject({ code: 0, stderr: '' });
    expect(note.stdout.trim()).toMatch(ULID);

    const question = await runCli(['comment', goalId, '--blocking', 'Which database: staging or prod?', ...g]);
    expect(question.code).toBe(0);
    const [qid, blocked] = question.stdout.trim().split('\n');
    expect(qid).toMatch(ULID);
    expect(blocked).toBe(`goal ${goalId} is blocked`);
    expect(await readGoal(garden, goalId)).toMatchObject({ status: 'blocked', blocked_on: { comment: qid, from: 'queued' } });

    const goals = await runCli(['goals', ...g]);
    expect(goals.stdout).toMatch(new RegExp(`${goalId}\\s+fix\\s+gardener\\s+50\\s+blocked`));

    const thread = await runCli(['comment', goalId, ...g]);
    expect(thread.code).toBe(0);
    const blocks = thread.stdout.trim().split('\n\n');
    expect(blocks).toHaveLength(2);
    expect(blocks[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}operator {2}[0-9A-Z]{26}\n {2}a plain note$/);
    expect(blocks[1]).toMatch(new RegExp(`operator {2}blocking, open {2}${qid}\\n {2}Which database: staging or prod\\?$`));
    const json = JSON.parse((await runCli(['comment', goalId, '--json', ...g])).stdout);
    expect(json).toMatchObject({ goal: goalId, open: [qid], comments: [{ body: 'a plain note', blocking: false }, { id: qid, blocking: true, author: 'operator' }] });

    const show = await runCli(['show', goalId, ...g]);
    expect(show.stdout).toContain(`status blocked`);
    expect(show.stdout).toMatch(new RegExp(`blocked on ${qid} since .* \\(it was queued\\): Which database: staging or prod\\?`));
    expect(show.stdout).toContain('comments (2, 1 open question):');

    const answered = await runCli(['comment', goalId, '--answer', 'staging, always', ...g]);
    expect(answered.code).toBe(0);
    expect(answered.stdout.trim()).toMatch(new RegExp(`^answered ${qid} with [0-9A-Z]{26}: goal ${goalId} is queued again$`));
    expect(await readGoal(garden, goalId)).toMatchObject({ status: 'queued' });
    expect((await readGoal(garden, goalId)).blocked_on).toBeUndefined();
    const after = await runCli(['comment', goalId, ...g]);
    expect(after.stdout).toContain(`blocking, answered  ${qid}`);
    expect(after.stdout).toMatch(new RegExp(`operator {2}answers ${qid} {2}[0-9A-Z]{26}\\n {2}staging, always`));
  });

  it('--answer ID answers that question; the text may come from stdin (-); two questions need two answers', async () => {
    const first = (await runCli(['comment', goalId, '--blocking', 'first?', ...g])).stdout.split('\n')[0]!;
    const second = (await runCli(['comment', goalId, '--blocking', 'second?', ...g])).stdout.split('\n')[0]!;
    const one = await runCli(['comment', goalId, '--answer', second, '-', ...g], { input: 'the second answer\nwith two lines\n' });
    expect(one.stdout.trim()).toMatch(new RegExp(`^answered ${second} with [0-9A-Z]{26}: goal ${goalId} is still blocked: 1 more open question\\(s\\)$`));
    const comments = await readComments(garden, goalId);
    expect(comments.at(-1)).toMatchObject({ answers: second, body: 'the second answer\nwith two lines' });
    const two = await runCli(['comment', goalId, '--answer', first.toLowerCase(), 'ok', ...g]);
    expect(two.stdout).toContain(`answered ${first}`);
    expect(two.stdout).toContain('is queued again');
  });

  it('a local agent (PAK2_RUN_ID set) writes as agent:<run>, names its run; --wait prints the answer posted from another terminal', async () => {
    const runId = `${goalId}-r1`;
    const env = { PAK2_RUN_ID: runId };
    const note = await runCli(['comment', goalId, 'starting on it', ...g], { env });
    expect(note.code).toBe(0);
    expect((await readComments(garden, goalId))[0]).toMatchObject({ author: `agent:${runId}`, run: runId, blocking: false });

    const waiting = startCli(['comment', goalId, '--blocking', '--wait', '30', 'May I drop the legacy table?', ...g], { env });
    let out = '';
    let err = '';
    waiting.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    waiting.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => waiting.once('close', (code) => resolve(code)));
    await waitFor(() => err.includes('waiting up to 30 s'), 15_000);
    expect(err).toMatch(new RegExp(`^pak2: posted [0-9A-Z]{26}; goal ${goalId} is blocked; waiting up to 30 s for the answer`));
    const question = (await readComments(garden, goalId)).at(-1)!;
    expect(question).toMatchObject({ author: `agent:${runId}`, run: runId, blocking: true, body: 'May I drop the legacy table?' });
    const answer = await runCli(['comment', goalId, '--answer', 'No: keep it, archive it instead.', ...g]);
    expect(answer.code).toBe(0);
    expect(await exited).toBe(0);
    expect(out).toBe('No: keep it, archive it instead.\n');
    // --author names someone else; the operator's own answer is `operator`.
    expect((await readComments(garden, goalId)).at(-1)).toMatchObject({ author: 'operator', answers: question.id });
    const named = await runCli(['comment', goalId, '--author', 'dana', 'looks fine', ...g], { env });
    expect(named.code).toBe(0);
    expect((await readComments(garden, goalId)).at(-1)).toMatchObject({ author: 'dana' });
  });

  it('--wait without an answer exits 1 with one line after the limit; the goal stays blocked', async () => {
    const r = await runCli(['comment', goalId, '--blocking', '--wait', '1', 'anyone?', ...g]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2); // the "posted …; waiting" progress line, then the one failure line
    expect(lines[1]).toMatch(new RegExp(`^pak2: no answer to [0-9A-Z]{26} within 1 s; goal ${goalId} waits for it`));
    expect((await readGoal(garden, goalId)).status).toBe('blocked');
  });

  it.each([
    [['1-no-such-goal', 'hello'], 'GOAL 1-no-such-goal: no such goal', 2],
    [['Not_An_Id', 'hello'], 'GOAL Not_An_Id: not a goal id (N-slug)', 2],
    [['GOAL', '   '], 'TEXT: the comment is empty', 2],
    [['GOAL', '--blocking'], 'TEXT: give the text of the question', 2],
    [['GOAL', '--answer'], 'TEXT: give the text of the answer', 2],
    [['GOAL', '--answer', 'yes'], 'GOAL GOAL: no open question to answer', 1],
    [['GOAL', '--answer', '01abc1234567890123', 'yes'], 'ID 01abc1234567890123: not a comment id', 2],
    [['GOAL', '--wait', '5', 'hi'], '--wait goes with --blocking', 2],
    [['GOAL', '--blocking', '--wait', '-3', 'hi'], '--wait -3: a positive number of seconds', 2],
    [['GOAL', '--blocking', '--answer', 'x'], '--blocking: an answer is not a question', 2],
    [['GOAL', '--author', '', 'hi'], '--author "": one line of 1 to 200 characters', 2],
    [['GOAL', '--author', 'agent:foo', 'hi'], "--author agent:foo: agent:<run> is an agent's own comment", 2],
  ])('refuses %j with one line naming the argument, writing nothing', async (args, message, code) => {
    const argv = args.map((a) => (a === 'GOAL' ? goalId : a));
    const before = fs.readFileSync(garden.paths.coordinatorLog, 'utf8');
    const r = await runCli(['comment', ...argv, ...g]);
    expect(r.code).toBe(code);
    expect(oneLineError(r.stderr)).toContain(message.replace('GOAL GOAL', `GOAL ${goalId}`));
    expect(r.stdout).toBe('');
    expect(await readComments(garden, goalId)).toEqual([]);
    expect(fs.readFileSync(garden.paths.coordinatorLog, 'utf8')).toBe(before);
  });

  it('empty text from stdin is refused like empty text', async () => {
    const r = await runCli(['comment', goalId, '-', ...g], { input: '  \n\n' });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toBe('pak2: TEXT: the comment is empty');
    expect(await readComments(garden, goalId)).toEqual([]);
  });
});

describe('pak2 comment under pak2 runner (PAK2_OUTBOX)', () => {
  let box: string;
  beforeEach(() => {
    box = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-box-'));
    fs.mkdirSync(path.join(box, 'outbox'));
    fs.mkdirSync(path.join(box, 'inbox'));
  });
  afterEach(() => fs.rmSync(box, { recursive: true, force: true }));
  const runnerEnv = () => ({ PAK2_OUTBOX: path.join(box, 'outbox'), PAK2_INBOX: path.join(box, 'inbox'), PAK2_GOAL_ID: '4-remote-goal', PAK2_RUN_ID: '4-remote-goal-r1' });

  it('writes <key>.json = {body, blocking} to the outbox, prints the key, touches no garden', async () => {
    // No garden anywhere above the working directory: runner mode never looks for one.
    const r = await runCli(['comment', '4-remote-goal', '--blocking', 'Which', 'region?'], { env: runnerEnv(), cwd: box });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const key = r.stdout.trim();
    expect(key).toMatch(ULID);
    expect(fs.readdirSync(path.join(box, 'outbox'))).toEqual([`${key}.json`]);
    expect(JSON.parse(fs.readFileSync(path.join(box, 'outbox', `${key}.json`), 'utf8'))).toEqual({ body: 'Which region?', blocking: true });
    const plain = await runCli(['comment', '4-remote-goal', 'progress: half done'], { env: runnerEnv(), cwd: box });
    expect(JSON.parse(fs.readFileSync(path.join(box, 'outbox', `${plain.stdout.trim()}.json`), 'utf8'))).toEqual({ body: 'progress: half done', blocking: false });
  });

  it('--wait prints the body of the answer the runner writes to $PAK2_INBOX/<key>.json', async () => {
    const child = startCli(['comment', '4-remote-goal', '--blocking', '--wait', '30', 'Deploy now?'], { env: runnerEnv(), cwd: box });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    let key = '';
    await waitFor(() => {
      key = fs.readdirSync(path.join(box, 'outbox')).find((n) => n.endsWith('.json'))?.slice(0, -5) ?? '';
      return key !== '';
    }, 15_000);
    const answer = { id: '01K0000000000000000000000A', goal: '4-remote-goal', author: 'operator', body: 'Yes, deploy.', blocking: false, answers: '01K0000000000000000000000B', created_at: new Date().toISOString() };
    const temp = path.join(box, 'inbox', `.${key}.tmp`);
    fs.writeFileSync(temp, JSON.stringify(answer));
    fs.renameSync(temp, path.join(box, 'inbox', `${key}.json`));
    expect(await exited).toBe(0);
    expect(out).toBe('Yes, deploy.\n');
  });

  it('refuses another goal, --answer and --author in one line, writing nothing', async () => {
    for (const [args, message] of [
      [['3-other', 'hi'], 'GOAL 3-other: under pak2 runner an agent comments on its own goal only (PAK2_GOAL_ID is 4-remote-goal)'],
      [['4-remote-goal', '--answer', 'yes'], '--answer: under pak2 runner'],
      [['4-remote-goal', '--author', 'x', 'hi'], '--author: under pak2 runner'],
      [['4-remote-goal', '  '], 'TEXT: the comment is empty'],
    ] as const) {
      const r = await runCli(['comment', ...args], { env: runnerEnv(), cwd: box });
      expect(r.code).toBe(2);
      expect(oneLineError(r.stderr)).toContain(message);
    }
    expect(fs.readdirSync(path.join(box, 'outbox'))).toEqual([]);
  });
});

describe('show, goals and runs: remote runs', () => {
  it('runs lists abandoned runs with their runner; show RUN prints the runner, its lease and the acceptance items', async () => {
    const runDir = (id: string) => path.join(garden.paths.runsDir, id);
    const r1 = `${goalId}-r1`;
    const r2 = `${goalId}-r2`;
    const base = { goal: goalId, plant: 'gardener', driver: 'claude', model: 'claude-opus-4-6', started_at: '2026-11-29T11:00:00.000Z' };
    fs.mkdirSync(runDir(r1), { recursive: true });
    fs.writeFileSync(path.join(runDir(r1), 'meta.json'), JSON.stringify({ ...base, id: r1, status: 'abandoned', failure_reason: 'lease_expired', completed_at: '2026-11-29T11:20:00.000Z', cost: { source: 'unknown' }, runner: { name: 'box-7', host: 'build-7.lan', lease: '01K00000000000000000000001' } }));
    fs.mkdirSync(runDir(r2), { recursive: true });
    fs.writeFileSync(
      path.join(runDir(r2), 'meta.json'),
      JSON.stringify({ ...base, id: r2, status: 'success', completed_at: '2026-11-29T11:40:00.000Z', cost: { source: 'provider', usd: 0.01 }, reflection: 'ok', runner: { name: 'box-8', host: 'build-8.lan', lease: '01K00000000000000000000002' }, acceptance: [{ item: 'agent process exited 0', verified: true, evidence: 'exit code 0' }, { item: 'tests pass', verified: false }] }),
    );
    const runs = await runCli(['runs', ...g]);
    expect(runs.stdout.split('\n')[0]).toMatch(/^RUN\s+STATUS\s+DRIVER\s+MODEL\s+TIME\s+COST\s+RUNNER\s+REASON$/);
    expect(runs.stdout).toMatch(new RegExp(`${r1}\\s+abandoned\\s+claude\\s+claude-opus-4-6\\s+20m\\s+\\?\\s+box-7@build-7.lan\\s+lease_expired`));
    const show = await runCli(['show', r2, ...g]);
    expect(show.stdout).toContain('runner box-8@build-8.lan  lease 01K00000000000000000000002');
    expect(show.stdout).toContain('✓ agent process exited 0 — exit code 0');
    expect(show.stdout).toContain('✗ tests pass');
    const abandoned = await runCli(['show', r1, ...g]);
    expect(abandoned.stdout).toContain('status abandoned (lease_expired)');
    const goal = await runCli(['show', goalId, ...g]);
    expect(goal.stdout).toContain(`run ${r1}: abandoned (lease_expired), 20m, cost ?, runner box-7@build-7.lan`);
  });
});
