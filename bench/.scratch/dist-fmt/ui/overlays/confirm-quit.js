import { jsx as _jsx } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { fit } from '../layout.js';
import { innerWidth, Pane } from '../pane.js';
/** Asks before quitting while runs are live, and says what happens to them. */
export function ConfirmQuit({ live, width }) {
    const w = innerWidth(width);
    const lines = [
        `${live.length} run${live.length === 1 ? ' is' : 's are'} live: ${live.join(', ')}`,
        'Quitting stops the coordinator: each live run is killed (its whole process group)',
        'and closed as killed (failure_reason coordinator_stopped); its goal closes failure',
        'the next time a coordinator runs. Queued goals stay queued.',
        '',
        'Quit now? y / n',
    ];
    return (_jsx(Pane, { title: "Quit?", width: width, height: lines.length + 2, focused: true, children: lines.map((line, i) => (_jsx(Text, { color: i === lines.length - 1 ? 'yellow' : undefined, wrap: "truncate", children: fit(line, w) }, i))) }));
}
//# sourceMappingURL=confirm-quit.js.map