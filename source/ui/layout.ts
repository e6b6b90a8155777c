import { clipUnits, displayWidth, padColumns, sanitize, truncateColumns, wrapBudget, wrapColumns } from '../format.js';

/** The rows `[start, end)` of a list of `total` to show in `height` rows so `cursor` stays visible, centred when possible. */
export function windowRange(total: number, cursor: number, height: number): [number, number] {
  if (height <= 0) return [0, 0];
  if (total <= height) return [0, total];
  const start = Math.min(Math.max(0, cursor - Math.floor(height / 2)), total - height);
  return [start, start + height];
}

/**
 * Fits `text` to exactly `width` columns: cut with `…`, or padded with
 * spaces. Looks at no more of `text` than `width` columns can show.
 * `pad: false` leaves out the padding, for a line whose spaces show
 * nothing (no inverse or background): the frame's cells are blank already,
 * and every character of a frame costs Ink time.
 */
export function fit(text: string, width: number, pad = true): string {
  if (width <= 0) return '';
  const source = clipUnits(text, width * 4 + 64);
  const cut = truncateColumns(sanitize(source).replace(/[\r\n\t]+/g, ' '), width, source.length < text.length);
  return pad ? padColumns(cut, width) : cut;
}

/** Options of {@link wrapLines}. */
export interface WrapOptions {
  /** At most this many rows; the text beyond is not looked at. */
  maxRows?: number;
  /** End the last row with `…` when rows were left out (default true). */
  mark?: boolean;
}

/**
 * Wraps `text` to `width` columns (hard-wrapping long words); wide
 * characters count two. With `maxRows`, the work is bounded by the rows
 * shown, not by the length of the text: a 10 MB line costs what a screenful does.
 */
export function wrapLines(text: string, width: number, options: WrapOptions = {}): string[] {
  if (width <= 0) return [];
  const maxRows = options.maxRows ?? Number.POSITIVE_INFINITY;
  const source = clipUnits(text, wrapBudget(width, maxRows));
  const { rows, more } = wrapColumns(sanitize(source).replace(/\t/g, '  '), width, maxRows);
  if ((more || source.length < text.length) && rows.length && options.mark !== false) rows[rows.length - 1] = truncateColumns(rows.at(-1)!, width, true);
  return rows;
}

/**
 * The last `rows` rows of `text` wrapped to `width` (the end of a body being
 * typed), read from the end: lines before the last rows are not wrapped, and
 * of a line longer than the rows can show only its end is (its rows then
 * break where they would if it began there).
 */
export function wrapTail(text: string, width: number, rows: number): string[] {
  if (width <= 0 || rows <= 0) return [];
  const budget = wrapBudget(width, rows);
  let tail = text.length > budget ? text.slice(-budget) : text;
  if (/^[\udc00-\udfff]/.test(tail)) tail = tail.slice(1); // the cut fell inside a surrogate pair
  const lines = tail.split('\n');
  const out: string[] = [];
  for (let i = lines.length - 1; i >= 0 && out.length < rows; i--) out.unshift(...wrapLines(lines[i]!, width).slice(-(rows - out.length)));
  return out;
}

/** Display width of `text`. */
export function widthOf(text: string): number {
  return displayWidth(text);
}

/** Spinner frame for a moment in ms. */
export function spinner(ms: number): string {
  const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
  return frames[Math.floor(ms / 250) % frames.length]!;
}
