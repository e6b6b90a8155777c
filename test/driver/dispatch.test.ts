import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import { validateRunClose } from '../../source/contracts/index.js';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, readGoal, readRun, runEventsFile } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
afterEach(() => garden?.cleanup());

async function runOnce(driver: string, type: 'build' | 'spike' = 'build', extra: Partial<Garden['config']['coordinator']> = {}) {
  Object.assign(garden.config.coordinator, extra);
  const goal = await createGoal(garden.paths, { type, plant: 'gardener', body: `scenario ${driver}`, driver });
  await reconcile({ garden, dispatch: (g, runId) => dispatch(g, runId, { garden, onStderr: () => undefined }), awaitDispatch: true });
  const run = await readRun(garden.paths, `${goal.id}-r1`);
  expect(validateRunClose(run, type)).toEqual([]);
  return { goal: await readGoal(garden.paths, goal.id), run };
}

describe('driver dispatch through the command plugin: every terminal status and failure reason', () => {
  it('success with reflection for a build goal; the prompt reaches the agent on stdin', async () => {
    garden = await makeTestGarden();
    const capture = path.join(garden.paths.gardenRoot, 'prompt-seen.txt');
    process.env.FAKE_AGENT_WRITE = capture;
    try {
      const { run, goal } = await runOnce('success');
      expect(run.status).toBe('success');
      expect(run.reflection).toMatch(/^Learned:/);
      expect(run.session_id).toBe('fake-session-1');
      expect(run.num_turns).toBe(2);
      expect(run.outputs?.final_text).toBe('done');
      expect(goal.closed_reason).toBe('success');
      const seen = fs.readFileSync(capture, 'utf8');
      expect(seen).toContain('# Task\n\nscenario success');
      expect(seen).toBe(fs.readFileSync(path.join(garden.paths.runsDir, run.id, 'prompt.md'), 'utf8'));
    } finally {
      delete process.env.FAKE_AGENT_WRITE;
    }
  });

  it('success without reflection for a spike goal (exempt type): no reflection turn', async () => {
    garden = await makeTestGarden();
    const { run } = await runOnce('success', 'spike');
    expect(run.status).toBe('success');
    expect(run.reflection).toBeUndefined();
    expect(fs.readFileSync(runEventsFile(garden.paths, run.id), 'utf8')).not.toContain('pak2.reflection');
  });

  it('plain text output without a result line is recorded raw, read as text, and succeeds with cost unknown', async () => {
    garden = await makeTestGarden();
    const { run } = await runOnce('plain', 'spike');
    expect(run.status).toBe('success');
    expect(run.cost).toEqual({ source: 'unknown' });
    expect(run.outputs?.final_text).toBe('all done, no result line');
    expect(fs.readFileSync(runEventsFile(garden.paths, run.id), 'utf8')).toBe('all done, no result line\n');
  });

  it('zero_output when the agent exits cleanly having said nothing', async () => {
    garden = await makeTestGarden();
    const { run, goal } = await runOnce('zero');
    expect(run).toMatchObject({ status: 'zero_output', failure_reason: 'zero_output', cost: { source: 'unknown' } });
    expect(goal.closed_reason).toBe('failure');
  });

  it('failure / nonzero_exit when the agent exits non-zero without an error report', async () => {
    garden = await makeTestGarden();
    const { run } = await runOnce('exit3');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: 3 });
  });

  it('failure / agent_error when the agent reports an error result; its cost is kept', async () => {
    garden = await makeTestGarden();
    const { run } = await runOnce('error-result');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'agent_error', cost: { source: 'provider', usd: 0.005 } });
  });

  it('failure / reflection_failed when the reflection turn says nothing', async () => {
    garden = await makeTestGarden();
    const { run } = await runOnce('no-reflection');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'reflection_failed' });
    expect(run.reflection).toBeUndefined();
  });

  it('failure / launch_failed with a JSON error line when the CLI is missing', async () => {
    garden = await makeTestGarden({ extraToml: '[drivers.ghost]\ncommand = "pak2-no-such-cli-anywhere"' });
    const { run, goal } = await runOnce('ghost');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'launch_failed', cost: { source: 'unknown' } });
    const lines = fs.readFileSync(runEventsFile(garden.paths, run.id), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([{ type: 'error', source: 'pak2', message: expect.stringContaining('cannot start pak2-no-such-cli-anywhere') }]);
    expect(run.outputs?.error).toContain('cannot start pak2-no-such-cli-anywhere');
    expect(goal.closed_reason).toBe('failure');
  });

  it('an unknown driver, or a command driver without a command, is a failed run: launch_failed, a JSON error line, cost unknown (seed 002)', async () => {
    garden = await makeTestGarden();
    for (const driver of ['nonsense-driver', 'command']) {
      const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `driver ${driver}`, driver });
      await reconcile({ garden, dispatch: (g, runId) => dispatch(g, runId, { garden, onStderr: () => undefined }), awaitDispatch: true });
      const run = await readRun(garden.paths, `${goal.id}-r1`);
      const message = driver === 'command' ? 'driver command has no command: set [drivers.command].command' : 'unknown driver "nonsense-driver"';
      expect(run).toMatchObject({ status: 'failure', failure_reason: 'launch_failed', cost: { source: 'unknown' }, outputs: { error: expect.stringContaining(message) } });
      const lines = fs.readFileSync(runEventsFile(garden.paths, run.id), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(lines).toEqual([{ type: 'error', source: 'pak2', message: expect.stringContaining(message) }]);
      expect((await readGoal(garden.paths, goal.id))).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    }
  });

  it('timeout / timeout when the run passes run_timeout_seconds', async () => {
    garden = await makeTestGarden({ coordinator: { run_timeout_seconds: 1 } });
    const { run, goal } = await runOnce('chatty-stall');
    expect(run).toMatchObject({ status: 'timeout', failure_reason: 'timeout' });
    expect(goal.closed_reason).toBe('failure');
  });
});
