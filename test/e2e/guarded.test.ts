import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tendMetadataOf, validateExecutionEnvelope, validateTaskOutcome } from '../../source/contracts/index.js';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { loadGarden, runDir } from '../../source/garden/index.js';
import { createGoal, listGoals, readGoal, readRun, type GoalInput } from '../../source/store/index.js';
import { modelCalls, startModelServer, type ModelServer, type RecordedRequest, type Turn } from '../support/model-server.js';
import { cycleUntilIdle, makeAgentGarden, processesWith, type AgentGarden, codexScriptedConfig } from './agents.js';

/**
 * Guarded runs (seed 001, issue 10's acceptance a–d) with the REAL claude
 * and codex CLIs against the scripted model server: the agents change the
 * garden through their own tools (claude Write / Bash, codex apply_patch /
 * exec_command), and pak2's scope check, verify, decision and rollback are
 * observed on disk. The same scenarios with scripted shell agents are in
 * test/guard/guarded-run.test.ts.
 *
 * One model server answers every test. The tool-call turns are anchored on
 * markers only the guarded goals' bodies carry, so the automatic tend that
 * follows a failed goal (and anything else unanchored) gets harmless text,
 * and every reflection gets its own text turn.
 *
 * A guarded agent gets only the basics, its driver's prefixes and the
 * goal's env_passthrough (source/guard/env.ts): codex's scripted provider
 * reads its key from PAK2_TEST_MODEL_KEY, so every goal here passes it
 * through (without it codex fails: "Missing environment variable").
 */

const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);
// bwrap as test/run-record/sandbox.test.ts finds it: on PATH, or unpacked by CI and named in PAK2_TEST_BWRAP.
const BWRAP = process.env.PAK2_TEST_BWRAP ?? 'bwrap';
const bwrapWorks = spawnSync(BWRAP, ['--dev-bind', '/', '/', 'true']).status === 0;
/** Passed through to (b)'s agent, which writes it into the forbidden file and prints it: redacted from every file of the run. */
const SECRET = 'pak2-e2e-secret-5d1c7a90e3';
const MARK = {
  allowed: '[e2e-guard:allowed]',
  forbidden: '[e2e-guard:forbidden]',
  tiers: '[e2e-guard:tiers]',
  never: '[e2e-guard:never]',
};

const bash = (command: string) => ({ name: 'Bash', input: { command, description: 'Run a command' } });
const execCommand = (cmd: string) => ({ type: 'function_call' as const, name: 'exec_command', arguments: { cmd } });

const TURNS: Turn[] = [
  // Unanchored conversations (the automatic tend's) start here: text only.
  { text: 'Nothing to do here.' },
  { text: 'Nothing to do here.' },
  // (a) a new file through the file tool, a tracked file through the shell.
  { match: MARK.allowed, toolCall: { writeFile: { path: 'src/greeting.txt', content: 'hello\n' } } },
  { toolCall: { shell: 'printf "v2\\n" > src/app.txt' } },
  { text: 'Changed src/greeting.txt and src/app.txt.' },
  // (b) a forbidden path through the shell (with an allowed change and a write over the operator's dirty file).
  { match: MARK.forbidden, toolCall: { shell: 'mkdir -p secrets && printf "TOKEN=%s\\n" "$PAK2_E2E_SECRET" > secrets/key.txt && cat secrets/key.txt && printf "v2\\n" > src/app.txt && printf "agent\\n" >> notes.txt' } },
  { text: 'Stored the key.' },
  // (c) codex (tier 0) writes what verify rejects, claude (tier 1) what it accepts.
  { match: MARK.tiers, toolCall: { openai: execCommand('printf "weak\\n" > src/app.txt && printf "x\\n" > weak-extra.txt'), anthropic: bash('printf "v2\\n" > src/app.txt') } },
  { text: 'Updated src/app.txt.' },
  // (d) neither tier writes what verify wants.
  { match: MARK.never, toolCall: { anthropic: bash('printf "a\\n" > src/app.txt && printf "x\\n" > new-a.txt'), openai: execCommand('printf "b\\n" > src/app.txt && mkdir -p out && printf "y\\n" > out/new-b.txt') } },
  { text: 'Updated src/app.txt.' },
  { match: REFLECTION_MARK, text: 'I learned that pak2 checks guarded work after the run.' },
];

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer({ turns: TURNS, fallbackText: 'Nothing to do here.' });
});
afterAll(async () => {
  await server?.close();
});

let garden: AgentGarden | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

const GIT_ENV = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...GIT_ENV } });

/** The environment that points claude (CLAUDE_CONFIG_DIR) and codex (CODEX_HOME, a provider for the server) at the model server. */
function agentEnv(stateDir: string): NodeJS.ProcessEnv {
  const claudeDir = path.join(stateDir, 'claude');
  const codexDir = path.join(stateDir, 'codex');
  const home = path.join(stateDir, 'home');
  for (const d of [claudeDir, codexDir, home]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(
    path.join(codexDir, 'config.toml'),
    codexScriptedConfig(server.url),
  );
  return {
    // A fresh HOME: the agents' shells source its rc files.
    HOME: home,
    ANTHROPIC_BASE_URL: server.url,
    ANTHROPIC_API_KEY: 'test-key',
    CLAUDE_CONFIG_DIR: claudeDir,
    CLAUDE_CODE_MAX_RETRIES: '0',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CODEX_HOME: codexDir,
    PAK2_TEST_MODEL_KEY: 'test-key',
    PAK2_E2E_SECRET: SECRET,
  };
}

/**
 * A git garden for the real CLIs: PAK2.toml, src/app.txt and notes.txt
 * committed, then notes.txt edited by the operator (dirty before the run).
 * Returns the operator's bytes of notes.txt.
 */
async function gitGarden(driver: 'claude' | 'codex', extraToml = ''): Promise<{ g: AgentGarden; root: string; operatorBytes: Buffer }> {
  // The seeds' single tree: the guard's tree-mode rules against the real CLIs (worktree mode: test/e2e/worktree.test.ts).
  const made = await makeAgentGarden(driver, { watchdog_seconds: 60, run_timeout_seconds: 90, isolation: 'tree' }, agentEnv, driver === 'codex' ? 'gpt-5' : undefined);
  garden = made;
  const root = made.paths.gardenRoot;
  if (extraToml) fs.appendFileSync(path.join(root, 'PAK2.toml'), `${extraToml}\n`);
  fs.mkdirSync(path.join(root, 'src'));
  fs.writeFileSync(path.join(root, 'src', 'app.txt'), 'v1\n');
  fs.writeFileSync(path.join(root, 'notes.txt'), 'committed\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '--', 'PAK2.toml', 'MOTIVATION.md', 'seeds', 'src', 'notes.txt', '.gitignore');
  git(root, 'commit', '-q', '-m', 'start');
  fs.writeFileSync(path.join(root, 'notes.txt'), 'operator edit, not committed\r\nno newline at the end');
  const g: AgentGarden = { ...made, ...loadGarden(root) };
  garden = g;
  return { g, root, operatorBytes: fs.readFileSync(path.join(root, 'notes.txt')) };
}

/** `git status --porcelain` lines, less the plant directory pak2 writes (not committed in these gardens). */
const status = (root: string) => git(root, 'status', '--porcelain', '--untracked-files=all').split('\n').filter((l) => l && !l.includes(' plants/')).sort();

const read = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;

/** Runs the garden until idle; returns the model calls made meanwhile. */
async function cycle(g: AgentGarden): Promise<RecordedRequest[]> {
  const from = server.requests.length;
  await cycleUntilIdle(g);
  return modelCalls(server.requests.slice(from));
}

/** The run's phase_events.jsonl lines. */
const phaseEvents = (g: AgentGarden, runId: string) =>
  fs.readFileSync(path.join(runDir(g.paths, runId), 'phase_events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { phase: string; outcome: string; ts: string });

/** How many of `calls` the server answered with a tool call. */
const toolCalls = (calls: RecordedRequest[]) => calls.filter((r) => r.answer === 'toolCall').length;

/** Per test: a few CLI runs each (the agent, its reflection or the tend that follows a failure). */
const TIMEOUT = 120_000;

const sorted = (list: string[]) => [...list].sort();

/** Every line of the run's events.jsonl still parses after redaction. */
function expectParsedStream(g: AgentGarden, runId: string): void {
  const lines = fs.readFileSync(path.join(runDir(g.paths, runId), 'events.jsonl'), 'utf8').split('\n').filter(Boolean);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
}

/** The automatic tends the failed goal got: ran and closed success (their agent only answered text). */
async function expectTendRan(g: AgentGarden, goalId: string): Promise<void> {
  const tends = (await listGoals(g.paths)).goals.filter((t) => t.type === 'tend');
  expect(tends.map((t) => [tendMetadataOf(t)?.origin.goal, t.closed_reason])).toEqual([[goalId, 'success']]);
}

describe('guarded runs end to end: the real claude and codex CLIs against the scripted model server', () => {
  it.each(['claude', 'codex'] as const)('(a) %s changes allowed files, verify passes: success, the files kept', async (driver) => {
    const { g, root, operatorBytes } = await gitGarden(driver);
    const goal = await createGoal(g.paths, {
      type: 'build',
      plant: 'gardener',
      body: `${MARK.allowed} Create src/greeting.txt and set src/app.txt to v2.`,
      guard: { verify: 'grep -q v2 src/app.txt && grep -q hello src/greeting.txt', allowed_files: ['src/**'], env_passthrough: ['PAK2_TEST_MODEL_KEY'] },
    } as GoalInput);
    expect(toolCalls(await cycle(g))).toBe(2);

    const runId = `${goal.id}-r1`;
    const dir = runDir(g.paths, runId);
    const run = await readRun(g.paths, runId);
    expect([run.driver, run.status, run.failure_reason ?? null]).toEqual([driver, 'success', null]);
    expect(fs.readFileSync(path.join(root, 'src', 'greeting.txt'), 'utf8')).toBe('hello\n');
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');
    expect(fs.readFileSync(path.join(root, 'notes.txt')).equals(operatorBytes)).toBe(true);

    const outcome = read(path.join(dir, 'task_outcome.json'));
    expect(validateTaskOutcome(outcome)).toEqual([]);
    expect(outcome).toMatchObject({ state: 'ready', status: 'success', diagnostic_code: 'ready', verify_ok: true, verify_exit_code: 0, rollback_performed: false, verifier_was_skipped: false, scope_violations: [] });
    expect(sorted(outcome.mutated_files)).toEqual(['src/app.txt', 'src/greeting.txt']);
    expect(sorted(outcome.accepted_mutations)).toEqual(['src/app.txt', 'src/greeting.txt']);
    expect(outcome.executor).toMatchObject({ name: driver, exit_code: 0 });
    expect(outcome.executor.cost_usd).toBeGreaterThan(0);
    const envelope = read(path.join(dir, 'execution_envelope.json'));
    expect(validateExecutionEnvelope(envelope)).toEqual([]);
    // seed 001: the adapter's own name is no label, so kind is absent; no sandbox was asked for, so none was active.
    expect(envelope.executor).toEqual({ name: driver, version: driver === 'claude' ? expect.stringMatching(/^\d+\.\d+\.\d+/) : null, sandbox: false, model: run.model });
    expect(outcome.executor.sandbox).toBe(false);
    expect(envelope.baseline).toMatchObject({ branch: 'main', head: git(root, 'rev-parse', 'HEAD').trim(), dirty_paths: ['notes.txt'] });
    expect(phaseEvents(g, runId).map((e) => e.phase)).toEqual(['baseline', 'executor_start', 'executor_done', 'scope_check', 'verify', 'decision', 'rollback']);
    expect(fs.existsSync(path.join(dir, 'rejected.patch'))).toBe(false);
    expect(run.reflection).toBe('I learned that pak2 checks guarded work after the run.');
    expectParsedStream(g, runId);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    expect(status(root)).toEqual([' M notes.txt', ' M src/app.txt', '?? src/greeting.txt']);
    expect(processesWith(g.stateDir)).toEqual([]);
  }, TIMEOUT);

  it.skipIf(!bwrapWorks)('(e) claude started inside the bubblewrap sandbox: its work is kept and the envelope says sandbox true', async () => {
    const { g, root } = await gitGarden('claude', 'sandbox = "bubblewrap"');
    if (process.env.PAK2_TEST_BWRAP) g.env = { ...g.env, PATH: `${path.dirname(process.env.PAK2_TEST_BWRAP)}${path.delimiter}${g.env.PATH ?? ''}` };
    const goal = await createGoal(g.paths, {
      type: 'build',
      plant: 'gardener',
      body: `${MARK.allowed} Create src/greeting.txt and set src/app.txt to v2.`,
      guard: { verify: 'grep -q v2 src/app.txt && grep -q hello src/greeting.txt', allowed_files: ['src/**'] },
    } as GoalInput);
    expect(toolCalls(await cycle(g))).toBe(2);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect([run.status, run.failure_reason ?? null]).toEqual(['success', null]);
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');
    const dir = runDir(g.paths, run.id);
    expect(read(path.join(dir, 'execution_envelope.json')).executor).toMatchObject({ name: 'claude', sandbox: true });
    expect(read(path.join(dir, 'execution_envelope.json')).executor).not.toHaveProperty('kind');
    expect(read(path.join(dir, 'task_outcome.json')).executor).toMatchObject({ name: 'claude', sandbox: true });
    expect(processesWith(g.stateDir)).toEqual([]);
  }, TIMEOUT);

  it.each(['claude', 'codex'] as const)('(b) %s writes a forbidden path through its shell: scope violation, rollback, the operator file byte-identical', async (driver) => {
    const { g, root, operatorBytes } = await gitGarden(driver);
    const goal = await createGoal(g.paths, {
      type: 'build',
      plant: 'gardener',
      body: `${MARK.forbidden} Store the token.`,
      guard: { verify: 'true', forbidden_paths: ['secrets/**'], env_passthrough: ['PAK2_TEST_MODEL_KEY', 'PAK2_E2E_SECRET'] },
    } as GoalInput);
    const calls = await cycle(g);
    expect(toolCalls(calls)).toBe(1); // the tend that follows the failure made no tool call

    const runId = `${goal.id}-r1`;
    const dir = runDir(g.paths, runId);
    const run = await readRun(g.paths, runId);
    expect([run.driver, run.status, run.failure_reason]).toEqual([driver, 'failure', 'scope_violation']);
    // The shell really ran: its command is in the agent's own stream.
    expect(fs.readFileSync(path.join(dir, 'events.jsonl'), 'utf8')).toContain('secrets/key.txt');

    const outcome = read(path.join(dir, 'task_outcome.json'));
    expect(validateTaskOutcome(outcome)).toEqual([]);
    expect(outcome).toMatchObject({ state: 'degraded', status: 'failed', diagnostic_code: 'scope_violation', rollback_performed: true, mutated_files: [], verifier_was_skipped: true, blocked_mutations: ['secrets/key.txt'] });
    expect(outcome.scope_violations.map((v: { kind: string; path: string }) => `${v.kind}:${v.path}`)).toEqual(['forbidden_path:secrets/key.txt']);
    expect(sorted(outcome.attempted_mutations)).toEqual(['notes.txt', 'secrets/key.txt', 'src/app.txt']);

    const patch = fs.readFileSync(path.join(dir, 'rejected.patch'), 'utf8');
    expect(patch).toContain('secrets/key.txt');
    expect(patch).toContain('+TOKEN=[REDACTED:PAK2_E2E_SECRET]');
    // The secret reached the agent's shell (its output went back to the model), and no file of the run holds it.
    expect(calls.some((r) => JSON.stringify(r.body ?? '').includes(SECRET))).toBe(true);
    expect(fs.readdirSync(dir).filter((name) => fs.readFileSync(path.join(dir, name), 'utf8').includes(SECRET))).toEqual([]);
    expect(patch).toContain('+v2');
    // notes.txt against the operator's bytes (the baseline), not HEAD.
    expect(patch).toContain('-no newline at the end\n\\ No newline at end of file\n+no newline at the endagent\n');

    // The tree is as the operator left it.
    expect(fs.existsSync(path.join(root, 'secrets'))).toBe(false);
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v1\n');
    expect(fs.readFileSync(path.join(root, 'notes.txt')).equals(operatorBytes)).toBe(true);
    expect(status(root)).toEqual([' M notes.txt']);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    expectParsedStream(g, runId);
    await expectTendRan(g, goal.id);
    expect(processesWith(g.stateDir)).toEqual([]);
  }, TIMEOUT);

  it('(c) routing: codex on tier 0 fails verify, claude on tier 1 passes: two runs, the second kept, both costs in the envelope', async () => {
    const { g, root, operatorBytes } = await gitGarden(
      'claude',
      '[routing.simple]\ntiers = [{ driver = "codex", model = "gpt-5-mini" }, { driver = "claude", model = "claude-sonnet-4-5" }]\nmax_escalations = 2',
    );
    const goal = await createGoal(g.paths, {
      type: 'build',
      plant: 'gardener',
      body: `${MARK.tiers} Set src/app.txt to v2.`,
      task_class: 'simple',
      guard: { verify: 'grep -qx v2 src/app.txt', env_passthrough: ['PAK2_TEST_MODEL_KEY'] },
    } as GoalInput);
    expect(toolCalls(await cycle(g))).toBe(2);

    const first = await readRun(g.paths, `${goal.id}-r1`);
    const second = await readRun(g.paths, `${goal.id}-r2`);
    expect([first.driver, first.model, first.status, first.failure_reason]).toEqual(['codex', 'gpt-5-mini', 'failure', 'verify_failed']);
    expect([second.driver, second.model, second.status]).toEqual(['claude', 'claude-sonnet-4-5', 'success']);
    expect(fs.existsSync(runDir(g.paths, `${goal.id}-r3`))).toBe(false);

    // r1's work was rolled back before r2 started: its patch holds it, r2's baseline is the operator's tree.
    const firstOutcome = read(path.join(runDir(g.paths, first.id), 'task_outcome.json'));
    expect(firstOutcome).toMatchObject({ diagnostic_code: 'verify_failed', verify_ok: false, rollback_performed: true, mutated_files: [], failed_command: 'grep -qx v2 src/app.txt' });
    expect(sorted(firstOutcome.attempted_mutations)).toEqual(['src/app.txt', 'weak-extra.txt']);
    const firstPatch = fs.readFileSync(path.join(runDir(g.paths, first.id), 'rejected.patch'), 'utf8');
    expect(firstPatch).toContain('+weak');
    expect(firstPatch).toContain('weak-extra.txt');
    const secondOutcome = read(path.join(runDir(g.paths, second.id), 'task_outcome.json'));
    expect(secondOutcome).toMatchObject({ state: 'ready', diagnostic_code: 'ready', verify_ok: true, mutated_files: ['src/app.txt'] });
    const envelope = read(path.join(runDir(g.paths, second.id), 'execution_envelope.json'));
    expect(validateExecutionEnvelope(envelope)).toEqual([]);
    expect(envelope.baseline.dirty_paths).toEqual(['notes.txt']);
    const rolledBack = phaseEvents(g, first.id).find((e) => e.phase === 'rollback')!;
    const baseline = phaseEvents(g, second.id).find((e) => e.phase === 'baseline')!;
    expect(rolledBack.outcome).toBe('done');
    expect(Date.parse(rolledBack.ts)).toBeLessThanOrEqual(Date.parse(baseline.ts));

    expect(envelope.routing).toMatchObject({ task_class: 'simple', tier_index: 1, escalations: 1, stop_reason: 'kept' });
    expect(envelope.routing.attempts).toEqual([
      { run_id: first.id, tier_index: 0, executor: 'codex', model: 'gpt-5-mini', diagnostic_code: 'verify_failed', cost_usd: expect.any(Number) },
      { run_id: second.id, tier_index: 1, executor: 'claude', model: 'claude-sonnet-4-5', diagnostic_code: 'ready', cost_usd: expect.any(Number) },
    ]);
    // The costs are the CLIs' own: codex's tokens priced by pak2, claude's total_cost_usd.
    expect(first.cost?.source).toBe('estimated');
    expect(second.cost?.source).toBe('provider');
    for (const [attempt, run] of [[envelope.routing.attempts[0], first], [envelope.routing.attempts[1], second]] as const) {
      expect(attempt.cost_usd).toBeGreaterThan(0);
      expect(attempt.cost_usd).toBeCloseTo(run.cost!.usd!, 10);
    }

    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    expect((await listGoals(g.paths)).goals.filter((t) => t.type === 'tend')).toEqual([]); // an escalated attempt is no failed goal
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');
    expect(fs.readFileSync(path.join(root, 'notes.txt')).equals(operatorBytes)).toBe(true);
    expect(status(root)).toEqual([' M notes.txt', ' M src/app.txt']);
    expect(processesWith(g.stateDir)).toEqual([]);
  }, TIMEOUT);

  it('(d) routing: verify fails on every tier (claude, then codex): last_tier, nothing left changed', async () => {
    const { g, root, operatorBytes } = await gitGarden(
      'claude',
      '[routing.simple]\ntiers = [{ driver = "claude", model = "claude-sonnet-4-5" }, { driver = "codex", model = "gpt-5-mini" }]\nmax_escalations = 5',
    );
    const goal = await createGoal(g.paths, {
      type: 'build',
      plant: 'gardener',
      body: `${MARK.never} Set src/app.txt to v3.`,
      task_class: 'simple',
      guard: { verify: 'grep -qx v3 src/app.txt', env_passthrough: ['PAK2_TEST_MODEL_KEY'] },
    } as GoalInput);
    expect(toolCalls(await cycle(g))).toBe(2); // one tool call per tier; the tend that follows made none

    const first = await readRun(g.paths, `${goal.id}-r1`);
    const second = await readRun(g.paths, `${goal.id}-r2`);
    expect([first.driver, first.failure_reason, second.driver, second.failure_reason]).toEqual(['claude', 'verify_failed', 'codex', 'verify_failed']);
    expect(fs.existsSync(runDir(g.paths, `${goal.id}-r3`))).toBe(false);
    const envelope = read(path.join(runDir(g.paths, second.id), 'execution_envelope.json'));
    expect(envelope.routing).toMatchObject({ task_class: 'simple', tier_index: 1, escalations: 1, stop_reason: 'last_tier' });
    expect(envelope.routing.attempts.map((a: { run_id: string; diagnostic_code: string }) => [a.run_id, a.diagnostic_code])).toEqual([
      [first.id, 'verify_failed'],
      [second.id, 'verify_failed'],
    ]);
    for (const [id, mutations] of [[first.id, ['new-a.txt', 'src/app.txt']], [second.id, ['out/new-b.txt', 'src/app.txt']]] as const) {
      const outcome = read(path.join(runDir(g.paths, id), 'task_outcome.json'));
      expect(outcome).toMatchObject({ diagnostic_code: 'verify_failed', rollback_performed: true, mutated_files: [] });
      expect(sorted(outcome.attempted_mutations)).toEqual(mutations);
    }

    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    await expectTendRan(g, goal.id);
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v1\n');
    expect(fs.existsSync(path.join(root, 'out'))).toBe(false);
    expect(fs.readFileSync(path.join(root, 'notes.txt')).equals(operatorBytes)).toBe(true);
    expect(status(root)).toEqual([' M notes.txt']);
    expect(processesWith(g.stateDir)).toEqual([]);
  }, TIMEOUT);
});
