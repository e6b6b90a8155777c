import { Text } from 'ink';
import React from 'react';
import type { Snapshot } from '../snapshot/types.js';
import { fit } from './layout.js';

/** Props of {@link StatusLine}. `message` is the latest flash (submitted, error). */
export interface StatusLineProps {
  snapshot: Snapshot;
  message: { text: string; error: boolean } | undefined;
  width: number;
}

/** The status line: coordinator state, live runs, cost today, the garden's name, and the latest message. */
export const StatusLine = React.memo(function StatusLine({ snapshot, message, width }: StatusLineProps): React.JSX.Element {
  const s = snapshot;
  const state = s.garden.readOnly ? 'dashboard (read-only)' : `coordinator ${s.coordinator.state}`;
  const cost = `$${s.costToday.usd.toFixed(4)} today${s.costToday.unknown ? ` (+${s.costToday.unknown} unknown)` : ''}`;
  const left = [`● ${state}`, `${s.coordinator.liveRuns.length} live`, `${s.counts.queued} queued`, cost, s.garden.name].join(' · ');
  // A message goes first, so a narrow terminal cuts the counters, not the news.
  const text = message ? `${message.text} │ ${left}` : `${left} │ ? help`;
  return (
    <Text color={message?.error ? 'red' : s.coordinator.liveRuns.length ? 'yellow' : 'green'} wrap="truncate">
      {fit(text, width)}
    </Text>
  );
});
