import { jsx as _jsx, jsxs as _jsxs } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { duration, formatCost } from '../../format.js';
import { fit, spinner, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
const COLORS = { text: undefined, tool: 'cyan', result: 'gray', error: 'red', info: 'gray', usage: 'green' };
/**
 * The run tail: the followed run's stream for a person (assistant text, tool
 * calls with their arguments summarised, tool results cut short, errors in
 * red), with a header of status, elapsed time, a spinner while running,
 * tokens and cost as they arrive.
 */
export const RunTail = React.memo(function RunTail({ tail, run, scroll, width, height, focused, now }) {
    const w = innerWidth(width);
    const h = innerHeight(height);
    const wrapped = React.useMemo(() => {
        const body = [];
        if (!tail) return body;
        if (tail.truncated)
            body.push({ kind: 'info', text: `… (opened at the end of a ${Math.round(tail.bytes / 1024)} KB stream)` });
        for (const line of tail.lines)
            for (const part of wrapLines(line.text, w))
                body.push({ kind: line.kind, text: part });
        return body;
    }, [tail, w]);
    if (!tail || !run) {
        return (_jsx(Pane, { title: "Run", width: width, height: height, focused: focused, children: _jsx(Text, { dimColor: true, children: fit('no run yet', w) }) }));
    }
    const live = run.status === 'running';
    const end = run.completed_at ? Date.parse(run.completed_at) : now;
    const elapsed = duration(Math.max(0, end - Date.parse(run.started_at)) / 1000);
    const tokens = tail.usage.inputTokens || tail.usage.outputTokens ? `${tail.usage.inputTokens} in/${tail.usage.outputTokens} out` : '';
    const cost = run.cost ? formatCost(run.cost) : tail.usage.costUsd !== undefined ? `$${tail.usage.costUsd.toFixed(4)}` : '';
    const header = [live ? `${spinner(now)} running` : `${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`, elapsed, `${run.driver}/${run.model}`, tokens, cost].filter(Boolean).join(' · ');
    const body = wrapped;
    const room = Math.max(0, h - 1);
    const last = Math.max(room, body.length - scroll);
    const shown = body.slice(Math.max(0, last - room), last);
    return (_jsxs(Pane, { title: `Run ${run.id}`, note: scroll ? `↑${scroll}` : undefined, width: width, height: height, focused: focused, children: [_jsx(Text, { color: live ? 'yellow' : run.status === 'success' ? 'green' : 'red', wrap: "truncate", children: fit(header, w) }), shown.map((line, i) => (_jsx(Text, { color: COLORS[line.kind], dimColor: line.kind === 'info', wrap: "truncate", children: fit(line.text, w) }, i)))] }));
});
//# sourceMappingURL=run-tail.js.map