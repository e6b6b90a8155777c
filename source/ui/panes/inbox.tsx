import { Text } from 'ink';
import React from 'react';
import { age } from '../../format.js';
import type { InboxNote } from '../../store/index.js';
import { fit, windowRange } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link Inbox}. */
export interface InboxProps {
  notes: readonly InboxNote[];
  cursor: number;
  width: number;
  height: number;
  focused: boolean;
  now: number;
}

/** The inbox: reply notes newest first, unread marked with ●. */
export const Inbox = React.memo(function Inbox({ notes, cursor, width, height, focused, now }: InboxProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const unread = notes.filter((n) => n.unread).length;
  const [start, end] = windowRange(notes.length, cursor, h);
  return (
    <Pane title="Inbox" note={unread ? `${unread} unread` : String(notes.length)} width={width} height={height} focused={focused}>
      {notes.length === 0 ? (
        <Text dimColor>{fit('no replies yet', w)}</Text>
      ) : (
        notes.slice(start, end).map((note, i) => (
          <Text key={note.name} inverse={start + i === cursor && focused} bold={note.unread} wrap="truncate">
            {fit(`${note.unread ? '●' : ' '} ${fit(age(note.modifiedAt, new Date(now)), 3)} ${note.title}`, w)}
          </Text>
        ))
      )}
    </Pane>
  );
});
