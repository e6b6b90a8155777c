/**
 * The one keymap: the only place keys are bound (STYLE.md). The help overlay
 * and the README list these rows.
 */
export const KEYMAP = [
    { command: 'focus.next', keys: 'tab', description: 'next pane', scope: 'global', match: (_, k) => k.tab && !k.shift },
    { command: 'focus.prev', keys: 'shift-tab', description: 'previous pane', scope: 'global', match: (_, k) => k.tab && k.shift },
    { command: 'cursor.up', keys: '↑ k', description: 'move up', scope: 'global', match: (i, k) => k.upArrow || (i === 'k' && !k.ctrl) },
    { command: 'cursor.down', keys: '↓ j', description: 'move down', scope: 'global', match: (i, k) => k.downArrow || (i === 'j' && !k.ctrl) },
    { command: 'cursor.pageUp', keys: 'pgup', description: 'page up', scope: 'global', match: (_, k) => k.pageUp },
    { command: 'cursor.pageDown', keys: 'pgdn', description: 'page down', scope: 'global', match: (_, k) => k.pageDown },
    { command: 'cursor.top', keys: 'home g', description: 'first row', scope: 'global', match: (i, k) => k.home || i === 'g' },
    { command: 'cursor.bottom', keys: 'end G', description: 'last row', scope: 'global', match: (i, k) => k.end || i === 'G' },
    { command: 'open', keys: 'enter', description: 'open the detail of the selected row (goal, run, note)', scope: 'global', match: (_, k) => k.return },
    { command: 'back', keys: 'esc', description: 'close the overlay, clear the filter', scope: 'global', match: (_, k) => k.escape },
    { command: 'goal.new', keys: 'n', description: 'new goal form', scope: 'global', match: (i, k) => i === 'n' && !k.ctrl },
    { command: 'filter', keys: '/', description: 'filter the focused list', scope: 'global', match: (i) => i === '/' },
    { command: 'chat.compose', keys: 'c', description: 'write to the garden in the chat pane', scope: 'global', match: (i, k) => i === 'c' && !k.ctrl },
    { command: 'help', keys: '?', description: 'this help', scope: 'global', match: (i) => i === '?' },
    { command: 'quit', keys: 'q ctrl-c', description: 'quit (asks first while a run is live)', scope: 'global', match: (i, k) => (i === 'q' && !k.ctrl) || (i === 'c' && k.ctrl) },
    { command: 'form.submit', keys: 'ctrl-s', description: 'submit the form or message', scope: 'editing', match: (i, k) => k.ctrl && i === 's' },
    { command: 'form.nextField', keys: 'tab', description: 'next field', scope: 'editing', match: (_, k) => k.tab && !k.shift },
    { command: 'form.prevField', keys: 'shift-tab', description: 'previous field', scope: 'editing', match: (_, k) => k.tab && k.shift },
    { command: 'back', keys: 'esc', description: 'cancel', scope: 'editing', match: (_, k) => k.escape },
];
/** The command a key means in `scope`, if any. */
export function commandFor(input, key, scope) {
    return KEYMAP.find((b) => b.scope === scope && b.match(input, key))?.command;
}
//# sourceMappingURL=keymap.js.map