import { jsx as _jsx, jsxs as _jsxs } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { age, formatCost } from '../../format.js';
import { fit, windowRange } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
const STATUS_COLOR = { running: 'yellow', dispatched: 'yellow', completed: 'yellow', queued: 'white' };
const FIXED = [
    { name: 'type', width: 8 },
    { name: 'plant', width: 10 },
    { name: 'pri', width: 3 },
    { name: 'status', width: 15 },
    { name: 'age', width: 4 },
    { name: 'cost', width: 8 },
];
/** Columns dropped first when the pane is narrow. */
const DROP_ORDER = ['cost', 'pri', 'plant', 'age', 'type'];
const MIN_ID = 18;
/** The columns that fit `width`: the id column takes what the others leave. */
export function queueColumns(width) {
    let fixed = [...FIXED];
    const used = () => fixed.reduce((sum, c) => sum + c.width + 1, 0);
    for (const drop of DROP_ORDER) {
        if (width - used() >= MIN_ID)
            break;
        fixed = fixed.filter((c) => c.name !== drop);
    }
    return [{ name: 'id', width: Math.max(1, width - used()) }, ...fixed];
}
/** The text of a goal's status cell: the goal status, or `closed:<reason>`. */
export function statusCell(row) {
    return row.goal.status === 'closed' ? `closed:${row.goal.closed_reason ?? '?'}` : row.goal.status;
}
/** Case-insensitive match of a filter against id, type, plant, status and body. */
export function matchesFilter(row, filter) {
    if (!filter)
        return true;
    const needle = filter.toLowerCase();
    const g = row.goal;
    return [g.id, g.type, g.assigned_to ?? '', statusCell(row), g.body].some((field) => field.toLowerCase().includes(needle));
}
/** The goal queue: id, type, plant, priority, status, age; open goals first, recently closed after. */
export const GoalQueue = React.memo(function GoalQueue({ rows, cursor, filter, width, height, focused, now }) {
    const w = innerWidth(width);
    const h = innerHeight(height);
    const columns = queueColumns(w);
    const line = (cells) => columns.map((c) => fit(c.name === 'id' ? cells.id : cells[c.name], c.width)).join(' ');
    const [start, end] = windowRange(rows.length, cursor, Math.max(0, h - 1));
    const note = `${rows.length}${filter ? ` matching /${filter}` : ''}`;
    return (_jsxs(Pane, { title: "Goals", note: note, width: width, height: height, focused: focused, children: [_jsx(Text, { bold: true, wrap: "truncate", children: fit(line({ id: 'ID', type: 'TYPE', plant: 'PLANT', pri: 'PRI', status: 'STATUS', age: 'AGE', cost: 'COST' }), w) }), rows.length === 0 ? (_jsx(Text, { dimColor: true, wrap: "truncate", children: fit(filter ? 'no goal matches the filter (esc clears it)' : 'no goals yet: press n to submit one', w) })) : (rows.slice(start, end).map((row, i) => {
                const index = start + i;
                const g = row.goal;
                const status = statusCell(row);
                const color = g.status === 'closed' ? (g.closed_reason === 'success' ? 'green' : 'red') : STATUS_COLOR[g.status];
                return (_jsx(Text, { inverse: index === cursor && focused, bold: index === cursor, color: color, wrap: "truncate", children: fit(line({ id: g.id, type: g.type, plant: g.assigned_to ?? '-', pri: String(g.priority), status, age: age(g.submitted_at, new Date(now)), cost: formatCost(row.run?.cost) }), w) }, g.id));
            }))] }));
});
//# sourceMappingURL=goal-queue.js.map