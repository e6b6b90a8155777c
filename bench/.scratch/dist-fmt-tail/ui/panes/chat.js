import { jsx as _jsx, jsxs as _jsxs } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { fit, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
const SENDER_COLOR = { operator: 'cyan', garden: 'green', system: 'gray' };
/** Renders a field's text with a block cursor. */
export function withCursor(state) {
    return `${state.text.slice(0, state.cursor)}█${state.text.slice(state.cursor)}`;
}
/** The chat with the garden: the latest conversation's messages, and an input line. */
export const Chat = React.memo(function Chat({ messages, draft, readOnly, width, height, focused }) {
    const w = innerWidth(width);
    const h = innerHeight(height);
    const lines = [];
    for (const m of messages) {
        wrapLines(`${m.sender}: ${m.text}`, w).forEach((text) => lines.push({ sender: m.sender, text }));
    }
    const input = draft ? `› ${withCursor(draft)}` : readOnly ? 'read-only' : focused ? 'press c or enter to write' : '';
    const room = Math.max(0, h - 1);
    const shown = room > 0 ? lines.slice(-room) : [];
    return (_jsxs(Pane, { title: "Chat", width: width, height: height, focused: focused, children: [lines.length === 0 && room > 0 ? _jsx(Text, { dimColor: true, children: fit('no conversation yet', w) }) : null, shown.map((line, i) => (_jsx(Text, { color: SENDER_COLOR[line.sender], wrap: "truncate", children: fit(line.text, w) }, i))), _jsx(Text, { color: draft ? 'cyan' : 'gray', wrap: "truncate", children: fit(input, w) })] }));
});
//# sourceMappingURL=chat.js.map