/**
 * `pak2 runner` end to end: a real server (startServer, in process) on a
 * temp garden whose coordinator runs nothing (`max_concurrent_runs = 0`),
 * and the real CLI (`node bin/pak2.js runner …`, built by the global setup)
 * as a child process that claims, runs a shell-script agent through the
 * `command` driver in its own checkout, and finishes.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { createToken, type RunningServer } from '../../source/server/index.js';
import { commissionPlant, readComments, readGoal, readLanding, readRun, readArtifacts } from '../../source/store/index.js';
import { runUntil } from '../landing/support.js';
import { PAK2_BIN, startCli } from '../support/cli.js';
import { isAlive, readEventLog } from '../support/garden.js';
import { api, serve, until } from '../server/support.js';
import { writeAgent } from './agent.js';
import { routeOf, startFakeServer, type FakeServer } from './fake-server.js';

const cleanups: (() => unknown)[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  while (cleanups.length) await cleanups.pop()!();
});

const GIT_ENV = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Setup {
  garden: Garden;
  server: RunningServer;
  workdir: string;
  state: string;
  tokenFile: string;
}

async function setup(ttlSeconds = 6, coordinator = '', moreDrivers = ''): Promise<Setup> {
  const root = tempDir('pak2-runner-garden-');
  const agent = writeAgent(tempDir('pak2-runner-agent-'));
  const drivers = `[drivers.agent]\ncommand = ${JSON.stringify([agent])}\n${moreDrivers}`;
  fs.writeFileSync(path.join(root, 'PAK2.toml'), `[runtime]\nroot = ".runtime"\n[defaults]\ndriver = "agent"\n[coordinator]\nmax_concurrent_runs = 0\n${coordinator}[runners]\nlease_ttl_seconds = ${ttlSeconds}\n${drivers}`);
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# Motivation\n\nA garden run by runners.\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed: gardener\n\nYou look after the garden.\n');
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  // A garden in a git repository, as gardens are (its closes capture runtime history without a complaint).
  execFileSync('git', ['init', '-q'], { cwd: root });
  execFileSync('git', ['add', '-A'], { cwd: root });
  execFileSync('git', ['commit', '-q', '-m', 'garden'], { cwd: root, env: { ...process.env, ...GIT_ENV } });
  const server = await serve(garden, cleanups);
  // The runner's checkout: its own PAK2.toml names the same driver.
  const workdir = tempDir('pak2-runner-checkout-');
  fs.writeFileSync(path.join(workdir, 'PAK2.toml'), `[runtime]\nroot = ".runtime"\n${drivers}`);
  fs.writeFileSync(path.join(workdir, 'README.md'), 'checkout\n');
  execFileSync('git', ['init', '-q'], { cwd: workdir });
  execFileSync('git', ['add', '-A'], { cwd: workdir });
  execFileSync('git', ['commit', '-q', '-m', 'start'], { cwd: workdir, env: { ...process.env, ...GIT_ENV } });
  const state = tempDir('pak2-runner-state-');
  const tokenFile = path.join(tempDir('pak2-runner-token-'), 'token');
  fs.writeFileSync(tokenFile, `${server.token}\n`, { mode: 0o600 });
  return { garden, server, workdir, state, tokenFile };
}

async function submit(s: Setup, type = 'fix', body = 'Fix the thing.'): Promise<string> {
  const response = await api(s.server, '/goals', { method: 'POST', body: JSON.stringify({ type, plant: 'gardener', body }) });
  expect(response.status).toBe(201);
  return ((await response.json()) as { goal: { id: string } }).goal.id;
}

interface Runner {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

function startRunner(s: Setup, extra: string[] = [], env: NodeJS.ProcessEnv = {}, where: { state?: string; server?: string; workdir?: string; name?: string | null } = {}): Runner {
  const workdir = where.workdir ?? s.workdir;
  const name = where.name === null ? [] : ['--name', where.name ?? 'box-1'];
  const child = startCli(['runner', '--server', where.server ?? s.server.url, '--token-file', s.tokenFile, ...name, '--workdir', workdir, '--state', where.state ?? s.state, '--poll', '0.2', ...extra], { cwd: workdir, env: { PAK2_GARDEN: '', ...env } });
  children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (stderr += chunk));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

/** Every line the runner wrote is one line of its own (`pak2 runner box-1: …`) or the CLI's (`pak2: …`). */
function expectOneLineEach(stderr: string): void {
  for (const line of stderr.split('\n').filter(Boolean)) expect(line).toMatch(/^pak2( runner box-1)?: /);
}

/**
 * A server in front of the garden's that forwards every call, holding a
 * route while `hold` says so (the event stream is refused: the runner polls).
 */
async function proxy(s: Setup, hold: (route: string) => Promise<void> | undefined): Promise<FakeServer> {
  const origin = new URL(s.server.url).origin;
  const server = await startFakeServer(async (request) => {
    const route = routeOf(request);
    if (route === 'GET /events/stream') return { status: 503, body: { error: 'no stream here' } };
    await hold(route);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string' && (name === 'authorization' || name === 'content-type' || name.startsWith('pak2-'))) headers[name] = value;
    const response = await fetch(`${origin}${request.url}`, { method: request.method, headers, ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}) });
    const text = await response.text();
    return { status: response.status, ...(text ? { body: JSON.parse(text) as unknown } : {}) };
  });
  cleanups.push(() => server.close());
  return server;
}

async function exitOf(runner: Runner, timeoutMs = 60_000): Promise<number | null> {
  return Promise.race([runner.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the runner did not exit; stderr:\n${runner.stderr()}`)), timeoutMs))]);
}

/** Waits for the agent of `goalId`'s first run: its own file, and the runner's process.json (written by the launch's onStart, which the agent may beat). */
async function agentStarted(state: string, goalId: string): Promise<void> {
  const dir = path.join(state, 'garden', 'runs', `${goalId}-r1`);
  await until(() => fs.existsSync(path.join(dir, 'agent-env')) && fs.existsSync(path.join(dir, 'process.json')), 30_000, 'the agent started');
}

describe('pak2 runner against a real garden server', () => {
  it('claims, runs and finishes a goal; the garden records what the runner observed', async () => {
    const s = await setup();
    const goalId = await submit(s);
    const runner = startRunner(s, ['--max-runs', '1']);
    expect(await exitOf(runner)).toBe(0);
    const runId = `${goalId}-r1`;
    const stderr = runner.stderr();
    expect(stderr).toMatch(new RegExp(`^pak2 runner box-1: claimed ${runId} \\(lease \\w+, ttl 6 s\\)$`, 'm'));
    expect(stderr).toMatch(new RegExp(`^pak2 runner box-1: finished ${runId} success \\$0\\.0133$`, 'm'));

    const run = await readRun(s.garden.paths, runId);
    expect(run).toMatchObject({ status: 'success', exit_code: 0, session_id: 's-1', reflection: 'Learned: the runner ran me.', num_turns: 2, runner: { name: 'box-1', host: os.hostname() } });
    expect(run.cost?.usd).toBeCloseTo(0.0133, 6);
    expect(run.outputs?.final_text).toBe('done');
    expect(run.acceptance).toEqual([
      { item: 'agent process exited 0', verified: true, evidence: 'exit code 0' },
      { item: 'result event in the stream', verified: true, evidence: 'the agent reported success' },
      { item: 'reflection recorded', verified: true, evidence: expect.stringMatching(/characters$/) },
    ]);
    // The garden is a git work tree: the run's work lands through the merge queue, so the goal waits `completed` with its landing queued.
    expect(run.worktree).toMatchObject({ branch: `pak2/${runId}` });
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('completed');
    expect(await readLanding(s.garden.paths, runId)).toMatchObject({ state: 'queued' });

    // The garden holds the same stream bytes as the runner.
    const gardenDir = path.join(s.garden.paths.runsDir, runId);
    const localDir = path.join(s.state, 'garden', 'runs', runId);
    expect(fs.readFileSync(path.join(gardenDir, 'events.jsonl'))).toEqual(fs.readFileSync(path.join(localDir, 'events.jsonl')));

    // Artifacts: the run's own diff (untracked file included) and the prompt.
    const artifacts = await readArtifacts(s.garden.paths, runId);
    expect(artifacts.map((a) => [a.name, a.kind]).sort()).toEqual([
      ['diff.patch', 'diff'],
      ['prompt.md', 'file'],
    ]);
    const diff = fs.readFileSync(path.join(gardenDir, 'artifacts', 'diff.patch'), 'utf8');
    expect(diff).toContain('+made by the agent');
    expect(diff).not.toContain('README.md');
    expect(fs.readFileSync(path.join(gardenDir, 'artifacts', 'prompt.md'), 'utf8')).toContain('Fix the thing.');

    // The memory the agent wrote came back to the garden's plant.
    expect(fs.readFileSync(path.join(s.garden.paths.plantsDir, 'gardener', 'memory', 'MEMORY.md'), 'utf8')).toContain('Remote runs keep their memory.');

    // The garden's coordinator lands it: the runner's file is on the base branch, and the goal closes.
    await runUntil(s.garden, [goalId], undefined, 60_000, { ...process.env, ...GIT_ENV });
    expect(await readLanding(s.garden.paths, runId)).toMatchObject({ state: 'landed' });
    expect(execFileSync('git', ['show', '--name-only', '--format=', run.worktree!.base_branch], { cwd: s.garden.paths.gardenRoot, encoding: 'utf8' })).toMatch(/made/);
  });

  it("reports the goal's acceptance criteria as the runner checked them: one verified by its command, one failing, one unverifiable (seed 004, runs_finish)", async () => {
    const s = await setup();
    const criteria = [
      { text: 'the agent leaves made-by-agent.txt', verify: 'test -f made-by-agent.txt' },
      { text: 'the README says hello', verify: 'grep -q hello README.md' },
      { text: 'the result reads well' },
    ];
    const response = await api(s.server, '/goals', { method: 'POST', body: JSON.stringify({ type: 'fix', plant: 'gardener', body: 'Fix the thing.', acceptance_criteria: criteria }) });
    expect(response.status).toBe(201);
    const goalId = ((await response.json()) as { goal: { id: string; acceptance_criteria: unknown } }).goal.id;
    expect((await readGoal(s.garden.paths, goalId)).acceptance_criteria).toEqual(criteria);
    const runner = startRunner(s, ['--max-runs', '1']);
    expect(await exitOf(runner)).toBe(0);
    const runId = `${goalId}-r1`;
    const run = await readRun(s.garden.paths, runId);
    // The agent's run itself succeeded; the criteria say what was proved, each with its evidence.
    expect(run.status).toBe('success');
    expect(run.acceptance).toEqual([
      { item: criteria[0]!.text, verified: true, criterion: true, result: 'verified', verify: criteria[0]!.verify, evidence: expect.stringMatching(/^`test -f made-by-agent\.txt` exited 0 in \d+\.\d s$/) },
      { item: criteria[1]!.text, verified: false, criterion: true, result: 'failed', verify: criteria[1]!.verify, evidence: expect.stringMatching(/^`grep -q hello README\.md` exited 1 \(output: acceptance\/2\/verify\.\*\.log\)$/) },
      { item: criteria[2]!.text, verified: false, criterion: true, result: 'unverified', evidence: expect.stringMatching(/^not verified: the criterion has no verify command/) },
      { item: 'agent process exited 0', verified: true, evidence: 'exit code 0' },
      { item: 'result event in the stream', verified: true, evidence: 'the agent reported success' },
      { item: 'reflection recorded', verified: true, evidence: expect.stringMatching(/characters$/) },
    ]);
    // The agent was told the criteria, and how each is checked.
    const prompt = fs.readFileSync(path.join(s.garden.paths.runsDir, runId, 'artifacts', 'prompt.md'), 'utf8');
    expect(prompt).toMatch(/# Acceptance Criteria\n\n[^\n]+\n\n1\. the agent leaves made-by-agent\.txt\n {3}Checked after you finish by running `test -f made-by-agent\.txt`/);
    expect(prompt).toContain('3. the result reads well\n   No command checks this one');
    expect(prompt.indexOf('# Acceptance Criteria')).toBeLessThan(prompt.indexOf('# Task'));
    // The commands ran where the agent worked: their output is in the runner's run directory.
    expect(fs.existsSync(path.join(s.state, 'garden', 'runs', runId, 'acceptance', '2', 'verify.stdout.log'))).toBe(true);
    // pak2 show prints them on the goal and the run.
    const shownGoal = execFileSync(process.execPath, [PAK2_BIN, '--garden', s.garden.paths.gardenRoot, 'show', goalId], { encoding: 'utf8' });
    expect(shownGoal).toContain('  acceptance criteria:\n    1. the agent leaves made-by-agent.txt  (verify: test -f made-by-agent.txt)');
    expect(shownGoal).toContain('    3. the result reads well  (no verify command: reported not verified)');
    expect(shownGoal).toMatch(new RegExp(`run ${runId}: success, .*, 1 of 3 criteria verified, 1 failed`));
    const shownRun = execFileSync(process.execPath, [PAK2_BIN, '--garden', s.garden.paths.gardenRoot, 'show', runId], { encoding: 'utf8' });
    expect(shownRun).toContain('  acceptance 1 of 3 criteria verified, 1 failed\n  ✓ the agent leaves made-by-agent.txt — `test -f made-by-agent.txt` exited 0');
    expect(shownRun).toContain('  ✗ the README says hello — `grep -q hello README.md` exited 1');
    expect(shownRun).toContain('  ? the result reads well — not verified: the criterion has no verify command');
  });

  it("relays the agent's blocking question and hands it the answer; the goal waits blocked, then runs on", async () => {
    const s = await setup();
    const goalId = await submit(s, 'spike', 'Ask first.');
    const runner = startRunner(s, ['--max-runs', '1'], { AGENT_ASK: '1' });
    await until(async () => (await readComments(s.garden.paths, goalId)).some((c) => c.blocking), 30_000, 'the question');
    const [question] = await readComments(s.garden.paths, goalId);
    expect(question).toMatchObject({ author: `agent:${goalId}-r1`, body: 'Which branch?', blocking: true });
    await until(async () => (await readGoal(s.garden.paths, goalId)).status === 'blocked', 10_000, 'blocked');
    const answered = await api(s.server, `/goals/${goalId}/comments`, { method: 'POST', body: JSON.stringify({ body: 'Use main.', answers: question!.id }) });
    expect(answered.status).toBe(201);
    expect(await exitOf(runner)).toBe(0);
    const answer = JSON.parse(fs.readFileSync(path.join(s.state, 'garden', 'runs', `${goalId}-r1`, 'answer.json'), 'utf8')) as { body: string; answers: string };
    expect(answer).toMatchObject({ body: 'Use main.', answers: question!.id });
    expect((await readRun(s.garden.paths, `${goalId}-r1`)).status).toBe('success');
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('completed');
  });

  it("stops the agent when the operator cancels the goal, and finishes with what it observed", async () => {
    const s = await setup();
    const goalId = await submit(s, 'spike', 'Take a while.');
    const runner = startRunner(s, ['--max-runs', '1'], { AGENT_SLEEP: '60' });
    const agentEnv = path.join(s.state, 'garden', 'runs', `${goalId}-r1`, 'agent-env');
    await until(() => fs.existsSync(agentEnv), 30_000, 'the agent started');
    const cancel = await api(s.server, `/goals/${goalId}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(await exitOf(runner)).toBe(0);
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped', operator_stop: { requeue: false } });
    expect((await readGoal(s.garden.paths, goalId)).closed_reason).toBe('cancelled');
    expect(runner.stderr()).toMatch(/the operator stopped it; stopping the agent/);
  });

  it('SIGTERM stops the agent, finishes the run (operator_stopped, requeued) and exits 0', async () => {
    const s = await setup();
    const goalId = await submit(s, 'spike', 'Take a while.');
    const runner = startRunner(s, [], { AGENT_SLEEP: '60' });
    await agentStarted(s.state, goalId);
    runner.child.kill('SIGTERM');
    expect(await exitOf(runner)).toBe(0);
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped', operator_stop: { requeue: true } });
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('queued');
  });

  it('a runner killed with SIGKILL resumes its live agent when it restarts, and finishes it judged from the stream', async () => {
    const s = await setup(10);
    const goalId = await submit(s, 'spike', 'Take a few seconds.');
    // The agent works until the test lets it finish: after the second runner has taken it up (a state, not a time).
    const done = path.join(tempDir('pak2-runner-done-'), 'done');
    const first = startRunner(s, [], { AGENT_UNTIL: done });
    await agentStarted(s.state, goalId);
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startRunner(s, ['--max-runs', '1']);
    await until(() => /resuming .*: its agent/.test(second.stderr()), 30_000, `the second runner took it up; stderr:\n${second.stderr()}`);
    fs.writeFileSync(done, '');
    expect(await exitOf(second)).toBe(0);
    expect(second.stderr()).toMatch(new RegExp(`resuming ${goalId}-r1 \\(lease \\w+\\): its agent \\(pid \\d+\\) still runs`));
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'success', exit_code: null, session_id: 's-1' });
    expect(run.acceptance?.[0]).toMatchObject({ item: 'agent process ended', verified: true });
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('completed');
  });

  it("a runner killed during a guarded run: restarted, it stops the agent, ends the run interrupted (its guard never decided) and the goal runs again", async () => {
    const s = await setup(10);
    const response = await api(s.server, '/goals', { method: 'POST', body: JSON.stringify({ type: 'spike', plant: 'gardener', body: 'Guarded, interrupted.', guard: { verify: 'true', env_passthrough: ['AGENT_UNTIL'] } }) });
    const goalId = ((await response.json()) as { goal: { id: string } }).goal.id;
    const done = path.join(tempDir('pak2-runner-done-'), 'done');
    const first = startRunner(s, [], { AGENT_UNTIL: done });
    await agentStarted(s.state, goalId);
    const { pid } = JSON.parse(fs.readFileSync(path.join(s.state, 'garden', 'runs', `${goalId}-r1`, 'process.json'), 'utf8')) as { pid: number };
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startRunner(s, ['--max-runs', '2']);
    expect(await exitOf(second, 120_000)).toBe(0);
    expect(isAlive(pid)).toBe(false);
    expect(second.stderr()).toMatch(new RegExp(`resuming ${goalId}-r1 \\(lease \\w+\\): the runner restarted during a guarded run: its guard never decided, so the run is interrupted and the goal goes back to the queue; its agent was stopped`));
    expect(await readRun(s.garden.paths, `${goalId}-r1`)).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    // The next attempt ran under a guard of its own and was kept.
    expect(await readRun(s.garden.paths, `${goalId}-r2`)).toMatchObject({ status: 'success' });
    expect(JSON.parse(fs.readFileSync(path.join(s.garden.paths.runsDir, `${goalId}-r2`, 'task_outcome.json'), 'utf8'))).toMatchObject({ state: 'ready' });
  }, 180_000);

  it('a runner that comes back after its lease expired stops the agent it left, and runs the requeued goal anew', async () => {
    const s = await setup(3);
    const goalId = await submit(s, 'spike', 'Outlive the runner.');
    const first = startRunner(s, [], { AGENT_SLEEP: '60' });
    const localDir = path.join(s.state, 'garden', 'runs', `${goalId}-r1`);
    await agentStarted(s.state, goalId);
    const { pid } = JSON.parse(fs.readFileSync(path.join(localDir, 'process.json'), 'utf8')) as { pid: number };
    first.child.kill('SIGKILL');
    await first.exited;
    await until(async () => (await readRun(s.garden.paths, `${goalId}-r1`)).status === 'abandoned', 20_000, 'the lease expired');
    expect(isAlive(pid)).toBe(true); // the agent outlived its runner
    const second = startRunner(s, ['--max-runs', '1']);
    expect(await exitOf(second)).toBe(0);
    expect(second.stderr()).toMatch(new RegExp(`${goalId}-r1: its lease ended while the runner was away; its agent was stopped`));
    await until(() => !isAlive(pid), 5000, 'the left agent gone');
    expect(await readRun(s.garden.paths, `${goalId}-r1`)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect(await readRun(s.garden.paths, `${goalId}-r2`)).toMatchObject({ status: 'success' });
    // r2 changed nothing the checkout did not already hold (r1's file): nothing to land, so the goal closes.
    expect(await readLanding(s.garden.paths, `${goalId}-r2`)).toBeUndefined();
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('closed');
  });

  it("kills a silent agent with the garden's watchdog_seconds, as a local run would be", async () => {
    const s = await setup(6, 'watchdog_seconds = 2\n');
    const goalId = await submit(s, 'spike', 'Go quiet.');
    const runner = startRunner(s, ['--max-runs', '1'], { AGENT_SILENT: '60' });
    expect(await exitOf(runner)).toBe(0);
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed', watchdog: { limit: 'watchdog_seconds', limit_seconds: 2 } });
    expect(run.outputs?.error).toMatch(/^killed by the watchdog: silent for [\d.]+ s \(watchdog_seconds 2 s\)/);
    expect(runner.stderr()).toMatch(/killed by the watchdog/);
    expect(runner.stderr()).toMatch(new RegExp(`finished ${goalId}-r1 killed \\(killed\\)`));
  });

  it('an agent asks with `pak2 comment --blocking --wait` and gets the answer on stdout', async () => {
    const s = await setup();
    const goalId = await submit(s, 'spike', 'Ask with the CLI.');
    const runner = startRunner(s, ['--max-runs', '1'], { AGENT_PAK2_ASK: PAK2_BIN, AGENT_NODE: process.execPath });
    await until(async () => (await readComments(s.garden.paths, goalId)).some((c) => c.blocking), 30_000, 'the question');
    const [question] = await readComments(s.garden.paths, goalId);
    expect(question).toMatchObject({ author: `agent:${goalId}-r1`, body: 'Which branch, asked with pak2 comment?' });
    await api(s.server, `/goals/${goalId}/comments`, { method: 'POST', body: JSON.stringify({ body: 'main, please', answers: question!.id }) });
    expect(await exitOf(runner)).toBe(0);
    expect(fs.readFileSync(path.join(s.state, 'garden', 'runs', `${goalId}-r1`, 'answer.txt'), 'utf8').trim()).toBe('main, please');
    expect((await readRun(s.garden.paths, `${goalId}-r1`)).status).toBe('success');
  });

  it("does not kill an agent waiting on its own blocking question (watchdog_seconds 2), and says an outbox file that is not a comment in one line", async () => {
    const s = await setup(6, 'watchdog_seconds = 2\n');
    const goalId = await submit(s, 'spike', 'Ask, then wait.');
    const runner = startRunner(s, ['--max-runs', '1'], { AGENT_ASK: '1', AGENT_BAD_OUTBOX: '1' });
    await until(async () => (await readComments(s.garden.paths, goalId)).some((c) => c.blocking), 30_000, 'the question');
    const [question] = (await readComments(s.garden.paths, goalId)).filter((c) => c.blocking);
    // Longer than watchdog_seconds with the agent silent: it waits for the answer, it is not stalled.
    await new Promise((resolve) => setTimeout(resolve, 4500));
    expect(runner.stderr()).not.toMatch(/killed by the watchdog/);
    await api(s.server, `/goals/${goalId}/comments`, { method: 'POST', body: JSON.stringify({ body: 'Use main.', answers: question!.id }) });
    expect(await exitOf(runner)).toBe(0);
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'success' });
    const stderr = runner.stderr();
    expectOneLineEach(stderr);
    expect(stderr).toMatch(/^pak2 runner box-1: run \S+: outbox bad not posted: not JSON \(.+\): a comment is \{"body": "…", "blocking": true\|false\}$/m);
    expect(stderr).toMatch(/^pak2 runner box-1: run \S+: outbox empty not posted: empty "body": a comment is/m);
  });

  it('two runner processes with one name and two state directories leave each other’s runs alone', async () => {
    const s = await setup(10);
    const goalId = await submit(s, 'spike', 'Take a few seconds.');
    const first = startRunner(s, ['--max-runs', '1'], { AGENT_SLEEP: '5' });
    await agentStarted(s.state, goalId);
    const otherState = tempDir('pak2-runner-state-2-');
    const second = startRunner(s, [], {}, { state: otherState });
    await until(() => /held by another runner process named box-1/.test(second.stderr()), 30_000, `the second runner leaves the lease alone; stderr:\n${second.stderr()}`);
    expect(await exitOf(first)).toBe(0);
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'success', exit_code: 0 });
    const instance = fs.readFileSync(path.join(s.state, 'instance'), 'utf8').trim();
    const otherInstance = fs.readFileSync(path.join(otherState, 'instance'), 'utf8').trim();
    expect(instance).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(otherInstance).not.toBe(instance);
    expect(second.stderr()).toMatch(new RegExp(`lease \\w+ of ${goalId}-r1 is held by another runner process named box-1 \\(instance ${instance} on .+; this one is ${otherInstance}\\): left alone; it expires if that process is gone`));
    expect(first.stderr()).toMatch(new RegExp(`finished ${goalId}-r1 success`));
    // Stopped with no run in progress, it says so and exits 0 (or, when the signal lands during one of its polls
    // for work, says that a claim was in flight: both are true of a runner with no agent).
    second.child.kill('SIGTERM');
    expect(await exitOf(second)).toBe(0);
    expect(second.stderr()).toMatch(/^pak2 runner box-1: SIGTERM: (no run in progress; exiting|a claim is in flight; a goal it brings is finished at once \(operator_stopped, requeued\), its agent not started)$/m);
    expect(second.stderr()).not.toMatch(/stopping the agent/);
  });

  it('a signal while a claim is in flight: the claimed run is finished at once (operator_stopped, requeued) and no agent is started', async () => {
    const s = await setup();
    const goalId = await submit(s, 'spike', 'Never started.');
    let claimSeen = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const front = await proxy(s, (route) => {
      if (route !== 'POST /tasks/claim') return undefined;
      claimSeen = true;
      return gate;
    });
    const runner = startRunner(s, [], {}, { server: front.url });
    await until(() => claimSeen, 30_000, 'the claim in flight');
    runner.child.kill('SIGTERM');
    await until(() => /SIGTERM: a claim is in flight/.test(runner.stderr()), 10_000, `the runner says the claim is in flight; stderr:\n${runner.stderr()}`);
    release();
    expect(await exitOf(runner)).toBe(0);
    const localDir = path.join(s.state, 'garden', 'runs', `${goalId}-r1`);
    expect(fs.existsSync(path.join(localDir, 'process.json'))).toBe(false);
    expect(fs.existsSync(path.join(localDir, 'prompt.md'))).toBe(false);
    expect(fs.existsSync(path.join(localDir, 'agent-env'))).toBe(false);
    const run = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped', operator_stop: { requeue: true } });
    expect(run.acceptance?.[0]).toMatchObject({ item: 'agent process exited 0', verified: false, evidence: expect.stringMatching(/^the agent was not started/) });
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('queued');
    expect(runner.stderr()).toMatch(new RegExp(`${goalId}-r1: the runner was stopped before its agent started; finishing it \\(operator_stopped, requeued\\)`));
    expectOneLineEach(runner.stderr());
  });

  it('warns at start of a workdir outside git and of a --plant the garden does not have; SIGINT with nothing running exits 0', async () => {
    const s = await setup();
    const plain = tempDir('pak2-runner-plain-');
    const runner = startRunner(s, ['--plant', 'nope', '--plant', 'gardener'], {}, { workdir: plain });
    await until(() => /--plant nope/.test(runner.stderr()), 30_000, `the warnings; stderr:\n${runner.stderr()}`);
    runner.child.kill('SIGINT');
    expect(await exitOf(runner)).toBe(0);
    const stderr = runner.stderr();
    expect(stderr).toMatch(new RegExp(`^pak2 runner box-1: warning: --workdir ${plain.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not in a git work tree: no diff.patch will be attached to its runs$`, 'm'));
    expect(stderr).toMatch(/^pak2 runner box-1: warning: --plant nope: the garden has no plant nope \(it has gardener\); no goal will be claimed for it$/m);
    expect(stderr).not.toMatch(/--plant gardener/);
    // The signal lands between polls, or during one (a claim in flight, which brings nothing here): either is what happened.
    expect(stderr).toMatch(/^pak2 runner box-1: SIGINT: (no run in progress; exiting|a claim is in flight; a goal it brings is finished at once \(operator_stopped, requeued\), its agent not started)$/m);
    expectOneLineEach(stderr);
  });

  it('runs a goal with a runner token, named by it (no --name); the events name the token; a read token is refused in one line', async () => {
    const s = await setup();
    fs.writeFileSync(s.tokenFile, `${(await createToken(s.garden.paths, { role: 'runner', name: 'box-1' })).token}\n`);
    const goalId = await submit(s);
    const runner = startRunner(s, ['--max-runs', '1'], {}, { name: null });
    expect(await exitOf(runner)).toBe(0);
    const runId = `${goalId}-r1`;
    expect(runner.stderr()).toMatch(new RegExp(`^pak2 runner box-1: finished ${runId} success`, 'm'));
    expect((await readRun(s.garden.paths, runId)).runner).toMatchObject({ name: 'box-1' });
    const events = readEventLog(s.garden);
    expect(events.find((e) => e.type === 'LeaseClaimed' && e.run === runId)).toMatchObject({ token_name: 'box-1', token_role: 'runner' });
    expect(events.find((e) => e.type === 'DocumentUpserted' && e.run === runId)).toMatchObject({ token_name: 'box-1', token_role: 'runner' });
    expectOneLineEach(runner.stderr());

    // A read token's text says its role: refused before connecting.
    fs.writeFileSync(s.tokenFile, `${(await createToken(s.garden.paths, { role: 'read', name: 'dash' })).token}\n`);
    const reader = startRunner(s, [], {}, { name: null });
    expect(await exitOf(reader)).toBe(2);
    expect(reader.stderr().trim()).toMatch(/^pak2: --token-file .*: holds a read token \(dash\); a runner needs a runner token \(pak2 token create --role runner --name NAME\) or the operator's$/);
  });

  it('says in one line when the token is refused or the server is unreachable', async () => {
    const s = await setup();
    fs.writeFileSync(s.tokenFile, 'wrong-token\n');
    const refused = startRunner(s);
    expect(await exitOf(refused)).toBe(1);
    expect(refused.stderr().trim()).toMatch(new RegExp(`^pak2: --token-file ${s.tokenFile}: .* refused the token \\(401\\): check that it is the garden's <runtime-root>/serve/token$`, 'm'));
    await s.server.close();
    const gone = startRunner(s);
    expect(await exitOf(gone)).toBe(1);
    expect(gone.stderr()).toMatch(/^pak2: --server: cannot reach the garden's server at http:\/\/127\.0\.0\.1:\d+\/api\/v1 \(.*\): check the URL and that `pak2 serve` runs there/m);
  });

  it("runs a routed, guarded goal's guard in its checkout: tier 0's work fails verify and is reverted there, the garden keeps the records and escalates; tier 1's work is kept", async () => {
    // Tier 1's agent writes what the verify command looks for; tier 0's (the usual agent) does not.
    const tier1 = path.join(tempDir('pak2-runner-agent1-'), 'tier1.sh');
    fs.writeFileSync(
      tier1,
      [
        '#!/bin/sh',
        'cat > /dev/null',
        'if [ "$PAK2_PHASE" = reflection ]; then echo \'{"type":"result","status":"success","text":"Learned: tier 1 passes.","cost_usd":0.001}\'; exit 0; fi',
        'echo "tier 1 was here" > tier1.txt',
        'echo \'{"type":"result","status":"success","text":"done on tier 1","cost_usd":0.02}\'',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const routing = '[routing.code]\ntiers = [{ driver = "agent" }, { driver = "agent1" }]\n';
    const s = await setup(6, routing, `[drivers.agent1]\ncommand = ${JSON.stringify([tier1])}\n`);
    const response = await api(s.server, '/goals', { method: 'POST', body: JSON.stringify({ type: 'fix', plant: 'gardener', body: 'Make verify pass.', task_class: 'code', guard: { verify: 'test -f tier1.txt' } }) });
    expect(response.status).toBe(201);
    const goalId = ((await response.json()) as { goal: { id: string } }).goal.id;
    const runner = startRunner(s, ['--max-runs', '2']);
    expect(await exitOf(runner, 120_000)).toBe(0);
    const stderr = runner.stderr();
    expect(stderr).toMatch(new RegExp(`^pak2 runner box-1: finished ${goalId}-r1 failure \\(verify_failed\\)`, 'm'));
    expect(stderr).toMatch(new RegExp(`^pak2 runner box-1: finished ${goalId}-r2 success`, 'm'));

    // Attempt 1, on tier 0 (agent): verify failed on the runner's checkout; its work was reverted there.
    const r1 = await readRun(s.garden.paths, `${goalId}-r1`);
    expect(r1).toMatchObject({ status: 'failure', failure_reason: 'verify_failed', driver: 'agent' });
    expect(fs.existsSync(path.join(s.workdir, 'made-by-agent.txt'))).toBe(false);
    const dir1 = path.join(s.garden.paths.runsDir, r1.id);
    expect(JSON.parse(fs.readFileSync(path.join(dir1, 'task_outcome.json'), 'utf8'))).toMatchObject({ run_id: r1.id, state: 'degraded', diagnostic_code: 'verify_failed', rollback_performed: true, failed_command: 'test -f tier1.txt' });
    expect(JSON.parse(fs.readFileSync(path.join(dir1, 'execution_envelope.json'), 'utf8'))).toMatchObject({ run_id: r1.id, routing: { task_class: 'code', tier_index: 0, next_tier_index: 1 } });
    expect(fs.readFileSync(path.join(dir1, 'rejected.patch'), 'utf8')).toContain('made by the agent');
    expect(fs.readFileSync(path.join(dir1, 'phase_events.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { phase: string }).phase)).toEqual(['baseline', 'executor_start', 'executor_done', 'scope_check', 'verify', 'decision', 'rollback']);
    const events = readEventLog(s.garden).map((e) => [e.type, e.run]);
    expect(events).toContainEqual(['RunRolledBack', r1.id]);
    expect(events).toContainEqual(['RoutingEscalated', r1.id]);
    // Nothing of the rejected work reached the garden: attempt 1's diff holds only the memory the agent kept (the guard leaves the plant's directory alone).
    const diff1 = fs.readFileSync(path.join(dir1, 'artifacts', 'diff.patch'), 'utf8');
    expect(diff1).not.toContain('made by the agent');
    expect(diff1).toContain('plants/gardener/memory/MEMORY.md');

    // Attempt 2, on tier 1 (agent1): verify passed, the work is kept and queued to land.
    const r2 = await readRun(s.garden.paths, `${goalId}-r2`);
    expect(r2).toMatchObject({ status: 'success', driver: 'agent1' });
    expect(JSON.parse(fs.readFileSync(path.join(s.garden.paths.runsDir, r2.id, 'task_outcome.json'), 'utf8'))).toMatchObject({ state: 'ready', verify_ok: true });
    expect(JSON.parse(fs.readFileSync(path.join(s.garden.paths.runsDir, r2.id, 'execution_envelope.json'), 'utf8'))).toMatchObject({ routing: { tier_index: 1, escalations: 1, stop_reason: 'kept' } });
    expect(fs.readFileSync(path.join(s.garden.paths.runsDir, r2.id, 'artifacts', 'diff.patch'), 'utf8')).toContain('+tier 1 was here');
    expect((await readGoal(s.garden.paths, goalId)).status).toBe('completed');
    expect(await readLanding(s.garden.paths, r2.id)).toMatchObject({ state: 'queued' });
  }, 180_000);
});
