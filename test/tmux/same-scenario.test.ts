/**
 * One scenario through the real workbench (tmux) and through headless
 * `pak2 cycle --no-ui`: the same events, the same run record, and each agent
 * stderr line once in stderr.log (issue 14's acceptance).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGoal, readRun } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { makeTestGarden } from '../support/garden.js';
import { cleanupsAfterEach, goalRows, PAK2_BIN, TmuxSession } from './tmux.js';

const cleanups = cleanupsAfterEach();

const NOISY = `process.stdin.resume(); process.stdin.on('end', () => { for (const n of [1, 2, 3]) process.stderr.write('warning ' + n + '\\n'); process.stdout.write(JSON.stringify({ type: 'result', status: 'success', text: 'done' }) + '\\n'); });`;

async function garden() {
  const g = await makeTestGarden({ extraToml: `[drivers.noisy]\ncommand = ${JSON.stringify([process.execPath, '-e', NOISY])}` });
  cleanups.push(() => g.cleanup());
  const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'be noisy', driver: 'noisy' });
  return { g, goal };
}

function outcome(g: Awaited<ReturnType<typeof garden>>['g'], runId: string) {
  const events = fs
    .readFileSync(g.paths.coordinatorLog, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, string>)
    .filter((e) => e.type !== 'CoordinatorStarted' && e.type !== 'CoordinatorStopped' && e.type !== 'PlantCommissioned' && e.type !== 'GoalSubmitted')
    .map((e) => `${e.type}${e.from ? ` ${e.from}>${e.to}` : ''}${e.status ? ` ${e.status}` : ''}`);
  const stderrLog = fs.readFileSync(path.join(g.paths.runsDir, runId, 'stderr.log'), 'utf8');
  return { events, stderrLines: stderrLog.split('\n').filter((l) => l.startsWith('warning')) };
}

describe('the same scenario through the workbench and headless', () => {
  it('same events, same record, each stderr line once', async () => {
    // The workbench, as a person runs it.
    const wb = await garden();
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({ cwd: wb.g.paths.gardenRoot, env: { PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' }, argv: [process.execPath, PAK2_BIN], columns: 120, rows: 36 });
    await tmux.waitFor('the goal closed', (s) => goalRows(s).some((r) => r.id === wb.goal.id && r.status === 'closed:success') && s, 30_000);
    tmux.keys('q');
    expect(await tmux.exitStatus()).toBe(0);
    // Headless.
    const hl = await garden();
    execFileSync(process.execPath, [PAK2_BIN, 'cycle', '--no-ui', '--until-idle', '--garden', hl.g.paths.gardenRoot], { stdio: 'ignore' });

    const runId = `${wb.goal.id}-r1`;
    const a = outcome(wb.g, runId);
    const b = outcome(hl.g, runId);
    expect(a.events).toEqual(b.events);
    expect(a.events).toContain('RunClosed success');
    expect(a.stderrLines).toEqual(['warning 1', 'warning 2', 'warning 3']);
    expect(b.stderrLines).toEqual(['warning 1', 'warning 2', 'warning 3']);
    const strip = ({ started_at: _s, completed_at: _c, ...rest }: Record<string, unknown>) => rest;
    expect(strip(await readRun(wb.g.paths, runId))).toEqual(strip(await readRun(hl.g.paths, runId)));
  }, 90_000);
});
