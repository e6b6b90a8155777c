import type { ScrollLimits } from '../scroll.js';
import { Text } from 'ink';
import React from 'react';
import { hint } from '../keymap.js';
import { fit } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link Problems}. */
export interface ProblemsProps {
  /** One line each: the file (or the coordinator) and what is wrong. */
  problems: readonly string[];
  /** The garden's root: paths under it are shown relative to it, so the line has room for what is wrong. */
  root?: string;
  scroll: number;
  /** Where the overlay writes how far down it can scroll, for the dispatcher. */
  limits?: ScrollLimits;
  width: number;
  height: number;
}

/**
 * The problems of the garden (issue 14): unreadable goal, run or plant
 * files and coordinator errors, one line each, windowed from `scroll`.
 * The list follows the snapshot: a fixed file drops out of it.
 */
export function Problems({ problems, root, scroll, limits, width, height }: ProblemsProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  if (limits) {
    limits.overlay = Math.max(0, problems.length - h);
    limits.overlayRows = h;
  }
  const start = Math.max(0, Math.min(scroll, problems.length - h));
  const note = `${problems.length} · ${hint('back', 'back')}${problems.length > h ? ` · ${hint(['cursor.up', 'cursor.down'], 'scroll')}` : ''}`;
  return (
    <Pane title="Problems" note={note} width={width} height={height} focused>
      {problems.length === 0 ? (
        <Text dimColor wrap="truncate">
          {fit('no problems: every goal, run and plant file reads', w)}
        </Text>
      ) : (
        problems.slice(start, start + h).map((line, i) => (
          <Text key={start + i} color="yellow" wrap="truncate">
            {fit(`⚠ ${root ? line.replaceAll(`${root}/`, '') : line}`, w)}
          </Text>
        ))
      )}
    </Pane>
  );
}
