/**
 * The run record is what pak2 observed (docs/run/level2.md, "Terminal
 * paths"): each case drives a small agent through the real coordinator and
 * asserts the exact record, the events, the goal's closed_reason, and that
 * no process of the run is left.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, reconcile } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, readGoal, readRun, runEventsFile } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { isAlive, makeTestGarden, readEventLog, waitFor } from '../support/garden.js';
import { git } from '../history/support.js';

const TRUTH_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/truth-agent.mjs');

type TestGarden = Garden & { cleanup: () => void };
let garden: TestGarden | undefined;
let coordinator: Coordinator | undefined;
const pids: number[] = [];
afterEach(async () => {
  await coordinator?.stop();
  coordinator = undefined;
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  garden?.cleanup();
  garden = undefined;
});

/** A garden whose driver `as` runs the truth agent's `scenario` (as `claude`, `codex`, or a command driver named `t`). */
async function gardenFor(scenario: string, as: 'command' | 'claude' | 'codex', coordinator: Record<string, number> = {}): Promise<TestGarden> {
  const name = as === 'command' ? 't' : as;
  garden = await makeTestGarden({
    coordinator: { result_grace_seconds: 1, ...coordinator },
    extraToml: `[drivers.${name}]\ncommand = ${JSON.stringify([process.execPath, TRUTH_AGENT, scenario])}`,
  });
  return garden;
}

/** Runs one goal through a live coordinator until the garden is idle; returns the goal, its run and the agent pids seen. */
async function runGoal(g: TestGarden, driver: string, type: 'spike' | 'fix' = 'spike') {
  const pidfile = path.join(g.paths.gardenRoot, 'pids.txt');
  process.env.TRUTH_PIDFILE = pidfile;
  try {
    const goal = await createGoal(g.paths, { type, plant: 'gardener', body: `truth ${driver}`, driver });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 20_000);
    await coordinator.stop();
    coordinator = undefined;
    const seen = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').trim().split('\n').filter(Boolean).map(Number) : [];
    pids.push(...seen);
    return { goal: await readGoal(g.paths, goal.id), run: await readRun(g.paths, `${goal.id}-r1`), pids: seen };
  } finally {
    delete process.env.TRUTH_PIDFILE;
  }
}

function runEvents(g: TestGarden, runId: string) {
  return readEventLog(g).filter((e) => e.run === runId);
}

describe('1. the coordinator owns the record: an agent cannot write its own verdict', () => {
  it('an agent that rewrites meta.json to success and exits 3 is recorded failure / nonzero_exit, with the tampering named', async () => {
    const g = await gardenFor('tamper', 'command');
    g.config.isolation = 'tree'; // the record's truth in the one tree; worktrees: test/landing/
    git(g.paths.gardenRoot, 'init', '-q');
    git(g.paths.gardenRoot, 'add', '-A');
    git(g.paths.gardenRoot, 'commit', '-qm', 'garden');
    const { goal, run, pids: seen } = await runGoal(g, 't', 'fix');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: 3, cost: { source: 'unknown' }, outputs: { final_text: 'I failed', error: 'exit 3, no result event' } });
    expect(run.reflection).toBeUndefined();
    expect(run.record_tampering?.fields).toEqual(expect.arrayContaining(['status', 'reflection', 'cost', 'completed_at']));
    // meta.json on disk is pak2's record again.
    expect(JSON.parse(fs.readFileSync(path.join(g.paths.runsDir, run.id, 'meta.json'), 'utf8'))).toEqual(run);
    expect(goal).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    const events = runEvents(g, run.id).map((e) => e.type);
    expect(events).toEqual(['RunStarted', 'RunRecordTampered', 'RunClosed']);
    expect(runEvents(g, run.id).find((e) => e.type === 'RunClosed')).toMatchObject({ status: 'failure', reason: 'nonzero_exit' });
    // The close's runtime-history capture ran: its provenance record exists.
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'history', 'commits', `${run.id}.json`))).toBe(true);
    expect(seen.every((pid) => !isAlive(pid))).toBe(true);
    // The operator sees it: `pak2 show` names the tampering.
    const shown = await runCli(['show', run.id, '--garden', g.paths.gardenRoot]);
    expect(shown.stdout).toMatch(/tampered meta\.json was rewritten by someone else \(.*status.*\); pak2's record stands/);
  });

  it('an agent that forges the same success into meta.json and pak2’s seal, then exits 3, is still failure / nonzero_exit: a run pak2 follows is closed only by pak2', async () => {
    const g = await gardenFor('tamper-seal', 'command');
    g.config.isolation = 'tree';
    git(g.paths.gardenRoot, 'init', '-q');
    git(g.paths.gardenRoot, 'add', '-A');
    git(g.paths.gardenRoot, 'commit', '-qm', 'garden');
    const { goal, run } = await runGoal(g, 't', 'fix');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: 3, cost: { source: 'unknown' } });
    expect(run.reflection).toBeUndefined();
    expect(run.record_tampering?.fields).toEqual(expect.arrayContaining(['status', 'reflection', 'cost', 'completed_at']));
    // Both files on disk hold pak2's record again.
    expect(JSON.parse(fs.readFileSync(path.join(g.paths.runsDir, run.id, 'meta.json'), 'utf8'))).toEqual(run);
    expect(JSON.parse(fs.readFileSync(path.join(g.paths.runsDir, '.seals', `${run.id}.json`), 'utf8'))).toEqual(run);
    expect(goal).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    expect(runEvents(g, run.id).map((e) => e.type)).toEqual(['RunStarted', 'RunRecordTampered', 'RunClosed']);
    expect(runEvents(g, run.id).find((e) => e.type === 'RunRecordTampered')?.detail).toMatch(/meta\.json and its seal differ from the record pak2 holds for this live run in .*status/);
  });
});

describe('2. a finished run is never recorded as killed', () => {
  it('(a) a claude success result ($0.50, session S1) followed by a process that sleeps: success at the result, not killed', async () => {
    const g = await gardenFor('claude-linger', 'claude', { watchdog_seconds: 4 });
    const { goal, run, pids: seen } = await runGoal(g, 'claude');
    expect(run).toMatchObject({ status: 'success', session_id: 'S1', lingered: true, cost: { source: 'provider', usd: 0.5 }, outputs: { final_text: 'All done.' } });
    expect(run.failure_reason).toBeUndefined();
    expect(goal.closed_reason).toBe('success');
    expect(readEventLog(g).some((e) => e.type === 'WatchdogKilled')).toBe(false);
    expect(seen.every((pid) => !isAlive(pid))).toBe(true);
  });

  it('(b) exit 0 with a success result, leaving `sleep 30` holding stdout: success at once, the helper swept', async () => {
    const g = await gardenFor('exit-leave-stdout', 'command', { watchdog_seconds: 2, interval_seconds: 1 });
    const started = Date.now();
    const { goal, run, pids: seen } = await runGoal(g, 't');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(run).toMatchObject({ status: 'success', exit_code: 0, outputs: { final_text: 'done, with a helper left behind' } });
    expect(goal.closed_reason).toBe('success');
    expect(readEventLog(g).some((e) => e.type === 'WatchdogKilled')).toBe(false);
    expect(seen).toHaveLength(2);
    await waitFor(() => seen.every((pid) => !isAlive(pid)), 3000);
  });

  it('(c) a `setsid env -i sleep 1005` holding stdout neither blocks `pak2 cycle --no-ui --until-idle` nor survives it', async () => {
    const g = await gardenFor('setsid-env-i', 'command');
    const pidfile = path.join(g.paths.gardenRoot, 'pids.txt');
    await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'escape', driver: 't' });
    const result = await runCli(['cycle', '--garden', g.paths.gardenRoot, '--no-ui', '--until-idle'], { env: { TRUTH_PIDFILE: pidfile }, timeoutMs: 30_000 });
    expect(result.code).toBe(0);
    const seen = fs.readFileSync(pidfile, 'utf8').trim().split('\n').map(Number);
    pids.push(...seen);
    const run = await readRun(g.paths, '1-escape-r1');
    expect(run).toMatchObject({ status: 'success', exit_code: 0 });
    expect(run.leftovers).toBeUndefined();
    await waitFor(() => seen.every((pid) => !isAlive(pid)), 3000);
  });
});

describe('4. a kill keeps what the stream already said', () => {
  it('a watchdog kill of a live claude run keeps session S1 and the cost claude reports after SIGINT, and names the last event', async () => {
    const g = await gardenFor('claude-stall-sigint', 'claude', { watchdog_seconds: 1, interval_seconds: 1 });
    const { goal, run, pids: seen } = await runGoal(g, 'claude');
    expect(run).toMatchObject({
      status: 'killed',
      failure_reason: 'killed',
      session_id: 'S1',
      cost: { source: 'provider', usd: 0.3, input_tokens: 300, output_tokens: 30 },
      watchdog: { limit: 'watchdog_seconds', limit_seconds: 1, last_event: 'assistant' },
      outputs: { final_text: 'Working on it.', error: expect.stringMatching(/^killed by the watchdog: silent for \d+(\.\d)? s \(watchdog_seconds 1 s\); last event: assistant$/) },
    });
    expect(goal.closed_reason).toBe('failure');
    const types = runEvents(g, run.id).map((e) => e.type);
    expect(types.indexOf('WatchdogKilled')).toBeLessThan(types.indexOf('RunClosed'));
    expect(seen.every((pid) => !isAlive(pid))).toBe(true);
  });

  it('a watchdog kill of a live codex run keeps thread T1 as the session id', async () => {
    const g = await gardenFor('codex-stall', 'codex', { watchdog_seconds: 1, interval_seconds: 1 });
    const { run, pids: seen } = await runGoal(g, 'codex');
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed', session_id: 'T1', cost: { source: 'unknown' }, watchdog: { last_event: 'turn.started' } });
    expect(seen.every((pid) => !isAlive(pid))).toBe(true);
  });

  it('retry lines are not progress: a claude stream of api_retry lines is killed after watchdog_seconds, naming them', async () => {
    const g = await gardenFor('claude-api-retry', 'claude', { watchdog_seconds: 1, interval_seconds: 1 });
    const { run } = await runGoal(g, 'claude');
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed', session_id: 'S1', watchdog: { last_event: 'system api_retry' } });
  });

  it('a run no process here follows (an orphan) is closed by the watchdog from its stream: session S1 kept', async () => {
    const g = await gardenFor('claude-no-result', 'claude', { watchdog_seconds: 1 });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'orphan', driver: 'claude' });
    // A dispatch that launches nothing: the run is open, its stream written by "someone", then silence.
    await reconcile({
      garden: g,
      dispatch: async (_goal, runId) => {
        fs.writeFileSync(runEventsFile(g.paths, runId), `${JSON.stringify({ type: 'system', subtype: 'init', session_id: 'S1' })}\n`);
      },
      awaitDispatch: true,
    });
    const later = new Date(Date.now() + 5000);
    const summary = await reconcile({ garden: g, dispatch: async () => undefined, now: () => later });
    expect(summary.killed).toEqual([`${goal.id}-r1`]);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed', session_id: 'S1', cost: { source: 'unknown' }, watchdog: { limit: 'watchdog_seconds', last_event: 'system init' } });
  });
});

describe('5. reasons and messages come from the real cause', () => {
  it('a claude stream with no result event: agent_error, "no result event"', async () => {
    const g = await gardenFor('claude-no-result', 'claude');
    const { run } = await runGoal(g, 'claude');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', session_id: 'S1', outputs: { error: 'no result event: the agent exited 0 without reporting a result' } });
  });

  it('error_max_turns with num_turns 30 says so, with its cost', async () => {
    const g = await gardenFor('claude-max-turns', 'claude');
    const { run } = await runGoal(g, 'claude');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', num_turns: 30, cost: { source: 'provider', usd: 0.2 }, outputs: { error: 'error_max_turns: stopped at the turn limit (30 turns)' } });
  });

  it('errors[] of a result is read: "No conversation found with session ID: …" is kept', async () => {
    const g = await gardenFor('claude-no-conversation', 'claude');
    const { run } = await runGoal(g, 'claude');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', outputs: { error: 'error_during_execution: No conversation found with session ID: 0b5e-missing' } });
  });

  it("an error result's prose is the error, never outputs.final_text", async () => {
    const g = await gardenFor('claude-api-error', 'claude');
    const { run } = await runGoal(g, 'claude');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', outputs: { error: 'API Error: 400 invalid request' } });
    expect(run.outputs?.final_text).toBeUndefined();
  });

  it('a codex resume that exits 1 with "no rollout found" on stderr: reflection_failed saying so; the main turn\'s estimated cost is marked partial', async () => {
    const g = await gardenFor('codex-no-rollout', 'codex');
    const { run, goal } = await runGoal(g, 'codex', 'fix');
    expect(run).toMatchObject({
      status: 'failure',
      failure_reason: 'reflection_failed',
      session_id: 'T1',
      outputs: { final_text: 'Fixed it.', error: 'the reflection turn exited 1: Error: thread/resume failed: no rollout found for thread id T1' },
      cost: { source: 'estimated', partial: true, input_tokens: 1000, output_tokens: 100 },
    });
    expect(goal.closed_reason).toBe('failure');
  });

  it('a reflection that prints text but no result: reflection_failed saying so, its unknown cost marks the total partial', async () => {
    const g = await gardenFor('claude-reflection-no-result', 'claude');
    const { run } = await runGoal(g, 'claude', 'fix');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'reflection_failed', cost: { source: 'provider', usd: 0.4, partial: true }, outputs: { error: 'the reflection turn printed text but no result event' } });
  });

  it('an exception in pak2 after the agent finished is driver_error (not launch_failed), and the stream\'s facts are kept', async () => {
    const g = await gardenFor('break-reflection', 'command');
    const { run } = await runGoal(g, 't', 'fix');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'driver_error', session_id: 'S1', cost: { source: 'unknown' }, outputs: { error: expect.stringMatching(/^pak2 failed while finishing the run: .*EISDIR/) } });
  });
});

describe('6. the coordinator does not spin on a goal it cannot dispatch', () => {
  it('a queued goal for an archived plant: the coordinator writes a handful of events over many passes, not hundreds, and the goal waits', async () => {
    const g = await gardenFor('tamper', 'command');
    const { archivePlant, commissionPlant } = await import('../../source/store/index.js');
    await commissionPlant(g.paths, 'retired', 'gardener');
    await archivePlant(g.paths, 'retired');
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'retired', body: 'for an archived plant', driver: 't' });
    const goalFile = path.join(g.paths.goalsDir, `${goal.id}.json`);
    const mtime = fs.statSync(goalFile).mtimeMs;
    const before = readEventLog(g).length;
    // Counted in passes, not in time: ten passes after the one that blocked the goal, each asked for and seen to end.
    let passes = 0;
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined, onPass: () => (passes += 1) });
    await coordinator.start();
    try {
      await waitFor(() => readEventLog(g).slice(before).some((e) => e.type === 'GoalBlocked'), 30_000);
      for (const target of Array.from({ length: 10 }, (_, i) => passes + i + 1)) {
        coordinator.wake(0);
        await waitFor(() => passes >= target, 30_000);
      }
    } finally {
      await coordinator.stop();
    }
    const events = readEventLog(g).slice(before);
    expect(events.length).toBeLessThan(25);
    expect(events.filter((e) => e.type === 'GoalBlocked')).toEqual([expect.objectContaining({ goal: goal.id, detail: expect.stringContaining('plant retired is archived') })]);
    expect(events.filter((e) => e.type === 'GoalTransitioned' && e.goal === goal.id)).toEqual([]);
    expect(fs.statSync(goalFile).mtimeMs).toBe(mtime);
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
  });
});

describe('7. a goal is not left running on disk after a SIGTERM stop', () => {
  it('`pak2 cycle --no-ui` stopped by SIGTERM mid-run: the run is coordinator_stopped and its goal is queued at once', async () => {
    const g = await gardenFor('claude-stall-sigint', 'claude');
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'interrupt me', driver: 'claude' });
    const cycle = spawn(process.execPath, [PAK2_BIN, 'cycle', '--garden', g.paths.gardenRoot, '--no-ui'], { stdio: 'ignore' });
    const exited = new Promise<number | null>((r) => cycle.once('close', (code) => r(code)));
    const events = path.join(g.paths.runsDir, `${goal.id}-r1`, 'events.jsonl');
    await waitFor(() => fs.existsSync(events) && fs.readFileSync(events, 'utf8').includes('Working on it'), 20_000);
    cycle.kill('SIGTERM');
    expect(await exited).toBe(0);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped', session_id: 'S1', cost: { source: 'provider', usd: 0.3 } });
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
  });
});
