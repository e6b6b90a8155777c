import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Ink's frame stage, with the rows of the screen kept from one frame to the
 * next (issue 13).
 *
 * Every frame Ink lays the whole tree out again and its `Output.get()`
 * builds a grid of styled cells for the whole screen: each text line is
 * tokenized for ANSI codes, each character becomes an object with its
 * styles, each row is turned back into a string. That is most of a frame's
 * time (about three quarters at 120x40) and most of its garbage (about 10
 * MB), and it is the same work for a row that did not change, which is most
 * rows on a key press.
 *
 * A screen row's string depends only on the terminal's width and on what
 * was written into it, in order: the column and the (transformed, clipped)
 * text of each line that lands on it. So `get()` here first replays Ink's
 * own walk over the write operations (the same vertical clipping, the same
 * transformers called the same way) to list each row's writes, and looks
 * the row up by them; only a row not seen lately is drawn. It is drawn the
 * way Ink's `get()` draws one (Ink's own tokenizer, style reduction and
 * diffing, and string-width, loaded from beside Ink), but from arrays of
 * characters and shared style lists instead of an object per cell and per
 * character: drawing leaves little garbage, and none that lives long (V8
 * moves allocation sites whose objects survive into the old generation,
 * where they stay until a full collection). The frame is the same string,
 * character for character; where the replay cannot be sure of that (a
 * horizontal clip, a transformer that makes a line break, a size that is
 * not a whole number) the whole frame is Ink's own `get()`, and without
 * Ink's helpers a row is drawn by Ink's `get()` on a one-row output.
 */

/** One of Ink's `Output` operations, as its `write`, `clip` and `unclip` record them. */
interface InkOperation {
  type: string;
  x?: number;
  y?: number;
  text?: string;
  transformers?: ((line: string, index: number) => string)[];
  clip?: { x1?: number; x2?: number; y1?: number; y2?: number };
}

/** What this module relies on of an instance of Ink's `Output` class (ink/build/output.js). */
interface InkOutput {
  width: number;
  height: number;
  operations: InkOperation[];
  caches: unknown;
  write(x: number, y: number, text: string, options: { transformers: ((line: string, index: number) => string)[] }): void;
  clip(clip: NonNullable<InkOperation['clip']>): void;
  unclip(): void;
  get(): { output: string; height: number };
}

/** Ink's `Output` class. */
export interface InkOutputClass {
  new (options: { width: number; height: number }): InkOutput;
  prototype: InkOutput;
}

/** One ANSI code as Ink's tokenizer (@alcalzone/ansi-tokenize) gives it. */
export interface InkAnsiCode {
  type: 'ansi';
  code: string;
  endCode: string;
}

/** The helpers Ink's `get()` draws a row with, from the modules Ink itself imports. */
export interface InkText {
  tokenize(text: string): (InkAnsiCode | { type: 'char'; value: string; fullWidth: boolean })[];
  reduceAnsiCodesIncremental(codes: InkAnsiCode[], newCodes: InkAnsiCode[]): InkAnsiCode[];
  diffAnsiCodes(from: InkAnsiCode[], to: InkAnsiCode[]): InkAnsiCode[];
  ansiCodesToString(codes: InkAnsiCode[]): string;
  stringWidth(text: string): number;
}

/** Options of {@link cacheInkRows}. */
export interface RowCacheOptions {
  /** Rows kept: up to twice this many, the rows used since the last turnover and before it; default 400, ten 120x40 screens. */
  maxRows?: number;
  /** Characters of rows and their keys kept in one turnover; default 600,000 (about 1.2 MB). */
  maxChars?: number;
  /** Lines whose characters are kept for the rows drawn (up to twice this many, as rows); default 300. */
  maxLines?: number;
  /** Ink's helpers ({@link findInkText}); without them a row not seen is drawn by Ink's `get()` on a one-row output. */
  text?: InkText;
}

/** The row cache a patched class holds, for tests and measurement. */
export interface RowCacheStats {
  hits: number;
  misses: number;
  /** Frames left to Ink's own `get()` whole (see the module's comment). */
  fallbacks: number;
  rows: number;
  chars: number;
}

/** What {@link cacheInkRows} keeps on the class it patched. */
export interface RowCache {
  stats: RowCacheStats;
  /** Ink's own `get()`, which the patched one calls for a frame it cannot vouch for (and for a row it has not seen, without `drawsRows`). */
  original: InkOutput['get'];
  /** True when rows not seen are drawn from Ink's helpers ({@link InkText}), not by Ink's `get()` on a one-row output. */
  drawsRows: boolean;
}

const PATCHED = Symbol.for('pak2.inkRowCache');

type Patched = InkOutputClass & { [PATCHED]?: RowCache };

/** The row cache of a class {@link cacheInkRows} patched; undefined for one it did not. */
export function rowCacheOf(Output: InkOutputClass): RowCache | undefined {
  // Its own, not one inherited from a class it extends.
  return Object.hasOwn(Output, PATCHED) ? (Output as Patched)[PATCHED] : undefined;
}

/**
 * Patches Ink's `Output` class so `get()` draws only the rows it has not
 * drawn lately (see the module's comment); the frames are unchanged.
 * Idempotent. Returns the cache's counters.
 */
export function cacheInkRows(Output: InkOutputClass, options: RowCacheOptions = {}): RowCacheStats {
  const patched = Output as Patched;
  if (Object.hasOwn(patched, PATCHED)) return patched[PATCHED]!.stats;
  const maxRows = options.maxRows ?? 400;
  const maxChars = options.maxChars ?? 600_000;
  const original = Output.prototype.get;
  const maxLines = options.maxLines ?? 300;
  const draw = options.text ? rowDrawer(options.text, maxLines) : inkRowDrawer(Output, original, maxLines);
  const stats: RowCacheStats = { hits: 0, misses: 0, fallbacks: 0, rows: 0, chars: 0 };
  const rows = new Generations<string, string>(maxRows, maxChars, (key, row) => key.length + row.length);

  Output.prototype.get = function get(this: InkOutput) {
    const writes = rowWrites(this);
    if (!writes) {
      stats.fallbacks += 1;
      return original.call(this);
    }
    const out: string[] = new Array<string>(this.height);
    for (let y = 0; y < this.height; y++) {
      const row = writes[y];
      let key = `${this.width}`;
      if (row) for (let i = 0; i < row.length; i += 2) key += `|${row[i] as number}:${(row[i + 1] as string).length}:${row[i + 1] as string}`;
      let text = rows.get(key);
      if (text === undefined) {
        stats.misses += 1;
        text = draw(this.width, row);
        rows.set(key, text);
      } else {
        stats.hits += 1;
      }
      out[y] = text;
    }
    stats.rows = rows.size;
    stats.chars = rows.weight;
    return { output: out.join('\n'), height: this.height };
  };
  patched[PATCHED] = { stats, original, drawsRows: Boolean(options.text) };
  return stats;
}

/**
 * A cache of two generations: entries are set in the current one, an entry
 * found in the previous one is carried into the current one, and when the
 * current one holds `limit` entries (or `maxWeight` of weight) it becomes
 * the previous one and the one before is dropped whole. What was used
 * lately stays; nothing is moved or deleted entry by entry (a map churned
 * that way keeps reallocating its table, and the tables outlive young
 * garbage). Ink's caches call only `get` and `set`.
 */
class Generations<K, V> {
  private current = new Map<K, V>();
  private previous = new Map<K, V>();
  /** Weight of the current generation. */
  weight = 0;

  constructor(
    private readonly limit: number,
    private readonly maxWeight = Number.POSITIVE_INFINITY,
    private readonly weigh: (key: K, value: V) => number = () => 0,
  ) {}

  get size(): number {
    return this.current.size + this.previous.size;
  }

  get(key: K): V | undefined {
    const value = this.current.get(key);
    if (value !== undefined) return value;
    const old = this.previous.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: K, value: V): this {
    const weight = this.weigh(key, value);
    if (this.current.size >= this.limit || this.weight + weight > this.maxWeight) {
      this.previous = this.current;
      this.current = new Map();
      this.weight = 0;
    }
    this.current.set(key, value);
    this.weight += weight;
    return this;
  }
}

/** A line's characters as Ink places them: each one's text, its style list (shared by a run of equal styles) and its width in cells. */
interface LineCells {
  values: string[];
  styles: InkAnsiCode[][];
  widths: number[];
}

const NO_STYLES: InkAnsiCode[] = [];

/**
 * Draws one screen row from its writes (`[x, line, x, line, …]`) exactly as
 * Ink's `get()` draws it: a row of `width` unstyled spaces; each line's
 * characters placed from its x, a character `w` cells wide followed by
 * `w - 1` empty cells of its style (past the width too, as Ink's array
 * grows); then Ink's `styledCharsToString` over the cells (the first
 * cell's styles, the difference to each next one, the reset after the
 * last), trimmed at the end. Lines are tokenized once while they are in use
 * (a cache of `maxLines`, two generations).
 */
function rowDrawer(text: InkText, maxLines: number): (width: number, row: (number | string)[] | undefined) => string {
  const lines = new Generations<string, LineCells>(maxLines);
  const cellsOf = (line: string): LineCells => {
    let cells = lines.get(line);
    if (cells) return cells;
    cells = { values: [], styles: [], widths: [] };
    let codes = NO_STYLES;
    for (const token of text.tokenize(line)) {
      if (token.type === 'ansi') codes = text.reduceAnsiCodesIncremental(codes, [token]);
      else if (token.type === 'char') {
        cells.values.push(token.value);
        cells.styles.push(codes);
        cells.widths.push(Math.max(1, text.stringWidth(token.value)));
      }
    }
    lines.set(line, cells);
    return cells;
  };
  return (width, row) => {
    const values: string[] = new Array<string>(width).fill(' ');
    const styles: InkAnsiCode[][] = new Array<InkAnsiCode[]>(width).fill(NO_STYLES);
    if (row) {
      for (let i = 0; i < row.length; i += 2) {
        let x = row[i] as number;
        const cells = cellsOf(row[i + 1] as string);
        for (let c = 0; c < cells.values.length; c++) {
          const style = cells.styles[c]!;
          values[x] = cells.values[c]!;
          styles[x] = style;
          const w = cells.widths[c]!;
          for (let k = 1; k < w; k++) {
            values[x + k] = '';
            styles[x + k] = style;
          }
          x += w;
        }
      }
    }
    let out = '';
    let previous: InkAnsiCode[] | undefined;
    for (let x = 0; x < values.length; x++) {
      const value = values[x];
      if (value === undefined) continue; // a hole past the width (Ink filters them out)
      const style = styles[x]!;
      // The same style list: no difference to write (diffAnsiCodes of a list and itself is empty).
      if (previous === undefined) out += text.ansiCodesToString(style);
      else if (style !== previous) out += text.ansiCodesToString(text.diffAnsiCodes(previous, style));
      out += value;
      previous = style;
    }
    if (previous !== undefined && previous.length > 0) out += text.ansiCodesToString(text.diffAnsiCodes(previous, []));
    return out.trimEnd();
  };
}

/**
 * Draws one screen row with Ink's own `get()` on a one-row output holding
 * just that row's writes, for when Ink's helpers are not found. The rows
 * share one set of Ink's caches, bounded ({@link sharedCaches}): a line
 * that moved to another row is not tokenized again.
 */
function inkRowDrawer(Output: InkOutputClass, original: InkOutput['get'], maxLines: number): (width: number, row: (number | string)[] | undefined) => string {
  const shared = sharedCaches(Output, maxLines);
  return (width, row) => {
    const one = new Output({ width, height: 1 });
    if (shared) one.caches = shared;
    if (row) for (let i = 0; i < row.length; i += 2) one.write(row[i] as number, 0, row[i + 1] as string, { transformers: [] });
    return original.call(one).output;
  };
}

/**
 * One instance of Ink's output caches (styled characters by line, widths
 * by text) with bounded maps, for the one-row outputs of every frame;
 * undefined when Ink's caches are not laid out as expected.
 */
function sharedCaches(Output: InkOutputClass, maxLines: number): unknown {
  const caches = new Output({ width: 0, height: 0 }).caches as Record<string, unknown> | undefined;
  if (!caches || !['styledChars', 'widths', 'blockWidths'].every((name) => caches[name] instanceof Map)) return undefined;
  caches['styledChars'] = new Generations(maxLines);
  caches['widths'] = new Generations(2048);
  caches['blockWidths'] = new Generations(128);
  return caches;
}

/**
 * Each row's writes, in order, as `[x, line, x, line, …]`, the way Ink's
 * `get()` places them: lines clipped to the innermost clip, transformed,
 * rows outside the output dropped. Undefined when the row cache cannot
 * vouch for the frame: a horizontal clip, a line break made by a
 * transformer, a size or position that is not a whole number.
 */
function rowWrites(output: InkOutput): ((number | string)[] | undefined)[] | undefined {
  const { width, height } = output;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 0 || height < 0) return undefined;
  const rows: ((number | string)[] | undefined)[] = new Array(height);
  const clips: NonNullable<InkOperation['clip']>[] = [];
  for (const operation of output.operations) {
    if (operation.type === 'clip') {
      const clip = operation.clip ?? {};
      if (typeof clip.x1 === 'number' || typeof clip.x2 === 'number') return undefined;
      clips.push(clip);
      continue;
    }
    if (operation.type === 'unclip') {
      clips.pop();
      continue;
    }
    if (operation.type !== 'write') return undefined;
    let x = operation.x!;
    let y = operation.y!;
    if (!Number.isInteger(x) || !Number.isInteger(y)) return undefined;
    let lines = operation.text!.split('\n');
    const clip = clips.at(-1);
    if (clip && typeof clip.y1 === 'number' && typeof clip.y2 === 'number') {
      if (y + lines.length < clip.y1 || y > clip.y2) continue;
      const from = y < clip.y1 ? clip.y1 - y : 0;
      const to = y + lines.length > clip.y2 ? clip.y2 - y : lines.length;
      lines = lines.slice(from, to);
      if (y < clip.y1) y = clip.y1;
    }
    // Ink moves down a row only after a line lands on one: once a line falls outside, all after it do.
    for (let index = 0; index < lines.length; index++) {
      const r = y + index;
      if (r < 0 || r >= height) break;
      let line = lines[index]!;
      for (const transform of operation.transformers ?? []) line = transform(line, index);
      if (line.includes('\n')) return undefined;
      if (line.length === 0) continue; // writes nothing (Ink's write drops empty text too)
      (rows[r] ??= []).push(x, line);
    }
  }
  return rows;
}

/**
 * The `Output` class of the Ink this process renders with: ink/build/output.js
 * beside the module `ink` resolves to from here (the same module instance
 * Ink's renderer imports). Undefined when Ink's build is not laid out as
 * expected.
 */
export async function findInkOutput(): Promise<InkOutputClass | undefined> {
  try {
    const entry = createRequire(import.meta.url).resolve('ink');
    const module = (await import(pathToFileURL(path.join(path.dirname(entry), 'output.js')).href)) as { default?: unknown };
    const Output = module.default as InkOutputClass | undefined;
    if (typeof Output !== 'function' || typeof Output.prototype.get !== 'function' || typeof Output.prototype.write !== 'function') return undefined;
    const probe = new Output({ width: 1, height: 1 });
    return Array.isArray(probe.operations) && 'caches' in probe ? Output : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The helpers Ink's `get()` uses ({@link InkText}), imported from beside
 * the Ink this process renders with, so they are the very modules (and
 * versions) Ink draws with. Undefined when they are not found or not
 * shaped as expected.
 */
export async function findInkText(): Promise<InkText | undefined> {
  try {
    const inkRequire = createRequire(createRequire(import.meta.url).resolve('ink'));
    const tokenizer = (await import(pathToFileURL(path.join(path.dirname(inkRequire.resolve('@alcalzone/ansi-tokenize/package.json')), 'build', 'index.js')).href)) as Partial<InkText>;
    const width = (await import(pathToFileURL(inkRequire.resolve('string-width')).href)) as { default?: unknown };
    const text = { ...tokenizer, stringWidth: width.default } as Partial<InkText>;
    for (const name of ['tokenize', 'reduceAnsiCodesIncremental', 'diffAnsiCodes', 'ansiCodesToString', 'stringWidth'] as const) if (typeof text[name] !== 'function') return undefined;
    return text as InkText;
  } catch {
    return undefined;
  }
}

let installed: Promise<RowCacheStats | undefined> | undefined;

/**
 * Patches the `Output` class of the Ink this process renders with
 * ({@link findInkOutput}) with {@link cacheInkRows}. Resolves with the
 * cache's counters, or undefined when Ink's build is not laid out as
 * expected (then Ink is left as it is). Idempotent.
 */
export function installInkRowCache(): Promise<RowCacheStats | undefined> {
  installed ??= Promise.all([findInkOutput(), findInkText()]).then(([Output, text]) => (Output ? cacheInkRows(Output, text ? { text } : {}) : undefined));
  return installed;
}
