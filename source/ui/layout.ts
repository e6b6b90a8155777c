import wrapAnsi from 'wrap-ansi';
import { displayWidth, padColumns, sanitize, truncateColumns } from '../format.js';

/** The rows `[start, end)` of a list of `total` to show in `height` rows so `cursor` stays visible, centred when possible. */
export function windowRange(total: number, cursor: number, height: number): [number, number] {
  if (height <= 0) return [0, 0];
  if (total <= height) return [0, total];
  const start = Math.min(Math.max(0, cursor - Math.floor(height / 2)), total - height);
  return [start, start + height];
}

/** Fits `text` to exactly `width` columns: cut with `…`, or padded with spaces. */
export function fit(text: string, width: number): string {
  if (width <= 0) return '';
  return padColumns(truncateColumns(sanitize(text).replace(/[\r\n\t]+/g, ' '), width), width);
}

/** Wraps `text` to `width` columns (hard-wrapping long words); wide characters count two. */
export function wrapLines(text: string, width: number): string[] {
  if (width <= 0) return [];
  return wrapAnsi(sanitize(text).replace(/\t/g, '  '), width, { hard: true, trim: false }).split('\n');
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
