import { jsx as _jsx } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { KEYMAP } from '../keymap.js';
import { fit } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
/** The help overlay: every binding of the one keymap. */
export function Help({ width, height }) {
    const w = innerWidth(width);
    const rows = KEYMAP.map((b) => `${fit(b.keys, 12)} ${fit(b.scope === 'editing' ? 'in forms' : '', 9)} ${b.description}`);
    return (_jsx(Pane, { title: "Keys", note: "esc or ? closes", width: width, height: height, focused: true, children: rows.slice(0, innerHeight(height)).map((row, i) => (_jsx(Text, { wrap: "truncate", children: fit(row, w) }, i))) }));
}
//# sourceMappingURL=help.js.map