import React from 'react';
import type { ChatMessage } from '../../store/index.js';
import type { EditState } from '../text-edit.js';
import { hint, keyOf } from '../keymap.js';
import { fit, wrapLines, wrapTail } from '../layout.js';
import { Lines } from '../lines.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link Chat}: the conversation, and the message being written (when composing). */
export interface ChatProps {
  messages: readonly ChatMessage[];
  /** What the reply to the latest message waits for, while it waits (`waiting: 1 conversation slot busy (run 3-a-r1)`). */
  waiting?: string;
  draft: EditState | undefined;
  readOnly: boolean;
  width: number;
  height: number;
  focused: boolean;
}

const SENDER_COLOR: Record<string, string> = { operator: 'cyan', garden: 'green', system: 'gray' };

/** Renders a field's text with a block cursor. */
export function withCursor(state: EditState): string {
  return `${state.text.slice(0, state.cursor)}█${state.text.slice(state.cursor)}`;
}

/** At most this many rows show the message being written (its end). */
const DRAFT_ROWS = 4;

/** The message being written as rows of `width`: its last `rows` rows (pasted lines stay lines), the first marked `›`. */
export function draftRows(draft: EditState, width: number, rows: number): string[] {
  return wrapTail(withCursor(draft), Math.max(1, width - 2), rows).map((line, i) => `${i === 0 ? '›' : ' '} ${line}`);
}

/**
 * The last `room` rows of the conversation wrapped to `width`, read from the
 * newest message back, each message at most `room` rows (its start, ending
 * with `…` when cut): the work is bounded by the pane, not the conversation.
 */
export function chatRows(messages: readonly ChatMessage[], width: number, room: number): { sender: string; text: string }[] {
  const reversed: { sender: string; text: string }[] = [];
  for (let i = messages.length - 1; i >= 0 && reversed.length < room; i--) {
    const m = messages[i]!;
    const rows = wrapLines(`${m.sender}: ${m.text}`, width, { maxRows: room });
    for (let k = rows.length - 1; k >= 0; k--) reversed.push({ sender: m.sender, text: rows[k]! });
  }
  return reversed.slice(0, room).reverse();
}

/** The chat with the garden: the latest conversation's messages, and an input line. */
export const Chat = React.memo(function Chat({ messages, waiting, draft, readOnly, width, height, focused }: ChatProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const input = draft ? draftRows(draft, w, Math.max(1, Math.min(DRAFT_ROWS, h - 1))) : [readOnly ? 'read-only' : focused ? `press ${keyOf('chat.compose')} or ${keyOf('open')} to write` : ''];
  // The wait is said above the input line, when there is room for a message row besides it.
  const wait = waiting && h - input.length >= 2 ? [waiting] : [];
  const room = Math.max(0, h - input.length - wait.length);
  const shown = chatRows(messages, w, room);
  const note = draft ? `${hint('input.send', 'send')} · ${hint('input.cancel', 'cancel')}` : undefined;
  return (
    <Pane title="Chat" note={note} width={width} height={height} focused={focused}>
      <Lines
        lines={[
          ...(messages.length === 0 && room > 0 ? [{ text: fit('no conversation yet', w), dimColor: true }] : []),
          ...shown.map((line) => ({ text: fit(line.text, w, false), color: SENDER_COLOR[line.sender] })),
          ...wait.map((line) => ({ text: fit(line, w), color: 'yellow' })),
          ...input.map((line) => ({ text: fit(line, w), color: draft ? 'cyan' : 'gray' })),
        ]}
      />
    </Pane>
  );
});
