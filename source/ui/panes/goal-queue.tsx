import { Text } from 'ink';
import React from 'react';
import { age, formatCost } from '../../format.js';
import type { GoalRow } from '../../snapshot/types.js';
import { keyOf } from '../keymap.js';
import { fit, windowRange } from '../layout.js';
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
}

const STATUS_COLOR: Record<string, string> = { running: 'yellow', dispatched: 'yellow', completed: 'yellow', queued: 'white' };

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

/** The columns that fit `width`: the id column takes what the others leave. */
export function queueColumns(width: number): { name: ColumnName; width: number }[] {
  let fixed = [...FIXED];
  const used = () => fixed.reduce((sum, c) => sum + c.width + 1, 0);
  for (const drop of DROP_ORDER) {
    if (width - used() >= MIN_ID) break;
    fixed = fixed.filter((c) => c.name !== drop);
  }
  return [{ name: 'id', width: Math.max(1, width - used()) }, ...fixed];
}

/** The text of a goal's status cell: the goal status, or `closed:<reason>`. */
export function statusCell(row: GoalRow): string {
  return row.goal.status === 'closed' ? `closed:${row.goal.closed_reason ?? '?'}` : row.goal.status;
}

/** Case-insensitive match of a filter against id, type, plant, status and body. */
export function matchesFilter(row: GoalRow, filter: string): boolean {
  if (!filter) return true;
  const needle = filter.toLowerCase();
  const g = row.goal;
  return [g.id, g.type, g.assigned_to ?? '', statusCell(row), g.body].some((field) => field.toLowerCase().includes(needle));
}

/** The goal queue: id, type, plant, priority, status, age; open goals first, recently closed after. */
export const GoalQueue = React.memo(function GoalQueue({ rows, cursor, filter, width, height, focused, now }: GoalQueueProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const columns = queueColumns(w);
  const line = (cells: Record<ColumnName, string>) => columns.map((c) => fit(c.name === 'id' ? cells.id : cells[c.name], c.width)).join(' ');
  const [start, end] = windowRange(rows.length, cursor, Math.max(0, h - 1));
  const note = `${rows.length}${filter ? ` matching /${filter}` : ''}`;
  return (
    <Pane title="Goals" note={note} width={width} height={height} focused={focused}>
      <Text bold wrap="truncate">
        {fit(line({ id: 'ID', type: 'TYPE', plant: 'PLANT', pri: 'PRI', status: 'STATUS', age: 'AGE', cost: 'COST' }), w)}
      </Text>
      {rows.length === 0 ? (
        <Text dimColor wrap="truncate">
          {fit(filter ? `no goal matches the filter (${keyOf('back')} clears it)` : `no goals yet: press ${keyOf('goal.new')} to submit one`, w)}
        </Text>
      ) : (
        rows.slice(start, end).map((row, i) => {
          const index = start + i;
          const g = row.goal;
          const status = statusCell(row);
          const color = g.status === 'closed' ? (g.closed_reason === 'success' ? 'green' : 'red') : STATUS_COLOR[g.status];
          return (
            <Text key={g.id} inverse={index === cursor && focused} bold={index === cursor} color={color} wrap="truncate">
              {fit(line({ id: g.id, type: g.type, plant: g.assigned_to ?? '-', pri: String(g.priority), status, age: age(g.submitted_at, new Date(now)), cost: formatCost(row.run?.cost) }), w)}
            </Text>
          );
        })
      )}
    </Pane>
  );
});
