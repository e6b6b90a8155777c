import { Text } from 'ink';
import React from 'react';
import { GOAL_TYPES } from '../../contracts/index.js';
import { hint, keyOf } from '../keymap.js';
import { withCursor } from '../panes/chat.js';
import { fit, windowRange, wrapTail } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
import { discardQuestion, FORM_FIELDS, REDACT_OPTIONS, taskClassOptions, type FormChoices, type FormField, type GoalFormState } from './goal-form-state.js';

/** Props of {@link GoalForm}. */
export interface GoalFormProps {
  state: GoalFormState;
  choices: FormChoices;
  width: number;
  height: number;
}

/** The form's keys, in its top border. */
const FORM_HINT = [hint('form.nextField', 'next field'), hint(['form.choosePrev', 'form.chooseNext'], 'choose'), hint('form.submit', 'submit'), hint('form.cancel', 'cancel')].join(' · ');

/** The body's rows the form keeps on a short terminal. */
const BODY_ROWS_MIN = 3;

/** What each guard field takes, shown under the form while the field is active (the placeholders say it shorter). */
const FIELD_HINTS: Partial<Record<FormField, string>> = {
  taskClass: 'the tiers of [routing.<class>] in PAK2.toml the goal runs on (--task-class)',
  verify: 'run with sh -c after the agent; the work is kept only if it exits 0 (--verify)',
  verifyTimeout: "verify's limit, whole seconds; empty: [guard]'s, else 600 (--verify-timeout)",
  allow: 'globs it may change, spaces between; a glob with a space in "quotes" (--allow)',
  forbid: 'globs it must not change, spaces between; a glob with a space in "quotes" (--forbid)',
  passEnv: 'variable names for the agent and verify, redacted; spaces or commas between (--pass-env)',
  contract: 'the contract id the run answers to (--contract)',
  redact: "off keeps secrets in the run's artifacts (--no-redact)",
  after: 'goal ids it waits for: it runs once each closed success; spaces or commas between (--after)',
};

/**
 * The new-goal form: type, plant, priority, driver, model, the goals it
 * waits for (after), the guard (task class, verify, its timeout, allow,
 * forbid, pass env, contract, redact: the fields of `pak2 submit`) and a
 * multi-line body; under it, what the active guard or after field takes.
 */
export function GoalForm({ state, choices, width, height }: GoalFormProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const at = (name: FormField) => FORM_FIELDS[state.field] === name;
  const choice = (name: 'type' | 'plant' | 'driver' | 'taskClass' | 'redact', options: readonly string[]) => (at(name) ? `‹ ${options[state[name]] ?? '-'} ›` : options[state[name]] ?? '-');
  const text = (name: 'priority' | 'model' | 'verify' | 'verifyTimeout' | 'allow' | 'forbid' | 'passEnv' | 'contract' | 'after', placeholder = '') => (at(name) ? withCursor(state[name]) : state[name].text || placeholder);
  const rows: { label: string; value: string; active: boolean }[] = [
    { label: 'type', value: choice('type', GOAL_TYPES), active: at('type') },
    { label: 'plant', value: choice('plant', choices.plants), active: at('plant') },
    { label: 'priority', value: text('priority'), active: at('priority') },
    { label: 'driver', value: choice('driver', choices.drivers), active: at('driver') },
    { label: 'model', value: text('model', '(default)'), active: at('model') },
    { label: 'after', value: text('after', '(goal ids it waits for)'), active: at('after') },
    { label: 'class', value: choice('taskClass', taskClassOptions(choices)), active: at('taskClass') },
    { label: 'verify', value: text('verify', '(no guard: a command that must pass)'), active: at('verify') },
    { label: 'timeout', value: text('verifyTimeout', "(verify's limit, seconds: [guard]'s or 600)"), active: at('verifyTimeout') },
    { label: 'allow', value: text('allow', '(globs the agent may change: spaces between, "quote one with spaces")'), active: at('allow') },
    { label: 'forbid', value: text('forbid', '(globs it must not change: spaces between, "quote one with spaces")'), active: at('forbid') },
    { label: 'pass env', value: text('passEnv', '(variable names for the agent and verify)'), active: at('passEnv') },
    { label: 'contract', value: text('contract', '(none)'), active: at('contract') },
    { label: 'redact', value: choice('redact', REDACT_OPTIONS), active: at('redact') },
  ];
  const fieldHint = FIELD_HINTS[FORM_FIELDS[state.field]!] ?? '';
  const bodyText = at('body') ? withCursor(state.body) : state.body.text || `(the task: ${keyOf('form.enter')} adds a line)`;
  // A short terminal keeps the body 3 rows: the hint line goes first, then the field rows scroll with the active one.
  const showHint = h - rows.length - 5 >= Math.min(BODY_ROWS_MIN, wrapTail(bodyText, w - 2, BODY_ROWS_MIN).length);
  const fieldRoom = Math.min(rows.length, Math.max(1, h - 3 - BODY_ROWS_MIN));
  const [first, last] = windowRange(rows.length, Math.max(0, rows.findIndex((row) => row.active)), fieldRoom);
  const room = Math.max(1, h - (last - first) - (showHint ? 4 : 3));
  const bodyLines = wrapTail(bodyText, w - 2, room);
  return (
    <Pane title="New goal" note={FORM_HINT} width={width} height={height} focused>
      {rows.slice(first, last).map((row) => (
        <Text key={row.label} color={row.active ? 'cyan' : undefined} bold={row.active} wrap="truncate">
          {fit(`${fit(row.label, 9)} ${row.value}`, w)}
        </Text>
      ))}
      <Text color={at('body') ? 'cyan' : undefined} bold={at('body')}>
        {fit('body', w)}
      </Text>
      {bodyLines.map((line, i) => (
        <Text key={i} wrap="truncate">
          {fit(`  ${line}`, w)}
        </Text>
      ))}
      <Text color={at('submit') ? 'cyan' : 'gray'} inverse={at('submit')}>
        {fit('[ submit ]', 12)}
      </Text>
      {showHint ? (
        <Text color="gray" wrap="truncate">
          {fit(fieldHint, w)}
        </Text>
      ) : null}
      {state.discarding ? (
        <Text color="yellow" wrap="truncate">
          {fit(discardQuestion(), w)}
        </Text>
      ) : (
        <Text color="red" wrap="truncate">
          {fit(state.error ?? '', w)}
        </Text>
      )}
    </Pane>
  );
}
