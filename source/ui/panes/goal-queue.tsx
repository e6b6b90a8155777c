import React from 'react';
import type { GoalRecord } from '../../contracts/index.js';
import { age, formatCost, sanitize, wrapColumns } from '../../format.js';
import { dependencyStatusText, goalStatusText } from '../../landing-words.js';
import type { GoalRow } from '../../snapshot/types.js';
import { keyOf } from '../keymap.js';
import { fit, widthOf, windowRange } from '../layout.js';
import { Lines, type StyledLine } from '../lines.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link GoalQueue}. `rows` are already filtered; `now` makes ages testable. */
export interface GoalQueueProps {
  rows: readonly GoalRow[];
  cursor: number;
  filter: string;
  width: number;
  height: number;
  focused: boolean;
  now: number;
  /** Why the goals could not be read (Snapshot.unread): shown first, in place of "no goals yet". */
  unread?: string | undefined;
}

const STATUS_COLOR: Record<string, string> = { running: 'yellow', dispatched: 'yellow', completed: 'yellow', queued: 'white', blocked: 'magenta' };

/** The colour of a goal whose run's landing the status column names: the operator's turn magenta (as blocked), on its way yellow, ended green or red. */
const LANDING_COLOR: Record<string, string> = { 'awaiting review': 'magenta', landing: 'yellow', waiting: 'yellow', landed: 'green', conflict: 'red', rejected: 'red', 'land failed': 'red' };

/** The colour of a row: its landing's, else its status's (closed: green for success, red otherwise). */
function rowColor(row: GoalRow, status: string): string | undefined {
  const g = row.goal;
  // Held by a failed dependency: the operator's turn (as blocked); waiting for one: not yet its turn.
  if (row.blocked_on) return 'magenta';
  if (row.waiting_for) return 'gray';
  return LANDING_COLOR[status] ?? (g.status === 'closed' ? (g.closed_reason === 'success' ? 'green' : 'red') : STATUS_COLOR[g.status]);
}

/** The mark before `blocked` in the status column: the goal waits on an answer (the inbox lists its question). */
export const BLOCKED_MARK = '?';

/**
 * The status as the queue shows it: {@link statusCell}, with a blocked goal
 * marked (`? blocked`), a queued goal that waits for dependencies as
 * `waits for 12,13`, and one a failed dependency holds as `blocked: 12
 * failed` (docs/goal/level2.md, "Dependencies").
 */
export function statusShown(row: GoalRow): string {
  if (row.goal.status === 'blocked') return `${BLOCKED_MARK} blocked`;
  return dependencyStatusText(row) ?? statusCell(row);
}

/** The mark before a runner's name in a goal's row. */
export const RUNNER_MARK = '⇄';

/**
 * The id cell of a row in `width` columns: the goal id, and when its latest
 * run has a runner, ` ⇄ name` after it. The name keeps at least half the
 * cell (or its whole length) and the id is cut first.
 */
export function idCell(row: GoalRow, width: number): string {
  const runner = row.run?.runner?.name;
  if (!runner) return row.goal.id;
  const suffix = ` ${RUNNER_MARK} ${runner}`;
  const room = Math.min(widthOf(suffix), Math.max(4, Math.floor(width / 2)));
  if (widthOf(row.goal.id) + widthOf(suffix) <= width) return `${row.goal.id}${suffix}`;
  return `${fit(row.goal.id, Math.max(1, width - room))}${fit(suffix, room)}`;
}

type ColumnName = 'id' | 'type' | 'plant' | 'pri' | 'status' | 'age' | 'cost';
const FIXED: { name: Exclude<ColumnName, 'id'>; width: number }[] = [
  { name: 'type', width: 8 },
  { name: 'plant', width: 10 },
  { name: 'pri', width: 3 },
  { name: 'status', width: 16 }, // closed:cancelled
  { name: 'age', width: 4 },
  { name: 'cost', width: 8 },
];
/** Columns dropped first when the pane is narrow. */
const DROP_ORDER: ColumnName[] = ['cost', 'pri', 'plant', 'age', 'type'];
const MIN_ID = 18;
/** The id's least width once every column but the status is dropped: the status narrows for it, down to {@link STATUS_MIN}. */
const MIN_ID_NARROW = 8;
const STATUS_MIN = 6;

/** The widest status column: a dependency's words (`blocked: 12 cancelled`, `waits for 12,13`) widen it up to this. */
const STATUS_MAX = 22;

/**
 * The columns that fit `width`: the id column takes what the others leave.
 * `statusWidth` (default 16) widens the status column for rows whose
 * dependency words are longer (at most {@link STATUS_MAX}).
 */
export function queueColumns(width: number, statusWidth = 16): { name: ColumnName; width: number }[] {
  let fixed = FIXED.map((c) => (c.name === 'status' ? { ...c, width: Math.min(STATUS_MAX, Math.max(c.width, statusWidth)) } : c));
  const used = () => fixed.reduce((sum, c) => sum + c.width + 1, 0);
  for (const drop of DROP_ORDER) {
    if (width - used() >= MIN_ID) break;
    fixed = fixed.filter((c) => c.name !== drop);
  }
  // A pane narrower still (a tiny terminal): the status gives way until the id shows a few characters.
  const short = MIN_ID_NARROW - (width - used());
  if (short > 0) fixed = fixed.map((c) => (c.name === 'status' ? { ...c, width: Math.max(STATUS_MIN, c.width - short) } : c));
  // Narrower than an id and a status side by side: the id alone.
  if (width - used() < MIN_ID_NARROW / 2) fixed = [];
  return [{ name: 'id', width: Math.max(1, width - used()) }, ...fixed];
}

/**
 * The text of a goal's status cell: its run's landing in words while the
 * goal waits on it or once it closed on it (`awaiting review`, `landing`,
 * `waiting`, `landed`, `rejected`, `conflict`, `land failed`), else the goal
 * status, or `closed:<reason>` (as `pak2 goals` prints it).
 */
export function statusCell(row: GoalRow): string {
  return goalStatusText(row.goal, row.landing);
}

const ASCII = /^[\x00-\x7f]*$/;
let asciiNeedle = '';
let asciiPattern: RegExp | undefined;

/** `needle` (lower case, ASCII) as a case-insensitive pattern, made once per filter text. */
function patternOf(needle: string): RegExp {
  if (needle !== asciiNeedle || !asciiPattern) {
    asciiNeedle = needle;
    asciiPattern = new RegExp(needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
  }
  return asciiPattern;
}

/**
 * Case-insensitive match of a filter against id, type, plant, status and
 * body. Filtering 10,000 goals runs on every key typed into the filter: an
 * ASCII field is searched with a case-insensitive pattern (the same answer
 * as lower-casing it, without a lower-case copy of every body); any other
 * field is lower-cased.
 */
export function matchesFilter(row: GoalRow, filter: string): boolean {
  if (!filter) return true;
  const needle = filter.toLowerCase();
  const pattern = ASCII.test(needle) && asciiGoal(row.goal) ? patternOf(needle) : undefined;
  const has = (field: string) => (pattern ? pattern.test(field) : field.toLowerCase().includes(needle));
  const g = row.goal;
  // A landing's words (`awaiting review`, `landed`) and the status they stand for (`completed`, `closed:success`) both match.
  return has(g.id) || has(g.type) || has(g.assigned_to ?? '') || has(statusCell(row)) || (row.landing !== undefined && has(goalStatusText(g))) || has(g.body);
}

/** Whether a goal's searched fields are all ASCII, by record (a goal's record is new when it changes). */
const asciiGoals = new WeakMap<GoalRecord, boolean>();

function asciiGoal(goal: GoalRecord): boolean {
  let ascii = asciiGoals.get(goal);
  if (ascii === undefined) {
    ascii = ASCII.test(goal.id) && ASCII.test(goal.type) && ASCII.test(goal.assigned_to ?? '') && ASCII.test(goal.status) && ASCII.test(goal.closed_reason ?? '') && ASCII.test(goal.body);
    asciiGoals.set(goal, ascii);
  }
  return ascii;
}

/** The last filtering, so typing one more character filters its matches, not every goal again. */
let lastFilter: { rows: readonly GoalRow[]; filter: string; matches: readonly GoalRow[] } | undefined;

/**
 * The rows `filter` matches ({@link matchesFilter}); `rows` itself when
 * there is no filter. A filter that extends the last one (a character
 * typed, ASCII) looks only at what the last one matched.
 */
export function filterRows(rows: readonly GoalRow[], filter: string): readonly GoalRow[] {
  if (!filter) {
    lastFilter = undefined; // keeps no snapshot's rows alive
    return rows;
  }
  const last = lastFilter;
  const from = last && last.rows === rows && last.filter && filter.startsWith(last.filter) && ASCII.test(filter) ? last.matches : rows;
  const matches = from.filter((row) => matchesFilter(row, filter));
  lastFilter = { rows, filter, matches };
  return matches;
}

function lineOf(columns: { name: ColumnName; width: number }[], cells: Record<ColumnName, string>): string {
  return columns.map((c) => fit(c.name === 'id' ? cells.id : cells[c.name], c.width)).join(' ');
}

/** A row's text by row, for its width and time: a row kept from one snapshot to the next is not laid out again on each key. */
const rowTexts = new WeakMap<GoalRow, { width: number; now: number; text: string }>();

function rowText(row: GoalRow, columns: { name: ColumnName; width: number }[], width: number, now: number, status: string): string {
  const known = rowTexts.get(row);
  if (known && known.width === width && known.now === now) return known.text;
  const g = row.goal;
  const idWidth = columns.find((c) => c.name === 'id')?.width ?? width;
  const text = fit(lineOf(columns, { id: idCell(row, idWidth), type: g.type, plant: g.assigned_to ?? '-', pri: String(g.priority), status, age: age(g.submitted_at, new Date(now)), cost: formatCost(row.run?.cost) }), width);
  rowTexts.set(row, { width, now, text });
  return text;
}

/** The goal queue: id, type, plant, priority, status, age; open goals first, recently closed after. */
export const GoalQueue = React.memo(function GoalQueue({ rows, cursor, filter, width, height, focused, now, unread }: GoalQueueProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  // Only a queue with dependency words in it has a wider status column: every other queue keeps its layout.
  const statusWidth = rows.reduce((most, row) => (row.blocked_on || row.waiting_for ? Math.max(most, widthOf(statusShown(row))) : most), 16);
  const columns = queueColumns(w, statusWidth);
  const line = (cells: Record<ColumnName, string>) => lineOf(columns, cells);
  // A failed read is said first (up to 3 rows); the rows below it are the last read's.
  const said = unread ? wrapColumns(sanitize(`goals not read: ${unread}${rows.length ? ' (below: as last read)' : ''}`), w, 3).rows : [];
  const [start, end] = windowRange(rows.length, cursor, Math.max(0, h - 1 - said.length));
  const note = `${rows.length}${filter ? ` matching /${filter}` : ''}`;
  const rowLines: StyledLine[] =
    rows.length === 0
      ? unread
        ? []
        : [{ text: fit(filter ? `no goal matches the filter (${keyOf('back')} clears it)` : `no goals yet: press ${keyOf('goal.new')} to submit one`, w), dimColor: true }]
      : rows.slice(start, end).map((row, i) => {
          const index = start + i;
          const status = statusShown(row);
          return { text: rowText(row, columns, w, now, status), inverse: index === cursor && focused, bold: index === cursor, color: rowColor(row, status) };
        });
  const body: StyledLine[] = [...said.map((text) => ({ text: fit(text, w), color: 'red' })), ...rowLines];
  return (
    <Pane title="Goals" note={note} width={width} height={height} focused={focused}>
      <Lines lines={[{ text: fit(line({ id: 'ID', type: 'TYPE', plant: 'PLANT', pri: 'PRI', status: 'STATUS', age: 'AGE', cost: 'COST' }), w), bold: true }, ...body]} />
    </Pane>
  );
});
