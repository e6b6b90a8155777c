/**
 * The row cache patched into Ink's `Output` (source/ui/ink-rows.ts) draws
 * the same frames as Ink's own `get()`: checked on hand-made operations
 * (overlapping writes, wide characters at the edge, clips, transformers,
 * rows outside the output) and on every frame of the workbench through keys,
 * overlays, a narrow terminal and hostile data, each frame compared with
 * Ink's own drawing of the same operations.
 */
import { Box, Text } from 'ink';
import { render } from 'ink-testing-library';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import React from 'react';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GoalRow, Snapshot, TailState } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { cacheInkRows, findInkOutput, rowCacheOf, type InkOutputClass, type RowCache } from '../../source/ui/ink-rows.js';
import { Lines, type StyledLine } from '../../source/ui/lines.js';
import { goal, NOW, run, snapshotOf, tailOf, tick } from './fixtures.js';

let Output: InkOutputClass;
let cache: RowCache;

beforeAll(async () => {
  Output = (await findInkOutput())!;
  expect(Output).toBeDefined();
  // Importing the App installed it.
  cache = rowCacheOf(Output)!;
  expect(cache).toBeDefined();
});

/** The frame of `ops` drawn twice: by the patched `get()` and by Ink's own. */
function both(width: number, height: number, ops: (o: InstanceType<InkOutputClass>) => void) {
  const make = () => {
    const o = new Output({ width, height });
    ops(o);
    return o;
  };
  return { patched: make().get(), ink: cache.original.call(make()) };
}

const red = (s: string) => `\u001b[31m${s}\u001b[39m`;
const bold = (s: string) => `\u001b[1m${s}\u001b[22m`;
const none: never[] = [];

describe('the row cache draws what Ink draws', () => {
  it('overlapping writes, styles, wide characters at the edges, text past the width', () => {
    const ops = (o: InstanceType<InkOutputClass>) => {
      o.write(0, 0, `${red('hello')} world ${bold('調査😀')}`, { transformers: none });
      o.write(3, 0, '✓ over', { transformers: none });
      o.write(8, 1, '調査調査調査', { transformers: none }); // the last wide character overhangs the width
      o.write(0, 2, 'x'.repeat(30), { transformers: none }); // past the width
      o.write(5, 2, red('⚠ warn'), { transformers: none });
      o.write(14, 3, '😀😀', { transformers: none });
      o.write(1, 3, '調', { transformers: none });
      o.write(2, 3, 'a', { transformers: none }); // over the second column of a wide character
    };
    for (let i = 0; i < 3; i += 1) {
      const { patched, ink } = both(16, 5, ops);
      expect(patched).toEqual(ink);
    }
  });

  it('multi-line writes crossing the edges, negative rows, empty lines, transformers with their line index', () => {
    const upper = (line: string, index: number) => `${index}:${line.toUpperCase()}`;
    const ops = (o: InstanceType<InkOutputClass>) => {
      o.write(0, -1, 'gone\nalso gone', { transformers: none }); // Ink drops a write that starts above the output
      o.write(2, 3, 'a\n\nb\nc\nd\ne', { transformers: [upper] }); // runs past the last row
      o.write(0, 0, 'top\n\nthird', { transformers: [upper, (line) => red(line)] });
      o.write(0, 9, 'below', { transformers: none });
    };
    const { patched, ink } = both(12, 5, ops);
    expect(patched).toEqual(ink);
  });

  it('vertical clips, nested and undone', () => {
    const ops = (o: InstanceType<InkOutputClass>) => {
      o.clip({ x1: undefined, x2: undefined, y1: 1, y2: 4 });
      o.write(0, 0, 'r0\nr1\nr2\nr3\nr4\nr5', { transformers: [(line, index) => `${line}#${index}`] });
      o.clip({ x1: undefined, x2: undefined, y1: 2, y2: 3 });
      o.write(4, 1, 'a\nb\nc', { transformers: none });
      o.write(0, 5, 'outside', { transformers: none });
      o.unclip();
      o.write(8, 0, 'x\ny\nz', { transformers: none });
      o.unclip();
      o.write(0, 5, 'free', { transformers: none });
    };
    const { patched, ink } = both(12, 7, ops);
    expect(patched).toEqual(ink);
  });

  it('leaves a frame with a horizontal clip, or a transformer that breaks a line, to Ink', () => {
    const before = cache.stats.fallbacks;
    const clipped = both(10, 3, (o) => {
      o.clip({ x1: 2, x2: 6, y1: undefined, y2: undefined });
      o.write(0, 0, 'abcdefghijkl\n調査調査調査', { transformers: none });
      o.unclip();
    });
    expect(clipped.patched).toEqual(clipped.ink);
    const broken = both(10, 3, (o) => o.write(0, 0, 'ab', { transformers: [(line) => `${line}\ncd`] }));
    expect(broken.patched).toEqual(broken.ink);
    expect(cache.stats.fallbacks - before).toBe(2);
  });

  it('draws rows from Ink\'s own helpers; without them, by Ink\'s get() on one row: the same frames either way', () => {
    expect(cache.drawsRows).toBe(true);
    // A class of its own whose get() is Ink's, patched without the helpers.
    const original = cache.original;
    class Plain extends Output {
      override get() {
        return original.call(this);
      }
    }
    cacheInkRows(Plain as unknown as InkOutputClass);
    expect(rowCacheOf(Plain as unknown as InkOutputClass)?.drawsRows).toBe(false);
    const ops = (o: InstanceType<InkOutputClass>) => {
      o.write(0, 0, `${red('α')} 調査 😀 ${red('end')}`, { transformers: none });
      o.write(3, 0, 'over', { transformers: none });
      o.write(8, 1, `x${'調'.repeat(8)}`, { transformers: none });
    };
    for (const C of [Output, Plain as unknown as InkOutputClass]) {
      const mine = new C({ width: 12, height: 2 });
      ops(mine);
      const ink = new C({ width: 12, height: 2 });
      ops(ink);
      expect(mine.get()).toEqual(original.call(ink));
    }
  });

  it('draws a row it has seen from the cache', () => {
    const ops = (o: InstanceType<InkOutputClass>) => o.write(0, 0, `${red('cached')} row ${Math.PI}`, { transformers: none });
    both(40, 2, ops);
    const hits = cache.stats.hits;
    const { patched, ink } = both(40, 2, ops);
    expect(patched).toEqual(ink);
    expect(cache.stats.hits - hits).toBe(2);
  });
});

/** Compares every frame the App draws with Ink's own drawing of it, while `body` runs. */
async function everyFrameChecked(body: () => Promise<void>): Promise<{ frames: number; mismatches: string[]; styled: boolean }> {
  const patchedGet = Output.prototype.get;
  const seen = { frames: 0, mismatches: [] as string[], styled: false };
  Output.prototype.get = function get(this: InstanceType<InkOutputClass>) {
    const mine = patchedGet.call(this);
    const ink = cache.original.call(this);
    seen.frames += 1;
    seen.styled ||= mine.output.includes('\u001b[');
    if (mine.output !== ink.output || mine.height !== ink.height) seen.mismatches.push(`${JSON.stringify(mine.output)}\n≠\n${JSON.stringify(ink.output)}`);
    return mine;
  };
  try {
    await body();
  } finally {
    Output.prototype.get = patchedGet;
  }
  return seen;
}

const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined, submitGoal: async () => goal(1), sendMessage: async () => undefined };

function bigSnapshot(): Snapshot {
  const live = goal(1, { status: 'running', body: 'Fix the parser', type: 'fix' });
  const liveRun = run(live.id);
  const rows: GoalRow[] = [{ goal: live, run: liveRun }];
  for (let n = 2; n <= 10_000; n += 1) rows.push({ goal: goal(n, { body: n % 7 ? `Body ${n} 調査 😀` : `Fix the parser ${n}` }), run: undefined });
  rows.push({ goal: goal(10_001, { id: `10001-${'調査😀'.repeat(30)}`, status: 'closed', closed_reason: 'failure' }), run: undefined });
  return snapshotOf({ goals: rows, counts: { queued: 9_999, inFlight: 1, closedShown: 1 }, coordinator: { state: 'running', liveRuns: [liveRun.id] }, tail: tailOf('claude-build', liveRun.id) });
}

function hostileTail(runId: string): TailState {
  const texts = ['before', 'x'.repeat(200_000), '調査😀⚠'.repeat(40_000), `\u001b[31mred?\u001b[0m ${'😀'.repeat(500)}`, 'after'];
  return { runId, file: `/g/.runtime/runs/${runId}/events.jsonl`, lines: texts.map((text) => ({ kind: 'text' as const, text })), usage: { inputTokens: 0, outputTokens: 0, costUsd: undefined }, bytes: 1, truncated: false };
}

/** Colour on while a suite runs (a test's stdout is not a terminal, so Ink's chalk draws none): the frames carry their styles. */
function withColour(): void {
  let chalk: { level: number };
  let level = 0;
  beforeAll(async () => {
    const chalkEntry = createRequire(createRequire(import.meta.url).resolve('ink')).resolve('chalk');
    chalk = ((await import(pathToFileURL(chalkEntry).href)) as { default: { level: number } }).default;
    level = chalk.level;
    chalk.level = 3;
  });
  afterAll(() => void (chalk.level = level));
}

describe('Lines draws what a <Text> per line draws', () => {
  withColour();
  const lines: StyledLine[] = [
    { text: '╭─ Goals ───╮ plain' },
    { text: 'cyan bold', color: 'cyan', bold: true },
    { text: 'inverse selected row   ', color: 'yellow', bold: true, inverse: true },
    { text: 'dim info', dimColor: true },
    { text: 'dim and gray', dimColor: true, color: 'gray' },
    { text: '' },
    { text: '調査 😀 ⚠ wide', color: 'magenta' },
    { text: '… ▸ ◂ · ●', color: 'red', bold: false, inverse: false },
    { text: 'x'.repeat(26), color: 'green' },
  ];
  const box = (children: React.ReactNode) => (
    // As tall as its lines (a pane clamps its lines to its height; Ink shrinks the rows of an overflowing box its own way).
    <Box borderStyle="round" borderColor="gray" paddingX={1} width={30} height={lines.length + 3} flexDirection="column" overflowY="hidden">
      {children}
    </Box>
  );

  it('in a bordered, padded, clipped box: the same frame, styles included', () => {
    const texts = render(
      box(
        <>
          <Text>above</Text>
          {lines.map((line, i) => (
            <Text key={i} color={line.color} bold={line.bold} inverse={line.inverse} dimColor={line.dimColor} wrap="truncate">
              {line.text}
            </Text>
          ))}
        </>,
      ),
    );
    const mine = render(
      box(
        <>
          <Text>above</Text>
          <Lines lines={lines} />
        </>,
      ),
    );
    expect(mine.lastFrame()).toBe(texts.lastFrame());
    expect(mine.lastFrame()).toContain('\u001b[');
    texts.unmount();
    mine.unmount();
  });

  it('reads as plain rows to a screen reader', () => {
    const before = process.env['INK_SCREEN_READER'];
    process.env['INK_SCREEN_READER'] = 'true';
    try {
      const { lastFrame, unmount } = render(<Lines lines={lines.slice(0, 3)} />);
      expect(lastFrame()).toContain('cyan bold');
      expect(lastFrame()).toContain('inverse selected row');
      unmount();
    } finally {
      if (before === undefined) delete process.env['INK_SCREEN_READER'];
      else process.env['INK_SCREEN_READER'] = before;
    }
  });
});

describe('the workbench draws the same frames through the row cache', () => {
  withColour();

  it('through keys on 10,000 goals, a filter, the tail, overlays, at three sizes', async () => {
    for (const size of [
      { columns: 120, rows: 40 },
      { columns: 80, rows: 24 },
      { columns: 36, rows: 12 }, // narrower than the panes: Ink clips horizontally, the frame is Ink's own
    ]) {
      const seen = await everyFrameChecked(async () => {
        const { stdin, unmount } = render(<App store={fixedStore(bigSnapshot())} actions={actions} size={size} now={NOW} />);
        await tick();
        for (const key of ['j', 'j', 'j', '\u001b[6~', 'k', '/', 'p', 'a', 'r', '\u007f', '\r', 'j', '\u001b', '\t', 'k', 'k', '\t', '\t', '?', '\u001b', 'G', '\r']) {
          stdin.write(key);
          await tick();
        }
        unmount();
      });
      expect(seen.mismatches).toEqual([]);
      expect(seen.frames).toBeGreaterThan(10);
      expect(seen.styled).toBe(true);
    }
  });

  it('with a 200 KB line, CJK, emoji and a 10 MB goal body', async () => {
    const big = `${'z'.repeat(150_000)}\n${`調査😀⚠${'y'.repeat(200)} `.repeat(40_000)}`;
    const g = goal(1, { body: big, status: 'running' });
    const r = run(g.id);
    const snapshot = snapshotOf({ goals: [{ goal: g, run: r }], counts: { queued: 0, inFlight: 1, closedShown: 0 }, tail: hostileTail(r.id) });
    const hits = cache.stats.hits;
    const seen = await everyFrameChecked(async () => {
      const { stdin, unmount } = render(<App store={fixedStore(snapshot)} actions={actions} size={{ columns: 100, rows: 30 }} now={NOW} />);
      await tick();
      for (const key of ['\t', 'k', 'k', 'j', '\t', '\t', '\t', '\t', '\r', 'j', '\u001b']) {
        stdin.write(key);
        await tick();
      }
      unmount();
    });
    expect(seen.mismatches).toEqual([]);
    expect(cache.stats.hits).toBeGreaterThan(hits);
  });
});
