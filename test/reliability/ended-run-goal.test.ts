/**
 * A goal left `running` whose run has ended (issue 25, item 9): a
 * coordinator killed with SIGKILL between the run's close and its goal's
 * leaves it so. `pak2 doctor` names it (and `--fix` settles it), and `pak2
 * cancel` — the operator's action on a goal that looks stuck — works: it
 * settles the goal from its run instead of refusing a run that is not
 * running. (A coordinator's or `pak2 serve`'s start settles it too:
 * crash-points.test.ts, serve-repair.test.ts.)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createGoal, latestRun, readGoal } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { readEventLog } from '../support/garden.js';
import { makeCrashGarden } from './crash-harness.js';

/** A garden whose coordinator was killed right after its goal's run closed: the run `success`, the goal `running`. */
async function leftRunning() {
  const garden = await makeCrashGarden();
  const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'left running' });
  const crashed = spawnSync(process.execPath, [PAK2_BIN, 'cycle', '--garden', garden.root, '--no-ui', '--until-idle'], { env: { ...process.env, PAK2_CRASH_AT: 'run:closed:after-event' }, encoding: 'utf8', timeout: 60_000 });
  expect(crashed.signal).toBe('SIGKILL');
  expect((await readGoal(garden.paths, goal.id)).status).toBe('running');
  const run = (await latestRun(garden.paths, goal.id))!;
  expect(run.status).toBe('success');
  return { garden, goal, run };
}

describe('a goal left running whose run has ended', () => {
  it('pak2 cancel settles it from its run (closed success, not refused, not run again)', async () => {
    const { garden, goal, run } = await leftRunning();
    try {
      const cancelled = await runCli(['cancel', goal.id, '--garden', garden.root]);
      expect(cancelled.stderr).toBe('');
      expect(cancelled.code).toBe(0);
      expect(cancelled.stdout.trim()).toBe(`${goal.id}: its run ${run.id} had already ended success; the goal closed success from it`);
      const closed = await readGoal(garden.paths, goal.id);
      expect(closed).toMatchObject({ status: 'closed', closed_reason: 'success' });
      expect(readEventLog(garden).filter((e) => e.type === 'GoalClosed' && e.goal === goal.id)).toHaveLength(1);
      expect((await latestRun(garden.paths, goal.id))!.id).toBe(run.id);
    } finally {
      fs.rmSync(garden.root, { recursive: true, force: true });
    }
  }, 120_000);

  it('pak2 doctor names it; --fix settles it', async () => {
    const { garden, goal, run } = await leftRunning();
    try {
      const report = await runCli(['doctor', '--garden', garden.root, '--json']);
      const findings = (JSON.parse(report.stdout) as { findings: { check: string; message: string; fix?: string }[] }).findings;
      const named = findings.filter((f) => f.check === 'runs' && f.message.includes(goal.id));
      expect(named).toHaveLength(1);
      expect(named[0]!.message).toBe(`ended success, but its goal ${goal.id} is still running and no coordinator holds the garden; \`pak2 cycle\` or \`pak2 serve\` settles it at start, \`pak2 cancel ${goal.id}\` settles it now`);
      expect(report.code).toBe(1);
      const fixed = await runCli(['doctor', '--garden', garden.root, '--fix', '--json']);
      const after = (JSON.parse(fixed.stdout) as { findings: { check: string; message: string; fix?: string; fixed?: boolean }[] }).findings.find((f) => f.message.includes(goal.id));
      expect(after).toMatchObject({ fixed: true, fix: `settled goal ${goal.id}: closed success` });
      expect(await readGoal(garden.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
      expect((await latestRun(garden.paths, goal.id))!.id).toBe(run.id);
    } finally {
      fs.rmSync(garden.root, { recursive: true, force: true });
    }
  }, 120_000);
});
