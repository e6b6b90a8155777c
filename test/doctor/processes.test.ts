/**
 * `pak2 doctor` on what lives beside the records: the coordinator lock,
 * running runs, and orphan agent processes, through the built CLI.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireCoordinatorLock, lockPaths, reclaimOrphans } from '../../source/coordinator/index.js';
import { runDir } from '../../source/garden/index.js';
import { CLOSED_LEDGER, goalFile, readGoal, readRun, runMetaFile } from '../../source/store/index.js';
import { stopRun } from '../../source/submit/index.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';
import { asideDir, doctor, doctorJson, expectClean, expectNothingLost, filesUnder, findingLines, quietHistory, runningRun } from './support.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(g.cleanup, quietHistory());
  return g;
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const pid = Number(child.stdout);
  expect(isAlive(pid)).toBe(false);
  return pid;
}

/** A long-lived process carrying a run's agent environment, as dispatch launches it. */
function agentProcess(gardenRoot: string, runId: string, dir: string, mark: string): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    env: { ...process.env, PAK2_GARDEN: gardenRoot, PAK2_RUN_MARK: mark, PAK2_RUN_ID: runId, PAK2_RUN_DIR: dir },
    stdio: 'ignore',
  });
  cleanups.push(() => {
    if (child.pid && isAlive(child.pid)) child.kill('SIGKILL');
  });
  return child;
}

describe('pak2 doctor: the coordinator lock', () => {
  it('names a lock whose holder is dead and --fix removes the lock dir and moves the holder aside', async () => {
    const g = await garden();
    const files = lockPaths(g.paths);
    const pid = deadPid();
    fs.mkdirSync(files.lock);
    const holder = `${JSON.stringify({ pid, host: os.hostname(), started_at: '2026-11-29T09:00:00.000Z', command: 'pak2 cycle' }, null, 2)}\n`;
    fs.writeFileSync(files.holder, holder);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      `lock: .runtime/coordinator.lock: the coordinator lock is left over: its holder pid ${pid} (pak2 cycle, since 2026-11-29T09:00:00.000Z) is not running — fix: remove the lock directory and move the holder file aside`,
    ]);

    const before = filesUnder(g.paths.gardenRoot);
    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    const moved = path.join(asideDir(g), 'coordinator.holder.json');
    expect(findingLines(fixed.stdout)[0]).toContain(`— fixed: removed the lock directory; moved the holder file aside to ${path.relative(g.paths.gardenRoot, moved)}`);
    expect(fs.existsSync(files.lock)).toBe(false);
    expect(fs.existsSync(files.holder)).toBe(false);
    expect(fs.readFileSync(moved, 'utf8')).toBe(holder);
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));
    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
  });

  it('calls a holder pid that is alive but answers on no coordinator socket reused', async () => {
    const g = await garden();
    const files = lockPaths(g.paths);
    fs.mkdirSync(files.lock);
    fs.writeFileSync(files.holder, JSON.stringify({ pid: process.pid, host: os.hostname(), started_at: '2026-11-29T09:00:00.000Z', command: 'pak2 cycle' }));
    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([expect.objectContaining({ check: 'lock', file: files.lock, message: expect.stringContaining(`its holder pid ${process.pid} (pak2 cycle, since 2026-11-29T09:00:00.000Z) is alive but is not this garden's coordinator`) })]);
  });

  it('says nothing about the lock, running runs or agent processes while a coordinator holds the garden', async () => {
    const g = await garden();
    const release = await acquireCoordinatorLock(g.paths, 'pak2 cycle (test)');
    cleanups.push(release);
    const { run } = await runningRun(g);
    const child = agentProcess(g.paths.gardenRoot, run, runDir(g.paths, run), 'mark-held');
    await waitFor(() => fs.readFileSync(`/proc/${child.pid}/environ`, 'latin1').includes('PAK2_RUN_MARK=mark-held'));

    const text = await doctor(g.paths.gardenRoot);
    expectClean(text.stdout, g.paths.gardenRoot);
    expect(text.code).toBe(0);
    expect(isAlive(child.pid!)).toBe(true);
  });
});

describe('pak2 doctor: running runs and orphan agent processes', () => {
  it('names an agent process left with no coordinator and the run it belongs to; --fix SIGKILLs it, and pak2 cycle reclaims the run', async () => {
    const g = await garden();
    const { goal, run } = await runningRun(g);
    const dir = runDir(g.paths, run);
    const child = agentProcess(g.paths.gardenRoot, run, dir, 'mark-orphan');
    fs.writeFileSync(path.join(dir, 'process.json'), JSON.stringify({ pid: child.pid, mark: 'mark-orphan', host: os.hostname(), phase: 'main', started_at: new Date().toISOString() }));
    await waitFor(() => fs.readFileSync(`/proc/${child.pid}/environ`, 'latin1').includes('PAK2_RUN_MARK=mark-orphan'));

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    const meta = path.relative(g.paths.gardenRoot, runMetaFile(g.paths, run));
    expect(findingLines(text.stdout)).toEqual([
      `runs: ${meta}: status: running, but no coordinator holds the garden and its agent processes are still alive (pid ${child.pid}; see the processes check); \`pak2 cycle\` reclaims it at start (kills what is left, closes it killed, coordinator_stopped)`,
      expect.stringMatching(new RegExp(`^processes: \\.runtime/runs/${run}/process\\.json: 1 agent process\\(es\\) of ${run} still alive with no coordinator holding the garden: pid ${child.pid} \\(.*node -e setInterval.*\\) — fix: SIGKILL it$`)),
    ]);

    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(1); // the run stays running: no automatic fix
    expect(fixed.findings.map((f) => [f.check, f.fixed])).toEqual([
      ['runs', false],
      ['processes', true],
    ]);
    expect(fixed.findings[1]!.fix).toBe(`killed pid ${child.pid}`);
    await waitFor(() => !isAlive(child.pid!));

    const after = await doctorJson(g.paths.gardenRoot);
    expect(after.findings).toEqual([
      expect.objectContaining({ check: 'runs', field: 'status', message: `running, but no coordinator holds the garden and its agent process (pid ${child.pid}) is gone; \`pak2 cycle\` reclaims it at start (kills what is left, closes it killed, coordinator_stopped)` }),
    ]);
    // What the line promises: a coordinator's start reclaims it.
    expect(await reclaimOrphans(g)).toEqual([run]);
    expect((await readRun(g.paths, run)).status).toBe('killed');
    expect((await readGoal(g.paths, goal)).status).toBe('running'); // reconcile requeues it next
    // Until a pass does, doctor names the goal left running on an ended run, and settles it with --fix: back to the queue.
    const left = await doctorJson(g.paths.gardenRoot);
    expect(left.findings).toEqual([expect.objectContaining({ check: 'runs', field: 'status', message: expect.stringContaining(`ended killed (coordinator_stopped), but its goal ${goal} is still running and no coordinator holds the garden`) })]);
    expect((await doctor(g.paths.gardenRoot, '--fix')).code).toBe(0);
    expect((await readGoal(g.paths, goal)).status).toBe('queued');
    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
  });

  it('names a run still running under a closed goal, which reclaim never takes, with no automatic fix; pak2 stop closes it', async () => {
    const g = await garden();
    const { goal, run } = await runningRun(g);
    const record = await readGoal(g.paths, goal);
    fs.writeFileSync(goalFile(g.paths, goal), JSON.stringify({ ...record, status: 'closed', closed_reason: 'cancelled', closed_at: new Date().toISOString() }));
    fs.appendFileSync(path.join(g.paths.goalsDir, CLOSED_LEDGER), `${goal}\n`);

    const before = filesUnder(g.paths.gardenRoot);
    const json = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([
      {
        check: 'runs',
        file: runMetaFile(g.paths, run),
        field: 'status',
        message: `running, but its goal ${goal} is closed (cancelled); reclaim at coordinator start reads open goals only, so it stays running until \`pak2 stop ${run}\` sweeps and closes it`,
        fixed: false,
      },
    ]);
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));
    // The claim holds: a coordinator start leaves it running.
    expect(await reclaimOrphans(g)).toEqual([]);
    expect((await readRun(g.paths, run)).status).toBe('running');
    // And what it does name closes it.
    expect((await stopRun(g, run)).by).toBe('orphan');
    expect((await readRun(g.paths, run)).status).toBe('killed');
    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
  });
});
