/**
 * A run ends when the agent's work ends (docs/run/level2.md, "When a run has
 * ended"), against the real Claude Code CLI (2.1.198+ runs subagents and long
 * shell commands in the background) driven by the scripted model server:
 * interim results while background work runs, a backgrounded subagent whose
 * words are not the answer, and a resumed session that first drains a stale
 * task notification.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateRunClose } from '../../source/contracts/index.js';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { createGoal, readConversationMessages, readRun, setConversationContinuity } from '../../source/store/index.js';
import { sendOperatorMessage } from '../../source/submit/index.js';
import { CLAUDE_BIN } from '../support/agent-clis.js';
import { waitFor } from '../support/garden.js';
import { startModelServer, type ModelScript, type ModelServer } from '../support/model-server.js';
import { claudeScriptedEnv, cycleUntilIdle, makeAgentGarden, processesWith, streamOf, type AgentGarden } from './agents.js';

let server: ModelServer | undefined;
let garden: AgentGarden | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  garden?.cleanup();
  garden = undefined;
});

const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);

/** A claude garden with a 1 s result grace: the old "first result + grace" would cut every case here. */
async function setup(script: ModelScript, coordinator: Record<string, number> = {}): Promise<AgentGarden> {
  server = await startModelServer(script);
  const url = server.url;
  garden = await makeAgentGarden('claude', { result_grace_seconds: 1, ...coordinator }, (stateDir) => claudeScriptedEnv(url, stateDir));
  return garden;
}

/** Each claude result's own share of the cost (model_usage_since_last_result), as the CLI reported it. */
function shares(g: AgentGarden, runId: string): number[] {
  return streamOf(g, runId)
    .filter((e) => e.type === 'result')
    .map((e) => Object.values((e.model_usage_since_last_result ?? {}) as Record<string, { costUSD: number }>).reduce((sum, m) => sum + m.costUSD, 0));
}

describe('end to end: the real claude CLI runs work in the background', () => {
  it('a backgrounded shell command: claude writes an interim result, waits, then answers; the run is judged by the last result', { timeout: 60_000 }, async () => {
    const g = await setup({
      turns: [
        { text: 'Starting the slow check in the background.', toolCall: { background: { shell: 'sleep 3; echo check-done', description: 'slow check' } } },
        { text: "I'll wait for the slow check's completion notification." },
        { text: 'The slow check finished: check-done.' },
        { match: REFLECTION_MARK, text: 'I learned that slow checks belong in the background.' },
      ],
    });
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Run the slow check and report.' });
    await cycleUntilIdle(g);
    const runId = `${goal.id}-r1`;
    const run = await readRun(g.paths, runId);
    expect(validateRunClose(run, 'fix')).toEqual([]);
    const results = streamOf(g, runId).filter((e) => e.type === 'result');
    // The CLI really wrote an interim result before the task ended, then the real one (and the reflection's).
    expect(results.map((r) => r.result)).toEqual([
      "I'll wait for the slow check's completion notification.",
      'The slow check finished: check-done.',
      'I learned that slow checks belong in the background.',
    ]);
    expect(run).toMatchObject({
      status: 'success',
      outputs: { final_text: 'The slow check finished: check-done.' },
      reflection: 'I learned that slow checks belong in the background.',
      stop_reason: 'end_turn',
      terminal_reason: 'completed',
      background_tasks: [{ type: 'local_bash', description: 'slow check', status: 'completed' }],
    });
    expect(run.lingered).toBeUndefined();
    // Every result's own share, once: not the session totals claude 2.1.332 writes on the resumed reflection.
    const own = shares(g, runId);
    expect(own.every((s) => s > 0)).toBe(true);
    expect(run.cost).toMatchObject({ source: 'provider' });
    expect(run.cost!.usd).toBeCloseTo(own.reduce((a, b) => a + b, 0), 8);
    expect(run.cost!.usd).toBeCloseTo(results.at(-1)!.total_cost_usd as number, 8);
    await waitFor(() => processesWith(g.stateDir).length === 0, 10_000);
  });

  it('a backgrounded subagent: its own words are output, never the final text; the main turn answers after its notification', async () => {
    const g = await setup({
      turns: [
        { text: 'Launching a review agent.', toolCall: { background: { agent: { description: 'review the change', prompt: 'SUBAGENT-REVIEW: review the change' } } } },
        { text: "I'll wait for the background review agent's completion notification." },
        { text: 'The review found 2 problems; I fixed both and the tests pass.' },
        { match: 'SUBAGENT-REVIEW', text: 'Review: 2 problems found.', delayMs: 1500 },
      ],
    });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Have the change reviewed.' });
    await cycleUntilIdle(g);
    const runId = `${goal.id}-r1`;
    const run = await readRun(g.paths, runId);
    const stream = streamOf(g, runId);
    // The subagent really spoke, in its own thread.
    expect(stream.some((e) => e.type === 'assistant' && e.parent_tool_use_id && JSON.stringify(e).includes('Review: 2 problems found.'))).toBe(true);
    expect(run).toMatchObject({
      status: 'success',
      outputs: { final_text: 'The review found 2 problems; I fixed both and the tests pass.' },
      background_tasks: [{ type: 'local_agent', description: 'review the change', status: 'completed' }],
    });
    expect(run.lingered).toBeUndefined();
    expect(run.cost!.usd).toBeCloseTo(shares(g, runId).reduce((a, b) => a + b, 0), 8);
  });

  it('a resumed session with a stale stopped task: the zero-turn drain is not terminal, the reply is the real turn\'s answer and its cost its own', async () => {
    const g = await setup({
      turns: [
        { text: 'Starting the watcher in the background.', toolCall: { background: { shell: 'sleep 120', description: 'watcher' } } },
        { text: "I'll be notified when the watcher finishes." },
        // The chat turn, on the resumed session: the model takes longer than the 1 s grace.
        { match: 'CHAT-TURN-7', text: 'The watcher was stopped when the last process ended; nothing is running now.', delayMs: 2500 },
      ],
    });
    // An earlier claude process in the garden started a background task and was ended by SIGTERM: the session holds a stopped task it never told the model of.
    const out = path.join(g.stateDir, 'earlier.jsonl');
    const earlier = spawn(CLAUDE_BIN, ['-p', '--model', 'claude-opus-4-6', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'], {
      cwd: g.paths.gardenRoot,
      env: { ...g.env, IS_SANDBOX: '1' },
      stdio: ['pipe', fs.openSync(out, 'w'), 'ignore'],
    });
    earlier.stdin!.end('Start the watcher.');
    await waitFor(() => fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes('"type":"result"'), 30_000);
    const exited = new Promise((resolve) => earlier.once('exit', resolve));
    earlier.kill('SIGTERM');
    await exited;
    const lines = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const sessionId = lines.find((l) => typeof l.session_id === 'string')!.session_id as string;
    expect(lines.some((l) => l.subtype === 'task_notification' && l.status === 'stopped')).toBe(true);
    const before = (lines.filter((l) => l.type === 'result').at(-1)!.total_cost_usd as number) ?? 0;

    // The operator's chat resumes that session through pak2.
    const sent = await sendOperatorMessage(g, 'CHAT-TURN-7: is anything still running?');
    await setConversationContinuity(g.paths, sent.conversationId, 'claude', sessionId, new Date(), 'gardener');
    await cycleUntilIdle(g);
    const runId = `${sent.goal.id}-r1`;
    const run = await readRun(g.paths, runId);
    const stream = streamOf(g, runId);
    const results = stream.filter((e) => e.type === 'result');
    // The real CLI drained the stale notification with a zero-turn result first.
    expect(results[0]).toMatchObject({ num_turns: 0, origin: { kind: 'task-notification' } });
    expect(results).toHaveLength(2);
    expect(run).toMatchObject({ status: 'success', session_id: sessionId, outputs: { final_text: 'The watcher was stopped when the last process ended; nothing is running now.' } });
    expect(run.lingered).toBeUndefined();
    // Its own turn, not the session's history: the drain's total is the earlier process's spend.
    expect(results[0]!.total_cost_usd).toBeCloseTo(before, 8);
    expect(run.cost!.usd).toBeCloseTo(shares(g, runId).reduce((a, b) => a + b, 0), 8);
    expect(run.cost!.usd).toBeCloseTo((results[1]!.total_cost_usd as number) - before, 8);
    const messages = await readConversationMessages(g.paths, sent.conversationId);
    expect(messages.at(-1)).toMatchObject({ sender: 'garden', text: 'The watcher was stopped when the last process ended; nothing is running now.' });
  });
});
