/**
 * Hostile data in the workbench: a 200 KB agent line with no space, a
 * 10 MB goal body, emoji and CJK. Rendering must cost what the screen
 * shows, not what the data holds. The tests measure the work done, not the
 * time: every string the grapheme segmenter is handed (string-width, the
 * wrapper and Ink itself measure through it), and every text handed to the
 * wrapper, counted in code units.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clusterWidth, displayWidth, graphemes, truncateColumns, wrapColumns } from '../../source/format.js';
import { capTailText, renderRawLine, TAIL_LINE_MAX_CHARS, type Snapshot, type TailState } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { fit, wrapLines } from '../../source/ui/layout.js';
import { DETAIL_TEXT_MAX, detailRows, textLines } from '../../source/ui/overlays/detail.js';
import { GoalForm } from '../../source/ui/overlays/goal-form.js';
import { newGoalForm } from '../../source/ui/overlays/goal-form-state.js';
import { chatRows } from '../../source/ui/panes/chat.js';
import { editState } from '../../source/ui/text-edit.js';
import { RunTail, tailRows } from '../../source/ui/panes/run-tail.js';
import { goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';

// Every text the wrapper is handed, by length: the wrapper's work.
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

/** Counts what the grapheme segmenter is handed, in code units: the measuring work of a render. */
function segmenterWork() {
  const original = Intl.Segmenter.prototype.segment;
  const work = { calls: 0, units: 0, longest: 0 };
  Intl.Segmenter.prototype.segment = function segment(this: Intl.Segmenter, input: string) {
    work.calls += 1;
    work.units += input.length;
    work.longest = Math.max(work.longest, input.length);
    return original.call(this, input);
  };
  return { work, restore: () => void (Intl.Segmenter.prototype.segment = original) };
}

const NO_SPACE = 'x'.repeat(200_000); // 200 KB, one word
const WIDE = '調査😀⚠'.repeat(40_000); // 160,000 code units of CJK, emoji and a text-presentation pictograph, no space
/** A 10 MB body: a 150 KB word, then CJK, emoji and long words. */
const TEN_MB = (() => {
  const unit = `調査😀⚠${'y'.repeat(200)} `;
  const head = `${'z'.repeat(150_000)}\n`;
  return head + unit.repeat(Math.ceil((10 * 1024 * 1024 - head.length) / Buffer.byteLength(unit)));
})();

const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined };
const app = (snapshot: Snapshot, size = { columns: 100, rows: 30 }) => render(<App store={fixedStore(snapshot)} actions={actions} size={size} now={NOW} interactive />);
/** A tail of a finished run whose stream holds `texts`, one line each. */
function tailWith(runId: string, texts: string[]): TailState {
  return { runId, file: `/g/.runtime/runs/${runId}/events.jsonl`, lines: texts.map((text) => ({ kind: 'text' as const, text })), usage: { inputTokens: 0, outputTokens: 0, costUsd: undefined }, bytes: texts.join('\n').length, truncated: false };
}
function hugeSnapshot(): Snapshot {
  const g = goal(1, { body: TEN_MB, status: 'closed', closed_reason: 'success', closed_at: new Date(NOW).toISOString() });
  const r = run(g.id, { status: 'success', completed_at: new Date(NOW).toISOString(), reflection: WIDE, outputs: { final_text: NO_SPACE } });
  return snapshotOf({ goals: [{ goal: g, run: r }], counts: { queued: 0, inFlight: 0, closedShown: 1 }, tail: tailWith(r.id, ['before', NO_SPACE, WIDE, 'after']) });
}

let segmenter: ReturnType<typeof segmenterWork>;
beforeEach(() => {
  wrapped.length = 0;
  segmenter = segmenterWork();
});
afterEach(() => segmenter.restore());

describe('the width functions read only what they need', () => {
  it('fit and truncateColumns cut a 10 MB string after looking at a screen line of it', () => {
    expect(fit(NO_SPACE, 40)).toBe(`${'x'.repeat(39)}…`);
    expect(fit(WIDE, 9)).toBe('調査😀⚠… '); // 調 would take the ninth and a tenth column
    expect(truncateColumns(TEN_MB.slice(150_001), 12)).toBe('調査😀⚠yyyy…');
    expect(segmenter.work.longest).toBeLessThanOrEqual(256);
    expect(segmenter.work.units).toBeLessThan(5_000);
  });

  it('graphemes are segmented in windows: linear over a 160,000 code unit line, clusters intact', () => {
    let clusters = 0;
    let width = 0;
    for (const cluster of graphemes(WIDE)) {
      clusters += 1;
      width += clusterWidth(cluster);
    }
    expect(clusters).toBe(160_000);
    expect(width).toBe(40_000 * (2 + 2 + 2 + 1));
    expect(segmenter.work.longest).toBeLessThanOrEqual(256);
    expect(segmenter.work.units).toBeLessThan(1.1 * WIDE.length); // each window overlaps the next by one cluster
    expect(displayWidth(WIDE)).toBe(width);
  });

  it('wrapping with a row limit looks at no more than the rows can show, and marks the cut', () => {
    const rows = wrapLines(NO_SPACE, 50, { maxRows: 20 });
    expect(rows).toHaveLength(20);
    expect(rows.slice(0, 19).every((row) => row === 'x'.repeat(50))).toBe(true);
    expect(rows[19]).toBe(`${'x'.repeat(49)}…`);
    const wide = wrapLines(WIDE, 50, { maxRows: 20 });
    expect(wide).toHaveLength(20);
    expect(wide.every((row) => displayWidth(row) <= 50)).toBe(true);
    expect(wide[0]).toBe('調査😀⚠'.repeat(7)); // 49 columns: the next 調 takes two
    expect(wide[19]!.endsWith('…')).toBe(true);
    expect(Math.max(...wrapped)).toBeLessThanOrEqual(21 * 51 * 4 + 64);
    expect(segmenter.work.units).toBeLessThan(20_000);
  });

  it('without a limit, the wrapper is linear: a 160,000 code unit line of wide characters wraps in windows', () => {
    const { rows, more } = wrapColumns(WIDE, 70);
    expect(more).toBe(false);
    expect(rows.join('')).toBe(WIDE);
    expect(rows.every((row) => displayWidth(row) <= 70)).toBe(true);
    expect(segmenter.work.longest).toBeLessThanOrEqual(256);
  });
});

describe('panes and overlays on hostile data cost what the screen shows', () => {
  it('the run tail shows a 200 KB line as its first rows, cut with …, after measuring a screenful', () => {
    const r = run('1-goal-number-1', { status: 'success', completed_at: new Date(NOW).toISOString() });
    const { lastFrame } = render(<RunTail tail={tailWith(r.id, [NO_SPACE, WIDE])} run={r} scroll={0} width={60} height={20} focused now={NOW} />);
    const lines = plain(lastFrame()).split('\n');
    // 17 rows below the header: the second line's first 17 rows, its last cut.
    expect(lines[2]).toBe(`│ ${'調査😀⚠'.repeat(8)} │`);
    expect(lines[18]).toMatch(/…\s*│$/);
    expect(Math.max(...wrapped)).toBeLessThanOrEqual(18 * 57 * 4 + 64);
    expect(segmenter.work.longest).toBeLessThanOrEqual(256);
    expect(segmenter.work.units).toBeLessThan(50_000);
    // Scrolled back past the second line: the first, cut to the pane's rows.
    const back = tailRows(tailWith(r.id, [NO_SPACE, WIDE]), 56, 17, 17 + 17);
    expect(back).toHaveLength(34);
    expect(back[0]!.text).toBe('x'.repeat(56));
    expect(back[16]!.text).toBe(`${'x'.repeat(55)}…`);
  });

  it('? opens help on a garden whose tail holds a 200 KB line; the whole session measures a few screens', async () => {
    const { lastFrame, stdin } = app(hugeSnapshot());
    expect(lastFrame()).toContain('─ Goals ');
    stdin.write('?');
    await tick();
    expect(lastFrame()).toContain('─ Keys ');
    stdin.write('?');
    await tick();
    expect(lastFrame()).toContain('─ Goals ');
    expect(Math.max(...wrapped)).toBeLessThan(20_000);
    expect(segmenter.work.longest).toBeLessThanOrEqual(4_096);
    expect(segmenter.work.units).toBeLessThan(500_000); // the data: 10 MB of body, 360 KB of tail
  });

  it('enter opens a goal with a 10 MB body: the first screen of it; G shows the cut and how many bytes were left out', async () => {
    const { lastFrame, stdin } = app(hugeSnapshot());
    stdin.write('\r');
    await tick();
    expect(lastFrame()!.split('\n')).toHaveLength(29);
    const frame = plain(lastFrame()).split('\n');
    expect(frame[0]).toMatch(/^╭─ Goal 1-goal-number-1 /);
    const body = frame.findIndex((line) => /^│ Body\s+│$/.test(line));
    expect(body).toBeGreaterThan(0);
    expect(frame[body + 1]).toBe(`│   ${'z'.repeat(94)} │`);
    expect(Math.max(...wrapped)).toBeLessThan(20_000);
    expect(segmenter.work.units).toBeLessThan(200_000);

    segmenter.work.units = 0;
    stdin.write('G');
    await tick();
    // The end: the run's 200 KB final text, cut to 64 KB, saying so.
    const end = plain(lastFrame());
    expect(end).toMatch(/(│   x{94} │\n)+│   x+\s+│\n│   … 134,464 more bytes\s+│\n│\s+│\n╰/);
    expect(segmenter.work.units).toBeLessThan(2_000_000); // at most the 64 KB shown of each text, never the 10 MB
  });

  it('a queued goal with a 10 MB body: the end of its detail says how many bytes were left out', async () => {
    const g = goal(2, { body: TEN_MB });
    const { lastFrame, stdin } = app(snapshotOf({ goals: [{ goal: g, run: undefined }], counts: { queued: 1, inFlight: 0, closedShown: 0 } }));
    stdin.write('\r');
    await tick();
    stdin.write('G');
    await tick();
    const more = Buffer.byteLength(TEN_MB) - Buffer.byteLength(TEN_MB.slice(0, DETAIL_TEXT_MAX));
    expect(more).toBeGreaterThan(10_000_000);
    expect(plain(lastFrame())).toMatch(new RegExp(`│   … ${more.toLocaleString('en-US')} more bytes\\s+│\n│\\s+│\n│ Run\\s+│\n│   not dispatched yet\\s+│`));
    expect(segmenter.work.units).toBeLessThan(2_000_000);
  });

  it('the detail wraps from the top only as far as the window', () => {
    const sections = [{ heading: 'Body', lines: textLines(TEN_MB) }];
    expect(sections[0]!.lines.at(-1)).toMatch(/^… [\d,]+ more bytes$/);
    const rows = detailRows(sections, 100, 0, 25);
    expect(rows).toHaveLength(25);
    expect(rows[1]!.text).toBe(`  ${'z'.repeat(98)}`);
    expect(wrapped.reduce((a, b) => a + b, 0)).toBeLessThan(20_000);
    wrapped.length = 0;
    const later = detailRows(sections, 100, 400, 25); // 400 rows down: the work follows the scroll
    expect(later[0]!.text).toMatch(/^ {2}z+$/);
    expect(wrapped.reduce((a, b) => a + b, 0)).toBeLessThan(300_000);
  });

  it('a chat message of 200 KB shows its first rows, cut, after measuring a screenful', () => {
    const rows = chatRows([{ ts: '', sender: 'garden', text: 'short one' }, { ts: '', sender: 'operator', text: WIDE }], 40, 10);
    expect(rows).toHaveLength(10);
    expect(rows[0]).toEqual({ sender: 'operator', text: `operator: ${'調査😀⚠'.repeat(4)}調` });
    expect(rows[9]!.text.endsWith('…')).toBe(true);
    expect(segmenter.work.units).toBeLessThan(10_000);
  });
});

describe('the goal form with a pasted 160,000 code unit body', () => {
  it('shows the end of the body, where the cursor is, after measuring a screenful', () => {
    const choices = { plants: ['gardener'], drivers: ['(default)'] };
    const form = { ...newGoalForm(choices), body: editState(`first line\n${WIDE}`) };
    const { lastFrame } = render(<GoalForm state={form} choices={choices} width={60} height={20} />);
    const lines = plain(lastFrame()).split('\n');
    const cursor = lines.findIndex((line) => line.includes('█'));
    const end = lines.slice(cursor - 1, cursor + 1).map((line) => line.slice(1, -1).trim()).join('');
    expect(end).toMatch(/(調査😀⚠)+█$/);
    expect(lines.some((line) => line.includes('first line'))).toBe(false);
    expect(segmenter.work.longest).toBeLessThanOrEqual(4_096);
    expect(segmenter.work.units).toBeLessThan(50_000);
  });
});

describe('the tail keeps no more of a line than a pane could show', () => {
  it('a 150 KB line of agent text is kept as 16 KB, saying how much was left out', () => {
    const usage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
    const [line] = renderRawLine(JSON.stringify({ type: 'text', text: 'y'.repeat(150_000) }), usage);
    expect(line!.text).toBe(`${'y'.repeat(TAIL_LINE_MAX_CHARS)}… (${(150_000 - TAIL_LINE_MAX_CHARS).toLocaleString('en-US')} more characters)`);
    const emoji = capTailText(`a${'😀'.repeat(TAIL_LINE_MAX_CHARS)}`); // the cut falls between the halves of a pair: the pair goes whole
    expect(emoji.startsWith(`a${'😀'.repeat(TAIL_LINE_MAX_CHARS / 2 - 1)}… (`)).toBe(true);
  });
});
