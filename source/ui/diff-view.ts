import { displayWidth, sanitize } from '../format.js';
import { diffHeading, patchLineKind, type PatchLineKind } from '../landing-words.js';
import type { RunDiff } from '../submit/index.js';
import { fit, wrapLines } from './layout.js';

/**
 * The diff overlay's rows (docs/workbench/level2.md, "The diff"), pure: the
 * file list (status, path, lines added and removed), a blank row, the
 * patch a line at a time, and a last row when the patch was cut. The
 * overlay scrolls by these items: the window starts at an item and wraps
 * only the items it shows (each at most a window high), so a 4 MB patch
 * costs what a screenful does, whatever the scroll position; the patch's
 * lines are found once per diff (their start offsets), never split.
 */

/** A piece of a row with its style. */
export interface Segment {
  text: string;
  color?: string | undefined;
  bold?: boolean | undefined;
}

/** One screen row: its segments, already fitted to the width (sanitized, cut). */
export type DiffRow = Segment[];

const KIND_STYLE: Record<PatchLineKind, Omit<Segment, 'text'>> = { head: { bold: true }, hunk: { color: 'cyan' }, add: { color: 'green' }, del: { color: 'red' }, context: {} };

const STATUS_COLOR: Record<string, string> = { A: 'green', D: 'red', M: 'yellow', '?': 'magenta' };

/** Where each line of a patch starts (and one past its end), found once per diff. */
const indexes = new WeakMap<RunDiff, number[]>();

function lineStarts(diff: RunDiff): number[] {
  let starts = indexes.get(diff);
  if (starts) return starts;
  starts = [];
  const patch = diff.patch;
  const end = patch.endsWith('\n') ? patch.length - 1 : patch.length;
  if (end > 0) {
    starts.push(0);
    for (let at = patch.indexOf('\n'); at >= 0 && at < end; at = patch.indexOf('\n', at + 1)) starts.push(at + 1);
  }
  starts.push(end + 1);
  indexes.set(diff, starts);
  return starts;
}

/** Lines of the patch. */
export function patchLineCount(diff: RunDiff): number {
  return lineStarts(diff).length - 1;
}

/** Line `i` of the patch (no line break; the CR of a CR LF file's line dropped, or it would show as a row of its own). */
export function patchLine(diff: RunDiff, i: number): string {
  const starts = lineStarts(diff);
  const line = diff.patch.slice(starts[i]!, starts[i + 1]! - 1);
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/** Items of the overlay: a row per file, a blank row, the patch's lines, and a row saying what was cut. */
export function itemCount(diff: RunDiff): number {
  return diff.files.length + 1 + Math.max(1, patchLineCount(diff)) + (diff.truncatedBytes > 0 ? 1 : 0);
}

/** Lines added and removed over all files (binary files count none). */
export function diffTotals(diff: RunDiff): { insertions: number; deletions: number } {
  let insertions = 0;
  let deletions = 0;
  for (const f of diff.files) {
    insertions += f.insertions ?? 0;
    deletions += f.deletions ?? 0;
  }
  return { insertions, deletions };
}

/** The summary row: what the diff is of, and its size. */
export function diffSummary(diff: RunDiff): string {
  const { insertions, deletions } = diffTotals(diff);
  if (diff.source === 'none') return diffHeading(diff);
  return `${diff.files.length} file${diff.files.length === 1 ? '' : 's'} +${insertions} −${deletions} · ${diffHeading(diff)}`;
}

/** Tabs to spaces at stops of 4 columns (counted after the patch's first column, the `+`, `-` or space). */
function expandTabs(line: string): string {
  if (!line.includes('\t')) return line;
  let out = '';
  let col = 0;
  for (const ch of line.slice(0, 4096)) {
    if (ch === '\t') {
      const to = col === 0 ? 1 : 1 + (Math.floor((col - 1) / 4) + 1) * 4;
      out += ' '.repeat(to - col);
      col = to;
    } else {
      out += ch;
      col += 1;
    }
  }
  return out + line.slice(4096);
}

/** `text` in `width` columns keeping its end (a path's file name): `…ls/production.env`. */
export function fitEnd(text: string, width: number): string {
  const clean = sanitize(text).replace(/[\r\n\t]+/g, ' ');
  if (displayWidth(clean) <= width) return fit(clean, width);
  const chars = [...clean.slice(-(width * 2 + 2))];
  let start = chars.length;
  for (let used = 0; start > 0 && used + displayWidth(chars[start - 1]!) <= width - 1; start--) used += displayWidth(chars[start - 1]!);
  return fit(`…${chars.slice(start).join('')}`, width);
}

/** The `+12 −4` cell of a file (`binary` when git counts no lines). */
function countsOf(file: RunDiff['files'][number]): Segment[] {
  if (file.insertions === null || file.deletions === null) return [{ text: 'binary', color: 'gray' }];
  return [
    { text: `+${file.insertions}`, color: 'green' },
    { text: ' ' },
    { text: `−${file.deletions}`, color: 'red' },
  ];
}

/** The row of one file: status letter, path (its end kept), counts at the right. */
function fileRow(file: RunDiff['files'][number], width: number, countsWidth: number): DiffRow {
  const counts = countsOf(file);
  const countsText = counts.map((s) => s.text).join('');
  const pathWidth = Math.max(1, width - 3 - 1 - countsWidth);
  const status = sanitize(file.status).slice(0, 2);
  return [
    { text: fit(status, 3), color: STATUS_COLOR[status[0] ?? ''] ?? 'yellow', bold: true },
    { text: fitEnd(file.path, pathWidth) },
    { text: ' '.repeat(1 + Math.max(0, countsWidth - countsText.length)) },
    ...counts,
  ];
}

/** The rows of item `i` in `width` columns, at most `maxRows`. */
function itemRows(diff: RunDiff, i: number, width: number, maxRows: number, countsWidth: number): DiffRow[] {
  const files = diff.files.length;
  if (i < files) return [fileRow(diff.files[i]!, width, countsWidth)];
  if (i === files) return [[{ text: ' ' }]]; // an empty <Text> takes no row
  const line = i - files - 1;
  const lines = patchLineCount(diff);
  if (lines === 0 && line === 0) return [[{ text: fit(files ? 'the patch is empty (a mode change, or an empty file)' : 'no changes', width), color: 'gray' }]];
  if (line >= lines) return [[{ text: fit(`… ${Math.ceil(diff.truncatedBytes / 1024)} KB more of the patch left out (pak2 diff ${diff.run} prints it whole)`, width), color: 'yellow' }]];
  const text = patchLine(diff, line);
  const style = KIND_STYLE[patchLineKind(text)];
  const rows = wrapLines(expandTabs(text), width, { maxRows });
  return (rows.length ? rows : ['']).map((row) => [{ text: row || ' ', ...style }]);
}

/** The width of the counts column: the widest `+N −M` of the files (at most 20). */
function countsColumn(diff: RunDiff): number {
  let widest = 0;
  for (const f of diff.files) widest = Math.max(widest, f.insertions === null || f.deletions === null ? 6 : `+${f.insertions} −${f.deletions}`.length);
  return Math.min(20, widest);
}

/** What the window shows from item `scroll` on, in `height` rows of `width` columns. */
export interface DiffWindow {
  rows: DiffRow[];
  /** The item at the top (the scroll, within its limit), and one past the last item shown whole. */
  first: number;
  last: number;
  /** Items in all, and the farthest the window scrolls (the last items fill it). */
  total: number;
  limit: number;
}

/**
 * The window of the diff at item `scroll` (clamped to the limit, found by
 * wrapping the last items back from the end until they fill the window).
 */
export function diffWindow(diff: RunDiff, width: number, scroll: number, height: number): DiffWindow {
  const total = itemCount(diff);
  const countsWidth = countsColumn(diff);
  if (height <= 0 || width <= 0) return { rows: [], first: 0, last: 0, total, limit: 0 };
  let limit = total;
  for (let used = 0; limit > 0; ) {
    const need = itemRows(diff, limit - 1, width, height, countsWidth).length;
    if (used + need > height) break;
    used += need;
    limit -= 1;
  }
  const first = Math.max(0, Math.min(scroll, limit));
  const rows: DiffRow[] = [];
  let last = first;
  while (last < total && rows.length < height) {
    const item = itemRows(diff, last, width, height - rows.length, countsWidth);
    rows.push(...item);
    last += 1;
  }
  return { rows, first, last, total, limit };
}
