/**
 * Issue 12's acceptance, with real processes on loopback: a real `pak2
 * serve`, real `pak2 runner` processes (kill -9 included) and a scripted
 * command agent. docs/runners/level2.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { events, goalRecord, killAgents, runRecord, servedGarden, startRunner, stopRunner, until, type RunnerProcess, type ServedGarden } from './acceptance-support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(mode: string, ttl: number): Promise<ServedGarden> {
  const s = await servedGarden(mode, ttl);
  cleanups.push(() => s.cleanup());
  return s;
}

function runner(s: ServedGarden, name: string, mode: string, dirs?: { workdir: string; state: string }, extra: string[] = []): RunnerProcess {
  const r = startRunner(s, name, mode, dirs, extra);
  cleanups.push(() => stopRunner(r));
  return r;
}

async function submit(s: ServedGarden, body: string, type = 'build'): Promise<string> {
  const answer = await s.api('POST', '/goals', { type, plant: 'gardener', body, driver: 'agent' });
  expect(answer.status).toBe(201);
  return answer.json.goal.id as string;
}

function leaseFiles(s: ServedGarden): string[] {
  const dir = path.join(s.runtimeRoot, 'leases');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith('.json')) : [];
}

/** Runner alpha claims `goal` and uploads its stream; kill -9; alpha again with the same work and state directories resumes; the agent is released and the goal closes. */
async function killAndRestartMidRun(s: ServedGarden, goal: string): Promise<RunnerProcess> {
  const a = runner(s, 'alpha', 'wait');
  await until(() => leaseFiles(s).length === 1, 30_000, 'a lease');
  await until(() => fs.existsSync(path.join(s.runtimeRoot, 'runs', `${goal}-r1`, 'events.jsonl')), 30_000, 'the stream upload');
  a.child.kill('SIGKILL');
  await a.exited;
  const again = runner(s, 'alpha', 'wait', { workdir: a.workdir, state: a.state });
  await until(() => /resum/i.test(again.output()), 20_000, 'the restarted runner to resume');
  fs.writeFileSync(s.release, 'go');
  await until(() => goalRecord(s, goal).status === 'closed', 40_000, 'the goal to close');
  return again;
}

describe('remote runners: leases, kill -9, abandoned runs', () => {
  it('two runners, one goal: one lease; kill -9 its holder: after the TTL the run is abandoned, the goal requeued, the other runner completes it, the dead runner’s late finish is refused', async () => {
    const s = await garden('wait', 4);
    const goal = await submit(s, 'Wait for the release file, then finish.');
    const a = runner(s, 'alpha', 'wait');
    const b = runner(s, 'beta', 'wait');
    await until(() => leaseFiles(s).length === 1, 30_000, 'a lease');
    // Both poll every second: give the loser time to try, then check there is still exactly one claim.
    await new Promise((r) => setTimeout(r, 2500));
    expect(leaseFiles(s)).toEqual([`${goal}-r1.json`]);
    expect(events(s).filter((e) => e.type === 'LeaseClaimed')).toHaveLength(1);
    const first = JSON.parse(fs.readFileSync(path.join(s.runtimeRoot, 'leases', `${goal}-r1.json`), 'utf8'));
    const holder = first.runner.name === 'alpha' ? a : b;
    const other = holder === a ? b : a;
    expect(runRecord(s, `${goal}-r1`).runner).toEqual({ name: holder.name, host: expect.any(String), lease: first.id });

    holder.child.kill('SIGKILL');
    await holder.exited;
    await until(() => runRecord(s, `${goal}-r1`).status !== 'running', 30_000, 'the lease to expire');
    const r1 = runRecord(s, `${goal}-r1`);
    expect(r1).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect(r1.outputs.error).toMatch(new RegExp(`runner ${holder.name}@\\S+ sent no heartbeat`));
    expect(events(s).some((e) => e.type === 'LeaseExpired' && e.run === `${goal}-r1`)).toBe(true);
    expect(fs.existsSync(path.join(s.runtimeRoot, 'leases', 'ended', `${goal}-r1.json`))).toBe(true);

    // The other runner takes the requeued goal as r2 and, released, completes it.
    await until(() => fs.existsSync(path.join(s.runtimeRoot, 'leases', `${goal}-r2.json`)), 30_000, 'the other runner to claim r2');
    expect(JSON.parse(fs.readFileSync(path.join(s.runtimeRoot, 'leases', `${goal}-r2.json`), 'utf8')).runner.name).toBe(other.name);
    fs.writeFileSync(s.release, 'go');
    await until(() => goalRecord(s, goal).status === 'closed', 30_000, 'the goal to close');
    expect(goalRecord(s, goal).closed_reason).toBe('success');
    const r2 = runRecord(s, `${goal}-r2`);
    expect(r2).toMatchObject({ status: 'success', exit_code: 0, session_id: `sess-${goal}-r2`, cost: { source: 'provider' }, reflection: 'Learned: remote runs report through their runner.' });
    expect(r2.runner.name).toBe(other.name);
    expect(r2.acceptance.length).toBeGreaterThan(0);

    // The dead runner's late finish (its lease, its name, its process's instance) is refused and changes nothing.
    const late = await s.api('POST', `/runs/${goal}-r1/finish`, { lease: first.id, status: 'success', exit_code: 0, cost: { source: 'provider', usd: 0.01 }, reflection: 'late' }, holder.name, { 'pak2-runner-instance': first.runner.instance });
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ field: '/lease', state: 'expired' });
    expect(runRecord(s, `${goal}-r1`)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect(events(s).some((e) => e.type === 'LeaseRefused' && e.run === `${goal}-r1`)).toBe(true);
    killAgents(s.agent);
  }, 120_000);

  it('a runner restarted within its TTL resumes its run from its state and cursor: no abandoned run, the run finishes', async () => {
    const s = await garden('wait', 12);
    // A spike: no reflection turn (a type that reflects: the next test).
    const goal = await submit(s, 'Wait for the release file, then finish.', 'spike');
    const again = await killAndRestartMidRun(s, goal);
    const run = runRecord(s, `${goal}-r1`);
    expect(run.status, JSON.stringify({ run, output: again.output() })).toBe('success');
    expect(run.exit_code).toBeNull(); // the restarted runner did not start the agent: its exit code is not observable
    expect(run.session_id).toBe(`sess-${goal}-r1`);
    expect(events(s).some((e) => e.type === 'LeaseExpired')).toBe(false);
    expect(fs.existsSync(path.join(s.runtimeRoot, 'runs', `${goal}-r2`))).toBe(false);
    // The garden's copy of the stream is the whole stream, the last result included.
    const stream = fs.readFileSync(path.join(s.runtimeRoot, 'runs', `${goal}-r1`, 'events.jsonl'), 'utf8');
    expect(stream).toContain('"done waiting"');
  }, 120_000);
  it('a resumed run of a goal type that reflects: the restarted runner runs the reflection turn the first one never reached', async () => {
    const s = await garden('wait', 12);
    const goal = await submit(s, 'Wait for the release file, then finish.');
    await killAndRestartMidRun(s, goal);
    const run = runRecord(s, `${goal}-r1`);
    // The main turn's exit was not observed (null, not held against it); its result and cost stand, and the reflection ran here.
    expect(run).toMatchObject({ status: 'success', exit_code: null, outputs: { final_text: 'done waiting' }, reflection: 'Learned: remote runs report through their runner.', session_id: `sess-${goal}-r1` });
    expect(run.cost.source).toBe('provider');
    expect(run.cost.usd).toBeCloseTo(0.011, 8);
    expect(run.acceptance).toEqual(expect.arrayContaining([expect.objectContaining({ item: 'reflection recorded', verified: true })]));
    expect(goalRecord(s, goal).closed_reason).toBe('success');
    const order = events(s).filter((e) => e.run === `${goal}-r1`).map((e) => e.type);
    expect(order, order.join(' ')).toEqual(['RunStarted', 'LeaseClaimed', 'ArtifactAttached', 'ReflectionRequested', 'ReflectionRecorded', 'RunClosed']);
  }, 120_000);
});

describe('remote runners: blocking questions through the runner', () => {
  it('a command agent’s blocking comment blocks the goal; pak2 comment --answer unblocks it and the run continues with the answer', async () => {
    const s = await garden('ask', 30);
    const goal = await submit(s, 'Ask which colour, then use it.');
    runner(s, 'alpha', 'ask');
    await until(() => goalRecord(s, goal).status === 'blocked', 30_000, 'the goal to block');
    const blocked = goalRecord(s, goal);
    expect(blocked.blocked_on).toMatchObject({ from: 'running' });
    const thread = await s.api('GET', `/goals/${goal}/comments`);
    expect(thread.json.comments).toEqual([expect.objectContaining({ author: `agent:${goal}-r1`, body: 'Which colour should the button be?', blocking: true })]);
    expect(thread.json.open).toEqual([blocked.blocked_on.comment]);

    const answered = await runCli(['comment', goal, '--garden', s.root, '--answer', 'Blue, the garden blue.']);
    expect(answered.code).toBe(0);
    expect(goalRecord(s, goal).status).toBe('running');
    await until(() => goalRecord(s, goal).status === 'closed', 30_000, 'the goal to close');
    const run = runRecord(s, `${goal}-r1`);
    expect(run).toMatchObject({ status: 'success', outputs: { final_text: 'answer: Blue, the garden blue.' } });
    expect(goalRecord(s, goal).closed_reason).toBe('success');
  }, 90_000);

  it('an agent that asks and ends: the run is recorded as it ended, the goal stays blocked, and the answer requeues it', async () => {
    const s = await garden('ask-exit', 30);
    const goal = await submit(s, 'Ask, then stop.');
    const a = runner(s, 'alpha', 'ask-exit', undefined, ['--max-runs', '1']);
    await until(() => fs.existsSync(path.join(s.runtimeRoot, 'leases', 'ended', `${goal}-r1.json`)), 30_000, 'the run to finish');
    expect(await a.exited).toBe(0);
    expect(runRecord(s, `${goal}-r1`)).toMatchObject({ status: 'success', outputs: { final_text: 'asked and left' } });
    expect(goalRecord(s, goal).status).toBe('blocked');
    const answered = await runCli(['comment', goal, '--garden', s.root, '--answer', 'Green.']);
    expect(answered.code).toBe(0);
    expect(goalRecord(s, goal).status).toBe('queued');
    // The next run, on another runner, is told the question and the answer.
    fs.writeFileSync(s.release, 'go');
    const b = runner(s, 'beta', 'wait', undefined, ['--max-runs', '1']);
    expect(await b.exited, b.output()).toBe(0);
    expect(goalRecord(s, goal)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    const prompt = fs.readFileSync(path.join(s.runtimeRoot, 'runs', `${goal}-r2`, 'artifacts', 'prompt.md'), 'utf8');
    const thread = prompt.slice(prompt.indexOf('# Goal Comments'), prompt.indexOf('# Task'));
    expect(thread).toContain(`agent:${goal}-r1 (blocking question)`);
    expect(thread).toContain('Which colour should the button be?');
    expect(thread).toContain('Green.');
  }, 90_000);
});

describe('remote runners: artifacts the agent attaches through the runner', () => {
  it('a pull-request link and a file of its work directory are attached to the run; a path outside it is refused in one line', async () => {
    const s = await garden('attach', 30);
    const goal = await submit(s, 'Attach your evidence.', 'spike');
    const a = runner(s, 'alpha', 'attach', undefined, ['--max-runs', '1']);
    expect(await a.exited, a.output()).toBe(0);
    const runDirectory = path.join(s.runtimeRoot, 'runs', `${goal}-r1`);
    const listed = fs.readFileSync(path.join(runDirectory, 'artifacts.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(listed.length, a.output()).toBeGreaterThan(1);
    expect(listed).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'pull-request', kind: 'link', url: 'http://127.0.0.1:9/pulls/7' }), expect.objectContaining({ name: 'report.txt', kind: 'file', bytes: 17 })]));
    expect(listed.some((x: { name: string }) => x.name === 'secret')).toBe(false);
    expect(fs.readFileSync(path.join(runDirectory, 'artifacts', 'report.txt'), 'utf8')).toBe('all checks green\n');
    expect(events(s).filter((e) => e.type === 'ArtifactAttached' && e.run === `${goal}-r1`).map((e) => e.detail)).toEqual(expect.arrayContaining(['link pull-request http://127.0.0.1:9/pulls/7']));
    const refusal = a.output().split('\n').filter((l) => l.includes('outbox a3'));
    expect(refusal).toHaveLength(1);
    expect(refusal[0]).toMatch(/outbox a3 not posted: "path" "\.\.\/outside\.txt" is outside the work directory/);
    expect(runRecord(s, `${goal}-r1`).status).toBe('success');
  }, 90_000);
});
