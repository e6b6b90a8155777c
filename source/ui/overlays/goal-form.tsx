import { Text } from 'ink';
import React from 'react';
import { GOAL_TYPES } from '../../contracts/index.js';
import { hint, keyOf } from '../keymap.js';
import { withCursor } from '../panes/chat.js';
import { fit, wrapTail } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';
import { FORM_FIELDS, taskClassOptions, type FormChoices, type GoalFormState } from './goal-form-state.js';

/** Props of {@link GoalForm}. */
export interface GoalFormProps {
  state: GoalFormState;
  choices: FormChoices;
  width: number;
  height: number;
}

/** The form's keys, in its top border. */
const FORM_HINT = [hint('form.nextField', 'next field'), hint(['form.choosePrev', 'form.chooseNext'], 'choose'), hint('form.submit', 'submit'), hint('form.cancel', 'cancel')].join(' · ');

/** The new-goal form: type, plant, priority, driver, model, the guard (task class, verify, allow, forbid) and a multi-line body. */
export function GoalForm({ state, choices, width, height }: GoalFormProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const at = (name: (typeof FORM_FIELDS)[number]) => FORM_FIELDS[state.field] === name;
  const choice = (name: 'type' | 'plant' | 'driver' | 'taskClass', options: readonly string[]) => (at(name) ? `‹ ${options[state[name]] ?? '-'} ›` : options[state[name]] ?? '-');
  const text = (name: 'priority' | 'model' | 'verify' | 'allow' | 'forbid', placeholder = '') => (at(name) ? withCursor(state[name]) : state[name].text || placeholder);
  const rows: { label: string; value: string; active: boolean }[] = [
    { label: 'type', value: choice('type', GOAL_TYPES), active: at('type') },
    { label: 'plant', value: choice('plant', choices.plants), active: at('plant') },
    { label: 'priority', value: text('priority'), active: at('priority') },
    { label: 'driver', value: choice('driver', choices.drivers), active: at('driver') },
    { label: 'model', value: text('model', '(default)'), active: at('model') },
    { label: 'class', value: choice('taskClass', taskClassOptions(choices)), active: at('taskClass') },
    { label: 'verify', value: text('verify', '(no guard: a command that must pass)'), active: at('verify') },
    { label: 'allow', value: text('allow', '(globs the agent may change, spaces between)'), active: at('allow') },
    { label: 'forbid', value: text('forbid', '(globs it must not change)'), active: at('forbid') },
  ];
  const bodyText = at('body') ? withCursor(state.body) : state.body.text || `(the task: ${keyOf('form.enter')} adds a line)`;
  const room = Math.max(1, h - rows.length - 4);
  const bodyLines = wrapTail(bodyText, w - 2, room);
  return (
    <Pane title="New goal" note={FORM_HINT} width={width} height={height} focused>
      {rows.map((row) => (
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
      <Text color="red" wrap="truncate">
        {fit(state.error ?? '', w)}
      </Text>
    </Pane>
  );
}
