import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateRunClose } from '../../source/contracts/index.js';
import { CODEX_PRICES_PER_MILLION, REFLECTION_PROMPT } from '../../source/driver/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { waitFor } from '../support/garden.js';
import { startModelServer, type ModelScript, type ModelServer } from '../support/model-server.js';
import { cycleUntilIdle, goalEventTypes, makeAgentGarden, processesWith, streamOf, SUCCESSFUL_GOAL_EVENTS, type AgentGarden, codexScriptedConfig } from './agents.js';

let server: ModelServer | undefined;
let garden: AgentGarden | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  garden?.cleanup();
  garden = undefined;
});

const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);

/** A garden whose codex talks only to the scripted server: provider in CODEX_HOME, no plugins, no analytics. */
async function setup(script: ModelScript, coordinator: Record<string, number> = {}, model = 'gpt-5'): Promise<AgentGarden> {
  server = await startModelServer(script);
  const url = server.url;
  garden = await makeAgentGarden(
    'codex',
    coordinator,
    (stateDir) => {
      fs.writeFileSync(
        path.join(stateDir, 'config.toml'),
        codexScriptedConfig(url),
      );
      return { CODEX_HOME: stateDir, PAK2_TEST_MODEL_KEY: 'test-key' };
    },
    model,
  );
  return garden;
}

describe('end to end: the real codex CLI against the scripted model server', () => {
  it('a build goal: a real apply_patch, an answer, a reflection on the same thread, estimated cost', async () => {
    const g = await setup({
      turns: [
        { toolCall: { writeFile: { path: 'hello.txt', content: 'hello from codex\n' } }, usage: { input_tokens: 1000, output_tokens: 50 } },
        { text: 'I created hello.txt.', usage: { input_tokens: 1100, output_tokens: 10 } },
        { match: REFLECTION_MARK, text: 'I learned that apply_patch works in the garden root.', usage: { input_tokens: 1200, output_tokens: 20 } },
      ],
    });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Create hello.txt containing a greeting.' });
    await cycleUntilIdle(g);

    expect(fs.readFileSync(path.join(g.paths.gardenRoot, 'hello.txt'), 'utf8')).toBe('hello from codex\n');
    const runId = `${goal.id}-r1`;
    const run = await readRun(g.paths, runId);
    expect(validateRunClose(run, 'build')).toEqual([]);
    expect(run).toMatchObject({ status: 'success', driver: 'codex', model: 'gpt-5' });
    expect(run.reflection).toBe('I learned that apply_patch works in the garden root.');
    expect(run.outputs?.final_text).toBe('I created hello.txt.');

    const stream = streamOf(g, runId);
    const threads = stream.filter((e) => e.type === 'thread.started').map((e) => e.thread_id);
    expect(threads).toHaveLength(2);
    expect(threads[1]).toBe(threads[0]); // the reflection resumed the same thread
    expect(run.session_id).toBe(threads[0]);

    // Codex reports cumulative thread usage; the cost is priced from the last turn.completed.
    const usage = stream.filter((e) => e.type === 'turn.completed').at(-1)!.usage as Record<string, number>;
    const price = CODEX_PRICES_PER_MILLION['gpt-5']!;
    const expected = ((usage.input_tokens! - usage.cached_input_tokens!) * price.input + usage.cached_input_tokens! * price.cachedInput + usage.output_tokens! * price.output) / 1e6;
    expect(run.cost).toMatchObject({ source: 'estimated', input_tokens: usage.input_tokens, output_tokens: usage.output_tokens });
    expect(run.cost?.usd).toBeCloseTo(expected, 8);
    expect(usage.input_tokens).toBe(3300);

    expect((await readGoal(g.paths, goal.id))).toMatchObject({ status: 'closed', closed_reason: 'success' });
    expect(goalEventTypes(g)).toEqual([...SUCCESSFUL_GOAL_EVENTS]);
    expect(processesWith(g.stateDir)).toEqual([]);
  });

  it('a model missing from the price table: cost unknown, tokens kept', async () => {
    const g = await setup({ turns: [{ text: 'Looked around.' }] }, {}, 'gpt-5.5');
    const goal = await createGoal(g.paths, { type: 'research', plant: 'gardener', body: 'Look around.' });
    await cycleUntilIdle(g);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'success', model: 'gpt-5.5', cost: { source: 'unknown', input_tokens: 100, output_tokens: 10 } });
    expect(run.cost?.usd).toBeUndefined();
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
    expect(streamOf(g, run.id).some((e) => e.type === 'turn.failed')).toBe(true);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    // Swept at the run's end; a loaded machine can take a while to reap them.
    await waitFor(() => processesWith(g.stateDir).length === 0, 15_000).catch((e) => {
      throw new Error(`${(e as Error).message}; left: ${processesWith(g.stateDir).map((p) => { try { return `${p} ${fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ')} ${fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(' ')[2]}`; } catch { return String(p); } }).join(' | ')}`);
    });
  });

  it('a server that stalls: the watchdog kills the run and every codex process', async () => {
    const g = await setup({ mode: 'stall' }, { watchdog_seconds: 3, interval_seconds: 1 });
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Wait forever.' });
    await cycleUntilIdle(g);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed' });
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    await waitFor(() => processesWith(g.stateDir).length === 0, 10_000);
  });
});
