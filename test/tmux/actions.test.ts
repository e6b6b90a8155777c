/**
 * Operator actions and problems in a real terminal (issue 14, acceptance):
 * the workbench open on a garden, goals submitted from a second terminal
 * (`pak2 submit`); a queued goal cancelled from the workbench (x, y) closes
 * cancelled; a live run stopped from the workbench (s, y) closes killed /
 * operator_stopped and its goal cancelled; a broken goal file shows as a
 * problem (status-line counter, `p` lists it) and clears once fixed.
 *
 * Waits are bounded and assert outcomes, never durations.
 * PAK2_SHOW_SCREENS=1 prints the screens the tests read.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGoal, readRun } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { makeTestGarden } from '../support/garden.js';
import { cleanupsAfterEach, goalRows, PAK2_BIN, show, statusLine, TmuxSession } from './tmux.js';

const cleanups = cleanupsAfterEach();

/** The status of goal `id` in the Goals pane, if shown. */
function statusOf(screen: string, id: string): string | undefined {
  return goalRows(screen).find((row) => row.id === id)?.status;
}

/** Selects goal `id` as a person would: `/`, its id, enter (one key per read, as typed). */
async function filterTo(tmux: TmuxSession, id: string): Promise<void> {
  tmux.keys('/');
  await tmux.waitFor('the filter field', (s) => s.includes('matching /█'));
  tmux.type(id);
  tmux.keys('Enter');
}

describe('operator actions in the workbench', () => {
  it('submit from a second terminal; cancel it (x, y); stop a live run (s, y); a broken goal file is a problem until fixed (p lists it)', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const env = { PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' };
    /** `pak2 submit` in a second terminal; the new goal's id. */
    const submit = (title: string, driver: string) =>
      (JSON.parse(execFileSync(process.execPath, [PAK2_BIN, 'submit', '--plant', 'gardener', '--type', 'spike', '--driver', driver, '--title', title, '--body', `${title}: a goal from a second terminal`, '--json'], { cwd: garden.paths.gardenRoot, env, encoding: 'utf8' })) as { id: string }).id;

    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({ cwd: garden.paths.gardenRoot, env, argv: [process.execPath, PAK2_BIN], columns: 120, rows: 36 });
    await tmux.waitFor('the workbench', (s) => /coordinator idle/.test(statusLine(s)));

    // A stalling goal takes the one run slot; the next one waits in the queue.
    const stalling = submit('stall', 'chatty-stall');
    await tmux.waitFor('the stalling run live', (s) => statusOf(s, stalling) === 'running' && /1 live/.test(statusLine(s)));
    const waiting = submit('wait', 'success');
    await tmux.waitFor('the second goal queued', (s) => statusOf(s, waiting) === 'queued');

    // Cancel the queued goal: select it with the filter, x, read the question, y.
    await filterTo(tmux, waiting);
    await tmux.waitFor('the filter', (s) => s.includes(`1 matching /${waiting}`));
    tmux.type('x');
    let screen = await tmux.waitFor('the cancel question', (s) => (s.includes(`Cancel ${waiting}? y / n`) ? s : undefined));
    show('cancel question', screen);
    expect(screen).toContain('Cancelling closes it cancelled; it never runs.');
    tmux.type('y');
    screen = await tmux.waitFor('the goal closed:cancelled', (s) => (statusOf(s, waiting) === 'closed:cancelled' ? s : undefined));
    show('cancelled', screen);
    expect(statusLine(screen)).toContain(`closed:cancelled ${waiting}`);
    expect(await readGoal(garden.paths, waiting)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
    tmux.keys('Escape'); // clear the filter

    // A broken goal file: the counter appears, p lists it, fixing it clears it.
    const later = submit('later', 'success');
    await tmux.waitFor('the third goal queued', (s) => statusOf(s, later) === 'queued');
    const file = path.join(garden.paths.goalsDir, `${later}.json`);
    const good = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, '{not json');
    screen = await tmux.waitFor('the problem counter', (s) => (/⚠ 1 problem\b/.test(statusLine(s)) ? s : undefined));
    show('problem counter', screen);
    tmux.type('p');
    screen = await tmux.waitFor('the problems list', (s) => (s.includes('Problems') && s.includes(`${later}.json`) ? s : undefined));
    show('problems list', screen);
    fs.writeFileSync(file, good);
    screen = await tmux.waitFor('the problem cleared', (s) => (s.includes('no problems') && !statusLine(s).includes('⚠') ? s : undefined));
    show('problem cleared', screen);
    tmux.keys('Escape');
    await tmux.waitFor('the fixed goal queued again', (s) => statusOf(s, later) === 'queued');

    // Stop the live run: select its goal, s, read the question, y.
    await filterTo(tmux, stalling);
    await tmux.waitFor('the filter', (s) => s.includes(`1 matching /${stalling}`));
    tmux.type('s');
    screen = await tmux.waitFor('the stop question', (s) => (s.includes(`Stop ${stalling}-r1? y / n`) ? s : undefined));
    show('stop question', screen);
    expect(screen).toContain('operator_stopped');
    tmux.type('y');
    screen = await tmux.waitFor('the goal closed:cancelled', (s) => (statusOf(s, stalling) === 'closed:cancelled' ? s : undefined), 20_000);
    show('stopped', screen);
    await tmux.waitFor('the status line saying so', (s) => statusLine(s).includes(`killed (operator_stopped) ${stalling}-r1 · closed:cancelled ${stalling}`));
    expect(await readRun(garden.paths, `${stalling}-r1`)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped' });
    expect(await readGoal(garden.paths, stalling)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });

    // The slot is free: the fixed goal runs.
    tmux.keys('Escape');
    await tmux.waitFor('the fixed goal run', (s) => statusOf(s, later) === 'closed:success', 20_000);
    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
  }, 120_000);
});
