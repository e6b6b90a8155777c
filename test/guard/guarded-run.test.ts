import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { validateExecutionEnvelope, validateTaskOutcome } from '../../source/contracts/index.js';
import { loadGarden, runDir, type Garden } from '../../source/garden/index.js';
import { commissionPlant, createGoal, readGoal, readRun, type GoalInput } from '../../source/store/index.js';

/**
 * Guarded runs through the coordinator with scripted shell agents (the
 * `command` driver): scope check, verify, decision, rollback, records,
 * routing and redaction, each observed on disk. The real claude and codex
 * CLIs are driven in test/e2e/guarded.test.ts.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });

/** An agent that runs `script` in sh when its prompt is a guarded run's (not the automatic tend that follows a failure), then reports success (cost in USD, 100 tokens). */
function agent(script: string, cost = 0.01): string[] {
  const result = JSON.stringify({ type: 'result', status: 'success', text: 'done', cost_usd: cost, session_id: 's1', num_turns: 1, usage: { input_tokens: 90, output_tokens: 10 } });
  return ['sh', '-c', `prompt=$(cat); if [ "$PAK2_PHASE" = reflection ]; then echo '{"type":"result","status":"success","text":"learned","cost_usd":0}'; exit 0; fi; case "$prompt" in *"# Guard"*) ${script};; esac\necho '${result}'`];
}

async function gitGarden(drivers: Record<string, string[]>, extraToml = '', options: { git?: boolean; coordinator?: string } = {}): Promise<Garden & { root: string }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-guard-'));
  cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
  const toml = [
    '[runtime]',
    'root = ".runtime"',
    '[defaults]',
    `driver = "${Object.keys(drivers)[0]}"`,
    '[coordinator]',
    options.coordinator?.includes('interval_seconds') ? '' : 'interval_seconds = 3600',
    // The seeds' single tree: these are the guard's tree-mode rules (worktree mode has its own tests, test/landing/).
    options.coordinator?.includes('isolation') ? '' : 'isolation = "tree"',
    options.coordinator ?? '',
    ...Object.entries(drivers).map(([name, argv]) => `[drivers.${name}]\ncommand = ${JSON.stringify(argv)}`),
    extraToml,
  ].join('\n');
  fs.writeFileSync(path.join(root, 'PAK2.toml'), toml);
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# m\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed\n');
  fs.mkdirSync(path.join(root, 'src'));
  fs.writeFileSync(path.join(root, 'src', 'app.txt'), 'v1\n');
  fs.writeFileSync(path.join(root, 'notes.txt'), 'committed\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n.env\n');
  if (options.git !== false) {
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'start');
  }
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  return { ...garden, root };
}

/** Runs the in-process coordinator until the garden is idle. */
async function cycle(garden: Garden): Promise<void> {
  const coordinator = new Coordinator({ garden, onStderr: () => undefined });
  await coordinator.start();
  try {
    await coordinator.untilIdle();
  } finally {
    await coordinator.stop();
  }
}

async function runGoal(garden: Garden, input: Partial<GoalInput>): Promise<string> {
  const goal = await createGoal(garden.paths, { type: 'fix', body: 'do the thing', plant: 'gardener', ...input } as GoalInput);
  await cycle(garden);
  return goal.id;
}

/** `git status --porcelain` lines, less the plant directory pak2 writes (not committed in these gardens). */
const status = (root: string) => git(root, 'status', '--porcelain').split('\n').filter((l) => l && !l.endsWith('plants/')).join('\n');

const read = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;

// bwrap as the sandbox test finds it (test/run-record/sandbox.test.ts): on PATH, or unpacked by CI and named in PAK2_TEST_BWRAP.
const BWRAP = process.env.PAK2_TEST_BWRAP ?? 'bwrap';
const bwrapWorks = spawnSync(BWRAP, ['--dev-bind', '/', '/', 'true']).status === 0;
const withBwrap = { ...process.env, PATH: process.env.PAK2_TEST_BWRAP ? `${path.dirname(process.env.PAK2_TEST_BWRAP)}${path.delimiter}${process.env.PATH ?? ''}` : process.env.PATH };

describe('guarded runs', () => {
  it('keeps an allowed change that verify passes, and writes every record', async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt') });
    fs.writeFileSync(path.join(garden.root, 'notes.txt'), 'operator edit\n'); // dirty before the run
    const goalId = await runGoal(garden, { guard: { verify: 'grep -q v2 src/app.txt', allowed_files: ['src/**'] } } as Partial<GoalInput>);
    const runId = `${goalId}-r1`;
    const dir = runDir(garden.paths, runId);
    const run = await readRun(garden.paths, runId);
    expect(run.status).toBe('success');
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');
    const outcome = read(path.join(dir, 'task_outcome.json'));
    expect(validateTaskOutcome(outcome)).toEqual([]);
    expect(outcome).toMatchObject({ state: 'ready', status: 'success', diagnostic_code: 'ready', verify_ok: true, verify_exit_code: 0, mutated_files: ['src/app.txt'], accepted_mutations: ['src/app.txt'], rollback_performed: false, acceptance_state: 'raw_run_not_contract_accepted', verifier_was_skipped: false });
    const envelope = read(path.join(dir, 'execution_envelope.json'));
    expect(validateExecutionEnvelope(envelope)).toEqual([]);
    expect(envelope.baseline.branch).toBe('main');
    expect(envelope.baseline.head).toBe(git(garden.root, 'rev-parse', 'HEAD').trim());
    expect(envelope.baseline.dirty_paths).toEqual(['notes.txt']);
    const phases = fs.readFileSync(path.join(dir, 'phase_events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).phase);
    expect(phases).toEqual(['baseline', 'executor_start', 'executor_done', 'scope_check', 'verify', 'decision', 'rollback']);
    expect(fs.existsSync(path.join(dir, 'prompt_bundle.md'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'rejected.patch'))).toBe(false);
    expect(fs.readFileSync(path.join(garden.root, 'notes.txt'), 'utf8')).toBe('operator edit\n');
  });

  it("execution_envelope.executor (seed 001): a label names its adapter in kind; an adapter's own name has no kind; sandbox is what the agent was started in", async () => {
    // A [drivers.<label>] entry runs through the command adapter: name is the label, kind the adapter.
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt'), command: agent('echo v3 > src/app.txt') });
    const labelled = await runGoal(garden, { guard: { verify: 'grep -q v2 src/app.txt' } } as Partial<GoalInput>);
    const envelope = read(path.join(runDir(garden.paths, `${labelled}-r1`), 'execution_envelope.json'));
    expect(validateExecutionEnvelope(envelope)).toEqual([]);
    expect(envelope.executor).toEqual({ name: 'sh', kind: 'command', version: null, sandbox: false, model: expect.any(String) });
    expect(read(path.join(runDir(garden.paths, `${labelled}-r1`), 'task_outcome.json')).executor).toMatchObject({ name: 'sh', sandbox: false });
    // The command adapter by its own name: no label, so no kind.
    const plain = await runGoal(garden, { driver: 'command', guard: { verify: 'grep -q v3 src/app.txt' } } as Partial<GoalInput>);
    const bare = read(path.join(runDir(garden.paths, `${plain}-r1`), 'execution_envelope.json'));
    expect(bare.executor.name).toBe('command');
    expect(bare.executor).not.toHaveProperty('kind');
  });

  it('executor.sandbox is false for an agent that never started, even with the sandbox configured', async () => {
    const garden = await gitGarden({ sh: agent('true') }, '', { coordinator: 'sandbox = "bubblewrap"' });
    const goal = await createGoal(garden.paths, { type: 'fix', body: 'no bwrap', plant: 'gardener', guard: { verify: 'true' } } as GoalInput);
    // A PATH with git and no bwrap: the baseline is taken, the launch fails, so no executor ran in any sandbox.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-nobwrap-'));
    cleanups.push(() => fs.rmSync(bin, { recursive: true, force: true }));
    fs.symlinkSync(execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim(), path.join(bin, 'git'));
    const coordinator = new Coordinator({ garden, onStderr: () => undefined, env: { ...process.env, PATH: bin } });
    await coordinator.start();
    try {
      await coordinator.untilIdle();
    } finally {
      await coordinator.stop();
    }
    const run = await readRun(garden.paths, `${goal.id}-r1`);
    expect(run.failure_reason).toBe('launch_failed');
    expect(read(path.join(runDir(garden.paths, run.id), 'execution_envelope.json')).executor.sandbox).toBe(false);
    expect(outcomeOf(garden, run.id).executor.sandbox).toBe(false);
  });

  it.skipIf(!bwrapWorks)('executor.sandbox is true for an agent pak2 started inside bubblewrap', async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt') }, '', { coordinator: 'sandbox = "bubblewrap"' });
    const goal = await createGoal(garden.paths, { type: 'fix', body: 'in the sandbox', plant: 'gardener', guard: { verify: 'grep -q v2 src/app.txt' } } as GoalInput);
    const coordinator = new Coordinator({ garden, onStderr: () => undefined, env: withBwrap });
    await coordinator.start();
    try {
      await coordinator.untilIdle();
    } finally {
      await coordinator.stop();
    }
    const run = await readRun(garden.paths, `${goal.id}-r1`);
    expect(run.status).toBe('success');
    expect(read(path.join(runDir(garden.paths, run.id), 'process.json')).sandbox).toBe('bubblewrap');
    expect(read(path.join(runDir(garden.paths, run.id), 'execution_envelope.json')).executor).toMatchObject({ name: 'sh', kind: 'command', sandbox: true });
    expect(outcomeOf(garden, run.id).executor.sandbox).toBe(true);
  });

  it('rolls back a forbidden write made through the shell, keeping the operator dirty file byte-identical', async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt; mkdir -p secrets; echo TOKEN=abc > secrets/key.txt; echo SECRET=1 > .env; rm notes.txt') });
    fs.writeFileSync(path.join(garden.root, 'src', 'app.txt'), 'operator wip\n');
    fs.writeFileSync(path.join(garden.root, 'scratch.txt'), 'operator untracked\n');
    const goalId = await runGoal(garden, { guard: { forbidden_paths: ['secrets/', '.env'] } } as Partial<GoalInput>);
    const dir = runDir(garden.paths, `${goalId}-r1`);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.status).toBe('failure');
    expect(run.failure_reason).toBe('scope_violation');
    const outcome = read(path.join(dir, 'task_outcome.json'));
    expect(outcome).toMatchObject({ state: 'degraded', status: 'failed', diagnostic_code: 'scope_violation', rollback_performed: true, mutated_files: [], verifier_was_skipped: true });
    expect(outcome.blocked_mutations.sort()).toEqual(['.env', 'secrets/key.txt']);
    expect(outcome.scope_violations.map((v: { kind: string; path: string }) => `${v.kind}:${v.path}`).sort()).toEqual(['forbidden_path:.env', 'forbidden_path:secrets/key.txt']);
    expect(outcome.attempted_mutations.sort()).toEqual(['.env', 'notes.txt', 'secrets/key.txt', 'src/app.txt']);
    // The tree is as the operator left it.
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('operator wip\n');
    expect(fs.readFileSync(path.join(garden.root, 'scratch.txt'), 'utf8')).toBe('operator untracked\n');
    expect(fs.readFileSync(path.join(garden.root, 'notes.txt'), 'utf8')).toBe('committed\n');
    expect(fs.existsSync(path.join(garden.root, 'secrets'))).toBe(false);
    expect(fs.existsSync(path.join(garden.root, '.env'))).toBe(false);
    const patch = fs.readFileSync(path.join(dir, 'rejected.patch'), 'utf8');
    expect(patch).toContain('secrets/key.txt');
    expect(patch).toContain('+TOKEN=abc');
    expect(patch).toContain('+v2');
    expect(status(garden.root).split('\n').sort()).toEqual([' M src/app.txt', '?? scratch.txt']);
    expect((await readGoal(garden.paths, goalId)).closed_reason).toBe('failure');
  });

  it('rolls back when verify fails, keeps its exit code and output', async () => {
    const garden = await gitGarden({ sh: agent('echo broken > src/app.txt; git add src/app.txt; git commit -qm agent') });
    const head = git(garden.root, 'rev-parse', 'HEAD').trim();
    const goalId = await runGoal(garden, { guard: { verify: 'echo checking; echo nope >&2; exit 3' } } as Partial<GoalInput>);
    const dir = runDir(garden.paths, `${goalId}-r1`);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('verify_failed');
    expect(run.outputs?.error ?? '').toMatch(/verify failed \(exit 3\)/);
    const outcome = read(path.join(dir, 'task_outcome.json'));
    expect(outcome).toMatchObject({ diagnostic_code: 'verify_failed', verify_ok: false, verify_exit_code: 3, verify_stdout: 'checking\n', verify_stderr: 'nope\n', failed_command: 'echo checking; echo nope >&2; exit 3', rollback_performed: true, mutated_files: [] });
    expect(git(garden.root, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('v1\n');
    expect(status(garden.root)).toBe('');
  });

  it('escalates through routing tiers until verify passes, linking the attempts with their costs', async () => {
    const garden = await gitGarden(
      { weak: agent('echo weak > src/app.txt', 0.01), strong: agent('echo v2 > src/app.txt', 0.4) },
      '[routing.simple]\ntiers = [{ driver = "weak", model = "small" }, { driver = "strong", model = "big" }]\nmax_escalations = 1\n',
    );
    const goalId = await runGoal(garden, { task_class: 'simple', guard: { verify: 'grep -q v2 src/app.txt' } } as Partial<GoalInput>);
    const first = await readRun(garden.paths, `${goalId}-r1`);
    const second = await readRun(garden.paths, `${goalId}-r2`);
    expect([first.driver, first.status, first.failure_reason]).toEqual(['weak', 'failure', 'verify_failed']);
    expect([second.driver, second.model, second.status]).toEqual(['strong', 'big', 'success']);
    const envelope = read(path.join(runDir(garden.paths, second.id), 'execution_envelope.json'));
    expect(envelope.routing).toMatchObject({ task_class: 'simple', tier_index: 1, escalations: 1, stop_reason: 'kept' });
    expect(envelope.routing.attempts).toEqual([
      { run_id: first.id, tier_index: 0, executor: 'weak', model: 'small', diagnostic_code: 'verify_failed', cost_usd: 0.01 },
      { run_id: second.id, tier_index: 1, executor: 'strong', model: 'big', diagnostic_code: 'ready', cost_usd: 0.4 },
    ]);
    expect((await readGoal(garden.paths, goalId)).closed_reason).toBe('success');
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');
  });

  it('stops at the last tier when verify fails on every tier, leaving nothing changed', async () => {
    const garden = await gitGarden(
      { weak: agent('echo a > src/app.txt; echo x > new.txt'), strong: agent('echo b > src/app.txt') },
      '[routing.simple]\ntiers = [{ driver = "weak" }, { driver = "strong" }]\nmax_escalations = 5\n',
    );
    const goalId = await runGoal(garden, { task_class: 'simple', guard: { verify: 'false' } } as Partial<GoalInput>);
    const envelope = read(path.join(runDir(garden.paths, `${goalId}-r2`), 'execution_envelope.json'));
    expect(envelope.routing.stop_reason).toBe('last_tier');
    expect(fs.existsSync(runDir(garden.paths, `${goalId}-r3`))).toBe(false);
    expect(status(garden.root)).toBe('');
    expect((await readGoal(garden.paths, goalId)).closed_reason).toBe('failure');
  });

  it('redacts a passed-through secret from every file of the run directory, and keeps it with redact off', async () => {
    const secret = 'pak2-test-secret-7f3a9c1e5b';
    for (const redact of [true, false]) {
      const garden = await gitGarden({ sh: agent('echo "token is $PAK2_TEST_SECRET"; echo "$PAK2_TEST_SECRET" >&2; echo "$PAK2_TEST_SECRET" > leak.txt') });
      process.env.PAK2_TEST_SECRET = secret;
      try {
        const goalId = await runGoal(garden, { body: `use the secret ${secret}`, guard: { forbidden_paths: ['leak.txt'], env_passthrough: ['PAK2_TEST_SECRET'], redact } } as Partial<GoalInput>);
        const dir = runDir(garden.paths, `${goalId}-r1`);
        const found = fs.readdirSync(dir).filter((name) => fs.readFileSync(path.join(dir, name), 'utf8').includes(secret));
        if (redact) expect(found).toEqual([]);
        else expect(found).toEqual(expect.arrayContaining(['events.jsonl', 'stderr.log', 'rejected.patch', 'prompt_bundle.md']));
      } finally {
        delete process.env.PAK2_TEST_SECRET;
      }
    }
  });

  const outcomeOf = (garden: Garden, runId: string) => read(path.join(runDir(garden.paths, runId), 'task_outcome.json'));

  it('verify_timeout: verify past its limit is killed, the work rolled back', async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt') });
    const goalId = await runGoal(garden, { guard: { verify: 'sleep 30', timeout_seconds: 1 } } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('verify_failed');
    expect(outcomeOf(garden, run.id)).toMatchObject({ state: 'degraded', status: 'failed', diagnostic_code: 'verify_timeout', verify_ok: false, rollback_performed: true, mutated_files: [] });
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('v1\n');
  });

  it('verify_unavailable: a verify command that cannot run blocks the run', async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt') });
    const goalId = await runGoal(garden, { guard: { verify: 'pak2-no-such-verify-command' } } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('verify_failed');
    expect(outcomeOf(garden, run.id)).toMatchObject({ state: 'blocked', status: 'blocked', diagnostic_code: 'verify_unavailable', verify_exit_code: 127, rollback_performed: true });
  });

  it('executor_failed: an agent that fails after changing files has its changes rolled back, its own reason kept', async () => {
    const garden = await gitGarden({ sh: ['sh', '-c', 'case "$(cat)" in *"# Guard"*) echo half > src/app.txt; echo half > half.txt; exit 3;; esac; echo done'] });
    const goalId = await runGoal(garden, { guard: { verify: 'true' } } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('nonzero_exit');
    expect(outcomeOf(garden, run.id)).toMatchObject({ state: 'degraded', diagnostic_code: 'executor_failed', verifier_was_skipped: true, rollback_performed: true, mutated_files: [], executor: { exit_code: 3 } });
    expect(status(garden.root)).toBe('');
  });

  it('executor_timeout: an agent past run_timeout_seconds', async () => {
    const garden = await gitGarden({ sh: ['sh', '-c', 'case "$(cat)" in *"# Guard"*) echo late > src/app.txt; sleep 30;; esac; echo done'] }, '', { coordinator: 'run_timeout_seconds = 1' });
    const goalId = await runGoal(garden, { guard: {} } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.status).toBe('timeout');
    expect(outcomeOf(garden, run.id)).toMatchObject({ diagnostic_code: 'executor_timeout', executor: { timed_out: true }, rollback_performed: true });
    expect(status(garden.root)).toBe('');
  });

  it('executor_killed: an agent the watchdog kills', async () => {
    const garden = await gitGarden({ sh: ['sh', '-c', 'case "$(cat)" in *"# Guard"*) echo x > src/app.txt; sleep 30;; esac; echo done'] }, '', { coordinator: 'watchdog_seconds = 1\ninterval_seconds = 1' });
    const goalId = await runGoal(garden, { guard: {} } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect([run.status, run.failure_reason]).toEqual(['killed', 'killed']);
    expect(outcomeOf(garden, run.id)).toMatchObject({ diagnostic_code: 'executor_killed', rollback_performed: true });
    expect(status(garden.root)).toBe('');
  });

  it('launch_failed: a driver that cannot start blocks the run; nothing to roll back', async () => {
    const garden = await gitGarden({ missing: ['/nonexistent/pak2-agent'] });
    const goalId = await runGoal(garden, { guard: { verify: 'true' } } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('launch_failed');
    expect(outcomeOf(garden, run.id)).toMatchObject({ state: 'blocked', status: 'blocked', diagnostic_code: 'launch_failed', rollback_performed: false, verifier_was_skipped: true });
  });

  it('guard_error / baseline_failed: a garden that is not a git repository never starts the agent', async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt') }, '', { git: false });
    const goalId = await runGoal(garden, { guard: { verify: 'true' } } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('guard_error');
    expect(run.outputs?.error).toMatch(/could not take the baseline/);
    expect(outcomeOf(garden, run.id)).toMatchObject({ state: 'blocked', diagnostic_code: 'baseline_failed' });
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('v1\n');
  });

  it('a goal that pins its model is not escalated (non_retryable), and a contract id is accepted with the work', async () => {
    const garden = await gitGarden(
      { weak: agent('echo weak > src/app.txt'), strong: agent('echo v2 > src/app.txt') },
      '[routing.simple]\ntiers = [{ driver = "weak" }, { driver = "strong" }]\n',
    );
    const pinned = await runGoal(garden, { task_class: 'simple', model: 'mine', guard: { verify: 'grep -q v2 src/app.txt' } } as Partial<GoalInput>);
    expect(fs.existsSync(runDir(garden.paths, `${pinned}-r2`))).toBe(false);
    expect(read(path.join(runDir(garden.paths, `${pinned}-r1`), 'execution_envelope.json')).routing).toMatchObject({ stop_reason: 'non_retryable', tier_index: 0 });
    const contract = await runGoal(garden, { driver: 'strong', guard: { contract_id: 'contract-123' } } as Partial<GoalInput>);
    expect(outcomeOf(garden, `${contract}-r1`)).toMatchObject({ contract_id: 'contract-123', acceptance_state: 'contract_accepted' });
  });

  it('a guarded run has the tree to itself: nothing else dispatches beside it', async () => {
    const garden = await gitGarden({ sh: ['sh', '-c', 'cat >/dev/null; sleep 1; echo \'{"type":"result","status":"success","text":"ok","cost_usd":0}\''] }, '', { coordinator: 'max_concurrent_runs = 4' });
    const guarded = await createGoal(garden.paths, { type: 'spike', body: 'guarded', plant: 'gardener', priority: 90, guard: {} } as GoalInput);
    await createGoal(garden.paths, { type: 'spike', body: 'plain one', plant: 'gardener' });
    await createGoal(garden.paths, { type: 'spike', body: 'plain two', plant: 'gardener' });
    await cycle(garden);
    const runs = await Promise.all(['1-guarded', '2-plain-one', '3-plain-two'].map((g) => readRun(garden.paths, `${g}-r1`)));
    const span = (r: { started_at: string; completed_at?: string }) => [Date.parse(r.started_at), Date.parse(r.completed_at!)] as const;
    const [g, a, b] = runs.map(span);
    expect(guarded.id).toBe('1-guarded');
    // The two plain runs may overlap each other, never the guarded one.
    for (const other of [a!, b!]) expect(other[0] >= g![1] || other[1] <= g![0]).toBe(true);
    expect(a![0] < b![1] && b![0] < a![1]).toBe(true);
  });

  it('.git/** forbidden: a hook the agent installs and a commit it makes are violations, both reverted', async () => {
    const garden = await gitGarden({ sh: agent('printf "#!/bin/sh\\nexit 0\\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; echo v2 > src/app.txt; git commit -qam agent') });
    const head = git(garden.root, 'rev-parse', 'HEAD').trim();
    const goalId = await runGoal(garden, { guard: { forbidden_paths: ['.git/**'], allowed_files: ['src/**'] } } as Partial<GoalInput>);
    const run = await readRun(garden.paths, `${goalId}-r1`);
    expect(run.failure_reason).toBe('scope_violation');
    const outcome = outcomeOf(garden, run.id);
    expect(outcome.blocked_mutations).toEqual(expect.arrayContaining(['.git/hooks/pre-commit', '.git/refs/heads/main']));
    expect(outcome.unexpected_mutations).toEqual([]);
    expect(fs.existsSync(path.join(garden.root, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(git(garden.root, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(status(garden.root)).toBe('');
  });

  it('a rollback never writes or removes through a link the agent made: the link target is untouched, the directory restored', async () => {
    const victim = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-victim-'));
    cleanups.push(() => fs.rmSync(victim, { recursive: true, force: true }));
    fs.writeFileSync(path.join(victim, 'app.txt'), 'not yours\n');
    fs.writeFileSync(path.join(victim, 'keep.txt'), 'keep\n');
    const moved = `${victim}-moved`;
    cleanups.push(() => fs.rmSync(moved, { recursive: true, force: true }));
    const garden = await gitGarden({ sh: agent(`mv src ${moved}; ln -s ${victim} src`) });
    fs.writeFileSync(path.join(garden.root, 'src', 'app.txt'), 'operator wip\n');
    const goalId = await runGoal(garden, { guard: { verify: 'false' } } as Partial<GoalInput>);
    expect(outcomeOf(garden, `${goalId}-r1`)).toMatchObject({ rollback_performed: true, mutated_files: [] });
    expect(fs.readdirSync(victim).sort()).toEqual(['app.txt', 'keep.txt']);
    expect(fs.readFileSync(path.join(victim, 'app.txt'), 'utf8')).toBe('not yours\n');
    expect(fs.lstatSync(path.join(garden.root, 'src')).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('operator wip\n');
  });

  it('a change hidden behind a new ignore rule, or an index flag, is still seen', async () => {
    const garden = await gitGarden({
      sh: agent('echo "secrets/" >> .gitignore; mkdir -p secrets; echo k > secrets/key.txt; git update-index --assume-unchanged notes.txt; echo changed > notes.txt; git update-index --skip-worktree src/app.txt; echo v9 > src/app.txt'),
    });
    const goalId = await runGoal(garden, { guard: { forbidden_paths: ['secrets/', 'notes.txt'] } } as Partial<GoalInput>);
    const outcome = outcomeOf(garden, `${goalId}-r1`);
    expect(outcome.diagnostic_code).toBe('scope_violation');
    expect(outcome.blocked_mutations.sort()).toEqual(['notes.txt', 'secrets/key.txt']);
    expect(outcome.attempted_mutations).toEqual(expect.arrayContaining(['.gitignore', 'src/app.txt']));
    expect(fs.existsSync(path.join(garden.root, 'secrets'))).toBe(false);
    expect(fs.readFileSync(path.join(garden.root, 'notes.txt'), 'utf8')).toBe('committed\n');
    expect(fs.readFileSync(path.join(garden.root, 'src', 'app.txt'), 'utf8')).toBe('v1\n');
  });

  it("an ignored file's contents never reach rejected.patch (or the runtime history); a secret that is a JSON word keeps the records valid", async () => {
    const garden = await gitGarden({ sh: agent('echo "ADDED=1" >> .env; echo "$MY_SECRET" > leak.txt') });
    fs.writeFileSync(path.join(garden.root, '.env'), 'DB_PASSWORD=hunter2-operator\n');
    process.env.MY_SECRET = 'null';
    try {
      const goalId = await runGoal(garden, { guard: { forbidden_paths: ['.env'], env_passthrough: ['MY_SECRET'] } } as Partial<GoalInput>);
      const dir = runDir(garden.paths, `${goalId}-r1`);
      const patch = fs.readFileSync(path.join(dir, 'rejected.patch'), 'utf8');
      expect(patch).toContain('# pak2: modified .env');
      expect(patch).not.toContain('hunter2');
      expect(patch).not.toContain('ADDED=1');
      expect(fs.readFileSync(path.join(garden.root, '.env'), 'utf8')).toBe('DB_PASSWORD=hunter2-operator\n');
      for (const name of ['task_outcome.json', 'execution_envelope.json']) expect(() => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'))).not.toThrow();
      for (const line of fs.readFileSync(path.join(dir, 'events.jsonl'), 'utf8').split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
      expect(outcomeOf(garden, `${goalId}-r1`)).toMatchObject({ next_command: `pak2 trace ${goalId}-r1`, status: 'failed' });
    } finally {
      delete process.env.MY_SECRET;
    }
  });

  it('verify ends when its shell exits: a background job it leaves neither holds it open nor survives it', async () => {
    const marker = `pak2-verify-bg-${process.pid}-${Date.now()}`;
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt') });
    const started = Date.now();
    const goalId = await runGoal(garden, { guard: { verify: `(PAK2_TEST_BG=${marker} sleep 60) & echo started; exit 0`, timeout_seconds: 30 } } as Partial<GoalInput>);
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(outcomeOf(garden, `${goalId}-r1`)).toMatchObject({ diagnostic_code: 'ready', verify_ok: true, verify_stdout: 'started\n' });
    const alive = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/environ`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    });
    expect(alive).toEqual([]);
  });

  it("a commit that takes the operator's uncommitted files outside allowed_files is a violation, reverted with the index", async () => {
    const garden = await gitGarden({ sh: agent('echo v2 > src/app.txt; git commit -qam agent') });
    fs.writeFileSync(path.join(garden.root, 'notes.txt'), 'operator wip\n');
    const head = git(garden.root, 'rev-parse', 'HEAD').trim();
    const goalId = await runGoal(garden, { guard: { allowed_files: ['src/**'] } } as Partial<GoalInput>);
    const outcome = outcomeOf(garden, `${goalId}-r1`);
    expect(outcome.diagnostic_code).toBe('scope_violation');
    expect(outcome.unexpected_mutations).toEqual(['notes.txt']);
    expect(git(garden.root, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(status(garden.root)).toBe(' M notes.txt');
    expect(fs.readFileSync(path.join(garden.root, 'notes.txt'), 'utf8')).toBe('operator wip\n');
  });

  it('a tag the agent makes is removed by the rollback', async () => {
    const garden = await gitGarden({ sh: agent('git tag agent-tag; echo x > src/app.txt') });
    const goalId = await runGoal(garden, { guard: { verify: 'false' } } as Partial<GoalInput>);
    expect(outcomeOf(garden, `${goalId}-r1`).attempted_mutations).toEqual(expect.arrayContaining(['.git/refs/tags/agent-tag']));
    expect(git(garden.root, 'tag')).toBe('');
  });

  it('routing records an unknown cost as unknown (null), not 0', async () => {
    const unknownCost = ['sh', '-c', `case "$(cat)" in *"# Guard"*) echo x > src/app.txt;; esac; echo '{"type":"result","status":"success","text":"done"}'`];
    const garden = await gitGarden({ a: unknownCost, b: unknownCost }, '[routing.simple]\ntiers = [{ driver = "a" }, { driver = "b" }]\n');
    const goalId = await runGoal(garden, { task_class: 'simple', guard: { verify: 'false' } } as Partial<GoalInput>);
    const envelope = read(path.join(runDir(garden.paths, `${goalId}-r2`), 'execution_envelope.json'));
    expect(envelope.routing.attempts.map((a: { cost_usd: unknown }) => a.cost_usd)).toEqual([null, null]);
  });

  it('a guarded goal waiting for the tree holds back lower-priority goals, so it runs next', async () => {
    const slow = ['sh', '-c', `cat >/dev/null; sleep 1; echo '{"type":"result","status":"success","text":"ok","cost_usd":0}'`];
    const garden = await gitGarden({ sh: slow }, '', { coordinator: 'max_concurrent_runs = 3' });
    await createGoal(garden.paths, { type: 'spike', body: 'first plain', plant: 'gardener', priority: 60 });
    await createGoal(garden.paths, { type: 'spike', body: 'guarded', plant: 'gardener', priority: 50, guard: {} } as GoalInput);
    await createGoal(garden.paths, { type: 'spike', body: 'later plain', plant: 'gardener', priority: 40 });
    await cycle(garden);
    const start = async (id: string) => Date.parse((await readRun(garden.paths, `${id}-r1`)).started_at);
    expect(await start('2-guarded')).toBeLessThan(await start('3-later-plain'));
  });

  it("git's own configuration is never the agent's: a clean filter that hides an edit is a violation, and the hidden edit is reverted too", async () => {
    const garden = await gitGarden({
      sh: agent('git config filter.hide.clean "git cat-file blob HEAD:notes.txt"; echo "notes.txt filter=hide" > .git/info/attributes; echo EVIL >> notes.txt; echo v2 > src/app.txt'),
    });
    const goalId = await runGoal(garden, { guard: { allowed_files: ['src/**'], forbidden_paths: ['notes.txt'] } } as Partial<GoalInput>);
    const outcome = outcomeOf(garden, `${goalId}-r1`);
    expect(outcome.diagnostic_code).toBe('scope_violation');
    expect(outcome.blocked_mutations).toEqual(expect.arrayContaining(['.git/config', '.git/info/attributes']));
    expect(outcome.mutated_files).toEqual([]);
    expect(fs.readFileSync(path.join(garden.root, 'notes.txt'), 'utf8')).toBe('committed\n');
    expect(fs.existsSync(path.join(garden.root, '.git', 'info', 'attributes'))).toBe(false);
    expect(fs.readFileSync(path.join(garden.root, '.git', 'config'), 'utf8')).not.toContain('filter');
  });

  it('max_escalations and budget stop a chain of verify failures through the coordinator', async () => {
    const tiers = '[{ driver = "a" }, { driver = "b" }, { driver = "c" }]';
    const drivers = { a: agent('echo a > src/app.txt', 0.01), b: agent('echo b > src/app.txt', 0.01), c: agent('echo c > src/app.txt', 0.01) };
    const capped = await gitGarden(drivers, `[routing.simple]\ntiers = ${tiers}\nmax_escalations = 1\n`);
    const one = await runGoal(capped, { task_class: 'simple', guard: { verify: 'false' } } as Partial<GoalInput>);
    expect(read(path.join(runDir(capped.paths, `${one}-r2`), 'execution_envelope.json')).routing).toMatchObject({ stop_reason: 'max_escalations', escalations: 1, tier_index: 1 });
    expect(fs.existsSync(runDir(capped.paths, `${one}-r3`))).toBe(false);
    const budget = await gitGarden(drivers, `[routing.simple]\ntiers = ${tiers}\nbudget_usd = 0.015\n`);
    const two = await runGoal(budget, { task_class: 'simple', guard: { verify: 'false' } } as Partial<GoalInput>);
    const routing = read(path.join(runDir(budget.paths, `${two}-r2`), 'execution_envelope.json')).routing;
    expect(routing.stop_reason).toBe('budget');
    expect(routing.attempts.map((a: { cost_usd: number }) => a.cost_usd)).toEqual([0.01, 0.01]);
    expect(status(budget.root)).toBe('');
  });

  it('blocked_after_escalation: the next tier could not start', async () => {
    const garden = await gitGarden({ a: agent('echo a > src/app.txt'), missing: ['/nonexistent/pak2-agent'] }, '[routing.simple]\ntiers = [{ driver = "a" }, { driver = "missing" }]\n');
    const goalId = await runGoal(garden, { task_class: 'simple', guard: { verify: 'false' } } as Partial<GoalInput>);
    const routing = read(path.join(runDir(garden.paths, `${goalId}-r2`), 'execution_envelope.json')).routing;
    expect(routing).toMatchObject({ stop_reason: 'blocked_after_escalation', escalations: 1 });
    expect(routing.attempts.map((a: { diagnostic_code: string; cost_usd: number | null }) => [a.diagnostic_code, a.cost_usd])).toEqual([['verify_failed', 0.01], ['launch_failed', 0]]);
  });
});
