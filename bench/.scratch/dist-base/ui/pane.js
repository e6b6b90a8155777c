import { jsx as _jsx, jsxs as _jsxs } from "react/jsx-runtime";
import { Box, Text } from 'ink';
import React from 'react';
import { fit, widthOf } from './layout.js';
/** Width inside a pane's borders and padding. */
export function innerWidth(width) {
    return Math.max(0, width - 4);
}
/** Rows inside a pane's borders. */
export function innerHeight(height) {
    return Math.max(0, height - 2);
}
/**
 * A bordered pane whose title sits in its top border. Exactly `height` rows
 * tall; its children must fit `innerHeight(height)` rows of `innerWidth(width)`.
 */
export function Pane({ title, note, width, height, focused, children }) {
    const color = focused ? 'cyan' : 'gray';
    const label = ` ${title} `;
    const right = note ? ` ${note} ` : '';
    const fill = Math.max(0, width - 4 - widthOf(label) - widthOf(right));
    const top = `╭─${label}${'─'.repeat(fill)}${right}─╮`;
    return (_jsxs(Box, { flexDirection: "column", width: width, height: height, children: [_jsx(Text, { color: color, bold: focused, wrap: "truncate", children: fit(top, width) }), _jsx(Box, { borderStyle: "round", borderTop: false, borderColor: color, paddingX: 1, width: width, height: height - 1, flexDirection: "column", overflow: "hidden", children: children })] }));
}
//# sourceMappingURL=pane.js.map