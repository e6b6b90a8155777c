/**
 * The crash-injection harness (issue 15): a real `pak2 cycle --no-ui` works
 * a queue of goals in a git garden (split runtime root, so every close also
 * captures runtime history) and is killed with SIGKILL at a random moment of
 * dispatch, close or capture; then `pak2 cycle --no-ui --until-idle` is
 * started on the same garden, and the world is checked:
 *
 * - every goal and run file validates; no meta.json differs from its seal;
 * - no goal is stuck (all closed), no run is `running`;
 * - no goal ran twice (only its last run may be other than a
 *   coordinator_stopped interruption, and it decides closed_reason);
 * - every transition has its event (GoalTransitioned chains from queued to
 *   closed; RunStarted and RunClosed for every run);
 * - no agent process of the garden survives.
 *
 * Used by test/reliability/crash.test.ts (bounded) and
 * scripts/crash-harness.ts (`--iterations N`, prints figures).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateGoal, validateRun } from '../../source/contracts/index.js';
import { loadGarden, type Garden } from '../../source/garden/index.js';
import { commissionPlant, createGoal, listRuns, readRunChecked } from '../../source/store/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PAK2_BIN = path.resolve(HERE, '../../bin/pak2.js');
const FAKE_AGENT = path.resolve(HERE, '../fixtures/fake-agent.mjs');

/** What one iteration found. */
export interface CrashIteration {
  killedAfterMs: number;
  goals: number;
  runs: number;
  interrupted: number;
  violations: string[];
  restartMs: number;
}

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_AUTHOR_NAME: 'Harness', GIT_AUTHOR_EMAIL: 'harness@example.com', GIT_COMMITTER_NAME: 'Harness', GIT_COMMITTER_EMAIL: 'harness@example.com' };
}

/** A git garden with a gardener and the fake agent as its default driver. */
export async function makeCrashGarden(): Promise<Garden & { root: string }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-crash-'));
  fs.writeFileSync(
    path.join(root, 'PAK2.toml'),
    ['[runtime]', 'root = ".runtime"', '[defaults]', 'driver = "fake"', '[coordinator]', 'interval_seconds = 1', 'watchdog_seconds = 60', `[drivers.fake]\ncommand = ${JSON.stringify([process.execPath, FAKE_AGENT, 'success'])}`].join('\n'),
  );
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# Motivation\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
  const env = gitEnv();
  execFileSync('git', ['init', '-q'], { cwd: root, env });
  execFileSync('git', ['add', '-A'], { cwd: root, env });
  execFileSync('git', ['commit', '-qm', 'garden'], { cwd: root, env });
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  return { ...garden, root };
}

function cycle(root: string, args: string[]) {
  return spawn(process.execPath, [PAK2_BIN, 'cycle', '--garden', root, '--no-ui', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: gitEnv() });
}

function agentsOf(root: string): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = fs.readFileSync(`/proc/${name}/environ`, 'latin1');
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      if (env.includes(`PAK2_GARDEN=${root}\0`) && !/^\d+ \(.*\) Z/.test(stat)) pids.push(Number(name));
    } catch {
      // gone
    }
  }
  return pids;
}

function events(garden: Garden): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  let text = '';
  try {
    text = fs.readFileSync(garden.paths.coordinatorLog, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as Record<string, string>);
    } catch {
      // torn: counted by the checks below through missing events
    }
  }
  return out;
}

/** Checks the world after a restart; returns every violation found, in words. */
export async function checkWorld(garden: Garden & { root: string }): Promise<{ violations: string[]; runs: number; interrupted: number }> {
  const violations: string[] = [];
  const log = events(garden);
  const goalFiles = fs.readdirSync(garden.paths.goalsDir).filter((n) => n.endsWith('.json'));
  const goals = goalFiles.map((name) => JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, name), 'utf8')) as Record<string, unknown>);
  for (const goal of goals) {
    const issues = validateGoal(goal);
    if (issues.length) violations.push(`goal ${String(goal.id)} does not validate: ${issues[0]!.code}`);
    if (goal.status !== 'closed') violations.push(`goal ${String(goal.id)} is stuck ${String(goal.status)}`);
    const chain = log.filter((e) => e.type === 'GoalTransitioned' && e.goal === goal.id);
    let at = 'queued';
    for (const e of chain) {
      if (e.from !== at) violations.push(`goal ${String(goal.id)}: event ${e.from}→${e.to} follows ${at} (a transition without its event)`);
      at = e.to!;
    }
    if (at !== goal.status) violations.push(`goal ${String(goal.id)}: its events end at ${at}, the file says ${String(goal.status)}`);
    if (!log.some((e) => e.type === 'GoalSubmitted' && e.goal === goal.id)) violations.push(`goal ${String(goal.id)}: no GoalSubmitted event`);
  }
  const { runs, problems } = await listRuns(garden.paths);
  for (const p of problems) violations.push(`run unreadable: ${p.message}`);
  let interrupted = 0;
  for (const run of runs) {
    if (validateRun(run).length) violations.push(`run ${run.id} does not validate`);
    const checked = await readRunChecked(garden.paths, run.id);
    if (checked.damage) violations.push(`run ${run.id}: meta.json differs from its seal (${checked.damage.detail})`);
    if (run.status === 'running') violations.push(`run ${run.id} is still running`);
    if (run.failure_reason === 'coordinator_stopped') interrupted += 1;
    if (!log.some((e) => e.type === 'RunStarted' && e.run === run.id)) violations.push(`run ${run.id}: no RunStarted event`);
    if (run.status !== 'running' && !log.some((e) => e.type === 'RunClosed' && e.run === run.id)) violations.push(`run ${run.id}: no RunClosed event`);
  }
  for (const goal of goals) {
    const mine = runs.filter((r) => r.goal === goal.id).sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
    if (mine.length === 0) {
      violations.push(`goal ${String(goal.id)} closed without a run`);
      continue;
    }
    for (const early of mine.slice(0, -1)) {
      if (early.failure_reason !== 'coordinator_stopped') violations.push(`goal ${String(goal.id)} ran twice: ${early.id} ended ${early.status}/${early.failure_reason ?? '-'} and another run followed`);
    }
    const last = mine.at(-1)!;
    const expected = last.status === 'success' ? 'success' : 'failure';
    if (goal.status === 'closed' && goal.closed_reason !== expected) violations.push(`goal ${String(goal.id)} closed ${String(goal.closed_reason)} but its last run ${last.id} is ${last.status}`);
  }
  const left = agentsOf(garden.root);
  if (left.length) violations.push(`agent processes survive: ${left.join(', ')}`);
  return { violations, runs: runs.length, interrupted };
}

/**
 * One iteration: `goals` goals queued, a coordinator killed -9 after
 * `killAfterMs`, a restart to idle, the checks.
 */
export async function crashIteration(options: { goals: number; killAfterMs: number }): Promise<CrashIteration> {
  const garden = await makeCrashGarden();
  try {
    for (let i = 0; i < options.goals; i += 1) {
      await createGoal(garden.paths, { type: i % 2 ? 'fix' : 'spike', plant: 'gardener', body: `crash goal ${i}` });
    }
    const first = cycle(garden.root, []);
    const closed = new Promise((r) => first.once('close', r));
    await new Promise((r) => setTimeout(r, options.killAfterMs));
    first.kill('SIGKILL');
    await closed;
    const started = Date.now();
    const restart = spawnSync(process.execPath, [PAK2_BIN, 'cycle', '--garden', garden.root, '--no-ui', '--until-idle'], { env: gitEnv(), encoding: 'utf8', timeout: 60_000 });
    const restartMs = Date.now() - started;
    const world = await checkWorld(garden);
    if (restart.status !== 0) world.violations.push(`restart exited ${String(restart.status ?? restart.signal)}: ${(restart.stderr ?? '').split('\n').slice(-3).join(' | ')}`);
    return { killedAfterMs: options.killAfterMs, goals: options.goals, runs: world.runs, interrupted: world.interrupted, violations: world.violations, restartMs };
  } finally {
    for (const pid of agentsOf(garden.root)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    fs.rmSync(garden.root, { recursive: true, force: true });
  }
}
