/**
 * Review in the workbench (issue 24, item 5; docs/workbench/level2.md,
 * "Review") as views, from literal snapshots: the queue's landing states,
 * the status line's count, the run pane's landing line; the diff overlay in
 * colour, with a wide file list, a 4 MB patch scrolled (its cost follows the
 * window, not the patch) and hostile content; and the keys: `d`, `a`, `r`,
 * `c`, each through the operator action, refusals as one line.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { render } from 'ink-testing-library';
import React from 'react';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { displayWidth } from '../../source/format.js';
import { goalStatusText, patchLineKind } from '../../source/landing-words.js';
import type { Snapshot } from '../../source/snapshot/index.js';
import type { LandResult, RejectResult, RunDiff } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { diffWindow } from '../../source/ui/diff-view.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { filterRows } from '../../source/ui/panes/goal-queue.js';
import { goal, NOW, plain, snapshotOf, tick } from './fixtures.js';
import { gardener, hostileDiff, landing, landingRow, longDiff, reviewSnapshot, smallDiff, tailFor, wideDiff } from './review-fixtures.js';

// Every text the wrapper is handed, by length: the work of a frame.
const wrapped: number[] = [];
vi.mock('../../source/format.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../source/format.js')>();
  return {
    ...original,
    wrapColumns: (text: string, width: number, maxRows?: number) => {
      wrapped.push(text.length);
      return original.wrapColumns(text, width, maxRows);
    },
  };
});

const ESC = '\u001b';
const TAB = '\t';
const PGUP = '\u001b[5~';
const PGDN = '\u001b[6~';

/** Colour on while the suite runs (a test's stdout is not a terminal, so Ink's chalk draws none): the frames carry their styles. */
let chalk: { level: number };
let level = 0;
beforeAll(async () => {
  const chalkEntry = createRequire(createRequire(import.meta.url).resolve('ink')).resolve('chalk');
  chalk = ((await import(pathToFileURL(chalkEntry).href)) as { default: { level: number } }).default;
  level = chalk.level;
  chalk.level = 3;
});
afterAll(() => void (chalk.level = level));

/** No line wider than the terminal, and every line ending in a border ends exactly at `width`. */
function expectAligned(frame: string, width: number): void {
  for (const line of stripVTControlCharacters(frame).split('\n')) {
    expect(displayWidth(line)).toBeLessThanOrEqual(width);
    if (/[│╮╯]$/.test(line)) expect(displayWidth(line)).toBe(width);
  }
}

const ACCEPTED: LandResult = { landing: landing('11-add-the-parser', 'queued', { review: { decision: 'accepted', by: 'operator', at: new Date(NOW).toISOString() } }), by: 'coordinator', detail: 'queued; the coordinator lands it (next in its merge queue)' };
const REJECTED = (requeue: boolean): RejectResult => ({ landing: landing('11-add-the-parser', 'rejected'), goal: requeue ? 'queued' : 'closed' });

function setup(options: { snapshot?: Snapshot; diff?: RunDiff | (() => Promise<RunDiff>); size?: { columns: number; rows: number }; readOnly?: boolean } = {}) {
  const size = options.size ?? { columns: 100, rows: 30 };
  const diff = options.diff ?? smallDiff();
  const actions = {
    follow: vi.fn(),
    quit: vi.fn(),
    ...(options.readOnly
      ? {}
      : {
          submitGoal: vi.fn(async () => goal(42)),
          sendMessage: vi.fn(async () => undefined),
          addSupplement: vi.fn(async () => undefined),
          runDiff: vi.fn(async (_runId: string) => (typeof diff === 'function' ? diff() : diff)),
          landRun: vi.fn(async (_runId: string) => ACCEPTED),
          rejectRun: vi.fn(async (_runId: string, o: { requeue?: boolean; comment?: string }) => REJECTED(Boolean(o.requeue))),
          postComment: vi.fn(async (goalId: string, input: { body: string }) => ({ comment: { id: '01K000000000000000000000AA', goal: goalId, author: 'operator', body: input.body, blocking: false, created_at: new Date(NOW).toISOString() }, goal: goal(11) }) as never),
        }),
  } satisfies WorkbenchActions;
  const store = fixedStore(options.snapshot ?? reviewSnapshot());
  const element = <App store={store} actions={actions} size={size} now={NOW} />;
  const ui = render(element);
  if (size.columns > 100) {
    // ink-testing-library's stdout is 100 columns wide; Ink lays the root out at stdout's width.
    Object.defineProperty(ui.stdout, 'columns', { value: size.columns });
    ui.rerender(element);
  }
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  const frame = () => plain(ui.lastFrame());
  const status = () => frame().trimEnd().split('\n').at(-1)!;
  return { ...ui, actions, store, press, frame, status, size };
}

describe('the queue, the status line and the run pane say where each landing is', () => {
  it('goalStatusText: a landing’s words while the goal waits on it and once it closed on it; the goal’s own status otherwise', () => {
    const words = (status: string, state?: string, reason?: string) => goalStatusText({ status, closed_reason: reason } as never, state ? ({ state } as never) : undefined);
    expect(words('completed', 'awaiting_review')).toBe('awaiting review');
    expect(words('completed', 'queued')).toBe('landing');
    expect(words('completed', 'verifying')).toBe('landing');
    expect(words('completed', 'waiting')).toBe('waiting');
    expect(words('closed', 'landed', 'success')).toBe('landed');
    expect(words('closed', 'rejected', 'failure')).toBe('rejected');
    expect(words('closed', 'conflict', 'failure')).toBe('conflict');
    expect(words('closed', 'failed', 'failure')).toBe('land failed');
    expect(words('queued', 'rejected')).toBe('queued'); // requeued after a rejection: the goal's own status
    expect(words('closed', 'awaiting_review', 'cancelled')).toBe('closed:cancelled'); // closed otherwise
    expect(words('closed', undefined, 'success')).toBe('closed:success');
  });

  it.each([
    [120, 40],
    [80, 24],
  ])('at %i×%i: every landing state in the queue, the count of those awaiting review, the followed run’s landing line', async (columns, rows) => {
    const { frame, lastFrame, press } = setup({ size: { columns, rows } });
    await press('j'); // the first goal awaiting review: the run pane follows its run
    const text = frame();
    expect(text.split('\n').length).toBeLessThanOrEqual(rows);
    expectAligned(lastFrame()!, columns);
    // The rows that fit: all of them at 120×40, the first ones at 80×24.
    for (const word of ['awaiting review', 'landing', 'waiting', 'landed', 'conflict', ...(rows >= 40 ? ['rejected', 'land failed', 'closed:success'] : [])]) expect(text).toContain(word);
    expect(text.trimEnd().split('\n').at(-1)).toContain('2 awaiting review');
    expect(text.split('\n').map((l) => l.split('││')[1] ?? '').join(' ').replace(/[│\s]+/g, ' ')).toContain('landing awaiting review · 3 files → main · d diff');
    await expect(text).toMatchFileSnapshot(`frames/review-queue-${columns}x${rows}.txt`);
  });

  it('colours: awaiting review magenta (the operator’s turn), landing and waiting yellow, landed green, conflict, rejected and land failed red', async () => {
    const { lastFrame } = setup({ size: { columns: 100, rows: 30 } });
    const row = (id: string) => lastFrame()!.split('\n').find((l) => l.includes(id))!;
    expect(row('10-tidy-the-readme')).toContain('\u001b[35m');
    expect(row('12-fix-the-date-test')).toContain('\u001b[33m');
    expect(row('9-add-a-changelog')).toContain('\u001b[32m');
    for (const id of ['8-rename-the-module', '7-speed-up-the-build', '6-bump-the-deps']) expect(row(id)).toContain('\u001b[31m');
  });

  it('the run pane says a waiting landing’s way on, and a conflict’s paths', async () => {
    const runPane = (goalId: string) => {
      const { frame } = setup({ snapshot: { ...reviewSnapshot(), tail: tailFor(`${goalId}-r1`) } });
      const lines = frame().split('\n');
      return lines.map((l) => l.split('││')[1] ?? '').join(' ').replace(/[│\s]+/g, ' ');
    };
    expect(runPane('13-document-the-api')).toContain('landing waiting · 3 files → main · accepted by operator your checkout of main has uncommitted changes to README.md');
    expect(runPane('8-rename-the-module')).toContain('landing conflict · 3 files → main merging onto main at 121212121212 conflicted in src/index.ts, src/module.ts');
    expect(runPane('6-bump-the-deps')).toContain('landing failed (landing_verify_failed) · 3 files → main verify failed on the merged result verify npm test: exit 1');
  });

  it('the filter finds goals by their landing’s words and by the status they stand for', () => {
    const rows = reviewSnapshot().goals;
    expect(filterRows(rows, 'awaiting').map((r) => r.goal.id)).toEqual(['11-add-the-parser', '10-tidy-the-readme']);
    expect(filterRows(rows, 'landed').map((r) => r.goal.id)).toEqual(['9-add-a-changelog']);
    expect(filterRows(rows, 'closed:success').map((r) => r.goal.id)).toEqual(['9-add-a-changelog', '5-survey-the-garden']);
  });
});

describe('the diff overlay', () => {
  beforeEach(() => void wrapped.splice(0));

  it('d opens the selected goal’s run’s diff: the files with + and −, then the patch in colour (added green, removed red, hunks cyan, headers bold)', async () => {
    const { press, lastFrame, frame, actions } = setup({ size: { columns: 120, rows: 40 } });
    await press('j', 'd');
    expect(actions.runDiff).toHaveBeenCalledWith('11-add-the-parser-r1');
    const raw = lastFrame()!;
    expectAligned(raw, 120);
    const line = (start: string) => raw.split('\n').find((l) => stripVTControlCharacters(l).startsWith(`│ ${start}`))!;
    expect(line('+export function parse')).toContain('\u001b[32m+export');
    expect(line('-A line.')).toContain('\u001b[31m-A line.');
    expect(line('@@ -1,3 +1,3 @@')).toContain('\u001b[36m@@');
    expect(line('diff --git a/README.md')).toContain('\u001b[1mdiff --git');
    expect(line('A  src/parser.ts')).toMatch(/\u001b\[32m.*\+4.*\u001b\[31m.*−0/);
    expect(frame()).toContain('+    return text.split(",");'); // a tab to the next stop of 4
    expect(frame()).toContain('4 files +5 −2 · the work of 11-add-the-parser-r1 against 121212121212 (branch tip abababababab)');
    await expect(frame()).toMatchFileSnapshot('frames/review-diff-120x40.txt');
    await press(ESC);
    expect(frame()).toContain('╭─ Goals');
  });

  it('at 80×24: a wide file list keeps each path’s end and the counts aligned; the long line wraps', async () => {
    const { press, lastFrame, frame } = setup({ size: { columns: 80, rows: 24 }, diff: wideDiff() });
    await press('j', 'd');
    expectAligned(lastFrame()!, 80);
    const text = frame();
    expect(text).toContain('…ery/deep/directory/number-10/component-with-a-long-name-10.tsx +370 −110 │');
    expect(text).toContain('a accept · r reject · c comment · ↑↓ pgup pgdn scroll · esc back');
    await expect(text).toMatchFileSnapshot('frames/review-diff-wide-80x24.txt');
  });

  it('a 4 MB patch: the window costs what it shows, wherever it is scrolled (j, pgdn, G, pgup, g)', async () => {
    const big = longDiff();
    expect(big.patch.length).toBeGreaterThan(4 * 1024 * 1024 - 100);
    const { press, frame, lastFrame } = setup({ size: { columns: 80, rows: 24 }, diff: big });
    await press('j', 'd');
    const frames: string[] = [];
    const look = async (label: string, ...keys: string[]) => {
      wrapped.splice(0);
      await press(...keys);
      expectAligned(lastFrame()!, 80);
      // Only the rows of the window (and the last window's, for the limit) are wrapped: a few KB, never the patch.
      expect(wrapped.reduce((a, b) => a + b, 0)).toBeLessThan(20_000);
      frames.push(`--- ${label}\n${frame()}`);
    };
    await look('opened', TAB.slice(0, 0));
    expect(frame()).toContain('1 file +43264 −43264');
    await look('j j j', 'j', 'j', 'j');
    expect(frame()).toMatch(/4–21 of 173,063/);
    await look('pgdn', PGDN);
    await look('G', 'G');
    expect(frame()).toContain('KB more of the patch left out');
    expect(frame()).toContain('173,063 of 173,063');
    await look('pgup', PGUP);
    await look('g', 'g');
    expect(frame()).toContain('1–18 of 173,063');
    await expect(frames.join('')).toMatchFileSnapshot('frames/review-diff-long-80x24.txt');
  });

  it('diffWindow alone: the limit is where the last items fill the window; a line longer than the window is cut to it', () => {
    const d = smallDiff();
    const end = diffWindow(d, 40, 1e9, 10);
    expect(end.first).toBe(end.limit);
    expect(end.last).toBe(end.total);
    const long: RunDiff = { ...d, files: [], patch: `+${'x'.repeat(100_000)}\n` };
    const w = diffWindow(long, 40, 0, 8);
    expect(w.rows).toHaveLength(8);
    expect(w.rows.at(-1)![0]!.text.endsWith('…')).toBe(true);
    expect(patchLineKind('+++ b/x')).toBe('head');
    expect(patchLineKind('+x')).toBe('add');
    expect(patchLineKind('--- a/x')).toBe('head');
    expect(patchLineKind('-x')).toBe('del');
    expect(patchLineKind(' x')).toBe('context');
    expect(patchLineKind('Binary files a/x and b/x differ')).toBe('head');
  });

  it('hostile content: control sequences in paths and lines are shown as escapes, never sent; only Ink’s own colours reach the terminal', async () => {
    const { press, lastFrame, frame } = setup({ size: { columns: 80, rows: 24 }, diff: hostileDiff() });
    await press('j', 'd');
    const raw = lastFrame()!;
    expectAligned(raw, 80);
    // What is left once Ink's own SGR colours are taken out: no ESC, no BEL, no C1, no CR.
    expect(raw.replace(/\u001b\[[0-9;]*m/g, '')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    const text = frame();
    expect(text).toContain('src/\\u001b[2Jevil\\u0007.ts');
    expect(text).toContain('-\\u001b]0;pwned\\u0007old title');
    expect(text).toContain('\\u009b2J');
    await expect(text).toMatchFileSnapshot('frames/review-diff-hostile-80x24.txt');
  });

  it('while the diff loads it says so; a refusal is one red line', async () => {
    let release: (d: RunDiff) => void = () => undefined;
    const pending = new Promise<RunDiff>((resolve) => (release = resolve));
    const slow = setup({ diff: () => pending });
    await slow.press('j', 'd');
    expect(slow.frame()).toContain('loading the diff of 11-add-the-parser-r1…');
    release(smallDiff());
    await tick();
    expect(slow.frame()).toContain('4 files +5 −2');

    const refused = setup({ diff: () => Promise.reject(new Error("RUN 5-survey-the-garden-r1: it worked in the garden's tree, not a worktree of its own; see git diff there")) });
    await refused.press('G', 'd');
    const lines = refused.frame().split('\n').filter((l) => l.includes("worked in the garden's tree"));
    expect(lines).toHaveLength(1);
    expect(refused.lastFrame()!.split('\n').find((l) => l.includes("garden's tree"))).toContain('\u001b[31m');
  });
});

describe('review keys', () => {
  it('on a goal awaiting review: a asks first, then accepts through landRun and says what happened', async () => {
    const { press, frame, status, actions } = setup();
    await press('j', 'a');
    expect(frame()).toContain('Accept 11-add-the-parser-r1? y / n');
    expect(frame().replace(/[│\s]+/g, ' ')).toContain('11-add-the-parser-r1 changed 3 files: A src/parser.ts, M README.md, D old/notes.txt.');
    await press('n');
    expect(actions.landRun).not.toHaveBeenCalled();
    await press('a', 'y');
    await tick();
    expect(actions.landRun).toHaveBeenCalledWith('11-add-the-parser-r1');
    expect(status()).toContain('accepted 11-add-the-parser-r1: queued; the coordinator lands it (next in its merge queue)');
  });

  it('once the snapshot has the goal landed, the status line says so, with what the landing says', async () => {
    const { press, status, store } = setup();
    await press('j', 'd', 'a');
    await tick();
    expect(status()).toContain('accepted 11-add-the-parser-r1');
    const rows = reviewSnapshot().goals.map((r) => (r.goal.id === '11-add-the-parser' ? landingRow(11, 'add-the-parser', 'landed', { status: 'closed', closed_reason: 'success' }) : r));
    store.set({ ...reviewSnapshot(), goals: rows });
    await tick();
    expect(status()).toContain('landed 11-add-the-parser: main moved to cdcdcdcdcdcd');
  });

  it('in the diff: a accepts at once (the operator has read it), c comments and comes back to the diff, r rejects with a comment and requeue', async () => {
    const { press, frame, status, actions } = setup();
    await press('j', 'd', 'c');
    expect(frame()).toContain('Comment on 11-add-the-parser');
    await press('looks good, but name the file parse.ts', '\r');
    await tick();
    expect(actions.postComment).toHaveBeenCalledWith('11-add-the-parser', { body: 'looks good, but name the file parse.ts' });
    expect(frame()).toContain('Diff 11-add-the-parser-r1');
    expect(status()).toContain('comment posted on 11-add-the-parser');

    await press('r');
    expect(frame()).toContain('Reject 11-add-the-parser-r1');
    expect(frame()).toContain('▸ close 11-add-the-parser (failure)');
    await press(TAB);
    expect(frame()).toContain('▸ put 11-add-the-parser back in the queue for another attempt');
    await press('use tabs, not spaces', '\r');
    await tick();
    expect(actions.rejectRun).toHaveBeenCalledWith('11-add-the-parser-r1', { requeue: true, comment: 'use tabs, not spaces' });
    expect(status()).toContain('rejected 11-add-the-parser-r1: 11-add-the-parser back in the queue, the comment on its thread');
    expect(frame()).toContain('╭─ Goals');

    await press('d', 'a');
    await tick();
    expect(actions.landRun).toHaveBeenCalledWith('11-add-the-parser-r1');
    expect(frame()).not.toContain('Accept 11-add-the-parser-r1?');
  });

  it('esc in the reject prompt goes back to the diff, nothing rejected; an empty comment rejects without one', async () => {
    const { press, frame, actions } = setup();
    await press('j', 'd', 'r', 'never mind', ESC);
    expect(frame()).toContain('Diff 11-add-the-parser-r1');
    expect(actions.rejectRun).not.toHaveBeenCalled();
    await press('r', '\r');
    await tick();
    expect(actions.rejectRun).toHaveBeenCalledWith('11-add-the-parser-r1', { requeue: false });
  });

  it('refusals are one line: r on an ended landing, d on a goal with no run; a and c keep their own meaning elsewhere', async () => {
    const { press, status, frame, actions } = setup();
    await press('G', 'k', 'k', 'k', 'k', 'd'); // 9-add-a-changelog, landed
    await press('r');
    expect(status()).toContain('9-add-a-changelog-r1: its landing is landed; nothing to reject');
    await press(ESC, 'g', 'j', 'j', 'j', 'j', 'j', 'd'); // 21-plan-the-release, queued: no run
    expect(status()).toContain('goal 21-plan-the-release has no run yet: nothing to diff');
    await press('a'); // a queued goal: a supplement, as before
    expect(frame()).toContain('Supplement to 21-plan-the-release');
    await press(ESC, 'g', 'c'); // a running goal: c writes to the chat
    expect(actions.postComment).not.toHaveBeenCalled();
    expect(frame()).not.toContain('Comment on');
  });

  it('a burst of navigation keys scrolls the diff; a burst of other keys does nothing (a paste must not accept)', async () => {
    const { press, frame, actions } = setup({ diff: longDiff(64 * 1024) });
    await press('j', 'd', 'jjj');
    expect(frame()).toMatch(/4–\d+ of/);
    await press('ar');
    expect(actions.landRun).not.toHaveBeenCalled();
    expect(actions.rejectRun).not.toHaveBeenCalled();
  });

  it('the read-only dashboard says which command does it', async () => {
    const { press, status } = setup({ readOnly: true });
    await press('j', 'd');
    expect(status()).toContain('read-only dashboard: see a run’s work with pak2 diff RUN');
    await press('a');
    expect(status()).toContain('read-only dashboard: accept work with pak2 land RUN');
    await press('r');
    expect(status()).toContain('read-only dashboard: reject work with pak2 reject RUN');
  });

  it('an empty garden’s snapshot is unchanged: no review count', () => {
    const { status } = setup({ snapshot: snapshotOf({ plants: [gardener] }) });
    expect(status()).not.toContain('awaiting review');
  });
});
