import { jsx as _jsx } from "react/jsx-runtime";
import { Text } from 'ink';
import React from 'react';
import { formatCost } from '../../format.js';
import { fit, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
/** The sections shown for a goal and its latest run: goal fields, body, run record, cost, reflection, final text. */
export function goalDetail(goal, run) {
    const sections = [
        {
            heading: 'Goal',
            lines: [
                `id ${goal.id}  type ${goal.type}  priority ${goal.priority}  plant ${goal.assigned_to ?? '-'}`,
                `status ${goal.status}${goal.closed_reason ? ` (${goal.closed_reason})` : ''}  submitted ${goal.submitted_at}`,
                ...(goal.driver || goal.model ? [`driver ${goal.driver ?? '(default)'}  model ${goal.model ?? '(default)'}`] : []),
            ],
        },
        { heading: 'Body', lines: goal.body.split('\n') },
    ];
    if (!run)
        return [...sections, { heading: 'Run', lines: ['not dispatched yet'] }];
    const c = run.cost;
    const tokens = c && (c.input_tokens !== undefined || c.output_tokens !== undefined) ? `  tokens ${c.input_tokens ?? 0} in / ${c.output_tokens ?? 0} out` : '';
    sections.push({
        heading: `Run ${run.id}`,
        lines: [
            `status ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}  driver ${run.driver}  model ${run.model}${run.reasoning_effort ? `  effort ${run.reasoning_effort}` : ''}`,
            `started ${run.started_at}${run.completed_at ? `  completed ${run.completed_at}` : ''}`,
            `cost ${c ? `${formatCost(c)} (${c.source})` : '(running)'}${tokens}`,
            ...(run.outputs?.error ? [`error ${run.outputs.error}`] : []),
            ...(run.session_id ? [`session ${run.session_id}`] : []),
            ...(run.num_turns !== undefined ? [`turns ${run.num_turns}`] : []),
        ],
    });
    if (run.reflection)
        sections.push({ heading: 'Reflection', lines: run.reflection.split('\n') });
    if (run.outputs?.final_text)
        sections.push({ heading: 'Final text', lines: run.outputs.final_text.split('\n') });
    return sections;
}
/** A scrollable full-screen detail view (goal and run, or a reply note). */
export function Detail({ title, sections, scroll, width, height }) {
    const w = innerWidth(width);
    const h = innerHeight(height);
    const lines = [];
    for (const section of sections) {
        lines.push({ text: section.heading, heading: true });
        for (const line of section.lines)
            for (const part of wrapLines(line, w - 2))
                lines.push({ text: `  ${part}`, heading: false });
        lines.push({ text: '', heading: false });
    }
    const start = Math.min(scroll, Math.max(0, lines.length - h));
    return (_jsx(Pane, { title: title, note: "esc back \u00B7 \u2191\u2193 scroll", width: width, height: height, focused: true, children: lines.slice(start, start + h).map((line, i) => (_jsx(Text, { bold: line.heading, color: line.heading ? 'cyan' : undefined, wrap: "truncate", children: fit(line.text, w) }, i))) }));
}
//# sourceMappingURL=detail.js.map