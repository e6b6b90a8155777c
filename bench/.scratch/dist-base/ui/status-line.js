import { jsx as _jsx } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { fit } from './layout.js';
/** The status line: coordinator state, live runs, cost today, the garden's name, and the latest message. */
export const StatusLine = React.memo(function StatusLine({ snapshot, message, width }) {
    const s = snapshot;
    const state = s.garden.readOnly ? 'dashboard (read-only)' : `coordinator ${s.coordinator.state}`;
    const cost = `$${s.costToday.usd.toFixed(4)} today${s.costToday.unknown ? ` (+${s.costToday.unknown} unknown)` : ''}`;
    const left = [`● ${state}`, `${s.coordinator.liveRuns.length} live`, `${s.counts.queued} queued`, cost, s.garden.name].join(' · ');
    // A message goes first, so a narrow terminal cuts the counters, not the news.
    const text = message ? `${message.text} │ ${left}` : `${left} │ ? help`;
    return (_jsx(Text, { color: message?.error ? 'red' : s.coordinator.liveRuns.length ? 'yellow' : 'green', wrap: "truncate", children: fit(text, width) }));
});
//# sourceMappingURL=status-line.js.map