/**
 * A run whose agent had ended on its own, its result in the stream, but
 * that no pak2 closed (the coordinator died between the agent's exit and the
 * close): a finished run is never recorded as killed (docs/run/level2.md,
 * "Terminal paths"). The restart's reclaim records it from what the agent
 * reported; a type that needs a reflection keeps the main turn and fails
 * `reflection_failed`; an agent still alive is another matter (killed,
 * coordinator_stopped, as before). Real files, a real dead pid.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reclaimOrphans } from '../../source/coordinator/index.js';
import { createGoal, openRun, readRun, runEventsFile, transitionGoal } from '../../source/store/index.js';
import type { GoalType } from '../../source/contracts/index.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A run left `running` by a coordinator that died after its agent printed `lines` and exited. */
async function endedRun(type: GoalType, lines: unknown[]) {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  const goal = await createGoal(g.paths, { type, plant: 'gardener', body: `ended ${type}` });
  await transitionGoal(g.paths, goal.id, 'dispatched');
  const run = await openRun(g.paths, goal, { plant: 'gardener', driver: 'command', model: 'scripted' });
  await transitionGoal(g.paths, goal.id, 'running');
  fs.writeFileSync(runEventsFile(g.paths, run.id), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  // A pid that was the agent's and is gone: a process that has exited.
  const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  const pid = Number(gone.stdout.trim());
  fs.writeFileSync(path.join(g.paths.runsDir, run.id, 'process.json'), JSON.stringify({ pid, mark: randomUUID(), host: os.hostname(), phase: 'main', started_at: run.started_at, driver: 'command', model: 'scripted' }));
  return { g, run };
}

describe('a turn that ended before its coordinator died', () => {
  it('a spike whose agent reported success and exited is success at restart, not killed', async () => {
    const { g, run } = await endedRun('spike', [{ type: 'result', status: 'success', text: 'Found it: the cache key was wrong.', cost_usd: 0.12 }]);
    expect(await reclaimOrphans(g)).toEqual([run.id]);
    expect(await readRun(g.paths, run.id)).toMatchObject({ status: 'success', outputs: { final_text: 'Found it: the cache key was wrong.' }, cost: { source: 'provider', usd: 0.12 } });
  });

  it('a fix whose main turn succeeded keeps it and fails reflection_failed: the task is not run again', async () => {
    const { g, run } = await endedRun('fix', [{ type: 'result', status: 'success', text: 'Fixed.', cost_usd: 0.2 }]);
    expect(await reclaimOrphans(g)).toEqual([run.id]);
    const closed = await readRun(g.paths, run.id);
    expect(closed).toMatchObject({ status: 'failure', failure_reason: 'reflection_failed', cost: { usd: 0.2 } });
    expect(closed.outputs?.error).toContain("after the agent's main turn had ended (success, kept) and before its reflection was asked for");
  });

  it('an agent that reported a failure is that failure', async () => {
    const { g, run } = await endedRun('spike', [{ type: 'result', status: 'failure', text: 'could not reach the API' }]);
    expect(await reclaimOrphans(g)).toEqual([run.id]);
    expect(await readRun(g.paths, run.id)).toMatchObject({ status: 'failure', failure_reason: 'agent_error' });
  });

  it('a stream with no result is an interrupted attempt, as before: killed, coordinator_stopped', async () => {
    const { g, run } = await endedRun('spike', [{ type: 'text', text: 'working on it' }]);
    expect(await reclaimOrphans(g)).toEqual([run.id]);
    expect(await readRun(g.paths, run.id)).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
  });
});

describe('pak2 stop of a run whose agent had already ended', () => {
  it('records the turn from what it reported, not killed / operator_stopped; the goal settles from it', async () => {
    const { g, run } = await endedRun('spike', [{ type: 'result', status: 'success', text: 'Done before the stop.', cost_usd: 0.05 }]);
    const { stopRun } = await import('../../source/submit/index.js');
    const stopped = await stopRun(g, run.id);
    expect(stopped).toMatchObject({ by: 'orphan', detail: expect.stringContaining('its agent had already ended (success)') });
    expect(await readRun(g.paths, run.id)).toMatchObject({ status: 'success', outputs: { final_text: 'Done before the stop.' } });
    const { readGoal } = await import('../../source/store/index.js');
    expect(await readGoal(g.paths, run.goal)).toMatchObject({ status: 'closed', closed_reason: 'success' });
  });
});
