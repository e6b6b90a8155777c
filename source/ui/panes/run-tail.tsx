import { clampScroll, type ScrollLimits } from '../scroll.js';
import React from 'react';
import type { LandingRecord, RunRecord } from '../../contracts/index.js';
import { guardSummaryLines, type GuardLine } from '../../guard/describe.js';
import type { GuardView, RemoteView } from '../../snapshot/types.js';
import type { TailKind, TailLine } from '../../snapshot/stream-lines.js';
import type { TailState } from '../../snapshot/tail.js';
import { runHeaderParts } from '../../snapshot/stream-lines.js';
import { fit, spinner, widthOf, wrapLines } from '../layout.js';
import { Lines } from '../lines.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
import { acceptanceLines, type AcceptanceLine } from './run-acceptance.js';
import { landingLines, type LandingLine } from './run-landing.js';
import { remoteLines, type RemoteLine } from './run-remote.js';

/** Props of {@link RunTail}: the tail and the run it belongs to (from the snapshot). */
export interface RunTailProps {
  tail: TailState | undefined;
  run: RunRecord | undefined;
  /** Lines scrolled back from the end (0: follow the end). */
  scroll: number;
  /** Where the pane writes how far back it can scroll (`tail`), for the dispatcher. */
  limits?: ScrollLimits;
  width: number;
  height: number;
  focused: boolean;
  now: number;
  /** The run's guard files when it is a guarded run (the snapshot holds them for the followed run only). */
  guard?: GuardView | undefined;
  /** The run's runner side (lease, artifacts) when a runner runs it (the snapshot holds it for the followed run only). */
  remote?: RemoteView | undefined;
  /** The run's landing (docs/landing/level2.md), when its work was queued to land. */
  landing?: LandingRecord | undefined;
}

const GUARD_COLORS: Record<GuardLine['tone'], string | undefined> = { ok: 'green', bad: 'red', warn: 'yellow', info: 'gray' };

const REMOTE_COLORS: Record<RemoteLine['tone'], string | undefined> = { ok: 'green', bad: 'red', warn: 'yellow', info: 'cyan' };

const LANDING_COLORS: Record<LandingLine['tone'], string | undefined> = { ok: 'green', bad: 'red', warn: 'yellow', review: 'magenta' };
const ACCEPTANCE_COLORS: Record<AcceptanceLine['tone'], string> = { ok: 'green', bad: 'red', warn: 'yellow' };

const COLORS: Record<TailKind, string | undefined> = { text: undefined, tool: 'cyan', result: 'gray', error: 'red', info: 'gray', usage: 'green' };

type Row = { kind: TailKind; text: string };

/**
 * A guard line in `width` columns. A line ending with a path (a
 * violation) too wide for the pane keeps the path's end, the file's name:
 * `…ials/production.env`, not `src/config/cr…`.
 */
export function guardLineText(line: GuardLine, width: number): string {
  if (!line.path || !line.text.endsWith(line.path) || widthOf(line.text) <= width) return fit(line.text, width);
  const prefix = line.text.slice(0, line.text.length - line.path.length);
  const room = width - widthOf(prefix) - 1;
  if (room < 4) return fit(line.text, width);
  const chars = [...line.path];
  let start = chars.length;
  for (let used = 0; start > 0 && used + widthOf(chars[start - 1]!) <= room; start--) used += widthOf(chars[start - 1]!);
  return fit(`${prefix}…${chars.slice(start).join('')}`, width);
}
const wrapCache = new WeakMap<TailLine, { width: number; maxRows: number; rows: Row[] }>();

/** One tail line wrapped to `width`, at most `maxRows` rows; computed once per line and size (tail lines are immutable). */
function wrappedLine(line: TailLine, width: number, maxRows: number): Row[] {
  const cached = wrapCache.get(line);
  if (cached && cached.width === width && cached.maxRows === maxRows) return cached.rows;
  const rows = wrapLines(line.text, width, { maxRows }).map((text) => ({ kind: line.kind, text }));
  wrapCache.set(line, { width, maxRows, rows });
  return rows;
}

/**
 * The last `need` rows of the tail wrapped to `width` (all of them when it
 * has fewer), read from the end: the work is bounded by the rows shown and
 * scrolled back, never by the length of a line (each shows at most
 * `perLine` rows, ending with `…` when cut).
 */
export function tailRows(tail: TailState, width: number, perLine: number, need: number): Row[] {
  const reversed: Row[] = [];
  let i = tail.lines.length - 1;
  for (; i >= 0 && reversed.length < need; i--) {
    const rows = wrappedLine(tail.lines[i]!, width, perLine);
    for (let k = rows.length - 1; k >= 0; k--) reversed.push(rows[k]!);
  }
  if (i < 0 && tail.truncated) reversed.push({ kind: 'info', text: `… (opened at the end of a ${Math.round(tail.bytes / 1024)} KB stream)` });
  return reversed.reverse();
}

/**
 * The run tail: the followed run's stream for a person (assistant text, tool
 * calls with their arguments summarised, tool results cut short, errors in
 * red), with a header of status, elapsed time, a spinner while running,
 * tokens and cost as they arrive.
 */
export const RunTail = React.memo(function RunTail({ tail, run, scroll: asked, width, height, focused, now, guard, remote, landing, limits }: RunTailProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  if (!tail || !run) {
    return (
      <Pane title="Run" width={width} height={height} focused={focused}>
        <Lines lines={[{ text: fit('no run yet', w), dimColor: true }]} />
      </Pane>
    );
  }
  const live = run.status === 'running';
  const header = runHeaderParts(run, tail.usage, now, `${spinner(now)} running`).join(' · ');
  // A guarded run: its compact guard block under the header, at most half the pane.
  const guardLines = guard && guard.runId === run.id ? guardSummaryLines(guard, run.id, guard.maxAttempts !== undefined ? { maxAttempts: guard.maxAttempts } : {}).slice(0, Math.max(0, Math.floor((h - 1) / 2))) : [];
  // A remote run: its runner, heartbeat, progress and status, why it was abandoned, its artifacts (at most a third of the pane).
  // Each line wraps to two rows at most (the heartbeat and status stay readable in a narrow pane).
  const runnerLines = remoteLines(run, remote, now)
    .flatMap((line) => wrapLines(line.text, w, { maxRows: 2 }).map((text) => ({ text, tone: line.tone })))
    .slice(0, Math.max(0, Math.floor((h - 1) / 3)) || (h > 1 ? 1 : 0));
  // The run's background tasks as its record keeps them: an unfinished one is why a success is not one.
  const tasks = run.background_tasks ?? [];
  const unfinished = tasks.filter((t) => t.unfinished);
  // Up to three rows: several unfinished tasks each keep their name readable.
  const taskLines = tasks.length && h > 2
    ? wrapLines(`background: ${(unfinished.length ? unfinished : tasks).map((t) => `${t.type} ${t.description ? JSON.stringify(t.description) : t.id} ${t.status === 'running' ? 'never finished' : t.status}`).join('; ')}${unfinished.length ? ` (${unfinished.length} unfinished${tasks.length > unfinished.length ? ` of ${tasks.length}` : ''})` : ''}`, w, { maxRows: Math.min(3, Math.max(1, Math.floor((h - 1) / 3))) }).map((text) => ({ text, unfinished: unfinished.length > 0 }))
    : [];
  // Its landing: state, files, onto which branch, then what the landing says (each line wraps to two rows; at most a third of the pane).
  const landed = landingLines(landing, run.id)
    .flatMap((line) => wrapLines(line.text, w, { maxRows: 2 }).map((text) => ({ text, tone: line.tone })))
    .slice(0, Math.max(0, Math.floor((h - 1) / 3)) || (h > 1 ? 1 : 0));
  // The goal's acceptance criteria as checked at the run's end (docs/goal/level2.md): each line wrapping to two rows, at most a third of the pane.
  const accepted = acceptanceLines(run)
    .flatMap((line) => wrapLines(line.text, w, { maxRows: 2 }).map((text) => ({ text, tone: line.tone })))
    .slice(0, Math.max(0, Math.floor((h - 1) / 3)) || (h > 1 ? 1 : 0));
  const room = Math.max(0, h - 1 - guardLines.length - runnerLines.length - taskLines.length - landed.length - accepted.length);
  const body = tailRows(tail, w, Math.max(1, room), room + asked);
  // Fewer rows than asked for: the start of the tail was reached, and how far back it goes is known.
  const limit = body.length < room + asked ? Math.max(0, body.length - room) : Number.POSITIVE_INFINITY;
  if (limits) limits.tail = limit;
  const scroll = clampScroll(asked, limit);
  const last = Math.max(room, body.length - scroll);
  const shown = body.slice(Math.max(0, last - room), last);
  return (
    <Pane title={`Run ${run.id}`} note={scroll ? `↑${scroll}` : undefined} width={width} height={height} focused={focused}>
      <Lines
        lines={[
          { text: fit(header, w), color: live ? 'yellow' : run.status === 'success' ? 'green' : 'red' },
          ...landed.map((line) => ({ text: fit(line.text, w, false), color: LANDING_COLORS[line.tone] })),
          ...accepted.map((line) => ({ text: fit(line.text, w, false), color: ACCEPTANCE_COLORS[line.tone] })),
          ...taskLines.map((line) => ({ text: fit(line.text, w), color: line.unfinished ? 'red' : undefined, dimColor: !line.unfinished })),
          ...runnerLines.map((line) => ({ text: fit(line.text, w, false), color: REMOTE_COLORS[line.tone] })),
          ...guardLines.map((line) => ({ text: guardLineText(line, w), color: GUARD_COLORS[line.tone] })),
          ...shown.map((line) => ({ text: fit(line.text, w, false), color: COLORS[line.kind], dimColor: line.kind === 'info' })),
        ]}
      />
    </Pane>
  );
});
