import { jsx as _jsx } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { age } from '../../format.js';
import { fit, windowRange } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
/** The inbox: reply notes newest first, unread marked with ●. */
export const Inbox = React.memo(function Inbox({ notes, cursor, width, height, focused, now }) {
    const w = innerWidth(width);
    const h = innerHeight(height);
    const unread = notes.filter((n) => n.unread).length;
    const [start, end] = windowRange(notes.length, cursor, h);
    return (_jsx(Pane, { title: "Inbox", note: unread ? `${unread} unread` : String(notes.length), width: width, height: height, focused: focused, children: notes.length === 0 ? (_jsx(Text, { dimColor: true, children: fit('no replies yet', w) })) : (notes.slice(start, end).map((note, i) => (_jsx(Text, { inverse: start + i === cursor && focused, bold: note.unread, wrap: "truncate", children: fit(`${note.unread ? '●' : ' '} ${fit(age(note.modifiedAt, new Date(now)), 3)} ${note.title}`, w) }, note.name)))) }));
});
//# sourceMappingURL=inbox.js.map