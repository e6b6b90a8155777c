import stringWidth from 'string-width';
import type { Cost, RunRecord } from './contracts/index.js';

/**
 * Removes terminal control sequences and control characters (ESC, BEL, C1…)
 * from text that came from agents or files, keeping newlines and tabs, so
 * printing it can never recolour, retitle or clear the operator's terminal.
 */
export function sanitize(text: string): string {
  return text
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, '')
    .replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}

/** True for text of printable ASCII only, whose width is its length. */
function isPlainAscii(text: string): boolean {
  return /^[\x20-\x7e]*$/.test(text);
}

/** Display width of `text` (wide and emoji characters count as two); fast for plain ASCII. */
export function displayWidth(text: string): number {
  return isPlainAscii(text) ? text.length : stringWidth(text);
}

/** Pads `text` to `width` terminal columns (wide and emoji characters count as two). */
export function padColumns(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

/** Cuts `text` to at most `width` columns, ending with `…` when cut. */
export function truncateColumns(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (isPlainAscii(text)) return `${text.slice(0, Math.max(0, width - 1))}…`;
  // One pass over grapheme clusters, adding each one's width.
  let out = '';
  let used = 0;
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    const w = stringWidth(segment);
    if (used + w > width - 1) break;
    out += segment;
    used += w;
  }
  return `${out}…`;
}

/** A plain-text table: a header row and aligned columns separated by two spaces. */
export function table(headers: string[], rows: string[][]): string {
  rows = rows.map((row) => row.map((cell) => sanitize(cell)));
  const widths = headers.map((h, i) => Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : padColumns(cell, widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** `12s`, `4m`, `3h`, `2d`: the time since `iso` at `now`. */
export function age(iso: string, now: Date = new Date()): string {
  return duration(Math.max(0, now.getTime() - Date.parse(iso)) / 1000);
}

/** A duration in seconds as `45s`, `12m`, `3h`, `2d`. */
export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

/** `$0.0123` (provider), `~$0.0123` (estimated), `?` (unknown). */
export function formatCost(cost: Cost | undefined): string {
  if (!cost) return '';
  if (cost.source === 'unknown' || cost.usd === undefined) return '?';
  const amount = `$${cost.usd.toFixed(cost.usd < 1 ? 4 : 2)}`;
  // A partial total is a lower bound: some part of the run reported no cost.
  return `${cost.partial ? '≥' : ''}${cost.source === 'estimated' ? '~' : ''}${amount}`;
}

/**
 * What pak2 observed about how a run ended beyond its status, one line each
 * (the CLI's `show` and the workbench detail both print these): a rewritten
 * record, the watchdog's limit and last event, a lingering agent, processes
 * the sweep could not end, a partial cost.
 */
export function runNoticeLines(run: RunRecord): string[] {
  const lines: string[] = [];
  if (run.record_tampering) lines.push(`tampered meta.json was rewritten by someone else (${run.record_tampering.fields.join(', ')}); pak2's record stands`);
  if (run.watchdog) lines.push(`watchdog silent ${run.watchdog.silent_seconds} s > ${run.watchdog.limit} ${run.watchdog.limit_seconds} s; last event: ${run.watchdog.last_event}`);
  if (run.lingered) lines.push('lingered the agent reported its result but did not exit; pak2 ended it after the grace');
  if (run.leftovers?.length) lines.push(`leftovers ${run.leftovers.length} process(es) outlived the sweep: ${run.leftovers.join('; ')}`);
  if (run.cost?.partial) lines.push('cost partial: a part of the run (e.g. the reflection turn) reported no cost');
  return lines;
}
