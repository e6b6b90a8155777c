import type { ScrollLimits } from '../scroll.js';
import { Text } from 'ink';
import React, { useMemo } from 'react';
import { helpRows, hint, SCOPE_TITLES, type KeyScope } from '../keymap.js';
import { fit, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Columns of the keys column. */
const KEYS_WIDTH = 17;

/** The rows of the help for `width` columns: a heading per scope, then each binding, its description wrapped under itself. */
export function helpLines(width: number): { text: string; heading: boolean }[] {
  const out: { text: string; heading: boolean }[] = [];
  let scope: KeyScope | undefined;
  for (const row of helpRows()) {
    if (row.scope !== scope) {
      if (scope) out.push({ text: '', heading: false });
      scope = row.scope;
      out.push({ text: SCOPE_TITLES[scope], heading: true });
    }
    const parts = wrapLines(row.description, Math.max(10, width - KEYS_WIDTH - 1), { mark: false });
    parts.forEach((part, i) => out.push({ text: `${fit(i === 0 ? row.keys : '', KEYS_WIDTH)} ${part}`, heading: false }));
  }
  return out;
}

/** The help overlay: every binding of the one keymap, grouped by where it applies, scrolled by `scroll` rows. */
export function Help({ width, height, scroll = 0, limits }: { width: number; height: number; scroll?: number; limits?: ScrollLimits }): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const lines = useMemo(() => helpLines(w), [w]);
  if (limits) {
    limits.overlay = Math.max(0, lines.length - h);
    limits.overlayRows = h;
  }
  const start = Math.max(0, Math.min(scroll, lines.length - h));
  const more = lines.length > h ? ` · ${hint(['cursor.up', 'cursor.down'], 'scroll')}` : '';
  return (
    <Pane title="Keys" note={`${hint('back', 'or')} ${hint('help', 'closes')}${more}`} width={width} height={height} focused>
      {lines.slice(start, start + h).map((line, i) => (
        <Text key={i} bold={line.heading} color={line.heading ? 'cyan' : undefined} wrap="truncate">
          {fit(line.text, w)}
        </Text>
      ))}
    </Pane>
  );
}
