/** An empty field, or one holding `text` with the cursor at its end. */
export function editState(text = '') {
    return { text, cursor: text.length };
}
/**
 * Applies one key to a text field: printable input inserts (pastes arrive
 * whole), backspace / delete remove, ← → move, ctrl-a / ctrl-e jump, ctrl-u
 * clears; enter inserts a newline only when `multiline`. Keys it does not
 * handle leave the state as it is (same object).
 */
export function applyEditKey(state, input, key, multiline) {
    const { text, cursor } = state;
    if (key.leftArrow)
        return { text, cursor: Math.max(0, cursor - 1) };
    if (key.rightArrow)
        return { text, cursor: Math.min(text.length, cursor + 1) };
    if (key.backspace || (key.delete && !input)) {
        if (cursor === 0)
            return state;
        return { text: text.slice(0, cursor - 1) + text.slice(cursor), cursor: cursor - 1 };
    }
    if (key.ctrl && input === 'a')
        return { text, cursor: 0 };
    if (key.ctrl && input === 'e')
        return { text, cursor: text.length };
    if (key.ctrl && input === 'u')
        return editState();
    if (key.return)
        return multiline ? { text: `${text.slice(0, cursor)}\n${text.slice(cursor)}`, cursor: cursor + 1 } : state;
    if (key.ctrl || key.meta || key.escape || key.tab || key.upArrow || key.downArrow || !input)
        return state;
    const clean = input.replace(/\r\n?/g, '\n').replace(multiline ? /[\x00-\x09\x0b-\x1f]/g : /[\x00-\x1f]/g, '');
    if (!clean)
        return state;
    return { text: text.slice(0, cursor) + clean + text.slice(cursor), cursor: cursor + clean.length };
}
//# sourceMappingURL=text-edit.js.map