import { Text } from 'ink';
import React from 'react';
import { keyOf } from '../keymap.js';
import { fit } from '../layout.js';
import { innerWidth, Pane } from '../pane.js';

/** Asks before quitting while runs are live, and says what happens to them; `stopping` once the operator said yes. */
export function ConfirmQuit({ live, width, maxHeight = Number.POSITIVE_INFINITY, stopping = false }: { live: readonly string[]; width: number; maxHeight?: number; stopping?: boolean }): React.JSX.Element {
  const w = innerWidth(width);
  const lines = [
    `${live.length} run${live.length === 1 ? ' is' : 's are'} live: ${live.join(', ')}`,
    'Quitting stops the coordinator. Each live run is killed',
    '(its whole process group) and closed killed, failure_reason',
    'coordinator_stopped, and its goal goes back in the queue',
    'for a new attempt. Queued goals stay queued.',
    '',
    `Quit now? ${keyOf('confirm.yes')} / ${keyOf('confirm.no')}`,
  ];
  if (live.length === 0 && !stopping) {
    // The runs ended while the question was open.
    lines.splice(0, lines.length - 1, 'No run is live any more. Quitting stops the coordinator;', 'queued goals stay queued.', '');
  }
  if (stopping) {
    lines.splice(0, lines.length, `Stopping: ${live.length ? `killing ${live.join(', ')} and closing ${live.length === 1 ? 'it' : 'them'}` : 'closing the coordinator'}…`);
  }
  // In a short terminal the question stays: the explanation gives way first.
  const room = Math.max(1, Math.min(lines.length, maxHeight - 2));
  const shown = room < lines.length ? [...lines.slice(0, room - 1), lines.at(-1)!] : lines;
  return (
    <Pane title={stopping ? 'Quitting' : 'Quit?'} width={width} height={shown.length + 2} focused>
      {shown.map((line, i) => (
        <Text key={i} color={i === shown.length - 1 ? 'yellow' : undefined} wrap="truncate">
          {fit(line, w)}
        </Text>
      ))}
    </Pane>
  );
}
