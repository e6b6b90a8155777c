/**
 * Review in a real terminal (issue 24, item 5; docs/workbench/level2.md,
 * "Review"): `pak2 cycle` in tmux on a git garden with `[merge] mode =
 * "review"` and three runs at a time; three goals run in worktrees of their
 * own and wait for the operator. From the workbench: `d` shows one's diff,
 * `a` accepts it (it lands on main), `r` rejects another with a comment;
 * the third still waits. The records, the base branch and the screens say so.
 *
 * Waits are for states, never times. PAK2_SHOW_SCREENS=1 prints the screens.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readComments, readGoal, readLanding } from '../../source/store/index.js';
import { waitFor } from '../support/garden.js';
import { git, makeGitGarden, submitWork } from '../landing/support.js';
import { cleanupsAfterEach, goalRows, PAK2_BIN, show, statusLine, TmuxSession, widthOf } from './tmux.js';

const cleanups = cleanupsAfterEach();

/** The status column of goal `id` in the Goals pane, if shown. */
function statusOf(screen: string, id: string): string | undefined {
  return goalRows(screen).find((row) => id.startsWith(row.id.replace(/…$/, '')))?.status;
}

/** Selects goal `id` as a person would: `/`, its id, enter. */
async function filterTo(tmux: TmuxSession, id: string): Promise<void> {
  tmux.keys('/');
  await tmux.waitFor('the filter field', (s) => s.includes('matching /█'));
  tmux.type(id);
  tmux.keys('Enter');
  // (The border's `1 matching /…` note gives way to the title when the id is long: the rows say it.)
  await tmux.waitFor(`the filter on ${id}`, (s) => !s.includes('█') && goalRows(s).length === 1 && id.startsWith(goalRows(s)[0]!.id.replace(/…$/, '')));
}

/**
 * Escape clears the filter; the next key waits until the queue shows every
 * goal again (an Escape and a `/` that arrive in one read are one meta key).
 */
async function clearFilter(tmux: TmuxSession): Promise<void> {
  tmux.keys('Escape');
  await tmux.waitFor('the filter cleared', (s) => !s.includes('matching /') && goalRows(s).length > 1);
}

/** Every line of a capture fits the terminal, and a line ending in a border ends at its last column. */
function expectFits(screen: string, columns: number): void {
  for (const line of screen.split('\n')) {
    expect(widthOf(line)).toBeLessThanOrEqual(columns);
    if (/[│╮╯]$/.test(line)) expect(widthOf(line)).toBe(columns);
  }
}

describe('review in the workbench', () => {
  it('three goals await review; d shows one’s diff, a lands it on main, r rejects another with a comment; the third still waits', async () => {
    const g = await makeGitGarden({ coordinator: { max_concurrent_runs: 3 }, toml: '[merge]\nmode = "review"\n', files: { 'src/app.ts': 'export const app = 1;\n' } });
    cleanups.push(() => g.cleanup());
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const [alpha, beta, gamma] = await Promise.all([
      submitWork(g, ['write src/alpha.ts export const alpha = "α";\\nexport const twice = (n: number) => n * 2;', 'append src/app.ts export const withAlpha = true;']),
      submitWork(g, ['write docs/beta.md # Beta\\n\\nIndented with spaces.']),
      submitWork(g, ['write src/gamma.txt gamma']),
    ]);
    const runOf = (goal: { id: string }) => `${goal!.id}-r1`;

    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' };
    tmux.start({ cwd: g.root, env, argv: [process.execPath, PAK2_BIN, 'cycle'], columns: 120, rows: 40 });

    // The three run at once, then wait for the operator.
    let screen = await tmux.waitFor('three goals awaiting review', (s) => ([alpha, beta, gamma].every((x) => statusOf(s, x!.id) === 'awaiting review') && statusLine(s).includes('3 awaiting review') ? s : undefined), 60_000);
    show('queue, three awaiting review (120×40)', screen);
    expectFits(screen, 120);
    for (const x of [alpha, beta, gamma]) expect(await readLanding(g.paths, runOf(x!))).toMatchObject({ state: 'awaiting_review' });
    expect(git(g.root, 'ls-tree', '-r', '--name-only', 'main')).not.toContain('src/alpha.ts');

    // The first: its diff, then accept it from there.
    await filterTo(tmux, alpha!.id);
    screen = await tmux.waitFor('the run pane on its landing', (s) => (s.includes('landing awaiting review · 2 files → main') ? s : undefined));
    tmux.type('d');
    screen = await tmux.waitFor('the diff', (s) => (s.includes(`Diff ${runOf(alpha!)} · awaiting review`) && s.includes('+export const alpha = "α";') ? s : undefined));
    show('diff overlay (120×40)', screen);
    expectFits(screen, 120);
    expect(screen).toContain('2 files +3 −0');
    expect(screen).toMatch(/A {2}src\/alpha\.ts +\+2 −0/);
    expect(screen).toMatch(/M {2}src\/app\.ts +\+1 −0/);
    expect(screen).toContain('a accept · r reject · c comment');
    const coloured = tmux.capture({ escapes: true });
    expect(coloured).toMatch(/\x1b\[32m\+export const alpha/);
    expect(coloured).toMatch(/\x1b\[36m@@ /);
    tmux.type('a');
    screen = await tmux.waitFor('the accepted work landed', (s) => (statusOf(s, alpha!.id) === 'landed' ? s : undefined), 30_000);
    show('accepted: landed', screen);
    await tmux.waitFor('the status line saying so', (s) => /landed \S+: main moved to [0-9a-f]{12}/.test(statusLine(s)) || statusLine(s).includes(`accepted ${runOf(alpha!)}`));
    expect(await readLanding(g.paths, runOf(alpha!))).toMatchObject({ state: 'landed', review: { decision: 'accepted', by: 'operator' } });
    // The coordinator's next pass settles the goal once its landing ended.
    await waitFor(async () => (await readGoal(g.paths, alpha!.id)).status === 'closed', 20_000);
    expect(await readGoal(g.paths, alpha!.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    expect(git(g.root, 'show', 'main:src/alpha.ts')).toContain('export const alpha = "α";');
    expect(git(g.root, 'show', 'main:src/app.ts')).toContain('export const withAlpha = true;');
    await clearFilter(tmux);

    // The second: reject it from the queue, with a comment; the goal closes failure.
    await filterTo(tmux, beta!.id);
    tmux.type('r');
    screen = await tmux.waitFor('the reject prompt', (s) => (s.includes(`Reject ${runOf(beta!)}`) && s.includes(`▸ close ${beta!.id} (failure)`) ? s : undefined));
    show('reject prompt', screen);
    tmux.type('use tabs, not spaces');
    tmux.keys('Enter');
    screen = await tmux.waitFor('the rejected goal', (s) => (statusOf(s, beta!.id) === 'rejected' ? s : undefined), 20_000);
    show('rejected', screen);
    await tmux.waitFor('the status line saying where the goal went', (s) => statusLine(s).includes(`rejected ${runOf(beta!)}: ${beta!.id} closed failure, the comment on its thread`));
    expect(await readLanding(g.paths, runOf(beta!))).toMatchObject({ state: 'rejected', failure_reason: 'landing_rejected', review: { decision: 'rejected', comment: 'use tabs, not spaces' } });
    expect(await readGoal(g.paths, beta!.id)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    expect((await readComments(g.paths, beta!.id)).at(-1)).toMatchObject({ author: 'operator', body: `Review of ${runOf(beta!)}, rejected: use tabs, not spaces` });
    expect(git(g.root, 'ls-tree', '-r', '--name-only', 'main')).not.toContain('docs/beta.md');
    await clearFilter(tmux);

    // The third still waits; the queue, and its diff, at 80×24.
    screen = await tmux.waitFor('one left awaiting review', (s) => (statusOf(s, gamma!.id) === 'awaiting review' && statusLine(s).includes('1 awaiting review') ? s : undefined));
    show('queue after review (120×40)', screen);
    expect(await readLanding(g.paths, runOf(gamma!))).toMatchObject({ state: 'awaiting_review' });
    tmux.resize(80, 24);
    screen = await tmux.waitFor('the queue at 80×24', (s) => (s.split('\n')[0]!.startsWith('╭─ Goals') && widthOf(s.split('\n')[0]!) === 80 && statusOf(s, gamma!.id) === 'awaiting review' ? s : undefined));
    show('queue (80×24)', screen);
    expectFits(screen, 80);
    await filterTo(tmux, gamma!.id);
    tmux.type('d');
    screen = await tmux.waitFor('the diff at 80×24', (s) => (s.includes('+gamma') && s.includes('1 file +1 −0') ? s : undefined));
    show('diff overlay (80×24)', screen);
    expectFits(screen, 80);
    tmux.keys('Escape');
    await tmux.waitFor('the queue again', (s) => s.includes('╭─ Goals'));
    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
    expect(await readLanding(g.paths, runOf(gamma!))).toMatchObject({ state: 'awaiting_review' });
    expect(git(g.root, 'ls-tree', '-r', '--name-only', 'main')).not.toContain('src/gamma.txt');
  }, 150_000);
});
