import { Text } from 'ink';
import React from 'react';
import type { RunRecord } from '../../contracts/index.js';
import { duration, formatCost } from '../../format.js';
import type { TailKind } from '../../snapshot/stream-lines.js';
import type { TailState } from '../../snapshot/tail.js';
import { fit, spinner, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link RunTail}: the tail and the run it belongs to (from the snapshot). */
export interface RunTailProps {
  tail: TailState | undefined;
  run: RunRecord | undefined;
  /** Lines scrolled back from the end (0: follow the end). */
  scroll: number;
  width: number;
  height: number;
  focused: boolean;
  now: number;
}

const COLORS: Record<TailKind, string | undefined> = { text: undefined, tool: 'cyan', result: 'gray', error: 'red', info: 'gray', usage: 'green' };

const wrapCache = new WeakMap<TailState, { width: number; lines: { kind: TailKind; text: string }[] }>();

/** The tail's lines wrapped to `width`, computed once per tail state and width (a tail state is immutable). */
function wrappedTail(tail: TailState, width: number): { kind: TailKind; text: string }[] {
  const cached = wrapCache.get(tail);
  if (cached && cached.width === width) return cached.lines;
  const lines: { kind: TailKind; text: string }[] = [];
  if (tail.truncated) lines.push({ kind: 'info', text: `… (opened at the end of a ${Math.round(tail.bytes / 1024)} KB stream)` });
  for (const line of tail.lines) for (const part of wrapLines(line.text, width)) lines.push({ kind: line.kind, text: part });
  wrapCache.set(tail, { width, lines });
  return lines;
}

/**
 * The run tail: the followed run's stream for a person (assistant text, tool
 * calls with their arguments summarised, tool results cut short, errors in
 * red), with a header of status, elapsed time, a spinner while running,
 * tokens and cost as they arrive.
 */
export const RunTail = React.memo(function RunTail({ tail, run, scroll, width, height, focused, now }: RunTailProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  if (!tail || !run) {
    return (
      <Pane title="Run" width={width} height={height} focused={focused}>
        <Text dimColor>{fit('no run yet', w)}</Text>
      </Pane>
    );
  }
  const live = run.status === 'running';
  const end = run.completed_at ? Date.parse(run.completed_at) : now;
  const elapsed = duration(Math.max(0, end - Date.parse(run.started_at)) / 1000);
  const tokens = tail.usage.inputTokens || tail.usage.outputTokens ? `${tail.usage.inputTokens} in/${tail.usage.outputTokens} out` : '';
  const cost = run.cost ? formatCost(run.cost) : tail.usage.costUsd !== undefined ? `$${tail.usage.costUsd.toFixed(4)}` : '';
  const header = [live ? `${spinner(now)} running` : `${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`, elapsed, `${run.driver}/${run.model}`, tokens, cost].filter(Boolean).join(' · ');
  const body = wrappedTail(tail, w);
  const room = Math.max(0, h - 1);
  const last = Math.max(room, body.length - scroll);
  const shown = body.slice(Math.max(0, last - room), last);
  return (
    <Pane title={`Run ${run.id}`} note={scroll ? `↑${scroll}` : undefined} width={width} height={height} focused={focused}>
      <Text color={live ? 'yellow' : run.status === 'success' ? 'green' : 'red'} wrap="truncate">
        {fit(header, w)}
      </Text>
      {shown.map((line, i) => (
        <Text key={i} color={COLORS[line.kind]} dimColor={line.kind === 'info'} wrap="truncate">
          {fit(line.text, w)}
        </Text>
      ))}
    </Pane>
  );
});
