/**
 * A blocking question answered from the workbench in a real terminal
 * (docs/workbench/level2.md, "Keys"): a remote run (a runner's lease, its
 * artifacts) whose agent asks a long question (`pak2 comment --blocking`,
 * no spaces, emoji, CJK) from a second terminal; the queue shows the goal
 * `? blocked` and the runner's name, the inbox lists the question, `a`
 * opens the answer, enter posts it, and the goal is back to running. The
 * screen is read at 80 and 200 columns: nothing overflows its pane.
 *
 * PAK2_SHOW_SCREENS=1 prints the screens the tests read.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../source/contracts/index.js';
import { artifactsFile, createGoal, openRun, readComments, readGoal, runEventsFile, runMetaFile, runSealFile, transitionGoal, writeJsonAtomic, writeLease } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { makeTestGarden } from '../support/garden.js';
import { cleanupsAfterEach, goalRows, PAK2_BIN, show, statusLine, TmuxSession, widthOf } from './tmux.js';

const cleanups = cleanupsAfterEach();

/** Every line at most `columns` wide; a line ending in a pane border ends exactly at the edge. */
function expectInside(screen: string, columns: number): void {
  for (const line of screen.split('\n')) {
    expect(widthOf(line), line).toBeLessThanOrEqual(columns);
    if (/[│╮╯]$/.test(line)) expect(widthOf(line), line).toBe(columns);
  }
}

const QUESTION = `${'migrationplan'.repeat(12)}🌱🚀確認してください漢字のテスト${'データベース'.repeat(10)}END`;

describe('answering a question in the workbench', () => {
  it('a remote run\'s agent asks; the inbox lists it; a, the answer, enter: the goal is running again (80 and 200 columns)', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const env = { PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' };

    // A remote run as a runner's claim leaves it: the goal running, the run naming its runner, an active lease.
    const goal = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Migrate the schema' });
    await transitionGoal(garden.paths, goal.id, 'dispatched');
    const opened = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'success', model: 'default' });
    const run = { ...opened, runner: { name: 'box-7', host: 'build-7.lan', lease: '01K00000000000000000000007' } };
    await writeJsonAtomic(runSealFile(garden.paths, run.id), run);
    await writeJsonAtomic(runMetaFile(garden.paths, run.id), run);
    await transitionGoal(garden.paths, goal.id, 'running');
    const now = new Date();
    const lease: LeaseRecord = { id: run.runner.lease, run: run.id, goal: goal.id, plant: 'gardener', runner: { name: 'box-7', host: 'build-7.lan' }, state: 'active', ttl_seconds: 3600, claimed_at: now.toISOString(), renewed_at: now.toISOString(), expires_at: new Date(now.getTime() + 3_600_000).toISOString(), heartbeats: 1, progress: 40, status_line: 'reading the schema' };
    await writeLease(garden.paths, lease);
    fs.writeFileSync(runEventsFile(garden.paths, run.id), `${JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: 'Looking at the schema first.' }] } })}\n`);
    fs.writeFileSync(artifactsFile(garden.paths, run.id), `${JSON.stringify({ name: 'schema.diff', kind: 'diff', run: run.id, bytes: 10, attached_at: now.toISOString(), by: 'box-7' })}\n`);

    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({ cwd: garden.paths.gardenRoot, env, argv: [process.execPath, PAK2_BIN], columns: 80, rows: 24 });
    let screen = await tmux.waitFor('the remote run in the queue', (s) => (goalRows(s).some((r) => r.status === 'running' && r.line.includes('⇄ box-7')) ? s : undefined));
    show('remote run at 80', screen);

    // The agent asks from a second terminal (a local agent's form: PAK2_RUN_ID names its run).
    const asked = execFileSync(process.execPath, [PAK2_BIN, 'comment', goal.id, '--blocking', QUESTION], { cwd: garden.paths.gardenRoot, env: { ...env, PAK2_RUN_ID: run.id }, encoding: 'utf8' });
    expect(asked).toContain(`goal ${goal.id} is blocked`);
    screen = await tmux.waitFor('the goal blocked and the question in the inbox', (s) => (goalRows(s).some((r) => r.status === 'blocked') && /\? \S+ +migrationplan/.test(s) ? s : undefined));
    show('blocked at 80', screen);
    expectInside(screen, 80);
    expect(goalRows(screen).find((r) => r.status === 'blocked')?.line).toMatch(/\? blocked/);
    expect(statusLine(screen)).toContain('1 blocked');

    tmux.resize(200, 40);
    screen = await tmux.waitFor('the wide layout', (s) => (s.split('\n').some((l) => widthOf(l) > 150) && s.includes('heartbeat') ? s : undefined));
    show('blocked at 200', screen);
    expectInside(screen, 200);
    expect(screen).toContain('runner box-7@build-7.lan · heartbeat');
    expect(screen).toContain('40% · reading the schema');
    expect(screen).toContain('artifacts schema.diff');
    expect(screen).toMatch(/⇄ box-7/);

    // The inbox: tab to it (goals → run → plants → inbox), a, the answer, enter.
    tmux.keys('Tab');
    tmux.keys('Tab');
    tmux.keys('Tab');
    await tmux.waitFor('the inbox focused', (s) => s.includes('a answers'));
    tmux.type('a');
    screen = await tmux.waitFor('the answer field', (s) => (s.includes(`Answer ${goal.id}`) ? s : undefined));
    show('answer field at 200', screen);
    expectInside(screen, 200);
    expect(screen).toContain(`agent:${run.id} asks`);
    tmux.type('Use the blue-green plan; 漢字 OK 🌱');
    tmux.keys('Enter');
    screen = await tmux.waitFor('the goal running again', (s) => (goalRows(s).some((r) => r.status === 'running') && !/\? blocked/.test(s) ? s : undefined));
    show('answered at 200', screen);
    expectInside(screen, 200);
    expect(statusLine(screen)).toContain(`answered ${goal.id}: back to running`);
    expect(await readGoal(garden.paths, goal.id)).toMatchObject({ status: 'running' });
    expect((await readComments(garden.paths, goal.id)).at(-1)).toMatchObject({ author: 'operator', body: 'Use the blue-green plan; 漢字 OK 🌱', answers: expect.any(String) });

    tmux.resize(80, 24);
    screen = await tmux.waitFor('the narrow layout again', (s) => (s.split('\n').every((l) => widthOf(l) <= 80) && s.includes('╭─ Inbox') ? s : undefined));
    show('after at 80', screen);
    expectInside(screen, 80);
    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
  }, 120_000);
});
