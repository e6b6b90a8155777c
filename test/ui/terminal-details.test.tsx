/**
 * Terminal details: the width of a character as Ink places it and the
 * terminal draws it (⚠ is one column, not two), and a frame that stays below
 * the terminal's height at every size, so Ink never wipes the scrollback.
 */
import { EventEmitter } from 'node:events';
import { Box, render as inkRender, Text } from 'ink';
import { render } from 'ink-testing-library';
import React from 'react';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { clusterWidth, displayWidth, graphemes, truncateColumns } from '../../source/format.js';
import { wrapLines } from '../../source/ui/layout.js';
import type { GoalRow, Snapshot } from '../../source/snapshot/index.js';
import { App, computeLayout, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { GoalQueue } from '../../source/ui/panes/goal-queue.js';
import { StatusLine } from '../../source/ui/status-line.js';
import { keepScrollback } from '../../source/ui/workbench.js';
import { goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';

/** How many columns Ink gives `text`: it pads a 12-column box up to the `|` after it. */
function inkWidth(text: string): number {
  const { lastFrame, unmount } = render(
    <Box>
      <Box width={12}>
        <Text>{text}</Text>
      </Box>
      <Text>|</Text>
    </Box>,
  );
  const line = stripVTControlCharacters(lastFrame()!);
  unmount();
  const before = line.slice(0, line.indexOf('|'));
  return 12 - (before.length - before.trimEnd().length);
}

const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined };

describe('the panes measure characters as Ink and the terminal draw them', () => {
  it('text-presentation pictographs (⚠ © ™ ☀ ❤ ✔) are one column; emoji, CJK and their sequences two', () => {
    const samples = ['⚠', '⚠️', '©', '™', '☀', '❤', '❤️', '✔', '⏱', '⌛', '〰', '🈂', '🚀', '調', '한', 'ｶ', 'ｶﾞ', '👨‍👩‍👧', '1️⃣', '🇯🇵', '👍🏽', 'e\u0301', '✓', '▸', '…', '—'];
    const ink = Object.fromEntries(samples.map((s) => [s, inkWidth(s)]));
    const ours = Object.fromEntries(samples.map((s) => [s, displayWidth(s)]));
    expect(ours).toEqual(ink);
    expect(ours['⚠']).toBe(1); // string-width 7 says 2
    expect(ours['⚠️']).toBe(2);
  });

  it('a status line with ⚠ is cut at exactly its width', () => {
    const { lastFrame } = render(<StatusLine snapshot={snapshotOf()} message={{ text: `⚠ ${'x'.repeat(60)}`, error: true }} width={30} />);
    expect(stripVTControlCharacters(lastFrame()!)).toBe(`⚠ ${'x'.repeat(27)}…`); // 30 columns: a ⚠ counted two ended it at 29
  });

  it('a table row with ⚠ keeps its columns under the header', () => {
    const rows: GoalRow[] = [
      { goal: goal(1, { id: '1-plain', assigned_to: 'ops' }), run: undefined },
      { goal: goal(2, { id: '2-warned', assigned_to: '⚠ops' }), run: undefined },
      { goal: goal(3, { id: '3-⚠-in-the-id', assigned_to: '⚠' }) as never, run: undefined },
    ];
    const { lastFrame } = render(<GoalQueue rows={rows} cursor={0} filter="" width={80} height={7} focused={false} now={NOW} />);
    const lines = plain(lastFrame()).split('\n').slice(1, 5);
    // Every character here is one code unit and one column, so columns are string indexes.
    const column = (line: string, text: string) => line.indexOf(text);
    expect(lines.map((line) => column(line, line.includes('STATUS') ? 'STATUS' : 'queued'))).toEqual([column(lines[0]!, 'STATUS'), column(lines[0]!, 'STATUS'), column(lines[0]!, 'STATUS'), column(lines[0]!, 'STATUS')]);
    expect(lines.every((line) => line.length === 80 && line.endsWith('│'))).toBe(true);
  });

  it('the dashboard counts the runs whose records say running (its own coordinator has none); the workbench its live runs', () => {
    const live = goal(5, { status: 'running' });
    const remote = goal(6, { status: 'running' });
    const goals: GoalRow[] = [
      { goal: live, run: run(live.id) },
      { goal: remote, run: run(remote.id, { runner: { name: 'box-7', host: 'vm', lease: `${remote.id}-r1` } }) },
      { goal: goal(7), run: undefined },
    ];
    const base = snapshotOf({ goals });
    const dashboard = plain(render(<StatusLine snapshot={{ ...base, garden: { ...base.garden, readOnly: true }, coordinator: { state: 'absent', liveRuns: [] } }} message={undefined} width={120} />).lastFrame());
    expect(dashboard).toContain('● dashboard (read-only) · 1 running ·');
    const workbench = plain(render(<StatusLine snapshot={{ ...base, garden: { ...base.garden, readOnly: false }, coordinator: { state: 'running', liveRuns: [`${live.id}-r1`] } }} message={undefined} width={120} />).lastFrame());
    expect(workbench).toContain('● coordinator running · 1 live ·');
  });

  it('long text of joined emoji is measured cluster by cluster wherever its segmenting windows end (a window cut inside a surrogate pair split a family in two)', () => {
    const family = '\u{1F469}\u200d\u{1F469}\u200d\u{1F467}';
    const segmenter = new Intl.Segmenter();
    for (let pad = 0; pad < 12; pad++) {
      const text = `${' '.repeat(pad)}${family.repeat(57)}`;
      expect([...graphemes(text)], `pad ${pad}`).toEqual([...segmenter.segment(text)].map((s) => s.segment));
      expect(displayWidth(text), `pad ${pad}`).toBe(pad + 114);
    }
    expect(wrapLines(`x${family.repeat(300)}`, 50)[0]).toBe(`x${family.repeat(24)}`);
  });

  it('the fast path for one-column characters (… · ─ ▸ ✓ é) measures and cuts as cluster by cluster would, beside any other character', () => {
    const slow = (text: string) => [...graphemes(text)].reduce((sum, cluster) => sum + clusterWidth(cluster), 0);
    const units: string[] = [];
    for (let code = 0xa0; code < 0x10000; code += 1) if (code < 0xd800 || code > 0xdfff) units.push(String.fromCharCode(code));
    const differ = (texts: string[]) => texts.filter((text) => displayWidth(text) !== slow(text));
    expect(differ(units.map((c) => `a${c}b`))).toEqual([]);
    // Beside a mark, a selector, itself, and a deterministic sample of pairs of characters that are not ASCII.
    let seed = 7;
    const pick = () => units[(seed = (seed * 48271) % 2147483647) % units.length]!;
    const sample = Array.from({ length: 8000 }, pick);
    expect(differ(sample.flatMap((c) => [`${c}\u0301`, `${c}\ufe0f`, `${c}${c}`, `${c}${pick()}x`]))).toEqual([]);
    expect(truncateColumns('── ▸ done… ✓ é', 8)).toBe('── ▸ do…');
    expect(truncateColumns('漢字 ▸', 4)).toBe('漢…');
  });
});

describe('the frame stays below the terminal height at every size', () => {
  it('computeLayout: rows - 1 high (the status line alone when no pane fits, nothing at one row)', () => {
    for (let rows = 1; rows <= 80; rows += 1) {
      const layout = computeLayout(100, rows);
      expect(layout.height, `${rows} rows`).toBe(rows >= 5 ? rows - 1 : rows >= 2 ? 1 : 0);
      expect(layout.goals.height + layout.plants.height).toBe(layout.area);
      for (const pane of [layout.goals, layout.plants]) expect(pane.height === 0 || pane.height >= 3, `${rows} rows`).toBe(true);
    }
  });

  it('shrinking a live frame: every size renders within rows - 1, borders intact, never blank', async () => {
    const snapshot: Snapshot = snapshotOf({ goals: [{ goal: goal(1), run: run(goal(1).id) }], counts: { queued: 0, inFlight: 1, closedShown: 0 }, coordinator: { state: 'running', liveRuns: [`${goal(1).id}-r1`] } });
    const store = fixedStore(snapshot);
    const ui = render(<App store={store} actions={actions} size={{ columns: 100, rows: 40 }} now={NOW} />);
    for (const rows of [40, 24, 12, 9, 8, 7, 6, 5, 4, 3, 2, 30]) {
      ui.rerender(<App store={store} actions={actions} size={{ columns: 100, rows }} now={NOW} />);
      await tick();
      const lines = plain(ui.lastFrame()).split('\n').slice(0, -1);
      expect(lines.length, `${rows} rows`).toBeLessThanOrEqual(rows - 1);
      expect(lines.at(-1), `${rows} rows`).toMatch(/^● coordinator running · 1 live/);
      if (rows >= 5) {
        expect(lines[0], `${rows} rows`).toMatch(/^╭─ Goals .*╮╭─ Run .*╮$/);
        expect(lines.at(-2), `${rows} rows`).toMatch(/^╰─+╯╰─+╯$|^╰─+╯╰─+╯╰─+╯$/);
        for (const line of lines.slice(0, -1)) expect(displayWidth(line), `${rows} rows: ${line}`).toBe(100);
      } else {
        expect(lines, `${rows} rows`).toHaveLength(1);
      }
    }
    // The quit question fits a short terminal too: the question stays, the explanation gives way.
    ui.rerender(<App store={store} actions={actions} size={{ columns: 100, rows: 8 }} now={NOW} />);
    ui.stdin.write('q');
    await tick();
    const quit = plain(ui.lastFrame()).split('\n').slice(0, -1);
    expect(quit.length).toBeLessThanOrEqual(7);
    expect(quit.join('\n')).toMatch(/─ Quit\? [\s\S]*│ Quit now\? y \/ n\s+│\n╰/);
  });

  it('tiny terminals (30×8 and smaller): no line wider than the terminal, the top border on the first row (issue 28)', async () => {
    const snapshot: Snapshot = snapshotOf({ goals: [{ goal: goal(1), run: run(goal(1).id) }], counts: { queued: 0, inFlight: 1, closedShown: 0 }, coordinator: { state: 'running', liveRuns: [`${goal(1).id}-r1`] } });
    const store = fixedStore(snapshot);
    for (const [columns, rows] of [[30, 8], [30, 6], [39, 8], [40, 8], [35, 10], [29, 8], [20, 8], [12, 6], [10, 5], [9, 6], [30, 4], [12, 3]] as const) {
      const ui = render(<App store={store} actions={actions} size={{ columns, rows }} now={NOW} />);
      await tick();
      const size = `${columns}×${rows}`;
      const lines = stripVTControlCharacters(ui.lastFrame()!).split('\n');
      expect(lines.length, size).toBeLessThanOrEqual(rows - 1);
      for (const line of lines) expect(displayWidth(line), `${size}: ${line}`).toBeLessThanOrEqual(columns);
      const layout = computeLayout(columns, rows);
      if (layout.area > 0) {
        // Every pane's top border whole, on the first row; the bottom borders on the row above the status line.
        expect(lines[0], size).toMatch(/^(╭─[^╭╮]*╮)+$/);
        expect(lines[0], size).toMatch(/^╭─ G/); // the goals pane's, its title cut on the narrowest
        expect(lines.at(-2), size).toMatch(/^(╰─*╯)+$/);
        expect(lines[0]!.includes('Run'), size).toBe(columns >= 40);
        // The goals pane has room for a goal under its header from 4 rows of panes on.
        if (layout.area >= 4) expect(lines[2], size).toMatch(/^│ 1-/);
      }
      expect(lines.at(-1), size).toMatch(/^● coord/);
      ui.unmount();
    }
  });

  it('the stream Ink writes to drops Erase Scrollback and passes everything else', () => {
    const target = Object.assign(new EventEmitter(), { columns: 100, rows: 30, isTTY: true, written: [] as string[], write(chunk: string) { this.written.push(chunk); return true; } });
    const stream = keepScrollback(target as unknown as NodeJS.WriteStream);
    expect(stream.write('\x1b[2J\x1b[3J\x1b[Hframe')).toBe(true);
    expect(target.written).toEqual(['\x1b[2J\x1b[Hframe']);
    target.rows = 12;
    expect(stream.rows).toBe(12);
    let resized = 0;
    stream.on('resize', () => (resized += 1));
    target.emit('resize');
    expect(resized).toBe(1);
  });

  it.skipIf(process.env.CI)('after the terminal shrinks, Ink redraws the workbench but never erases the scrollback', async () => {
    const tty = Object.assign(new EventEmitter(), { columns: 100, rows: 30, isTTY: true, written: '' , write(chunk: string) { this.written += chunk; return true; } });
    const stdin = Object.assign(new EventEmitter(), { isTTY: false, setEncoding: () => undefined, setRawMode: () => undefined, resume: () => undefined, pause: () => undefined, ref: () => undefined, unref: () => undefined, read: () => null });
    const snapshot = snapshotOf({ goals: [{ goal: goal(1), run: undefined }], counts: { queued: 1, inFlight: 0, closedShown: 0 } });
    const instance = inkRender(<App store={fixedStore(snapshot)} actions={actions} now={NOW} interactive={false} />, { stdout: keepScrollback(tty as unknown as NodeJS.WriteStream), stdin: stdin as unknown as NodeJS.ReadStream, patchConsole: false, exitOnCtrlC: false });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(tty.written).toContain('╭─ Goals ');
    tty.written = '';
    tty.rows = 12;
    tty.emit('resize');
    await new Promise((resolve) => setTimeout(resolve, 200));
    instance.unmount();
    // Ink cleared the screen (its last frame, 29 rows, was as high as the new terminal) and drew the new one.
    expect(tty.written).toContain('\x1b[2J');
    expect(tty.written).not.toContain('\x1b[3J');
    const last = stripVTControlCharacters(tty.written.slice(tty.written.lastIndexOf('\x1b[2J'))).split('\n').filter((line) => line.trim());
    expect(last.length).toBeLessThanOrEqual(11);
    expect(last[0]).toMatch(/^╭─ Goals /);
  });
});
