import { jsx as _jsx, jsxs as _jsxs } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { GOAL_TYPES } from '../../contracts/index.js';
import { withCursor } from '../panes/chat.js';
import { fit, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
import { FORM_FIELDS } from './goal-form-state.js';
/** The new-goal form: type, plant, priority, driver, model and a multi-line body. */
export function GoalForm({ state, choices, width, height }) {
    const w = innerWidth(width);
    const h = innerHeight(height);
    const at = (name) => FORM_FIELDS[state.field] === name;
    const choice = (name, options) => (at(name) ? `‹ ${options[state[name]] ?? '-'} ›` : options[state[name]] ?? '-');
    const text = (name, placeholder = '') => (at(name) ? withCursor(state[name]) : state[name].text || placeholder);
    const rows = [
        { label: 'type', value: choice('type', GOAL_TYPES), active: at('type') },
        { label: 'plant', value: choice('plant', choices.plants), active: at('plant') },
        { label: 'priority', value: text('priority'), active: at('priority') },
        { label: 'driver', value: choice('driver', choices.drivers), active: at('driver') },
        { label: 'model', value: text('model', '(default)'), active: at('model') },
    ];
    const bodyText = at('body') ? withCursor(state.body) : state.body.text || '(the task: enter adds a line)';
    const bodyLines = bodyText.split('\n').flatMap((l) => wrapLines(l, w - 2));
    const room = Math.max(1, h - rows.length - 4);
    return (_jsxs(Pane, { title: "New goal", note: "tab next field \u00B7 \u2190\u2192 choose \u00B7 ctrl-s submit \u00B7 esc cancel", width: width, height: height, focused: true, children: [rows.map((row) => (_jsx(Text, { color: row.active ? 'cyan' : undefined, bold: row.active, wrap: "truncate", children: fit(`${fit(row.label, 9)} ${row.value}`, w) }, row.label))), _jsx(Text, { color: at('body') ? 'cyan' : undefined, bold: at('body'), children: fit('body', w) }), bodyLines.slice(-room).map((line, i) => (_jsx(Text, { wrap: "truncate", children: fit(`  ${line}`, w) }, i))), _jsx(Text, { color: at('submit') ? 'cyan' : 'gray', inverse: at('submit'), children: fit('[ submit ]', 12) }), _jsx(Text, { color: "red", wrap: "truncate", children: fit(state.error ?? '', w) })] }));
}
//# sourceMappingURL=goal-form.js.map