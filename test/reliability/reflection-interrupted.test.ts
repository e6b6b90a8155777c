/**
 * An interruption during the reflection turn keeps the main turn that had
 * finished (issue 25, item 9; docs/run/level2.md, "Reflection"): the
 * coordinator is killed with SIGKILL, or told to stop, while the agent
 * reflects. The run is recorded from its main turn (`failure` /
 * `reflection_failed`, the reason in its error, the main turn's cost kept),
 * its goal closes, and the task is not run again.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGoal, listRuns, readGoal } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('an interruption during the reflection turn', () => {
  it.each([['SIGKILL'], ['SIGTERM']] as const)('%s to the coordinator while the agent reflects: the run is recorded from its main turn, the task is not run again', async (signal) => {
    const g = await makeTestGarden();
    cleanups.push(() => g.cleanup());
    const pidFile = path.join(g.paths.gardenRoot, 'reflecting.pid');
    const countFile = path.join(g.paths.gardenRoot, 'main-turns.txt');
    const env = { ...process.env, FAKE_AGENT_PIDFILE: pidFile, FAKE_AGENT_COUNT: countFile };
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Fix it', driver: 'reflection-stall' });
    const coordinator = spawn(process.execPath, [PAK2_BIN, 'cycle', '--garden', g.paths.gardenRoot, '--no-ui'], { env, stdio: 'ignore' });
    const exited = new Promise((resolve) => coordinator.once('exit', resolve));
    cleanups.push(async () => {
      if (coordinator.exitCode === null && coordinator.signalCode === null) coordinator.kill('SIGKILL');
      await exited;
    });
    // The reflection turn has begun: the main turn finished.
    await waitFor(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'), 30_000);
    const reflecting = Number(fs.readFileSync(pidFile, 'utf8'));
    coordinator.kill(signal);
    await exited;
    if (signal === 'SIGKILL') {
      // A kill -9 leaves the agent reflecting; the next start sweeps it and records the run.
      expect(isAlive(reflecting)).toBe(true);
      const restarted = await runCli(['cycle', '--garden', g.paths.gardenRoot, '--no-ui', '--until-idle'], { env });
      expect(restarted.code, restarted.stderr).toBe(0);
    }
    await waitFor(() => !isAlive(reflecting), 10_000);
    const runs = (await listRuns(g.paths)).runs.filter((r) => r.goal === goal.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'failure', failure_reason: 'reflection_failed', outputs: { final_text: 'done' } });
    expect(runs[0]!.outputs?.error).toMatch(/during the reflection turn; the main turn had finished \(success\) and is kept; no reflection was recorded$/);
    expect(runs[0]!.cost?.usd ?? 0).toBeGreaterThanOrEqual(0.02);
    expect(await readGoal(g.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    expect(fs.readFileSync(countFile, 'utf8')).toBe('main turn\n');
  }, 120_000);
});
