/**
 * A run ends when the agent's work ends (docs/run/level2.md, "When a run has
 * ended"): each input of the issue, in the real CLIs' shapes, driven through
 * the real coordinator and driver, asserting the true record — status,
 * failure reason, final text, reflection, cost and its source, the
 * background tasks — and that no process of the run is left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { GoalRecord, RunRecord } from '../../source/contracts/index.js';
import { Coordinator } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { estimateCodexCost } from '../../source/driver/index.js';
import { createGoal, listGoals, readConversation, readGoal, readRun, setConversationContinuity } from '../../source/store/index.js';
import { sendOperatorMessage } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { isAlive, makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

const WORK_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/work-agent.mjs');

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

/** A garden whose driver `as` runs the work agent's `scenario`; a 1 s result grace, so the old "first result + grace" would cut every scenario. */
async function gardenFor(scenario: string, as: 'claude' | 'codex' | 'command', coordinator: Record<string, number> = {}): Promise<TestGarden> {
  const name = as === 'command' ? 'w' : as;
  garden = await makeTestGarden({
    coordinator: { result_grace_seconds: 1, ...coordinator },
    extraToml: `[drivers.${name}]\ncommand = ${JSON.stringify([process.execPath, WORK_AGENT, scenario])}`,
  });
  return garden;
}

/** Runs one goal through a live coordinator until it closes; returns the goal, its run, the agent pids and the run's events. */
async function runGoal(g: TestGarden, driver: string, type: 'spike' | 'fix', env: Record<string, string> = {}): Promise<{ goal: GoalRecord; run: RunRecord; pids: number[]; events: string[] }> {
  const pidfile = path.join(g.paths.gardenRoot, 'pids.txt');
  const saved = { ...process.env };
  Object.assign(process.env, { WORK_PIDFILE: pidfile, ...env });
  try {
    const goal = await createGoal(g.paths, { type, plant: 'gardener', body: `work ${driver}`, driver });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 40_000);
    await coordinator.stop();
    coordinator = undefined;
    const seen = fs.existsSync(pidfile) ? fs.readFileSync(pidfile, 'utf8').trim().split('\n').filter(Boolean).map(Number) : [];
    pids.push(...seen);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    const events = readEventLog(g).filter((e) => e.run === run.id).map((e) => e.type!);
    return { goal: await readGoal(g.paths, goal.id), run, pids: seen, events };
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

describe('1. an interim result while a background task runs is not the end of the work', () => {
  it('claude (#1499): the run reads on through the task\'s progress and the next turn; judged by the last result: its text, $0.31 + the reflection', async () => {
    const g = await gardenFor('bg-interim', 'claude');
    const { goal, run, pids: seen, events } = await runGoal(g, 'claude', 'fix');
    expect(run).toMatchObject({
      status: 'success',
      session_id: 'S1',
      num_turns: 5,
      cost: { source: 'provider', usd: 0.32, input_tokens: 300, output_tokens: 30 },
      outputs: { final_text: 'The review found 2 problems; I fixed both and the tests pass.' },
      reflection: 'Learned: a background review finds what the first pass missed.',
      stop_reason: 'end_turn',
      terminal_reason: 'completed',
      background_tasks: [{ id: 'a1', type: 'local_agent', description: 'review the change', status: 'completed' }],
    });
    expect(run.lingered).toBeUndefined();
    expect(run.failure_reason).toBeUndefined();
    expect(run.background_tasks![0]!.unfinished).toBeUndefined();
    expect(goal.closed_reason).toBe('success');
    expect(events).toEqual(['RunStarted', 'ReflectionRequested', 'ReflectionRecorded', 'RunClosed']);
    expect(seen.every((pid) => !isAlive(pid))).toBe(true);
    // The operator sees the task in `pak2 show`.
    const shown = await runCli(['show', run.id, '--garden', g.paths.gardenRoot]);
    expect(shown.stdout).toContain('background 1 task(s): local_agent "review the change" completed');
  });

  it('command driver: a result while its own background task runs, silent past the grace; the task ends and the second result stands', async () => {
    const g = await gardenFor('command-bg-interim', 'command');
    const { run } = await runGoal(g, 'w', 'spike');
    expect(run).toMatchObject({
      status: 'success',
      exit_code: 0,
      cost: { source: 'provider', usd: 0.02 },
      outputs: { final_text: 'integration tests pass' },
      background_tasks: [{ id: 'k1', type: 'local_bash', description: 'integration tests', status: 'completed' }],
    });
    expect(run.lingered).toBeUndefined();
  });

  it('command driver: output after a result keeps the run open (the grace counts from the last progress), and a later result replaces the first', async () => {
    const g = await gardenFor('command-result-then-work', 'command');
    const { run } = await runGoal(g, 'w', 'spike');
    expect(run).toMatchObject({ status: 'success', exit_code: 0, cost: { source: 'provider', usd: 0.03 }, outputs: { final_text: 'checked everything: all good' } });
    expect(run.lingered).toBeUndefined();
  });
});

describe('2. background work stopped at exit is not a clean success', () => {
  it('claude (#94392, #85066): stopped tasks are facts of the run; failure background_unfinished, no reflection, cost stands, the tend sees it', async () => {
    const g = await gardenFor('bg-stopped-at-exit', 'claude');
    const { goal, run, events } = await runGoal(g, 'claude', 'fix');
    expect(run).toMatchObject({
      status: 'failure',
      failure_reason: 'background_unfinished',
      exit_code: 0,
      cost: { source: 'provider', usd: 0.2 },
      background_tasks: [
        { id: 'r1', type: 'local_agent', description: 'review the API', status: 'stopped', unfinished: true },
        { id: 'b1', type: 'local_bash', description: 'npm test', status: 'stopped', unfinished: true },
      ],
      outputs: { error: 'the agent reported success, but 2 background task(s) did not finish: local_agent "review the API" (stopped); local_bash "npm test" (stopped)' },
    });
    expect(run.reflection).toBeUndefined();
    expect(events).not.toContain('ReflectionRequested');
    expect(goal.closed_reason).toBe('failure');
    // The tend sees it: a run_failure tend names the run and its reason.
    const tends = (await listGoals(g.paths)).goals.filter((x) => x.type === 'tend');
    expect(tends).toHaveLength(1);
    expect(tends[0]!.body).toContain(`run ${run.id} of goal ${goal.id} ended failure (background_unfinished)`);
    const shown = await runCli(['show', run.id, '--garden', g.paths.gardenRoot]);
    expect(shown.stdout).toContain('background 2 task(s), 2 unfinished: local_agent "review the API" stopped (unfinished); local_bash "npm test" stopped (unfinished)');
  });

  it('command driver: a task the agent says was stopped, then a success result: background_unfinished', async () => {
    const g = await gardenFor('command-bg-stopped', 'command');
    const { run } = await runGoal(g, 'w', 'spike');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'background_unfinished', cost: { source: 'provider', usd: 0.01 }, background_tasks: [{ id: 'k2', status: 'stopped', unfinished: true }] });
  });
});

describe('3. a success result that is not a finish', () => {
  it('claude (#40432): stop_reason tool_use with an empty result is failure turn_unfinished naming it; cost kept, no reflection, the narration is not the final text', async () => {
    const g = await gardenFor('stop-tool-use', 'claude');
    const { run, events } = await runGoal(g, 'claude', 'fix');
    expect(run).toMatchObject({
      status: 'failure',
      failure_reason: 'turn_unfinished',
      num_turns: 28,
      stop_reason: 'tool_use',
      cost: { source: 'provider', usd: 0.895 },
      outputs: { error: 'the agent reported success, but its turn stopped before finishing (stop_reason tool_use); its last words: "Generated 4 unit test files. Next I\'ll add the UI tests."' },
    });
    expect(run.outputs?.final_text).toBeUndefined();
    expect(run.reflection).toBeUndefined();
    expect(events).not.toContain('ReflectionRequested');
  });
});

describe('3. (variant) the stop written only on the last assistant message', () => {
  it('claude: an empty result that names no stop_reason, after a message that stopped for tool_use: failure turn_unfinished, never a plain success', async () => {
    const g = await gardenFor('stop-tool-use-on-message', 'claude');
    const { run, events } = await runGoal(g, 'claude', 'fix');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'turn_unfinished', stop_reason: 'tool_use', cost: { source: 'provider', usd: 0.905 } });
    expect(run.outputs?.final_text).toBeUndefined();
    expect(events).not.toContain('ReflectionRequested');
  });
});

describe('4. a resumed turn that first drains stale task notifications', () => {
  for (const [scenario, note] of [
    ['drain-resume', 'its drain result says $0 (older CLIs)'],
    ['drain-resume-session-total', 'its drain result carries the whole session\'s total, as claude 2.1.332 writes it'],
  ] as const) {
    it(`claude (#13322): the zero-turn result is not terminal; the reflection is the real turn's answer and its cost counts (${note})`, async () => {
      const g = await gardenFor(scenario, 'claude');
      const { run, pids: seen } = await runGoal(g, 'claude', 'fix');
      expect(run).toMatchObject({
        status: 'success',
        cost: { source: 'provider', usd: 0.12 },
        reflection: 'Learned: the watch task must be stopped before a run ends.',
        outputs: { final_text: 'Fixed the bug.' },
      });
      expect(run.lingered).toBeUndefined();
      expect(seen.every((pid) => !isAlive(pid))).toBe(true);
    });
  }
});

describe('5. codex resumed threads report the thread\'s total usage', () => {
  it('three chat turns on one codex thread are each charged their own turn; a turn whose thread total before is unknown says so (partial), never charging the history again', async () => {
    const g = await gardenFor('codex-thread', 'codex');
    g.config.defaults.driver = 'codex';
    const turn = async (text: string) => {
      const sent = await sendOperatorMessage(g, text);
      coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
      await coordinator.start();
      await waitFor(async () => (await readGoal(g.paths, sent.goal.id)).status === 'closed', 20_000);
      await coordinator.stop();
      coordinator = undefined;
      return { run: await readRun(g.paths, `${sent.goal.id}-r1`), conversationId: sent.conversationId };
    };
    const runs = [await turn('first?'), await turn('second?'), await turn('third?')];
    expect(runs.map((r) => r.run.status)).toEqual(['success', 'success', 'success']);
    expect(runs.map((r) => r.run.session_id)).toEqual(['T1', 'T1', 'T1']);
    const own = [
      { input_tokens: 16504, cached_input_tokens: 0, output_tokens: 210 },
      { input_tokens: 85681 - 16504, cached_input_tokens: 8000, output_tokens: 1350 - 210 },
      { input_tokens: 103779 - 85681, cached_input_tokens: 8000, output_tokens: 1820 - 1350 },
    ];
    runs.forEach((r, i) => expect(r.run.cost).toEqual(estimateCodexCost('gpt-5.4', own[i]!)));
    // Charged once: the three turns add up to the thread's true total.
    const sum = runs.reduce((total, r) => total + (r.run.cost?.usd ?? 0), 0);
    expect(sum).toBeCloseTo(estimateCodexCost('gpt-5.4', { input_tokens: 103779, cached_input_tokens: 16000, output_tokens: 1820 }).usd!, 6);
    const conversation = await readConversation(g.paths, runs[0]!.conversationId);
    expect(conversation.continuity).toMatchObject({ driver: 'codex', session_id: 'T1', thread_usage: { input_tokens: 103779, cached_input_tokens: 16000, output_tokens: 1820 } });

    // A continuity written before pak2 kept the thread's total: the next turn's own share is unknown, and said so.
    await setConversationContinuity(g.paths, runs[0]!.conversationId, 'codex', 'T1', new Date(), 'gardener');
    const fourth = await turn('fourth?');
    expect(fourth.run).toMatchObject({ status: 'success', cost: { source: 'unknown', partial: true } });
    expect(fourth.run.cost?.input_tokens).toBeUndefined();
  });
});

describe('5b. a codex conversation turn that completed, then failed', () => {
  it('is charged its own tokens, and the next turn only its own: the thread is never charged twice', async () => {
    const g = await gardenFor('codex-thread', 'codex');
    g.config.defaults.driver = 'codex';
    const turn = async (text: string) => {
      const sent = await sendOperatorMessage(g, text);
      coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
      await coordinator.start();
      await waitFor(async () => (await readGoal(g.paths, sent.goal.id)).status === 'closed', 20_000);
      await coordinator.stop();
      coordinator = undefined;
      return { run: await readRun(g.paths, `${sent.goal.id}-r1`), conversationId: sent.conversationId };
    };
    process.env.WORK_CODEX_FAIL_TURN = '2';
    let runs;
    try {
      runs = [await turn('first?'), await turn('second?'), await turn('third?')];
    } finally {
      delete process.env.WORK_CODEX_FAIL_TURN;
    }
    expect(runs.map((r) => r.run.status)).toEqual(['success', 'failure', 'success']);
    expect(runs[1]!.run.failure_reason).toBe('nonzero_exit');
    const own = [
      { input_tokens: 16504, cached_input_tokens: 0, output_tokens: 210 },
      { input_tokens: 85681 - 16504, cached_input_tokens: 8000, output_tokens: 1350 - 210 },
      { input_tokens: 103779 - 85681, cached_input_tokens: 8000, output_tokens: 1820 - 1350 },
    ];
    runs.forEach((r, i) => expect(r.run.cost).toEqual(estimateCodexCost('gpt-5.4', own[i]!)));
    const sum = runs.reduce((total, r) => total + (r.run.cost?.usd ?? 0), 0);
    expect(sum).toBeCloseTo(estimateCodexCost('gpt-5.4', { input_tokens: 103779, cached_input_tokens: 16000, output_tokens: 1820 }).usd!, 6);
  });
});

describe('6. smaller truths', () => {
  it("claude's errors[] telemetry ([ede_diagnostic]) is not the error: the user-facing one is", async () => {
    const g = await gardenFor('ede-diagnostic', 'claude');
    const { run } = await runGoal(g, 'claude', 'spike');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', cost: { source: 'provider', usd: 0.05 }, outputs: { error: 'error_during_execution: API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' } });
  });

  it('a diagnostic alone becomes a sentence', async () => {
    const g = await gardenFor('ede-diagnostic-alone', 'claude');
    const { run } = await runGoal(g, 'claude', 'spike');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', outputs: { error: 'error_during_execution: the turn was interrupted after a tool call' } });
  });

  it('a headless claude killed by SIGTERM from outside is "killed by SIGTERM", not "exit by signal"', async () => {
    const g = await gardenFor('sigterm', 'claude');
    const { run } = await runGoal(g, 'claude', 'spike');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: null, session_id: 'S1', outputs: { error: 'killed by SIGTERM, no result event' } });
  });

  it('exit 143 is named as the SIGTERM it stands for', async () => {
    const g = await gardenFor('exit-143', 'claude');
    const { run } = await runGoal(g, 'claude', 'spike');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: 143, outputs: { error: 'exit 143 (killed by SIGTERM), no result event' } });
  });
});

describe("pak2's own stop is not the agent's report", () => {
  it('an agent that reports success, idles, and prints a failure when pak2 ends it after the grace: success, lingered; the cost it reported after still counts', async () => {
    const g = await gardenFor('command-reacts-to-sigint', 'command');
    const { run } = await runGoal(g, 'w', 'spike');
    expect(run).toMatchObject({ status: 'success', lingered: true, linger: { ended_by: 'grace' }, outputs: { final_text: 'all done' }, cost: { source: 'provider', usd: 0.03 } });
    expect(run.failure_reason).toBeUndefined();
  });
});

describe('the watchdog and the cap: open background work', () => {
  it('an open background task is open work: silent past watchdog_seconds (1 s) but within tool_silence_seconds, it is not killed', async () => {
    const g = await gardenFor('bg-silent', 'claude', { watchdog_seconds: 1, interval_seconds: 1, tool_silence_seconds: 60 });
    const { run } = await runGoal(g, 'claude', 'spike', { WORK_SILENT_MS: '3000' });
    expect(run).toMatchObject({ status: 'success', cost: { source: 'provider', usd: 0.08 }, outputs: { final_text: 'The tests pass.' }, background_tasks: [{ id: 's1', status: 'completed' }] });
    expect(readEventLog(g).some((e) => e.type === 'WatchdogKilled')).toBe(false);
  });

  it('silent past tool_silence_seconds with a background task open: killed, and the kill names the task', async () => {
    const g = await gardenFor('bg-silent', 'claude', { watchdog_seconds: 1, interval_seconds: 1, tool_silence_seconds: 2 });
    const { run } = await runGoal(g, 'claude', 'spike', { WORK_SILENT_MS: '60000' });
    expect(run).toMatchObject({
      status: 'killed',
      failure_reason: 'killed',
      watchdog: { limit: 'tool_silence_seconds', limit_seconds: 2, open_work: ['background task local_bash "npm test"'] },
      background_tasks: [{ id: 's1', status: 'stopped', unfinished: true }],
      outputs: { error: expect.stringMatching(/; open: background task local_bash "npm test"$/) },
    });
  });

  it('a result with a background task that never ends is ended at result_grace_cap_seconds: lingered at the cap, the task unfinished', async () => {
    const g = await gardenFor('bg-forever', 'claude', { result_grace_cap_seconds: 2 });
    const { run, pids: seen } = await runGoal(g, 'claude', 'spike');
    expect(run).toMatchObject({
      status: 'failure',
      failure_reason: 'background_unfinished',
      lingered: true,
      linger: { ended_by: 'cap', open_work: ['background task local_agent "watch the logs"'] },
      cost: { source: 'provider', usd: 0.07 },
      background_tasks: [{ id: 'f1', status: 'stopped', unfinished: true }],
    });
    expect(seen.every((pid) => !isAlive(pid))).toBe(true);
  });

  it('a clean result followed by endless output and nothing open: the cap ends it, judged by its result', async () => {
    const g = await gardenFor('chatter-forever', 'claude', { result_grace_cap_seconds: 2 });
    const { run } = await runGoal(g, 'claude', 'spike');
    expect(run).toMatchObject({ status: 'success', lingered: true, linger: { ended_by: 'cap' }, cost: { source: 'provider', usd: 0.04 }, outputs: { final_text: 'Done.' } });
    expect(run.linger!.open_work).toBeUndefined();
  });
});
