import { Box, Text } from 'ink';
import React, { useMemo } from 'react';
import type { RunDiff } from '../../submit/index.js';
import { diffSummary, diffWindow, type DiffRow } from '../diff-view.js';
import { hint, keyOf } from '../keymap.js';
import { fit } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
import type { ScrollLimits } from '../scroll.js';

/** A run's diff as the overlay has it: asked for, come, or refused (one line). */
export type DiffLoad = { state: 'loading' } | { state: 'ready'; diff: RunDiff } | { state: 'error'; message: string };

/** Props of {@link Diff}. */
export interface DiffProps {
  runId: string;
  /** The run's landing in words (`awaiting review`, `landed`), from the snapshot; empty without one. */
  landing: string;
  /** Whether the review keys apply (the landing is open): the footer names them. */
  reviewable: boolean;
  load: DiffLoad;
  /** Items scrolled past (files, then patch lines). */
  scroll: number;
  /** Where the overlay writes how far it scrolls and its page, for the dispatcher. */
  limits?: ScrollLimits;
  width: number;
  height: number;
}

/** The keys the footer names. */
function footer(reviewable: boolean): string {
  const review = reviewable ? `${hint('review.accept', 'accept')} · ${hint('review.reject', 'reject')} · ` : '';
  return `${review}${hint('review.comment', 'comment')} · ${hint(['cursor.up', 'cursor.down'], '')} ${keyOf('cursor.pageUp')} ${keyOf('cursor.pageDown')} scroll · ${hint('back', 'back')}`;
}

function Row({ row }: { row: DiffRow }): React.JSX.Element {
  return (
    <Text wrap="truncate">
      {row.map((s, i) => (
        <Text key={i} color={s.color} bold={s.bold}>
          {s.text}
        </Text>
      ))}
    </Text>
  );
}

/**
 * The diff overlay (`d`; docs/workbench/level2.md, "The diff"): a summary
 * row, the run's files with lines added and removed, then the patch in
 * colour (added green, removed red, hunks cyan, file headers bold), drawn
 * a window at a time (`diff-view.ts`); a footer with the review keys and
 * where the window is. While the diff loads it says so; a refusal (a run
 * with no worktree) is one red line.
 */
export function Diff({ runId, landing, reviewable, load, scroll, limits, width, height }: DiffProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const body = Math.max(0, h - 2);
  const diff = load.state === 'ready' ? load.diff : undefined;
  const shown = useMemo(() => (diff ? diffWindow(diff, w, scroll, body) : undefined), [diff, w, scroll, body]);
  if (limits) {
    limits.overlay = shown?.limit ?? 0;
    limits.overlayRows = Math.max(1, shown ? shown.last - shown.first : body);
  }
  const title = `Diff ${runId}${landing ? ` · ${landing}` : ''}`;
  const n = (v: number) => v.toLocaleString('en-US');
  const where = shown && shown.total > 0 ? `${n(shown.first + 1)}–${n(shown.last)} of ${n(shown.total)}` : '';
  const top: DiffRow =
    load.state === 'loading'
      ? [{ text: fit(`loading the diff of ${runId}…`, w), color: 'gray' }]
      : load.state === 'error'
        ? [{ text: fit(load.message, w), color: 'red' }]
        : [{ text: fit(diffSummary(load.diff), w), bold: true }];
  return (
    <Pane title={title} note={where} width={width} height={height} focused>
      {h >= 1 ? <Row row={top} /> : null}
      {(shown?.rows ?? []).slice(0, body).map((row, i) => (
        <Row key={i} row={row} />
      ))}
      {h >= 2 ? <Box flexGrow={1} /> : null}
      {h >= 2 ? <Row row={[{ text: fit(footer(reviewable), w), color: 'gray' }]} /> : null}
    </Pane>
  );
}
