import { Text } from 'ink';
import React from 'react';
import { KEYMAP } from '../keymap.js';
import { fit } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** The help overlay: every binding of the one keymap. */
export function Help({ width, height }: { width: number; height: number }): React.JSX.Element {
  const w = innerWidth(width);
  const rows = KEYMAP.map((b) => `${fit(b.keys, 12)} ${fit(b.scope === 'editing' ? 'in forms' : '', 9)} ${b.description}`);
  return (
    <Pane title="Keys" note="esc or ? closes" width={width} height={height} focused>
      {rows.slice(0, innerHeight(height)).map((row, i) => (
        <Text key={i} wrap="truncate">
          {fit(row, w)}
        </Text>
      ))}
    </Pane>
  );
}
