import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, REASON_CODES, validateEvent, type ValidationIssue } from '../../source/contracts/index.js';
import { eventRecord, weirdInputs, without } from '../helpers/records.js';

/** Codes validateEvent documents in its TSDoc. */
const EVENT_CODES = [
  'MISSING_REQUIRED_FIELD',
  'INVALID_TIMESTAMP',
  'INVALID_EVENT_TYPE',
  'INVALID_GOAL_FORMAT',
  'INVALID_ID_FORMAT',
  'INVALID_PLANT_NAME',
  'INVALID_FIELD_TYPE',
  'INVALID_SHAPE',
];

const produced = new Set<string>();

function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  produced.add(code);
}

describe('validateEvent', () => {
  it('accepts a minimal event (ts and type only)', () => {
    expect(validateEvent({ ts: '2024-05-01T12:00:00Z', type: 'CoordinatorStarted' })).toEqual([]);
  });

  it.each(EVENT_TYPES.map((t) => [t]))('accepts event type %s', (type) => {
    expect(validateEvent(eventRecord({ type }))).toEqual([]);
  });

  it('includes every coordinator event the seed names', () => {
    for (const type of ['GoalSubmitted', 'GoalTransitioned', 'GoalClosed', 'RunStarted', 'RunClosed']) expect(EVENT_TYPES).toContain(type);
  });

  it('accepts every optional field and unknown fields', () => {
    const event = eventRecord({
      type: 'RunClosed',
      run: '7-add-a-readme-r2',
      plant: 'gardener',
      from: 'running',
      to: 'completed',
      status: 'success',
      reason: 'killed',
      detail: 'closed by watchdog',
      extra: [1, 2, 3],
    });
    expect(validateEvent(event)).toEqual([]);
  });

  it.each(['ts', 'type'])('MISSING_REQUIRED_FIELD when %s is absent', (field) => {
    expectOnly(validateEvent(without(eventRecord(), field)), 'MISSING_REQUIRED_FIELD', field);
  });

  it.each([['2024-05-01T12:00:00+01:00'], ['2024-05-01'], ['yesterday'], [0]])('INVALID_TIMESTAMP for ts %j', (ts) => {
    expectOnly(validateEvent(eventRecord({ ts })), 'INVALID_TIMESTAMP', 'ts');
  });

  it.each([['Nope'], ['goalsubmitted'], ['GoalSubmitted '], [''], [3]])('INVALID_EVENT_TYPE for type %j', (type) => {
    expectOnly(validateEvent(eventRecord({ type })), 'INVALID_EVENT_TYPE', 'type');
  });

  it.each([['add-a-readme'], ['0-a'], ['../1-a'], ['1-a-r1/x']])('INVALID_GOAL_FORMAT for goal %j', (goal) => {
    expectOnly(validateEvent(eventRecord({ goal })), 'INVALID_GOAL_FORMAT', 'goal');
  });

  it.each([['7-add-a-readme'], ['7-add-r0'], ['r1'], ['../7-a-r1']])('INVALID_ID_FORMAT for run %j', (run) => {
    expectOnly(validateEvent(eventRecord({ run })), 'INVALID_ID_FORMAT', 'run');
  });

  it.each([['../x'], ['a/b'], ['Gardener'], ['']])('INVALID_PLANT_NAME for plant %j', (plant) => {
    expectOnly(validateEvent(eventRecord({ plant })), 'INVALID_PLANT_NAME', 'plant');
  });

  it('INVALID_FIELD_TYPE for a non-string goal', () => {
    expectOnly(validateEvent(eventRecord({ goal: 7 })), 'INVALID_FIELD_TYPE', 'goal');
  });

  // A present value of the wrong JSON type is not an absent field.
  it.each([['from'], ['detail']])('INVALID_FIELD_TYPE (not MISSING_REQUIRED_FIELD) for a numeric %s', (field) => {
    expectOnly(validateEvent(eventRecord({ [field]: 5 })), 'INVALID_FIELD_TYPE', field);
  });

  it.each([['array', []], ['null', null], ['string', '{"ts":"x"}'], ['number', 1]])('INVALID_SHAPE for a document that is %s', (_label, doc) => {
    expectOnly(validateEvent(doc), 'INVALID_SHAPE', '');
  });

  it.each(weirdInputs())('never throws on %s', (_label, input) => {
    const issues = validateEvent(input);
    expect(Array.isArray(issues)).toBe(true);
    for (const i of issues) expect(REASON_CODES).toContain(i.code);
  });

  it('produced every code of the TSDoc', () => {
    for (const code of EVENT_CODES) expect([...produced], code).toContain(code);
  });
});

describe('parseEventTypes: the one reading of an event-type filter (pak2 events --type, ?type=, webhook --events)', () => {
  it('takes repeated values and commas, trims, drops empty pieces and repeats, keeps the order first named', async () => {
    const { parseEventTypes } = await import('../../source/contracts/index.js');
    expect(parseEventTypes([])).toEqual({ types: [] });
    expect(parseEventTypes(['GoalClosed,RunClosed'])).toEqual({ types: ['GoalClosed', 'RunClosed'] });
    expect(parseEventTypes([' RunClosed , GoalClosed,', 'GoalClosed', ''])).toEqual({ types: ['RunClosed', 'GoalClosed'] });
    expect(parseEventTypes(['GoalClosed,goalclosed'])).toEqual({ unknown: 'goalclosed' });
    expect(parseEventTypes(['*'])).toEqual({ unknown: '*' });
    expect(parseEventTypes(['*,GoalClosed'], ['*'])).toEqual({ types: ['*', 'GoalClosed'] });
  });
});
