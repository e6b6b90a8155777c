import type { Key } from 'ink';
import { GOAL_TYPES, PRIORITY_DEFAULT } from '../../contracts/index.js';
import type { GuardInput, SubmitGoalInput } from '../../submit/index.js';
import { commandFor, keyOf } from '../keymap.js';
import { applyEditKey, editState, insertText, type EditState } from '../text-edit.js';

/**
 * The form's fields in tab order: after the model the goals it waits for
 * (`--after`), then the guard's (task class, verify, its timeout, allow,
 * forbid, pass env, contract, redact), the fields `pak2 submit` has for a
 * guarded goal; then the body.
 */
export const FORM_FIELDS = ['type', 'plant', 'priority', 'driver', 'model', 'after', 'taskClass', 'verify', 'verifyTimeout', 'allow', 'forbid', 'passEnv', 'contract', 'redact', 'body', 'submit'] as const;
export type FormField = (typeof FORM_FIELDS)[number];

/** The goal form being filled in. Choice fields hold an index into their options. */
export interface GoalFormState {
  field: number;
  type: number;
  plant: number;
  driver: number;
  /** Index into `['(none)', ...choices.taskClasses]`. */
  taskClass: number;
  priority: EditState;
  model: EditState;
  /** Index into {@link REDACT_OPTIONS}: 0 redacts (the default), 1 is `--no-redact`. */
  redact: number;
  /** A guarded run's verify command (one line). */
  verify: EditState;
  /** Verify's limit, whole seconds (`--verify-timeout`); empty: `[guard]`'s, else 600. */
  verifyTimeout: EditState;
  /** Globs, separated by spaces; a glob with a space in quotes ({@link splitGlobs}). */
  allow: EditState;
  forbid: EditState;
  /** Environment variable names (`--pass-env`), separated by spaces or commas. */
  passEnv: EditState;
  /** The contract id (`--contract`). */
  contract: EditState;
  /** Goal ids it waits for (`--after`), separated by spaces or commas. */
  after: EditState;
  body: EditState;
  error: string | undefined;
  /** Esc was pressed on a form with something in it: the form asks whether to discard it (esc again or y discards, any other key keeps editing). */
  discarding?: boolean;
}

/** The text fields of the form. */
const TEXT_FIELDS = ['priority', 'model', 'verify', 'verifyTimeout', 'allow', 'forbid', 'passEnv', 'contract', 'after', 'body'] as const;
type TextField = (typeof TEXT_FIELDS)[number];
const isTextField = (field: FormField): field is TextField => (TEXT_FIELDS as readonly string[]).includes(field);

/** Whether the field the form is on takes text (a burst of keys is typed there, not pressed). */
export function formTakesText(state: GoalFormState): boolean {
  return !state.discarding && isTextField(FORM_FIELDS[state.field]!);
}

/** The question the form asks on esc when something is in it ({@link GoalFormState.discarding}). */
export function discardQuestion(): string {
  return `discard this goal? ${keyOf('form.cancel')} again or y discards it; any other key goes back to it`;
}

/** Whether the form is as it opened: nothing typed or chosen (where it is, the field it is on, does not count). */
export function formUntouched(state: GoalFormState, choices: FormChoices): boolean {
  const fresh = newGoalForm(choices);
  return (Object.keys(fresh) as (keyof GoalFormState)[]).every((name) => {
    if (name === 'field' || name === 'error' || name === 'discarding') return true;
    const [now, then] = [state[name], fresh[name]];
    return typeof now === 'object' && now !== null && typeof then === 'object' && then !== null ? now.text === then.text : now === then;
  });
}

/** The redact field's choices: the run's artifacts redacted (the default), or not (`--no-redact`). */
export const REDACT_OPTIONS = ['on', 'off (--no-redact)'] as const;

/** The choice fields of the form. */
type ChoiceField = 'type' | 'plant' | 'driver' | 'taskClass' | 'redact';
const isChoiceField = (field: FormField): field is ChoiceField => field === 'type' || field === 'plant' || field === 'driver' || field === 'taskClass' || field === 'redact';

/** What a text field accepts while it is typed into (digits only for the numbers); other edits are refused. */
const TYPED_SHAPE: Partial<Record<TextField, RegExp>> = { priority: /^\d{0,3}$/, verifyTimeout: /^\d{0,7}$/ };

/**
 * Splits a glob field into globs: spaces between them, and a glob with a
 * space written in quotes, double or single (`src/** "docs/my notes/*"`);
 * a quote may sit inside a word (`docs/"my notes"/*`). Nothing else is
 * special (a backslash is the glob's own escape, a comma is a brace
 * list's). `error` when a quote is not closed.
 */
export function splitGlobs(text: string): string[] | { error: string } {
  const globs: string[] = [];
  let current = '';
  let inWord = false;
  let quote: string | undefined;
  for (const char of text) {
    if (quote) {
      if (char === quote) quote = undefined;
      else current += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) globs.push(current);
      current = '';
      inWord = false;
    } else {
      current += char;
      inWord = true;
    }
  }
  if (quote) return { error: `a ${quote} quote is not closed` };
  if (inWord) globs.push(current);
  return globs;
}

/** The options of the choice fields, from the snapshot. `drivers[0]` is "(default)"; `taskClasses` the `[routing]` classes (none: absent or empty). */
export interface FormChoices {
  plants: string[];
  drivers: string[];
  taskClasses?: string[];
}

/** The task class choices: "(none)", then the garden's `[routing]` classes. */
export function taskClassOptions(choices: FormChoices): string[] {
  return ['(none)', ...(choices.taskClasses ?? [])];
}

/** A fresh form: build, the first plant (gardener when present), priority 50, default driver. */
export function newGoalForm(choices: FormChoices): GoalFormState {
  const gardener = choices.plants.indexOf('gardener');
  return {
    field: FORM_FIELDS.indexOf('body'),
    type: GOAL_TYPES.indexOf('build'),
    plant: Math.max(0, gardener),
    driver: 0,
    taskClass: 0,
    redact: 0,
    priority: editState(String(PRIORITY_DEFAULT)),
    model: editState(),
    verify: editState(),
    verifyTimeout: editState(),
    allow: editState(),
    forbid: editState(),
    passEnv: editState(),
    contract: editState(),
    after: editState(),
    body: editState(),
    error: undefined,
  };
}

/** What a key did to the form. */
export type FormOutcome = { state: GoalFormState; submit?: SubmitGoalInput; cancel?: boolean };

const cycle = (value: number, delta: number, length: number) => (length === 0 ? 0 : (value + delta + length) % length);

/** The submit input the form describes; `error` when a field is not valid. */
export function formInput(state: GoalFormState, choices: FormChoices): SubmitGoalInput | { error: string } {
  const plant = choices.plants[state.plant];
  if (!plant) return { error: 'plant: there are no plants (run pak2 genesis)' };
  if (!/^\d+$/.test(state.priority.text)) return { error: 'priority: a whole number from 0 to 100' };
  if (!state.body.text.trim()) return { error: 'body: write the task first' };
  const driver = state.driver > 0 ? choices.drivers[state.driver] : undefined;
  const taskClass = state.taskClass > 0 ? taskClassOptions(choices)[state.taskClass] : undefined;
  const allow = splitGlobs(state.allow.text);
  if ('error' in allow) return { error: `allow: ${allow.error}` };
  const forbid = splitGlobs(state.forbid.text);
  if ('error' in forbid) return { error: `forbid: ${forbid.error}` };
  const verify = state.verify.text.trim();
  const timeout = state.verifyTimeout.text.trim();
  const passEnv = state.passEnv.text.split(/[\s,]+/).filter(Boolean);
  const contract = state.contract.text.trim();
  // Any guard field makes the goal guarded, as any guard flag of pak2 submit does; the submit action checks each (and that the garden is a git repository).
  const fields: GuardInput = {
    ...(verify ? { verify } : {}),
    ...(timeout ? { timeoutSeconds: Number(timeout) } : {}),
    ...(allow.length ? { allowedFiles: allow } : {}),
    ...(forbid.length ? { forbiddenPaths: forbid } : {}),
    ...(passEnv.length ? { envPassthrough: passEnv } : {}),
    ...(contract ? { contractId: contract } : {}),
    ...(state.redact === 1 ? { redact: false } : {}),
  };
  const guard = Object.keys(fields).length ? fields : undefined;
  const after = state.after.text.split(/[\s,]+/).filter(Boolean);
  return {
    type: GOAL_TYPES[state.type]!,
    plant,
    body: state.body.text,
    priority: Number(state.priority.text),
    ...(driver ? { driver } : {}),
    ...(state.model.text.trim() ? { model: state.model.text.trim() } : {}),
    ...(guard ? { guard } : {}),
    ...(taskClass ? { taskClass } : {}),
    ...(after.length ? { dependsOn: after } : {}),
  };
}

/**
 * Applies one key through the keymap's `form` keys: tab / shift-tab (and
 * ↓ ↑ outside the body) move between fields, ← → (space) change a choice,
 * enter moves on (a new line in the body, submits on "submit"), ctrl-s
 * submits, esc closes a form as it opened and asks first when something is
 * in it ({@link GoalFormState.discarding}: esc again or y discards); text
 * fields take the `text` keys and typed or pasted text (`paste`: a paste
 * goes to a text field only).
 */
export function formKey(state: GoalFormState, input: string, key: Key, choices: FormChoices, paste = false): FormOutcome {
  if (state.discarding) {
    // The discard question: esc again or y throws the goal away; any other key (a paste too) goes back to the form, unapplied.
    const discard = !paste && (commandFor(input, key, 'form') === 'form.cancel' || commandFor(input, key, 'confirm') === 'confirm.yes');
    return discard ? { state, cancel: true } : { state: { ...state, discarding: false } };
  }
  const field = FORM_FIELDS[state.field]!;
  const submit = (): FormOutcome => {
    const result = formInput(state, choices);
    if ('error' in result) return { state: { ...state, error: result.error } };
    return { state: { ...state, error: undefined }, submit: result };
  };
  const command = paste ? undefined : commandFor(input, key, 'form');
  const move = (delta: number): FormOutcome => ({ state: { ...state, field: cycle(state.field, delta, FORM_FIELDS.length), error: undefined } });
  switch (command) {
    case 'form.cancel':
      // A form as it opened closes at once; one with something in it asks first.
      return formUntouched(state, choices) ? { state, cancel: true } : { state: { ...state, discarding: true } };
    case 'form.submit':
      return submit();
    case 'form.nextField':
    case 'form.prevField':
      return move(command === 'form.nextField' ? 1 : -1);
    case 'form.fieldDown':
    case 'form.fieldUp':
      // In the body (many lines) ↑ ↓ stay put.
      return field === 'body' ? { state } : move(command === 'form.fieldDown' ? 1 : -1);
    case 'form.enter':
      if (field === 'submit') return submit();
      if (field === 'body') return { state: { ...state, body: insertText(state.body, '\n', true), error: undefined } };
      return { state: { ...state, field: state.field + 1 } };
    case 'form.choosePrev':
    case 'form.chooseNext':
      if (isChoiceField(field)) {
        const length = field === 'type' ? GOAL_TYPES.length : field === 'plant' ? choices.plants.length : field === 'driver' ? choices.drivers.length : field === 'redact' ? REDACT_OPTIONS.length : taskClassOptions(choices).length;
        return { state: { ...state, [field]: cycle(state[field], command === 'form.choosePrev' ? -1 : 1, length) } };
      }
      break; // in a text field ← → move the cursor, a space is typed
    default:
      break;
  }
  if (!isTextField(field)) return { state };
  const edited = applyEditKey(state[field], input, key, field === 'body');
  if (edited === state[field]) return { state };
  if (TYPED_SHAPE[field] && !TYPED_SHAPE[field].test(edited.text)) return { state };
  return { state: { ...state, [field]: edited, error: undefined } };
}
