import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateRunClose } from '../../source/contracts/index.js';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { waitFor } from '../support/garden.js';
import { startModelServer, type ModelScript, type ModelServer } from '../support/model-server.js';
import { claudeScriptedEnv, cycleUntilIdle, goalEventTypes, makeAgentGarden, processesWith, streamOf, SUCCESSFUL_GOAL_EVENTS, type AgentGarden } from './agents.js';

let server: ModelServer | undefined;
let garden: AgentGarden | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  garden?.cleanup();
  garden = undefined;
});

const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);

async function setup(script: ModelScript, coordinator: Record<string, number> = {}): Promise<AgentGarden> {
  server = await startModelServer(script);
  const url = server.url;
  garden = await makeAgentGarden('claude', coordinator, (stateDir) => claudeScriptedEnv(url, stateDir));
  return garden;
}

describe('end to end: the real claude CLI against the scripted model server', () => {
  it('a build goal: a real Write tool call, an answer, a reflection, the goal closed success', async () => {
    const g = await setup({
      turns: [
        { text: 'Creating the file.', toolCall: { writeFile: { path: 'hello.txt', content: 'hello from claude\n' } }, usage: { input_tokens: 1200, output_tokens: 40 } },
        { text: 'I created hello.txt.', usage: { input_tokens: 1300, output_tokens: 12 } },
        { match: REFLECTION_MARK, text: 'I learned that the garden root is the working directory.', usage: { input_tokens: 1400, output_tokens: 15 } },
      ],
    });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Create hello.txt containing a greeting.' });
    await cycleUntilIdle(g);

    expect(fs.readFileSync(path.join(g.paths.gardenRoot, 'hello.txt'), 'utf8')).toBe('hello from claude\n');
    const runId = `${goal.id}-r1`;
    const run = await readRun(g.paths, runId);
    expect(validateRunClose(run, 'build')).toEqual([]);
    expect(run.status).toBe('success');
    expect(run.driver).toBe('claude');
    expect(run.reflection).toBe('I learned that the garden root is the working directory.');
    expect(run.outputs?.final_text).toBe('I created hello.txt.');

    // Cost and session exactly as the CLI reported them in its result events: each result's own share
    // (model_usage_since_last_result), which on a resume is not its total_cost_usd (the whole session's).
    const results = streamOf(g, runId).filter((e) => e.type === 'result');
    expect(results).toHaveLength(2);
    const shares = results.map((e) => Object.values(e.model_usage_since_last_result as Record<string, { costUSD: number }>).reduce((sum, m) => sum + m.costUSD, 0));
    expect(shares.every((share) => share > 0)).toBe(true);
    expect(run.cost?.source).toBe('provider');
    expect(run.cost?.usd).toBeCloseTo(shares[0]! + shares[1]!, 8);
    // Main turn and reflection are one session: the reflection's session total is the run's whole cost, charged once.
    expect(run.cost?.usd).toBeCloseTo(results[1]!.total_cost_usd as number, 8);
    expect(run.session_id).toBe(results[0]!.session_id);
    expect(results[1]!.session_id).toBe(run.session_id); // the reflection continued the same session

    // The reflection question reached the model in the resumed conversation.
    const asked = server!.requests.filter((r) => r.api === 'anthropic' && JSON.stringify(r.body).includes(REFLECTION_MARK));
    expect(asked.length).toBeGreaterThan(0);
    expect(JSON.stringify(asked.at(-1)!.body)).toContain('I created hello.txt.');

    const closed = await readGoal(g.paths, goal.id);
    expect(closed).toMatchObject({ status: 'closed', closed_reason: 'success' });
    expect(goalEventTypes(g)).toEqual([...SUCCESSFUL_GOAL_EVENTS]);
    expect(processesWith(g.stateDir)).toEqual([]);
  });

  it.each([
    ['status500', 'failure', 'agent_error'],
    ['status401', 'failure', 'agent_error'],
  ] as const)('a server that answers %s: the run ends %s / %s and the goal closes failure', async (mode, status, reason) => {
    const g = await setup({ mode });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'This will not work.' });
    await cycleUntilIdle(g);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(validateRunClose(run, 'build')).toEqual([]);
    expect(run).toMatchObject({ status, failure_reason: reason });
    expect(run.cost).toBeDefined();
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    expect(processesWith(g.stateDir)).toEqual([]);
  });

  it('a server that stalls: the watchdog kills the silent run and its processes', async () => {
    const g = await setup({ mode: 'stall' }, { watchdog_seconds: 3, interval_seconds: 1 });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Wait forever.' });
    await cycleUntilIdle(g);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed' });
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    await waitFor(() => processesWith(g.stateDir).length === 0, 10_000);
  });

  it('a server that stalls past run_timeout_seconds: the run ends as timeout', async () => {
    const g = await setup({ mode: 'stall' }, { watchdog_seconds: 600, run_timeout_seconds: 4, interval_seconds: 1 });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Wait forever.' });
    await cycleUntilIdle(g);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'timeout', failure_reason: 'timeout' });
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    await waitFor(() => processesWith(g.stateDir).length === 0, 10_000);
  });
});
