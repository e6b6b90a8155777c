import { Box } from 'ink';
import React from 'react';
import { fit, widthOf } from './layout.js';
import { Lines } from './lines.js';

/** Props of {@link Pane}: its box in terminal cells, and whether it has the keyboard. */
export interface PaneProps {
  title: string;
  /** Right-aligned note in the top border (counts, filter). */
  note?: string;
  width: number;
  height: number;
  focused: boolean;
  children?: React.ReactNode;
}

/** Width inside a pane's borders and padding. */
export function innerWidth(width: number): number {
  return Math.max(0, width - 4);
}

/** Rows inside a pane's borders. */
export function innerHeight(height: number): number {
  return Math.max(0, height - 2);
}

/**
 * A bordered pane whose title sits in its top border. Exactly `height` rows
 * tall; its children must fit `innerHeight(height)` rows of `innerWidth(width)`.
 */
export function Pane({ title, note, width, height, focused, children }: PaneProps): React.JSX.Element {
  const color = focused ? 'cyan' : 'gray';
  // Cut the title and note, never the border: the corners must stay.
  const room = Math.max(0, width - 5);
  const right = note && widthOf(note) + 2 <= room / 2 ? ` ${note} ` : '';
  const label = ` ${fit(title, Math.max(1, room - widthOf(right) - 2)).trimEnd()} `;
  const fill = Math.max(0, width - 4 - widthOf(label) - widthOf(right));
  const top = `╭─${label}${'─'.repeat(fill)}${right}─╮`;
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Lines lines={[{ text: fit(top, width), color, bold: focused }]} />
      {/* Clipped to its rows only: every child is one line fitted to the width (Ink's horizontal clip cuts each line again, at a cost). */}
      <Box borderStyle="round" borderTop={false} borderColor={color} paddingX={1} width={width} height={height - 1} flexDirection="column" overflowY="hidden">
        {children}
      </Box>
    </Box>
  );
}
