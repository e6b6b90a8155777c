import { GOAL_TYPES, PRIORITY_DEFAULT } from '../../contracts/index.js';
import { applyEditKey, editState } from '../text-edit.js';
/** The form's fields in tab order. */
export const FORM_FIELDS = ['type', 'plant', 'priority', 'driver', 'model', 'body', 'submit'];
/** A fresh form: build, the first plant (gardener when present), priority 50, default driver. */
export function newGoalForm(choices) {
    const gardener = choices.plants.indexOf('gardener');
    return {
        field: FORM_FIELDS.indexOf('body'),
        type: GOAL_TYPES.indexOf('build'),
        plant: Math.max(0, gardener),
        driver: 0,
        priority: editState(String(PRIORITY_DEFAULT)),
        model: editState(),
        body: editState(),
        error: undefined,
    };
}
const cycle = (value, delta, length) => (length === 0 ? 0 : (value + delta + length) % length);
/** The submit input the form describes; `error` when a field is not valid. */
export function formInput(state, choices) {
    const plant = choices.plants[state.plant];
    if (!plant)
        return { error: 'plant: there are no plants (run pak2 genesis)' };
    if (!/^\d+$/.test(state.priority.text))
        return { error: 'priority: a whole number from 0 to 100' };
    if (!state.body.text.trim())
        return { error: 'body: write the task first' };
    const driver = state.driver > 0 ? choices.drivers[state.driver] : undefined;
    return {
        type: GOAL_TYPES[state.type],
        plant,
        body: state.body.text,
        priority: Number(state.priority.text),
        ...(driver ? { driver } : {}),
        ...(state.model.text.trim() ? { model: state.model.text.trim() } : {}),
    };
}
/**
 * Applies one key: tab / shift-tab move between fields, ← → change a choice,
 * typing edits text fields (enter adds a line in the body, moves on
 * elsewhere), enter on "submit" or ctrl-s submits, esc cancels.
 */
export function formKey(state, input, key, choices) {
    const field = FORM_FIELDS[state.field];
    if (key.escape)
        return { state, cancel: true };
    const submit = () => {
        const result = formInput(state, choices);
        if ('error' in result)
            return { state: { ...state, error: result.error } };
        return { state: { ...state, error: undefined }, submit: result };
    };
    if (key.ctrl && input === 's')
        return submit();
    if (key.tab)
        return { state: { ...state, field: cycle(state.field, key.shift ? -1 : 1, FORM_FIELDS.length), error: undefined } };
    if (key.upArrow && field !== 'body')
        return { state: { ...state, field: cycle(state.field, -1, FORM_FIELDS.length) } };
    if (key.downArrow && field !== 'body')
        return { state: { ...state, field: cycle(state.field, 1, FORM_FIELDS.length) } };
    if (field === 'submit')
        return key.return ? submit() : { state };
    if (field === 'type' || field === 'plant' || field === 'driver') {
        const length = field === 'type' ? GOAL_TYPES.length : field === 'plant' ? choices.plants.length : choices.drivers.length;
        if (key.leftArrow || key.rightArrow || input === ' ')
            return { state: { ...state, [field]: cycle(state[field], key.leftArrow ? -1 : 1, length) } };
        if (key.return)
            return { state: { ...state, field: state.field + 1 } };
        return { state };
    }
    if (key.return && field !== 'body')
        return { state: { ...state, field: state.field + 1 } };
    const edited = applyEditKey(state[field], input, key, field === 'body');
    if (field === 'priority' && !/^\d{0,3}$/.test(edited.text))
        return { state };
    return { state: { ...state, [field]: edited, error: undefined } };
}
//# sourceMappingURL=goal-form-state.js.map