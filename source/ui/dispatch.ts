import { clampScroll, type ScrollLimits } from './scroll.js';
import type { Key } from 'ink';
import type { RunRecord } from '../contracts/index.js';
import type { GoalRow, QuestionView, Snapshot } from '../snapshot/types.js';
import { chatAnswer, isAnswerLine, openAnswer, sendAnswer } from './answer.js';
import type { WorkbenchActions } from './app.js';
import type { KeyEvent } from './hooks/use-keys.js';
import { burstChars, charKey, commandFor, isTextChar, keyOf, repeatsInBurst, TEXT_KEY, type CommandId } from './keymap.js';
import type { DetailSection } from './overlays/detail.js';
import { formKey, formTakesText, newGoalForm, type FormChoices, type GoalFormState } from './overlays/goal-form-state.js';
import { cancelPrompt, retryPrompt, stopPrompt, supplementRefusal, takeOverPrompt, type ActionPrompt, type PendingAction } from './operator-prompts.js';
import type { DiffLoad } from './overlays/diff.js';
import { openSelected } from './open.js';
import { acceptRun, openDiff, reviewCommand, reviewKeysApply, sendComment, sendReject } from './review.js';
import { goalStatusCell, type StatusMessage } from './status-line.js';
import { applyEditKey, editState, insertText, type EditState } from './text-edit.js';

/** The panes in tab order. */
export const PANES = ['goals', 'tail', 'plants', 'inbox', 'chat'] as const;
export type PaneName = (typeof PANES)[number];

/** What covers the panes, if anything; one at a time. */
export type Overlay =
  | { kind: 'none' }
  | { kind: 'help' }
  | { kind: 'problems' }
  /** The needs-you list (`!`); the selected item is the overlay scroll. */
  | { kind: 'attention' }
  | { kind: 'detail'; title: string; sections: DetailSection[]; goalId?: string }
  | { kind: 'form'; form: GoalFormState }
  | { kind: 'confirm'; prompt: ActionPrompt }
  | { kind: 'supplement'; goalId: string; edit: EditState }
  /** The one-line answer to an open question (`a` in the inbox). */
  | { kind: 'answer'; question: QuestionView; edit: EditState }
  /** A run's diff (`d`), where the review keys act on the run. */
  | { kind: 'diff'; runId: string; goalId: string; load: DiffLoad }
  /** Rejecting a run's work (`r`): a one-line comment, and whether its goal goes back to the queue; `back` is what esc returns to. */
  | { kind: 'reject'; runId: string; goalId: string; edit: EditState; requeue: boolean; back: Overlay }
  /** A comment on a goal (`c` in review); `back` is what it returns to (the diff). */
  | { kind: 'comment'; goalId: string; edit: EditState; back: Overlay }
  | { kind: 'quit' }
  | { kind: 'stopping' };

/** What the dispatcher reads: the workbench's state at the key. */
export interface WorkbenchState {
  snapshot: Snapshot;
  focus: PaneName;
  cursor: Record<PaneName, number>;
  filter: EditState;
  editingFilter: boolean;
  draft: EditState | undefined;
  overlay: Overlay;
  /** The goal rows the filter lets through, and the selected one. */
  goals: readonly GoalRow[];
  selectedGoal: GoalRow | undefined;
  /** The run the run pane shows. */
  tailRun: RunRecord | undefined;
  choices: FormChoices;
  /** Rows of a page in the goals pane. */
  pageRows: number;
  /** How far the run pane and the open overlay can scroll, as they last drew. */
  scrollLimits: ScrollLimits;
  /** The selected item of the needs-you list (the overlay's scroll). */
  attentionAt?: number;
}

/** What the dispatcher may change. */
export interface WorkbenchControls {
  setFocus(focus: PaneName): void;
  setCursor(update: (cursor: Record<PaneName, number>) => Record<PaneName, number>): void;
  setFilter(filter: EditState): void;
  setEditingFilter(editing: boolean): void;
  setDraft(draft: EditState | undefined): void;
  setOverlay(overlay: Overlay): void;
  /** Changes the overlay open when an answer comes (a diff loaded): `update` gets the one open then. */
  updateOverlay(update: (overlay: Overlay) => Overlay): void;
  /** Scroll of the detail, help and problems overlays. */
  setScroll(update: (scroll: number) => number): void;
  flash(message: StatusMessage | undefined): void;
  /** Says a line in the chat pane as the workbench's own narration (shown there, not written to the conversation). */
  narrate(text: string): void;
}

const notice = (text: string): StatusMessage => ({ text, error: true });

/**
 * How a burst is taken where the keys go: `text` (a text field: its text
 * is text, its other keys are presses), `keys` (the form's choice fields:
 * each key a press), `navigation` (the panes and the scrolling overlays:
 * a burst of navigation keys only, each a press) or `none` (a question).
 */
function burstMode(s: WorkbenchState): 'text' | 'keys' | 'navigation' | 'none' {
  const o = s.overlay;
  if (o.kind === 'stopping' || o.kind === 'quit' || o.kind === 'confirm') return 'none';
  if (o.kind === 'form') return formTakesText(o.form) ? 'text' : 'keys';
  if (o.kind === 'supplement' || o.kind === 'answer' || o.kind === 'reject' || o.kind === 'comment' || s.draft || s.editingFilter) return 'text';
  return 'navigation';
}

/**
 * Routes what one read of the terminal delivered. One key, or a paste (a
 * paste is text, handled as before): {@link dispatchKey}. A burst —
 * several keys in one read, which Ink hands over as one string (`jjj`,
 * tab tab, `npm test` typed fast) — is split where the keys go, each part
 * dispatched on the state the one before left (`read` gives it: the
 * controls update it at once): in a text field its text stays one piece
 * of text (line breaks included, as now) and a tab, a backspace or a ctrl
 * key in it is a press of its own; in a choice field of the form every key
 * is a press; in the panes a burst of navigation keys only (↓ ↑ j k g G,
 * tab, shift-tab: `repeats` in the keymap) is that many presses, and any
 * other burst is taken for text, which the panes run no command from.
 */
export function dispatchInput(read: () => WorkbenchState, input: string, key: Key, event: KeyEvent, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const chars = event.paste ? undefined : burstChars(input, key);
  if (!chars) return dispatchKey(read(), input, key, event, ui, actions);
  let i = 0;
  while (i < chars.length) {
    const s = read();
    const mode = burstMode(s);
    if (mode === 'none') return;
    if (mode === 'navigation') {
      const keys = chars.slice(i).map(charKey);
      // One key left after a field closed in the same read (the filter's Enter, then `x`) is a press; several non-navigation keys are text, not commands.
      if (keys.length > 1 && !keys.every((k) => repeatsInBurst(commandFor(k.input, k.key, 'panes')))) return;
      for (const k of keys) dispatchKey(read(), k.input, k.key, event, ui, actions);
      return;
    }
    let end = i;
    // The filter is one line: a line break in a burst there is its Enter, not text.
    const text = (c: string) => isTextChar(c) && !(s.editingFilter && (c === '\r' || c === '\n'));
    if (mode === 'text') while (end < chars.length && text(chars[end]!)) end += 1;
    if (end > i) {
      dispatchKey(s, chars.slice(i, end).join(''), TEXT_KEY, event, ui, actions);
      i = end;
    } else {
      const k = charKey(chars[i]!);
      dispatchKey(s, k.input, k.key, event, ui, actions);
      i += 1;
    }
  }
}

/**
 * Routes one key through the keymap (STYLE.md: one root input, keys to
 * command ids, the open overlay or field first): the y / n of a question,
 * the goal form, a supplement, the chat message, the filter, then the
 * panes. Operator actions are the core's (`WorkbenchActions`); their
 * errors become a one-line notice, never a crash.
 */
export function dispatchKey(s: WorkbenchState, input: string, key: Key, event: KeyEvent, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const o = s.overlay;
  if (o.kind === 'stopping') return;
  if (o.kind === 'quit' || o.kind === 'confirm') {
    if (event.paste) return;
    const command = commandFor(input, key, 'confirm');
    if (command === 'confirm.no') return ui.setOverlay({ kind: 'none' });
    if (command !== 'confirm.yes') return;
    if (o.kind === 'quit') {
      ui.setOverlay({ kind: 'stopping' });
      return actions.quit();
    }
    ui.setOverlay({ kind: 'none' });
    return perform(o.prompt.action, s, ui, actions);
  }
  if (o.kind === 'form') return formInput(o.form, s, input, key, event, ui, actions);
  if (o.kind === 'supplement') {
    return textInput(o.edit, input, key, event, {
      update: (edit) => ui.setOverlay({ ...o, edit }),
      cancel: () => ui.setOverlay({ kind: 'none' }),
      send: (text) => {
        ui.setOverlay({ kind: 'none' });
        if (!text.trim() || !actions.addSupplement) return;
        settle(() => actions.addSupplement!(o.goalId, text), ui, { text: `supplement added to ${o.goalId}`, error: false });
      },
    });
  }
  if (o.kind === 'answer') {
    return textInput(o.edit, input, key, event, {
      // One line: a line break (typed or pasted) is a space.
      update: (edit) => ui.setOverlay({ ...o, edit: { ...edit, text: edit.text.replace(/[\r\n]/g, ' ') } }),
      cancel: () => ui.setOverlay({ kind: 'none' }),
      send: (text) => {
        ui.setOverlay({ kind: 'none' });
        sendAnswer(o.question, text, ui, actions);
      },
    });
  }
  if (o.kind === 'reject') {
    if (!event.paste && commandFor(input, key, 'reject') === 'reject.requeue') return ui.setOverlay({ ...o, requeue: !o.requeue });
    return textInput(o.edit, input, key, event, {
      update: (edit) => ui.setOverlay({ ...o, edit: { ...edit, text: edit.text.replace(/[\r\n]/g, ' ') } }),
      cancel: () => ui.setOverlay(o.back),
      send: (text) => sendReject(o, text, ui, actions),
    });
  }
  if (o.kind === 'comment') return textInput(o.edit, input, key, event, { update: (edit) => ui.setOverlay({ ...o, edit }), cancel: () => ui.setOverlay(o.back), send: (text) => sendComment(o, text, ui, actions) });
  if (s.draft) {
    return textInput(s.draft, input, key, event, {
      update: (draft) => ui.setDraft(draft),
      cancel: () => ui.setDraft(undefined),
      send: (text) => {
        ui.setDraft(undefined);
        if (isAnswerLine(text.trim())) return chatAnswer(s, text.trim(), ui, actions);
        if (text.trim() && actions.sendMessage) settle(() => actions.sendMessage!(text), ui, { text: 'message sent', error: false });
      },
    });
  }
  if (s.editingFilter) {
    const command = event.paste ? undefined : commandFor(input, key, 'filter');
    if (command === 'filter.clear') {
      ui.setFilter(editState());
      return ui.setEditingFilter(false);
    }
    if (command === 'filter.done') return ui.setEditingFilter(false);
    const edited = event.paste ? insertText(s.filter, input, false) : applyEditKey(s.filter, input, key, false);
    if (edited === s.filter) return;
    ui.setFilter(edited);
    return ui.setCursor((c) => ({ ...c, goals: 0 }));
  }
  if (event.paste) return; // a paste is text: no field takes it here
  if (o.kind === 'attention') {
    const command = commandFor(input, key, 'attention');
    if (command) return attentionCommand(command, s, ui, actions);
  }
  // The diff overlay and a goal awaiting review take the review keys first (a, r, c).
  const review = reviewKeysApply(s) ? commandFor(input, key, 'review') : undefined;
  if (review) return reviewCommand(review, s, ui, actions);
  const command = commandFor(input, key, 'panes', s.focus);
  if (command) paneCommand(command, s, ui, actions);
}

/** A text field that sends (the chat message, a supplement): enter sends, a paste's line breaks are text. */
function textInput(edit: EditState, input: string, key: Key, event: KeyEvent, on: { update: (edit: EditState) => void; cancel: () => void; send: (text: string) => void }): void {
  if (event.paste) return on.update(insertText(edit, input, true));
  switch (commandFor(input, key, 'input')) {
    case 'input.cancel':
      return on.cancel();
    case 'input.send':
      return on.send(edit.text);
    case 'input.newline':
      return on.update(insertText(edit, '\n', true));
    default: {
      const edited = applyEditKey(edit, input, key, true);
      if (edited !== edit) on.update(edited);
    }
  }
}

function formInput(form: GoalFormState, s: WorkbenchState, input: string, key: Key, event: KeyEvent, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const outcome = formKey(form, input, key, s.choices, event.paste);
  if (outcome.cancel) return ui.setOverlay({ kind: 'none' });
  ui.setOverlay({ kind: 'form', form: outcome.state });
  if (!outcome.submit || !actions.submitGoal) return;
  const filled = outcome.state;
  const submitted = outcome.submit;
  attempt(() => actions.submitGoal!(submitted)).then(
    (goal) => {
      ui.setOverlay({ kind: 'none' });
      ui.setFocus('goals');
      ui.flash({ text: `queued ${goal.id}`, error: false, subject: { goal: goal.id } });
    },
    (error: Error) => ui.setOverlay({ kind: 'form', form: { ...filled, error: error.message } }),
  );
}

/** Calls a core action; a throw becomes a rejection (the key handler never throws). */
function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

/** Says when an action is done, or its error, on the status line; never throws. */
function settle(work: () => Promise<unknown>, ui: WorkbenchControls, done: StatusMessage): void {
  attempt(work).then(
    () => ui.flash(done),
    (error: unknown) => ui.flash(notice(error instanceof Error ? error.message : String(error))),
  );
}

/** Runs an action the operator said yes to. */
function perform(action: PendingAction, s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  if (action.kind === 'cancel') {
    if (!actions.cancelGoal) return ui.flash(notice('read-only dashboard: cancel goals with pak2 cancel'));
    const row = s.snapshot.goals.find((r) => r.goal.id === action.goalId);
    const subject = { goal: action.goalId, ...(action.runId ? { run: action.runId } : {}), ...(row ? { from: goalStatusCell(row) } : {}) };
    const text = action.runId ? `cancelling ${action.goalId}: stopping ${action.runId}…` : `cancelling ${action.goalId}…`;
    ui.flash({ text, error: false, subject });
    return settle(() => actions.cancelGoal!(action.goalId), ui, { text, error: false, subject });
  }
  if (action.kind === 'accept') return acceptRun(action.runId, action.goalId, s, ui, actions);
  if (action.kind === 'retry') return retry(action.goalId, ui, actions);
  if (action.kind === 'takeOver') {
    if (!actions.takeOver) return ui.flash(notice('read-only dashboard: run the garden with pak2'));
    ui.flash({ text: 'starting this workbench\'s coordinator…', error: false });
    return void attempt(actions.takeOver).then(
      (said) => ui.flash({ text: said, error: false }),
      (error: unknown) => ui.flash(notice(error instanceof Error ? error.message : String(error))),
    );
  }
  if (!actions.stopRun) return ui.flash(notice('read-only dashboard: stop runs with pak2 stop'));
  const subject = { goal: action.goalId, run: action.runId };
  const text = `stopping ${action.runId}${action.requeue ? ' (its goal goes back to the queue)' : ''}…`;
  ui.flash({ text, error: false, subject });
  settle(() => actions.stopRun!(action.runId, action.requeue ? { requeue: true } : {}), ui, { text, error: false, subject });
}

/** Retries a goal through the core; says the new goal (followed on the status line as it runs), or the refusal. */
function retry(goalId: string, ui: WorkbenchControls, actions: WorkbenchActions): void {
  if (!actions.retryGoal) return ui.flash(notice('read-only dashboard: retry goals with pak2 retry'));
  ui.flash({ text: `retrying ${goalId}…`, error: false });
  attempt(() => actions.retryGoal!(goalId)).then(
    ({ goal, moved }) => ui.flash({ text: `queued ${goal.id} (retry of ${goalId})${moved.length ? `; ${moved.join(', ')} wait for it` : ''}`, error: false, subject: { goal: goal.id, from: 'queued' } }),
    (error: unknown) => ui.flash(notice(error instanceof Error ? error.message : String(error))),
  );
}

/** The run a stop key means: the run pane's run there, else the selected goal's. */
function runToStop(s: WorkbenchState): { row: GoalRow | undefined; run: RunRecord | undefined } {
  if (s.focus === 'tail') return { row: s.goals.find((r) => r.run?.id === s.tailRun?.id) ?? s.selectedGoal, run: s.tailRun };
  const row = s.selectedGoal;
  return { row, run: row?.run?.status === 'running' ? row.run : undefined };
}

function paneCommand(command: CommandId, s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const o = s.overlay;
  const onGoal = s.focus === 'goals' || s.focus === 'tail';
  const ask = (prompt: ReturnType<typeof cancelPrompt>) => ('refusal' in prompt ? ui.flash(notice(prompt.refusal)) : ui.setOverlay({ kind: 'confirm', prompt }));
  switch (command) {
    case 'help':
      ui.setScroll(() => 0);
      return ui.setOverlay(o.kind === 'help' ? { kind: 'none' } : { kind: 'help' });
    case 'problems':
      ui.setScroll(() => 0);
      return ui.setOverlay(o.kind === 'problems' ? { kind: 'none' } : { kind: 'problems' });
    case 'attention':
      ui.setScroll(() => 0);
      return ui.setOverlay(o.kind === 'attention' ? { kind: 'none' } : { kind: 'attention' });
    case 'quit':
      if (s.snapshot.coordinator.liveRuns.length > 0) return ui.setOverlay({ kind: 'quit' });
      return actions.quit();
    case 'coordinator.takeOver':
      return ask(takeOverPrompt(s.snapshot, Boolean(actions.takeOver)));
    case 'back':
      if (o.kind !== 'none') return ui.setOverlay({ kind: 'none' });
      if (s.filter.text) return ui.setFilter(editState());
      return;
    case 'focus.next':
    case 'focus.prev': {
      if (o.kind !== 'none') return;
      const i = PANES.indexOf(s.focus);
      return ui.setFocus(PANES[(i + (command === 'focus.next' ? 1 : PANES.length - 1)) % PANES.length]!);
    }
    case 'cursor.up':
    case 'cursor.down':
    case 'cursor.pageUp':
    case 'cursor.pageDown':
    case 'cursor.top':
    case 'cursor.bottom':
      return move(command, s, ui);
    default:
      break;
  }
  // The rest act on the panes: not while an overlay covers them.
  if (o.kind !== 'none') return;
  switch (command) {
    case 'goal.new':
      if (!actions.submitGoal) return ui.flash(notice('read-only dashboard: submit goals with pak2 submit or the workbench'));
      if (s.choices.plants.length === 0) return ui.flash(notice('no plants yet: run pak2 genesis'));
      return ui.setOverlay({ kind: 'form', form: newGoalForm(s.choices) });
    case 'goal.cancel':
      if (!actions.cancelGoal) return ui.flash(notice('read-only dashboard: cancel goals with pak2 cancel'));
      if (!onGoal) return ui.flash(notice('select a goal in the goals pane first'));
      return ask(cancelPrompt(s.selectedGoal));
    case 'goal.retry':
      if (!actions.retryGoal) return ui.flash(notice('read-only dashboard: retry goals with pak2 retry'));
      if (s.focus !== 'goals') return ui.flash(notice('select a closed goal in the goals pane first'));
      return ask(retryPrompt(s.selectedGoal, s.snapshot.goals));
    case 'run.stop':
    case 'run.stopRequeue': {
      if (!actions.stopRun) return ui.flash(notice('read-only dashboard: stop runs with pak2 stop'));
      if (!onGoal) return ui.flash(notice('select a running goal, or the run pane, first'));
      const { row, run } = runToStop(s);
      return ask(stopPrompt(row, run, command === 'run.stopRequeue'));
    }
    case 'goal.supplement': {
      if (!actions.addSupplement) return ui.flash(notice('read-only dashboard: add supplements with pak2 supplement'));
      if (!onGoal) return ui.flash(notice('select a queued goal in the goals pane first'));
      const refused = supplementRefusal(s.selectedGoal);
      if (refused) return ui.flash(notice(refused.refusal));
      return ui.setOverlay({ kind: 'supplement', goalId: s.selectedGoal!.goal.id, edit: editState() });
    }
    case 'question.answer':
      return openAnswer(s, ui, actions);
    case 'run.diff':
      return openDiff(s, ui, actions);
    case 'filter':
      ui.setFocus('goals');
      return ui.setEditingFilter(true);
    case 'chat.compose':
      if (!actions.sendMessage) return ui.flash(notice('read-only dashboard: chat is off'));
      ui.setFocus('chat');
      return ui.setDraft(editState());
    case 'open':
      return openSelected(s, ui, actions);
    case 'tend.pause': {
      if (!actions.setTendsPaused) return ui.flash(notice('read-only dashboard: pause tends with pak2 tend pause'));
      // What the snapshot shows decides the way: paused (or tend.json unreadable) resumes, anything else pauses.
      const pause = !s.snapshot.tend?.paused && !s.snapshot.tend?.problem;
      const text = pause ? 'pausing automatic tends…' : 'resuming automatic tends…';
      ui.flash({ text, error: false });
      return settle(() => actions.setTendsPaused!(pause), ui, { text: pause ? `automatic tends paused (${keyOf('tend.pause')} resumes)` : 'automatic tends resumed', error: false });
    }
    default:
      return;
  }
}

/** Moves the selection of the focused pane, scrolls the run pane back, or scrolls an overlay. */
function move(command: CommandId, s: WorkbenchState, ui: WorkbenchControls): void {
  const kind = s.overlay.kind;
  // An overlay pages by the rows it shows; the panes by the goals pane's.
  const page = Math.max(1, kind === 'none' ? s.pageRows : s.scrollLimits.overlayRows);
  const delta = command === 'cursor.up' ? -1 : command === 'cursor.down' ? 1 : command === 'cursor.pageUp' ? -page : command === 'cursor.pageDown' ? page : command === 'cursor.top' ? -1e9 : 1e9;
  // From where the view shows (a jump to the top or the end stores more than there is), to no farther than it goes.
  const { overlay, tail } = s.scrollLimits;
  if (kind === 'attention') return ui.setScroll((v) => clampScroll(v + delta, Math.max(0, s.snapshot.attention.length - 1)));
  if (kind === 'detail' || kind === 'help' || kind === 'problems' || kind === 'diff') return ui.setScroll((v) => clampScroll(clampScroll(v, overlay) + delta, overlay));
  if (kind !== 'none') return;
  if (s.focus === 'tail') return ui.setCursor((c) => ({ ...c, tail: clampScroll(clampScroll(c.tail, tail) - delta, tail) })); // up scrolls back
  const length = s.focus === 'goals' ? s.goals.length : s.focus === 'plants' ? s.snapshot.plants.length : s.focus === 'inbox' ? s.snapshot.questions.length + s.snapshot.inbox.length : 0;
  ui.setCursor((c) => ({ ...c, [s.focus]: clampScroll(c[s.focus] + delta, Math.max(0, length - 1)) }));
}

/**
 * A key of the needs-you list (docs/attention/level2.md, "In the
 * workbench"): `a` acknowledges the selected item, `A` every item listed,
 * enter selects the item's goal in the goals pane. The selection is the
 * overlay's scroll, kept within the list as it changes.
 */
function attentionCommand(command: CommandId, s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const items = s.snapshot.attention;
  const item = items[attentionIndex(s)];
  if (command === 'attention.open') {
    if (!item?.goal) return;
    const at = s.goals.findIndex((r) => r.goal.id === item.goal);
    if (at < 0) return ui.flash(notice(`${item.goal} is not in the goal queue as filtered (esc clears the filter)`));
    ui.setOverlay({ kind: 'none' });
    ui.setFocus('goals');
    return ui.setCursor((c) => ({ ...c, goals: at }));
  }
  if (!actions.ackAttention) return ui.flash(notice('read-only dashboard: acknowledge with pak2 ack'));
  if (command === 'attention.ackAll') {
    if (items.length === 0) return;
    return settle(() => actions.ackAttention!('all'), ui, { text: `acknowledged ${items.length} item${items.length === 1 ? '' : 's'}`, error: false });
  }
  if (command === 'attention.ack' && item) settle(() => actions.ackAttention!([item.id]), ui, { text: `acknowledged ${item.id}`, error: false });
}

/** The selected item of the needs-you list: the overlay's scroll, which the app keeps in {@link WorkbenchState.attentionAt}. */
function attentionIndex(s: WorkbenchState): number {
  return Math.max(0, Math.min(s.attentionAt ?? 0, s.snapshot.attention.length - 1));
}
