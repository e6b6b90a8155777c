import emojiRegex from 'emoji-regex';
import { eastAsianWidth } from 'get-east-asian-width';
import type { Cost, RunRecord } from './contracts/index.js';
import { sanitize } from './sanitize.js';

export { sanitize, SanitizeStream } from './sanitize.js';

/** True for text of printable ASCII only, whose width is its length. */
function isPlainAscii(text: string): boolean {
  return /^[\x20-\x7e]*$/.test(text);
}

/**
 * Per BMP code unit: 1 when the character is one column wide and a cluster
 * of its own whatever stands around it (`…` `·` `─` `▸` `✓` `⠋` `é`), 2 when
 * not, 0 when not looked at yet. Filled on first sight of each character.
 */
const SINGLE_NARROW = new Uint8Array(0x10000);

function isSingleNarrow(code: number): boolean {
  const known = SINGLE_NARROW[code]!;
  if (known !== 0) return known === 1;
  let single = false;
  // Surrogates, controls and Hangul jamo (which join one another) never take the fast path.
  if (code >= 0xa0 && !(code >= 0xd800 && code <= 0xdfff) && !(code >= 0x1100 && code <= 0x11ff) && !(code >= 0xa960 && code <= 0xa97f) && !(code >= 0xd7b0 && code <= 0xd7ff)) {
    const char = String.fromCharCode(code);
    segmenter ??= new Intl.Segmenter();
    // Its own cluster between two letters (no mark, joiner, selector or prefix), and one column.
    single = [...segmenter.segment(`a${char}a`)].length === 3 && clusterWidth(char) === 1;
  }
  SINGLE_NARROW[code] = single ? 1 : 2;
  return single;
}

/** True when every character of `text` is printable ASCII or one {@link isSingleNarrow} holds for: its width is its length. */
function isSingleNarrowText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 || code >= 0x7f) && !isSingleNarrow(code)) return false;
  }
  return true;
}

// Made on first use, as are the Unicode-property regexes below: an Intl.Segmenter and a /\p{RGI_Emoji}/v
// cost tens of ms to build, which a command printing ASCII (pak2 goals) would pay at start for nothing.
let segmenter: Intl.Segmenter | undefined;
/**
 * Code units handed to the segmenter at once. V8's grapheme segmenter slows
 * down more than linearly with the length of the string it is given (a
 * 160 KB line takes tens of seconds), so text is segmented in windows.
 */
const SEGMENT_WINDOW = 256;

/**
 * The grapheme clusters of `text`, in order, in time linear in the text
 * consumed: the caller may stop early and pays only for what it read.
 */
export function* graphemes(text: string): Generator<string> {
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    // Printable ASCII followed by ASCII (or the end) is a cluster of its own.
    if (code >= 0x20 && code < 0x7f && (i + 1 === text.length || text.charCodeAt(i + 1) < 0x80)) {
      yield text[i]!;
      i += 1;
      continue;
    }
    let end = Math.min(text.length, i + SEGMENT_WINDOW);
    // Never end a window between the halves of a surrogate pair: its lone first half would make a cluster of its own,
    // and the one before it (a joined emoji sequence cut short) would be taken as whole.
    if (end < text.length && text.charCodeAt(end - 1) >= 0xd800 && text.charCodeAt(end - 1) <= 0xdbff) end -= 1;
    segmenter ??= new Intl.Segmenter();
    const parts = [...segmenter.segment(text.slice(i, end))].map((s) => s.segment);
    // The window's last cluster may go on past the window: segment again from its start,
    // unless it is the only one (a cluster longer than the window is cut, hostile data).
    const keep = end === text.length || parts.length === 1 ? parts.length : parts.length - 1;
    for (let k = 0; k < keep; k++) {
      yield parts[k]!;
      i += parts[k]!.length;
    }
  }
}

// How Ink measures a cluster (string-width 8, which Ink 6 uses to place every
// character) and how terminals draw it; pak2's own string-width 7 counts every
// pictograph two columns, text-presentation ones (⚠ © ™ ☀ ❤) included, which
// terminals draw one column wide.
let unicode: { visible: RegExp; rgiEmoji: RegExp; pictograph: RegExp; spacingMark: RegExp; ignorable: RegExp; emoji: RegExp } | undefined;
function unicodeRegexes(): NonNullable<typeof unicode> {
  unicode ??= {
    visible: /[^\p{Default_Ignorable_Code_Point}\p{Control}\p{Format}\p{Nonspacing_Mark}\p{Enclosing_Mark}\p{Surrogate}]/u,
    rgiEmoji: new RegExp('^\\p{RGI_Emoji}$', 'v'),
    pictograph: /^\p{Extended_Pictographic}/u,
    spacingMark: /^\p{Spacing_Mark}$/u,
    ignorable: /^\p{Default_Ignorable_Code_Point}$/u,
    emoji: emojiRegex(),
  };
  return unicode;
}
const KEYCAP = /^[\d#*]\u20e3$/;
/** Text-presentation pictographs that are East Asian Wide all the same (〰 〽 ㊗ ㊙ 🈂 🈷 and a few newer ones). */
const WIDE_PICTOGRAPHS = new Set([0x3030, 0x303d, 0x3297, 0x3299, 0x1f1ae, 0x1f202, 0x1f237, 0x1f6d9, 0x1f7da, 0x1fa8b, 0x1fa8c, 0x1fa8d, 0x1facc, 0x1fadd, 0x1faeb, 0x1faf9, 0x1fafa]);
const clusterWidths = new Map<string, number>();

/** Columns one grapheme cluster takes, as Ink lays it out and terminals draw it. */
export function clusterWidth(cluster: string): number {
  if (cluster.length === 1) {
    const code = cluster.charCodeAt(0);
    if (code >= 0x20 && code < 0x7f) return 1;
  }
  let width = clusterWidths.get(cluster);
  if (width !== undefined) return width;
  width = measureCluster(cluster);
  if (clusterWidths.size > 4096) clusterWidths.clear();
  clusterWidths.set(cluster, width);
  return width;
}

/**
 * Columns of one code point as string-width 7 counts it (its loop body, for
 * a string of one code point: controls, zero-width, combining, surrogate,
 * variation-selector and default-ignorable code points 0, emoji 2, else the
 * East Asian width with ambiguous as narrow), without string-width's
 * Intl.Segmenter, built when it is imported.
 */
function codePointWidth(char: string): number {
  const cp = char.codePointAt(0)!;
  if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f)) return 0;
  if ((cp >= 0x200b && cp <= 0x200f) || cp === 0xfeff) return 0;
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x1ab0 && cp <= 0x1aff) || (cp >= 0x1dc0 && cp <= 0x1dff) || (cp >= 0x20d0 && cp <= 0x20ff) || (cp >= 0xfe20 && cp <= 0xfe2f)) return 0;
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;
  if (cp >= 0xfe00 && cp <= 0xfe0f) return 0;
  const { ignorable, emoji } = unicodeRegexes();
  if (ignorable.test(char)) return 0;
  emoji.lastIndex = 0; // a /g regex, reused
  if (emoji.test(char)) return 2;
  return eastAsianWidth(cp, { ambiguousAsWide: false });
}

function measureCluster(cluster: string): number {
  const { visible, rgiEmoji, pictograph, spacingMark } = unicodeRegexes();
  const start = cluster.search(visible);
  if (start < 0) return 0; // only marks, joiners, controls
  if (rgiEmoji.test(cluster) || KEYCAP.test(cluster) || (cluster.length <= 50 && cluster.includes('\u200d') && (cluster.match(/\p{Extended_Pictographic}/gu)?.length ?? 0) >= 2)) return 2;
  const chars = [...cluster.slice(start)];
  const base = chars[0]!;
  const cp = base.codePointAt(0)!;
  // A pictograph without emoji presentation takes its East Asian width: narrow but for a few.
  let width = pictograph.test(base) ? (WIDE_PICTOGRAPHS.has(cp) ? 2 : 1) : codePointWidth(base);
  // Spacing marks and half/full-width forms inside the cluster add their own width.
  for (const c of chars.slice(1)) if (spacingMark.test(c) || (c >= '\uff00' && c <= '\uffef')) width += codePointWidth(c);
  return width;
}

/** Display width of `text` (wide and emoji characters count as two); fast for plain ASCII, linear always. */
export function displayWidth(text: string): number {
  if (isPlainAscii(text) || isSingleNarrowText(text)) return text.length;
  let width = 0;
  for (const cluster of graphemes(text)) width += clusterWidth(cluster);
  return width;
}

/** Pads `text` to `width` terminal columns (wide and emoji characters count as two). */
export function padColumns(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

/**
 * Cuts `text` to at most `width` columns, ending with `…` when cut (or
 * always, with `cut`: the caller already dropped part of it). Reads only as
 * much of `text` as the cut needs.
 */
export function truncateColumns(text: string, width: number, cut = false): string {
  if (width <= 0) return '';
  if (isPlainAscii(text) || isSingleNarrowText(text)) {
    if (!cut && text.length <= width) return text;
    return `${text.slice(0, Math.min(text.length, width - 1))}…`;
  }
  let kept = ''; // what fits in width - 1 columns
  let used = 0;
  let over = false;
  let all = 0; // columns of everything read
  for (const cluster of graphemes(text)) {
    const w = clusterWidth(cluster);
    all += w;
    if (all > width) {
      over = true;
      break;
    }
    if (used + w <= width - 1) {
      kept += cluster;
      used += w;
    }
  }
  if (!over && !cut) return text;
  return `${kept}…`;
}

/**
 * `text` cut to at most `max` code units at a code point boundary, so a
 * caller can bound the work on hostile input before looking at it.
 */
export function clipUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1; // do not split a surrogate pair
  return text.slice(0, end);
}

/**
 * Wraps `text` to `width` columns the way wrap-ansi does with `hard: true,
 * trim: false` (words break at spaces; a word longer than the row breaks
 * anywhere), except that a row a wrap began does not start with the spaces
 * it broke at (a line's own indent stays), in time linear in the text
 * consumed, stopping after `maxRows` rows. `more` says that rows were left out.
 */
export function wrapColumns(text: string, width: number, maxRows = Number.POSITIVE_INFINITY): { rows: string[]; more: boolean } {
  if (width <= 0 || maxRows <= 0) return { rows: [], more: text.length > 0 };
  // No more text than the rows can show is looked at (a row holds at most a few code units per column).
  const source = clipUnits(text, wrapBudget(width, maxRows));
  const rows: string[] = [];
  const lines = source.split('\n');
  for (let l = 0; l < lines.length; l++) {
    const lineRows = wrapLine(lines[l]!, width, maxRows - rows.length + 1);
    rows.push(...lineRows);
    if (rows.length > maxRows) return { rows: rows.slice(0, maxRows), more: true };
    if (rows.length === maxRows && l < lines.length - 1) return { rows, more: true };
  }
  return { rows, more: source.length < text.length };
}

/** Code units of text enough to fill `maxRows` rows of `width` columns, with room for marks and wide characters. */
export function wrapBudget(width: number, maxRows: number): number {
  return Number.isFinite(maxRows) ? (maxRows + 1) * (Math.max(1, width) + 1) * 4 + 64 : Number.POSITIVE_INFINITY;
}

/** One line (no newline) wrapped, at most `limit` rows (one more than the caller shows tells it there was more). */
function wrapLine(line: string, width: number, limit: number): string[] {
  const rows = [''];
  let rowWidth = 0;
  /** Whether the last row was begun by a wrap (not by the line's start). */
  let wrapped = false;
  const words = line.split(' ');
  for (let index = 0; index < words.length && rows.length <= limit; index++) {
    const word = words[index]!;
    const wordWidth = displayWidth(word);
    if (index !== 0) {
      if (rowWidth >= width) {
        rows.push('');
        rowWidth = 0;
        wrapped = true;
      }
      // A row that a wrap began does not start with the spaces the wrap broke at.
      if (!(wrapped && rowWidth === 0)) {
        rows[rows.length - 1] += ' ';
        rowWidth += 1;
      }
    }
    if (wordWidth > width) {
      // A word longer than a row: start it here if that takes no more rows than starting it on the next.
      const remaining = width - rowWidth;
      const breaksHere = 1 + Math.floor((wordWidth - remaining - 1) / width);
      const breaksNext = Math.floor((wordWidth - 1) / width);
      if (breaksNext < breaksHere) {
        rows.push('');
        rowWidth = 0;
      }
      const clusters = graphemes(word);
      let taken = 0;
      for (const cluster of clusters) {
        const w = clusterWidth(cluster);
        taken += cluster.length;
        if (rowWidth + w <= width) {
          rows[rows.length - 1] += cluster;
        } else {
          rows.push(cluster);
          rowWidth = 0;
          if (rows.length > limit) break;
        }
        rowWidth += w;
        if (rowWidth === width && taken < word.length) {
          rows.push('');
          rowWidth = 0;
          if (rows.length > limit) break;
        }
      }
      continue;
    }
    if (rowWidth + wordWidth > width && rowWidth > 0 && wordWidth > 0) {
      rows.push('');
      rowWidth = 0;
      wrapped = true;
    }
    rows[rows.length - 1] += word;
    rowWidth += wordWidth;
  }
  return rows;
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

/**
 * `12s`, `4m`, `3h`, `2d`: the time since `iso` at `now`, in whole units
 * passed (59.7 s is `59s`, never `60s`): a view that prints ages redraws
 * them at least every second ({@link AGE_TICK_MS}).
 */
export function age(iso: string, now: Date = new Date()): string {
  return duration(Math.floor(Math.max(0, now.getTime() - Date.parse(iso)) / 1000));
}

/** How often a printed {@link age} can change: it counts whole seconds under a minute. */
export const AGE_TICK_MS = 1000;

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
 * record, the watchdog's limit, last event and open work, a lingering
 * agent, background tasks, how the last turn stopped when it did not
 * finish, processes the sweep could not end, a partial cost.
 */
export function runNoticeLines(run: RunRecord): string[] {
  const lines: string[] = [];
  if (run.record_tampering) lines.push(`tampered meta.json was rewritten by someone else (${run.record_tampering.fields.join(', ')}); pak2's record stands`);
  if (run.watchdog) lines.push(`watchdog silent ${run.watchdog.silent_seconds} s > ${run.watchdog.limit} ${run.watchdog.limit_seconds} s; last event: ${run.watchdog.last_event}${run.watchdog.open_work?.length ? `; open: ${run.watchdog.open_work.join('; ')}` : ''}`);
  if (run.lingered) {
    const cap = run.linger?.ended_by === 'cap';
    lines.push(`lingered the agent reported its result but did not exit; pak2 ended it ${cap ? `at the cap${run.linger?.open_work?.length ? ` with ${run.linger.open_work.join('; ')} still open` : ''}` : 'once its work had ended (the grace, nothing open)'}`);
  }
  if (run.background_tasks?.length) {
    const unfinished = run.background_tasks.filter((t) => t.unfinished).length;
    const each = run.background_tasks.map((t) => `${t.type}${t.description ? ` ${JSON.stringify(t.description)}` : ` ${t.id}`} ${t.status === 'running' ? 'never finished' : t.status}${t.unfinished ? ' (unfinished)' : ''}`);
    lines.push(`background ${run.background_tasks.length} task(s)${unfinished ? `, ${unfinished} unfinished` : ''}: ${each.join('; ')}`);
  }
  if ((run.stop_reason && !['end_turn', 'stop_sequence'].includes(run.stop_reason)) || (run.terminal_reason && run.terminal_reason !== 'completed')) {
    lines.push(`turn stop_reason ${run.stop_reason ?? '-'}, terminal_reason ${run.terminal_reason ?? '-'}`);
  }
  if (run.leftovers?.length) lines.push(`leftovers ${run.leftovers.length} process(es) outlived the sweep: ${run.leftovers.join('; ')}`);
  if (run.permission_denials?.length) lines.push(`denied ${run.permission_denials.length} tool call(s) refused: ${run.permission_denials.map((d) => `${d.tool}${d.path ? ` ${d.path}` : ''}`).join('; ')}`);
  if (run.cost?.partial && run.cost.source === 'unknown') lines.push("cost partial: the agent reported only its thread's running total, and the total before this run was not known; nothing of the thread's history is charged");
  else if (run.cost?.partial) lines.push('cost partial: a part of the run (e.g. the reflection turn) reported no cost');
  return lines;
}

/** One item of a run's `acceptance`, as pak2 shows it. */
type AcceptanceItem = NonNullable<RunRecord['acceptance']>[number];

/**
 * An acceptance item's mark: `✓` verified, `✗` checked and not met (a
 * criterion whose command failed, a runner check that did not hold), `?`
 * not verified (a criterion nothing proved either way).
 */
export function acceptanceMark(item: AcceptanceItem): string {
  if (item.verified) return '✓';
  return item.result === 'unverified' ? '?' : '✗';
}

/** `✓ item — evidence`: one acceptance item on one line. */
export function acceptanceLine(item: AcceptanceItem): string {
  return `${acceptanceMark(item)} ${item.item}${item.evidence ? ` — ${item.evidence}` : ''}`;
}

/** `2 of 3 criteria verified, 1 failed` over a run's acceptance criteria, or undefined when it has none. */
export function acceptanceSummary(items: readonly AcceptanceItem[] | undefined): string | undefined {
  const criteria = (items ?? []).filter((a) => a.criterion);
  if (!criteria.length) return undefined;
  const verified = criteria.filter((a) => a.verified).length;
  const failed = criteria.filter((a) => !a.verified && a.result !== 'unverified').length;
  return `${verified} of ${criteria.length} criteria verified${failed ? `, ${failed} failed` : ''}`;
}
