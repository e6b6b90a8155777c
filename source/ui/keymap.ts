import type { Key } from 'ink';

/**
 * Where a binding applies. One mode is active at a time; the dispatcher
 * (`dispatch.ts`) asks the keymap with the active mode's scope, and text
 * fields ask `text` for their editing keys.
 */
export type KeyScope = 'panes' | 'attention' | 'review' | 'confirm' | 'reject' | 'form' | 'input' | 'filter' | 'text';

/** Every operator command the workbench knows, one per binding. Keys map to these; panes and overlays act on them. */
export type CommandId =
  | 'focus.next'
  | 'focus.prev'
  | 'cursor.up'
  | 'cursor.down'
  | 'cursor.pageUp'
  | 'cursor.pageDown'
  | 'cursor.top'
  | 'cursor.bottom'
  | 'open'
  | 'back'
  | 'goal.new'
  | 'goal.cancel'
  | 'goal.retry'
  | 'goal.supplement'
  | 'question.answer'
  | 'run.stop'
  | 'run.stopRequeue'
  | 'run.diff'
  | 'review.accept'
  | 'review.reject'
  | 'review.comment'
  | 'reject.requeue'
  | 'filter'
  | 'chat.compose'
  | 'problems'
  | 'attention'
  | 'attention.ack'
  | 'attention.ackAll'
  | 'attention.open'
  | 'tend.pause'
  | 'coordinator.takeOver'
  | 'help'
  | 'quit'
  | 'confirm.yes'
  | 'confirm.no'
  | 'form.nextField'
  | 'form.prevField'
  | 'form.fieldDown'
  | 'form.fieldUp'
  | 'form.choosePrev'
  | 'form.chooseNext'
  | 'form.enter'
  | 'form.submit'
  | 'form.cancel'
  | 'input.send'
  | 'input.newline'
  | 'input.cancel'
  | 'filter.done'
  | 'filter.clear'
  | 'text.left'
  | 'text.right'
  | 'text.start'
  | 'text.end'
  | 'text.deleteBack'
  | 'text.clear';

/** One key binding: what to press, what it does, and when. */
export interface Binding {
  command: CommandId;
  /** How the keys are written in the help overlay, the hints and the README; the first word is the key hints name. */
  keys: string;
  description: string;
  scope: KeyScope;
  match: (input: string, key: Key) => boolean;
  /** A navigation key: several of them in one burst (`jjj`, tab tab) act as that many presses in the panes ({@link burstChars}). */
  repeats?: true;
  /** Only while this pane has the keyboard; there it goes before a binding of the same key for every pane (the focused pane gets a command first). */
  pane?: 'goals' | 'tail' | 'plants' | 'inbox' | 'chat';
}

/** Where each scope applies, as the help overlay and the README say it. */
export const SCOPE_TITLES: Record<KeyScope, string> = {
  panes: 'panes',
  attention: 'the needs-you list',
  review: 'a diff, a goal awaiting review',
  confirm: 'asked y / n',
  reject: 'rejecting work',
  form: 'new-goal form',
  input: 'message, supplement, answer, comment, reject',
  filter: 'typing a filter',
  text: 'any text field',
};

const plain = (i: string, k: Key, letter: string) => i === letter && !k.ctrl && !k.meta;
/**
 * Enter: a carriage return, or a line feed where no field takes it as a new
 * line. An Enter typed while the workbench starts, before the terminal is in
 * raw mode, reaches it as a line feed (the terminal's cooked mode turns CR
 * into LF), and is still Enter.
 */
const enter = (i: string, k: Key) => k.return || i === '\n';

/**
 * The one keymap: the only place keys are bound (STYLE.md). The dispatcher,
 * the help overlay, every on-screen hint and the README's key table
 * (`npm run keys:readme`) come from these rows.
 */
export const KEYMAP: readonly Binding[] = [
  { command: 'focus.next', keys: 'tab', description: 'next pane', scope: 'panes', match: (_, k) => k.tab && !k.shift, repeats: true },
  { command: 'focus.prev', keys: 'shift-tab', description: 'previous pane', scope: 'panes', match: (_, k) => k.tab && k.shift, repeats: true },
  { command: 'cursor.up', keys: '↑ k', description: 'move the selection up (the run pane, a detail, a list: scroll back)', scope: 'panes', match: (i, k) => k.upArrow || plain(i, k, 'k'), repeats: true },
  { command: 'cursor.down', keys: '↓ j', description: 'move the selection down', scope: 'panes', match: (i, k) => k.downArrow || plain(i, k, 'j'), repeats: true },
  { command: 'cursor.pageUp', keys: 'pgup', description: 'page up', scope: 'panes', match: (_, k) => k.pageUp, repeats: true },
  { command: 'cursor.pageDown', keys: 'pgdn', description: 'page down', scope: 'panes', match: (_, k) => k.pageDown, repeats: true },
  { command: 'cursor.top', keys: 'home g', description: 'first row', scope: 'panes', match: (i, k) => k.home || plain(i, k, 'g'), repeats: true },
  { command: 'cursor.bottom', keys: 'end G', description: 'last row', scope: 'panes', match: (i, k) => k.end || plain(i, k, 'G'), repeats: true },
  { command: 'open', keys: 'enter', description: 'open the selected goal (body, run record, cost, reflection) or note', scope: 'panes', match: (i, k) => enter(i, k) && !k.meta },
  { command: 'back', keys: 'esc', description: 'close the overlay, clear the filter', scope: 'panes', match: (_, k) => k.escape },
  { command: 'goal.new', keys: 'n', description: 'new goal form', scope: 'panes', match: (i, k) => plain(i, k, 'n') },
  {
    command: 'goal.cancel',
    keys: 'x',
    description: 'cancel the selected goal (asks first): a queued goal closes cancelled; a running goal has its run stopped and closes cancelled',
    scope: 'panes',
    match: (i, k) => plain(i, k, 'x'),
  },
  {
    command: 'run.stop',
    keys: 's',
    description: 'stop the live run of the selected goal or the run pane (asks first): killed, operator_stopped; its goal closes cancelled',
    scope: 'panes',
    match: (i, k) => plain(i, k, 's'),
  },
  { command: 'run.stopRequeue', keys: 'S', description: 'stop the live run and put its goal back in the queue (asks first)', scope: 'panes', match: (i, k) => plain(i, k, 'S') },
  {
    command: 'goal.retry',
    keys: 'r',
    description: 'retry the selected goal that closed failure or cancelled (asks first): a new goal with its body, plant and settings, retry_of naming it (pak2 retry)',
    scope: 'panes',
    match: (i, k) => plain(i, k, 'r'),
  },
  { command: 'goal.supplement', keys: 'a', description: 'add a supplement to the selected queued goal (a goal from the chat)', scope: 'panes', match: (i, k) => plain(i, k, 'a') },
  {
    command: 'question.answer',
    keys: 'a',
    description: 'in the inbox: answer the selected question (one line; enter posts it, esc cancels); the goal goes back to running or queued',
    scope: 'panes',
    pane: 'inbox',
    match: (i, k) => plain(i, k, 'a'),
  },
  {
    command: 'run.diff',
    keys: 'd',
    description: "the diff of the selected goal's latest run (or the run pane's run): its files with lines added and removed, then the patch",
    scope: 'panes',
    match: (i, k) => plain(i, k, 'd'),
  },
  { command: 'filter', keys: '/', description: 'filter the goal queue', scope: 'panes', match: (i, k) => plain(i, k, '/') },
  { command: 'chat.compose', keys: 'c', description: 'write to the garden in the chat pane', scope: 'panes', match: (i, k) => plain(i, k, 'c') },
  { command: 'problems', keys: 'p', description: 'list the problems: unreadable goal, run or plant files, coordinator errors', scope: 'panes', match: (i, k) => plain(i, k, 'p') },
  {
    command: 'attention',
    keys: '!',
    description: 'the needs-you list: open questions, landings awaiting review, budget stops, failed runs, blocked goals (the status line counts them)',
    scope: 'panes',
    match: (i, k) => plain(i, k, '!'),
  },
  {
    command: 'coordinator.takeOver',
    keys: 'T',
    description: 'once the coordinator this workbench attached to has stopped: start this workbench\'s own (asks first)',
    scope: 'panes',
    match: (i, k) => plain(i, k, 'T'),
  },
  {
    command: 'tend.pause',
    keys: 't',
    description: 'pause automatic tends, or resume them (pak2 tend pause|resume; kept across restarts; the status line says tends: paused)',
    scope: 'panes',
    match: (i, k) => plain(i, k, 't'),
  },
  { command: 'help', keys: '?', description: 'this help: every key', scope: 'panes', match: (i, k) => plain(i, k, '?') },
  {
    command: 'quit',
    keys: 'q ctrl-c',
    description: 'quit (asks first while a run is live; live runs are stopped and their goals go back to the queue); attached to another coordinator, it goes on running',
    scope: 'panes',
    match: (i, k) => plain(i, k, 'q') || (i === 'c' && k.ctrl),
  },

  { command: 'attention.ack', keys: 'a', description: 'acknowledge the selected item: it leaves the list (pak2 ack)', scope: 'attention', match: (i, k) => plain(i, k, 'a') },
  { command: 'attention.ackAll', keys: 'A', description: 'acknowledge every item listed (pak2 ack --all)', scope: 'attention', match: (i, k) => plain(i, k, 'A') },
  { command: 'attention.open', keys: 'enter', description: "close the list and select the item's goal in the goals pane", scope: 'attention', match: (i, k) => enter(i, k) && !k.meta },

  {
    command: 'review.accept',
    keys: 'a',
    description: "accept the run's work: the merge queue lands it on the base branch (on a goal in the queue: asks first)",
    scope: 'review',
    match: (i, k) => plain(i, k, 'a'),
  },
  {
    command: 'review.reject',
    keys: 'r',
    description: "reject the work: asks for a comment (may be empty) and whether the goal goes back to the queue or closes failure",
    scope: 'review',
    match: (i, k) => plain(i, k, 'r'),
  },
  { command: 'review.comment', keys: 'c', description: "comment on the goal: its thread, which the next attempt's prompt carries", scope: 'review', match: (i, k) => plain(i, k, 'c') },

  { command: 'confirm.yes', keys: 'y', description: 'yes: do it', scope: 'confirm', match: (i, k) => !k.ctrl && !k.meta && (i === 'y' || i === 'Y') },
  { command: 'confirm.no', keys: 'n esc', description: 'no: leave it as it is', scope: 'confirm', match: (i, k) => k.escape || (!k.ctrl && !k.meta && (i === 'n' || i === 'N')) },

  { command: 'reject.requeue', keys: 'tab', description: 'then: close the goal (failure), or put it back in the queue for another attempt', scope: 'reject', match: (_, k) => k.tab },

  { command: 'form.nextField', keys: 'tab', description: 'next field', scope: 'form', match: (_, k) => k.tab && !k.shift },
  { command: 'form.prevField', keys: 'shift-tab', description: 'previous field', scope: 'form', match: (_, k) => k.tab && k.shift },
  { command: 'form.fieldDown', keys: '↓', description: 'next field (outside the body)', scope: 'form', match: (_, k) => k.downArrow },
  { command: 'form.fieldUp', keys: '↑', description: 'previous field (outside the body)', scope: 'form', match: (_, k) => k.upArrow },
  { command: 'form.choosePrev', keys: '←', description: 'previous choice of type, plant, driver, task class, redact', scope: 'form', match: (_, k) => k.leftArrow },
  { command: 'form.chooseNext', keys: '→ space', description: 'next choice of type, plant, driver, task class, redact', scope: 'form', match: (i, k) => k.rightArrow || (i === ' ' && !k.ctrl && !k.meta) },
  { command: 'form.enter', keys: 'enter', description: 'next field; a new line in the body; submits on [ submit ]', scope: 'form', match: (i, k) => enter(i, k) },
  { command: 'form.submit', keys: 'ctrl-s', description: 'submit the goal', scope: 'form', match: (i, k) => k.ctrl && i === 's' },
  { command: 'form.cancel', keys: 'esc', description: 'close the form; with something in it, asks first (esc again or y discards it)', scope: 'form', match: (_, k) => k.escape },

  { command: 'input.send', keys: 'enter ctrl-s', description: 'send (the line breaks of a paste stay in the text)', scope: 'input', match: (i, k) => (k.return && !k.meta) || (k.ctrl && i === 's') },
  { command: 'input.newline', keys: 'alt-enter ctrl-j', description: 'a new line', scope: 'input', match: (i, k) => (k.return && k.meta) || i === '\n' },
  { command: 'input.cancel', keys: 'esc', description: 'cancel, nothing is sent', scope: 'input', match: (_, k) => k.escape },

  { command: 'filter.done', keys: 'enter tab', description: 'keep the filter, back to the list', scope: 'filter', match: (i, k) => enter(i, k) || k.tab },
  { command: 'filter.clear', keys: 'esc', description: 'clear the filter', scope: 'filter', match: (_, k) => k.escape },

  { command: 'text.left', keys: '←', description: 'cursor left', scope: 'text', match: (_, k) => k.leftArrow },
  { command: 'text.right', keys: '→', description: 'cursor right', scope: 'text', match: (_, k) => k.rightArrow },
  { command: 'text.start', keys: 'ctrl-a', description: 'start of the text', scope: 'text', match: (i, k) => k.ctrl && i === 'a' },
  { command: 'text.end', keys: 'ctrl-e', description: 'end of the text', scope: 'text', match: (i, k) => k.ctrl && i === 'e' },
  { command: 'text.deleteBack', keys: 'backspace', description: 'delete before the cursor', scope: 'text', match: (i, k) => k.backspace || (k.delete && !i) },
  { command: 'text.clear', keys: 'ctrl-u', description: 'clear the field', scope: 'text', match: (i, k) => k.ctrl && i === 'u' },
];

/** Whether a burst may repeat this command ({@link Binding.repeats}): the panes' navigation keys. */
export function repeatsInBurst(command: CommandId | undefined): boolean {
  return command !== undefined && KEYMAP.some((b) => b.command === command && b.repeats);
}

/** The command a key means in `scope`, if any; with `pane`, that pane's own binding of the key first. */
export function commandFor(input: string, key: Key, scope: KeyScope, pane?: Binding['pane']): CommandId | undefined {
  const own = pane ? KEYMAP.find((b) => b.scope === scope && b.pane === pane && b.match(input, key)) : undefined;
  return (own ?? KEYMAP.find((b) => b.scope === scope && !b.pane && b.match(input, key)))?.command;
}

/** The binding of a command. */
export function bindingOf(command: CommandId): Binding {
  const binding = KEYMAP.find((b) => b.command === command);
  if (!binding) throw new Error(`bug: no binding for ${command}`);
  return binding;
}

/** The key a hint names for a command: the first of its keys (`esc`, `↑`, `ctrl-s`). */
export function keyOf(command: CommandId): string {
  return bindingOf(command).keys.split(' ')[0]!;
}

/** A hint for the screen: the commands' keys, then what they do (`esc back`, `↑↓ scroll`, `y / n`). */
export function hint(commands: CommandId | readonly CommandId[], label: string): string {
  const list = typeof commands === 'string' ? [commands] : commands;
  return `${list.map(keyOf).join('')} ${label}`.trim();
}

/** Whether Ink recognised a named key (arrows, enter, esc, tab, paging, backspace, delete) in a sequence. */
export function isNamedKey(key: Key): boolean {
  return key.upArrow || key.downArrow || key.leftArrow || key.rightArrow || key.pageUp || key.pageDown || key.home || key.end || key.return || key.escape || key.tab || key.backspace || key.delete;
}

/** The text a key types, if it types any: not a control key, an alt key or a named key. */
export function typedText(input: string, key: Key): string | undefined {
  if (!input || key.ctrl || key.meta || isNamedKey(key)) return undefined;
  return input;
}

/**
 * The characters of a burst: several keys that arrived in one read
 * (`tmux send-keys j j j`, `send-keys -l jj`, tab tab, fast typing), which
 * Ink hands over as one `input` ("jjj", "\t\t") with no key named.
 * Undefined when `input` is one key. The dispatcher (`dispatchInput`) gives
 * a text field the burst's text as text, and every other key in it
 * ({@link charKey}) as a press of its own.
 */
export function burstChars(input: string, key: Key): string[] | undefined {
  if (key.ctrl || key.meta || isNamedKey(key)) return undefined;
  const chars = [...input];
  return chars.length > 1 ? chars : undefined;
}

/** Whether a character of a burst is text in a text field: printable, or a line break (typed fast, lines stay lines, as now). Tab, backspace and the control keys are keys. */
export function isTextChar(char: string): boolean {
  return char === '\r' || char === '\n' || !/^[\x00-\x1f\x7f]$/.test(char);
}

/** One character of a burst as Ink parses it when it arrives alone: tab, enter, backspace, ctrl-<letter>, a shifted letter, text. */
export function charKey(char: string): { input: string; key: Key } {
  if (char === '\t') return { input: '', key: { ...TEXT_KEY, tab: true } };
  if (char === '\r') return { input: '\r', key: { ...TEXT_KEY, return: true } };
  if (char === '\b') return { input: '', key: { ...TEXT_KEY, backspace: true } };
  if (char === '\x7f') return { input: '', key: { ...TEXT_KEY, delete: true } };
  if (char !== '\n' && /^[\x01-\x1a]$/.test(char)) return { input: String.fromCharCode(char.charCodeAt(0) + 96), key: { ...TEXT_KEY, ctrl: true } };
  return { input: char, key: { ...TEXT_KEY, shift: /^[A-Z]$/.test(char) } };
}

/** A key with nothing pressed but text: how pasted text reaches the dispatcher. */
export const TEXT_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
};

/** The help overlay's rows: every binding, grouped by where it applies. */
export function helpRows(): { scope: KeyScope; keys: string; description: string }[] {
  const order = Object.keys(SCOPE_TITLES) as KeyScope[];
  return order.flatMap((scope) => KEYMAP.filter((b) => b.scope === scope).map((b) => ({ scope, keys: b.keys, description: b.description })));
}

/** The README's key table (under "## The workbench"), generated from the keymap. */
export function keyTableMarkdown(): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const rows = helpRows().map((r) => `| ${cell(r.keys)} | ${cell(SCOPE_TITLES[r.scope])} | ${cell(r.description)} |`);
  return ['| keys | where | what they do |', '|---|---|---|', ...rows].join('\n');
}
