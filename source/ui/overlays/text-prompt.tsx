import { Text } from 'ink';
import React from 'react';
import { hint } from '../keymap.js';
import { fit, wrapLines } from '../layout.js';
import { draftRows } from '../panes/chat.js';
import { innerWidth, Pane } from '../pane.js';
import type { EditState } from '../text-edit.js';

/** Props of {@link TextPrompt}. */
export interface TextPromptProps {
  title: string;
  /** What the text is for, above the field. */
  lines: readonly string[];
  edit: EditState;
  width: number;
  maxHeight: number;
  /** A one-line field (an answer): no line breaks, so the hint leaves out the new-line key. */
  oneLine?: boolean;
  /** The keys line under the text, in place of the usual one (a reject's enter rejects). */
  keys?: string;
}

/** Rows of the field at most. */
const FIELD_ROWS = 6;

/** A text to write for an action (a supplement to a goal): the field works as the chat input does. */
export function TextPrompt({ title, lines, edit, width, maxHeight, oneLine = false, keys: ownKeys }: TextPromptProps): React.JSX.Element {
  const w = innerWidth(width);
  const inner = Math.max(1, maxHeight - 2);
  const field = draftRows(edit, w, Math.max(1, Math.min(FIELD_ROWS, inner - 1)));
  const keys = ownKeys ?? (oneLine ? `${hint('input.send', 'posts')} · ${hint('input.cancel', 'cancels')}` : `${hint('input.send', 'sends')} · ${hint('input.newline', 'adds a line')} · ${hint('input.cancel', 'cancels')}`);
  const about = [...lines, keys].flatMap((line) => wrapLines(line, w)).slice(0, Math.max(0, inner - field.length - 1));
  const rows = [...about, ...(about.length ? [''] : [])].slice(0, Math.max(0, inner - field.length));
  return (
    <Pane title={title} width={width} height={rows.length + field.length + 2} focused>
      {rows.map((line, i) => (
        <Text key={i} wrap="truncate">
          {fit(line, w)}
        </Text>
      ))}
      {field.map((line, i) => (
        <Text key={`field-${i}`} color="cyan" wrap="truncate">
          {fit(line, w)}
        </Text>
      ))}
    </Pane>
  );
}
