import { Text } from 'ink';
import React from 'react';
import type { ServerView, Snapshot } from '../snapshot/types.js';
import { fit } from './layout.js';

/** Props of {@link StatusLine}. `message` is the latest flash (submitted, error). */
export interface StatusLineProps {
  snapshot: Snapshot;
  message: { text: string; error: boolean } | undefined;
  width: number;
}

/** `serve 127.0.0.1:7717 · webhooks 2 ok` (or `1 failing`, `1 retrying`) while this session serves HTTP. */
export function serveSegment(server: ServerView | undefined): string | undefined {
  if (!server) return undefined;
  const where = server.url.replace(/^https?:\/\//, '').replace(/\/api\/v1$/, '');
  const w = server.webhooks;
  const hooks = !w || w.subscriptions === 0 ? '' : !w.running ? ' · webhooks by another serve' : w.failing ? ` · webhooks ${w.failing} failing` : w.retrying ? ` · webhooks ${w.retrying} retrying` : ` · webhooks ${w.subscriptions} ok`;
  return `serve ${where}${hooks}`;
}

/** The status line: coordinator state, live runs, cost today, the garden's name, and the latest message. */
export const StatusLine = React.memo(function StatusLine({ snapshot, message, width }: StatusLineProps): React.JSX.Element {
  const s = snapshot;
  const state = s.garden.readOnly ? 'dashboard (read-only)' : `coordinator ${s.coordinator.state}`;
  const cost = `$${s.costToday.usd.toFixed(4)} today${s.costToday.unknown ? ` (+${s.costToday.unknown} unknown)` : ''}`;
  const serve = serveSegment(s.server);
  const left = [`● ${state}`, `${s.coordinator.liveRuns.length} live`, `${s.counts.queued} queued`, cost, ...(serve ? [serve] : []), s.garden.name].join(' · ');
  // A message goes first, so a narrow terminal cuts the counters, not the news.
  const text = message ? `${message.text} │ ${left}` : `${left} │ ? help`;
  return (
    <Text color={message?.error ? 'red' : s.coordinator.liveRuns.length ? 'yellow' : 'green'} wrap="truncate">
      {fit(text, width)}
    </Text>
  );
});
