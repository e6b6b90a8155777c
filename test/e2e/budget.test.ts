/**
 * A budget stops the real claude CLI mid-run (docs/budget/level2.md): the
 * scripted model server reports usage message by message; pak2 prices each
 * assistant message as the stream carries it and stops the run within one
 * message of the cap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadGarden } from '../../source/garden/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { readEventLog } from '../support/garden.js';
import { modelCalls, startModelServer, type ModelServer } from '../support/model-server.js';
import fs from 'node:fs';
import { claudeScriptedEnv, cycleUntilIdle, makeAgentGarden, processesWith, streamOf, type AgentGarden } from './agents.js';

let server: ModelServer | undefined;
let garden: AgentGarden | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  garden?.cleanup();
  garden = undefined;
});

describe('end to end: a budget stops the real claude CLI mid-run', () => {
  it('each message costs $0.50 at claude-opus-4-6 rates; a $1.20 run cap stops the run at the third message: killed / budget_exceeded, the cost so far with its source', async () => {
    // 100,000 input tokens at $5 per million and 1 output token at $25 per million: $0.500025 a message.
    const usage = { input_tokens: 100_000, output_tokens: 1 };
    server = await startModelServer({
      turns: [
        { text: 'Step one.', toolCall: { shell: 'echo one' }, usage },
        { text: 'Step two.', toolCall: { shell: 'echo two' }, usage },
        { text: 'Step three.', toolCall: { shell: 'echo three' }, usage },
        { text: 'Step four.', toolCall: { shell: 'echo four' }, usage },
        { text: 'Step five.', toolCall: { shell: 'echo five' }, usage },
        { text: 'All done.', usage },
      ],
    });
    const url = server.url;
    garden = await makeAgentGarden('claude', {}, (stateDir) => claudeScriptedEnv(url, stateDir), 'claude-opus-4-6');
    fs.appendFileSync(garden.paths.configFile, '[budget]\nrun_usd = 1.2\n');
    garden.config = loadGarden(garden.paths.gardenRoot).config;
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Take five steps, one tool call each.' });
    await cycleUntilIdle(garden);

    const run = await readRun(garden.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'budget_exceeded', budget: { cap: 'run', cap_usd: 1.2 } });
    // Stopped at the message that crossed the cap: the third, $1.500075 by the stream's own usage.
    expect(run.budget!.spent_usd).toBeCloseTo(1.500075, 6);
    // Within one message of the cap: at most one more model request than the three that crossed it.
    expect(modelCalls(server.requests).length).toBeLessThanOrEqual(4);
    // The cost so far, with its source: claude's own figure when it reported one after pak2's SIGINT, else the stream's usage priced.
    expect(['provider', 'estimated']).toContain(run.cost!.source);
    expect(run.cost!.usd!).toBeGreaterThanOrEqual(1.5);
    if (!streamOf(garden, run.id).some((e) => e.type === 'result')) expect(run.cost).toMatchObject({ source: 'estimated', pricing: 'claude per-message usage at claude-opus-4-6 rates' });
    expect((await readGoal(garden.paths, goal.id)).closed_reason).toBe('failure');
    expect(readEventLog(garden).find((e) => e.type === 'RunClosed')).toMatchObject({ reason: 'budget_exceeded' });
    expect(processesWith(garden.stateDir)).toEqual([]);
  });
});
