import type { Key } from 'ink';
import { GOAL_TYPES, PRIORITY_DEFAULT } from '../../contracts/index.js';
import type { SubmitGoalInput } from '../../submit/index.js';
import { commandFor } from '../keymap.js';
import { applyEditKey, editState, insertText, type EditState } from '../text-edit.js';

/** The form's fields in tab order (the guard's after the model: task class, verify, allow, forbid). */
export const FORM_FIELDS = ['type', 'plant', 'priority', 'driver', 'model', 'taskClass', 'verify', 'allow', 'forbid', 'body', 'submit'] as const;
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
  /** A guarded run's verify command (one line). */
  verify: EditState;
  /** Globs, separated by spaces. */
  allow: EditState;
  forbid: EditState;
  body: EditState;
  error: string | undefined;
}

/** The text fields of the form. */
const TEXT_FIELDS = ['priority', 'model', 'verify', 'allow', 'forbid', 'body'] as const;
type TextField = (typeof TEXT_FIELDS)[number];
const isTextField = (field: FormField): field is TextField => (TEXT_FIELDS as readonly string[]).includes(field);

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
    priority: editState(String(PRIORITY_DEFAULT)),
    model: editState(),
    verify: editState(),
    allow: editState(),
    forbid: editState(),
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
  const globs = (edit: EditState) => edit.text.split(/\s+/).filter(Boolean);
  const verify = state.verify.text.trim();
  const allow = globs(state.allow);
  const forbid = globs(state.forbid);
  // Any guard field makes the goal guarded; the submit action checks each (and that the garden is a git repository).
  const guard = verify || allow.length || forbid.length ? { ...(verify ? { verify } : {}), ...(allow.length ? { allowedFiles: allow } : {}), ...(forbid.length ? { forbiddenPaths: forbid } : {}) } : undefined;
  return {
    type: GOAL_TYPES[state.type]!,
    plant,
    body: state.body.text,
    priority: Number(state.priority.text),
    ...(driver ? { driver } : {}),
    ...(state.model.text.trim() ? { model: state.model.text.trim() } : {}),
    ...(guard ? { guard } : {}),
    ...(taskClass ? { taskClass } : {}),
  };
}

/**
 * Applies one key through the keymap's `form` keys: tab / shift-tab (and
 * ↓ ↑ outside the body) move between fields, ← → (space) change a choice,
 * enter moves on (a new line in the body, submits on "submit"), ctrl-s
 * submits, esc cancels; text fields take the `text` keys and typed or
 * pasted text (`paste`: a paste goes to a text field only).
 */
export function formKey(state: GoalFormState, input: string, key: Key, choices: FormChoices, paste = false): FormOutcome {
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
      return { state, cancel: true };
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
      if (field === 'type' || field === 'plant' || field === 'driver' || field === 'taskClass') {
        const length = field === 'type' ? GOAL_TYPES.length : field === 'plant' ? choices.plants.length : field === 'driver' ? choices.drivers.length : taskClassOptions(choices).length;
        return { state: { ...state, [field]: cycle(state[field], command === 'form.choosePrev' ? -1 : 1, length) } };
      }
      break; // in a text field ← → move the cursor, a space is typed
    default:
      break;
  }
  if (!isTextField(field)) return { state };
  const edited = applyEditKey(state[field], input, key, field === 'body');
  if (edited === state[field]) return { state };
  if (field === 'priority' && !/^\d{0,3}$/.test(edited.text)) return { state };
  return { state: { ...state, [field]: edited, error: undefined } };
}
