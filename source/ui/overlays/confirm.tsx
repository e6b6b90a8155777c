import { Text } from 'ink';
import React, { useMemo } from 'react';
import { fit, wrapLines } from '../layout.js';
import { innerWidth, Pane } from '../pane.js';

/** Props of {@link Confirm}. */
export interface ConfirmProps {
  title: string;
  /** What will happen, wrapped to the pane. */
  lines: readonly string[];
  /** The y / n question, last and in yellow; it stays when the explanation is cut. */
  question: string;
  width: number;
  maxHeight: number;
}

/** A y / n question before an operator action, saying what the action does. */
export function Confirm({ title, lines, question, width, maxHeight }: ConfirmProps): React.JSX.Element {
  const w = innerWidth(width);
  const body = useMemo(() => lines.flatMap((line) => wrapLines(line, w)), [lines, w]);
  // In a short terminal the question stays: the explanation gives way first.
  const room = Math.max(0, maxHeight - 2 - 2);
  const shown = [...body.slice(0, room), ...(room > 0 ? [''] : [])];
  return (
    <Pane title={title} width={width} height={shown.length + 3} focused>
      {shown.map((line, i) => (
        <Text key={i} wrap="truncate">
          {fit(line, w)}
        </Text>
      ))}
      <Text color="yellow" wrap="truncate">
        {fit(question, w)}
      </Text>
    </Pane>
  );
}
