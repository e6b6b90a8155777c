/**
 * Closing the terminal under a running workbench (issue 16, item 4):
 * `tmux kill-window` sends SIGHUP and takes the terminal away. The
 * workbench must take the SIGTERM path — live runs closed
 * coordinator_stopped, their goals requeued, the lock released — with no
 * crash from writing to a terminal that is gone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lockPaths } from '../../source/coordinator/lock.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';
import { cleanupsAfterEach, PAK2_BIN, TmuxSession } from './tmux.js';

const cleanups = cleanupsAfterEach();

describe('closing the terminal', () => {
  it('tmux kill-window on a workbench with a live run: the run is coordinator_stopped, its goal requeued, the lock released, no crash', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const crashLog = path.join(home, 'stderr.log');
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'stall until the terminal closes', driver: 'chatty-stall' });
    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({
      cwd: garden.paths.gardenRoot,
      env: { PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' },
      // stderr to a file, so a crash after the terminal is gone still leaves its trace.
      argv: ['/bin/sh', '-c', `exec "${process.execPath}" "${PAK2_BIN}" 2>"${crashLog}"`],
      columns: 120,
      rows: 36,
    });
    await tmux.waitFor('the run live', (screen) => /1 live/.test(screen));
    const holder = JSON.parse(fs.readFileSync(lockPaths(garden.paths).holder, 'utf8')) as { pid: number };
    tmux.tmux('kill-window', '-t', 'wb:0');
    await waitFor(() => !isAlive(holder.pid), 15_000);
    const run = await readRun(garden.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    expect((await readGoal(garden.paths, goal.id)).status).toBe('queued');
    expect(fs.existsSync(lockPaths(garden.paths).holder)).toBe(false);
    expect(fs.existsSync(lockPaths(garden.paths).lock)).toBe(false);
    const stderr = fs.existsSync(crashLog) ? fs.readFileSync(crashLog, 'utf8') : '';
    expect(stderr).not.toMatch(/internal error|EIO|at .*\(.*:\d+:\d+\)/);
  });
});
