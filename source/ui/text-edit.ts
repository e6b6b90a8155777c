import type { Key } from 'ink';
import { commandFor, typedText } from './keymap.js';

/** A text field being edited: its text and the cursor's index into it. */
export interface EditState {
  text: string;
  cursor: number;
}

/** An empty field, or one holding `text` with the cursor at its end. */
export function editState(text = ''): EditState {
  return { text, cursor: text.length };
}

/**
 * Inserts text at the cursor (typed, pasted, or a new line). A multi-line
 * field keeps line breaks (`\r`, `\r\n`, `\n` become `\n`): pasted lines stay
 * lines. A one-line field joins them with a space. Other control characters
 * are dropped.
 */
export function insertText(state: EditState, input: string, multiline: boolean): EditState {
  let clean = input.replace(/\r\n?/g, '\n');
  clean = multiline ? clean.replace(/[\x00-\x09\x0b-\x1f\x7f]/g, '') : clean.replace(/^\n+|\n+$/g, '').replace(/\n+/g, ' ').replace(/[\x00-\x1f\x7f]/g, '');
  if (!clean) return state;
  const { text, cursor } = state;
  return { text: text.slice(0, cursor) + clean + text.slice(cursor), cursor: cursor + clean.length };
}

/**
 * Applies one key to a text field: the keymap's `text` keys edit (← →
 * move, ctrl-a / ctrl-e jump, backspace deletes, ctrl-u clears), typed or
 * pasted text is inserted ({@link insertText}). Keys it does not handle
 * (enter, esc, tab, ↑ ↓, other control keys) leave the state as it is
 * (same object): the field's owner gives them a meaning first.
 */
export function applyEditKey(state: EditState, input: string, key: Key, multiline: boolean): EditState {
  const { text, cursor } = state;
  switch (commandFor(input, key, 'text')) {
    case 'text.left':
      return { text, cursor: Math.max(0, cursor - 1) };
    case 'text.right':
      return { text, cursor: Math.min(text.length, cursor + 1) };
    case 'text.start':
      return { text, cursor: 0 };
    case 'text.end':
      return { text, cursor: text.length };
    case 'text.clear':
      return editState();
    case 'text.deleteBack': {
      if (cursor === 0) return state;
      // A surrogate pair (an emoji) goes as one.
      const back = cursor >= 2 && /[\udc00-\udfff]/.test(text[cursor - 1]!) && /[\ud800-\udbff]/.test(text[cursor - 2]!) ? 2 : 1;
      return { text: text.slice(0, cursor - back) + text.slice(cursor), cursor: cursor - back };
    }
    default: {
      const typed = typedText(input, key);
      return typed === undefined ? state : insertText(state, typed, multiline);
    }
  }
}
