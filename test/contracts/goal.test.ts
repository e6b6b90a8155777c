import { describe, expect, it } from 'vitest';
import {
  CLOSED_REASONS,
  GOAL_STATUSES,
  GOAL_TRANSITIONS,
  GOAL_TYPES,
  PRIORITY_DEFAULT,
  PRIORITY_MAX,
  PRIORITY_MIN,
  REASON_CODES,
  validateGoal,
  type ValidationIssue,
} from '../../source/contracts/index.js';
import { goalRecord, T1, weirdInputs, without } from '../helpers/records.js';

/** Codes validateGoal documents in its TSDoc. */
const GOAL_CODES = [
  'MISSING_REQUIRED_FIELD',
  'INVALID_ID_FORMAT',
  'INVALID_GOAL_TYPE',
  'INVALID_STATUS',
  'INVALID_PRIORITY',
  'INVALID_PLANT_NAME',
  'INVALID_TIMESTAMP',
  'MISSING_CLOSED_REASON',
  'INVALID_CLOSED_REASON',
  'INVALID_FIELD_TYPE',
  'INVALID_SHAPE',
  'INVALID_GOAL_FORMAT',
  'INVALID_DEPENDENCY',
  'INVALID_BUDGET',
];

const produced = new Set<string>();

function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  produced.add(code);
}

describe('validateGoal: valid records', () => {
  it('accepts a valid queued goal', () => {
    expect(validateGoal(goalRecord())).toEqual([]);
  });

  it.each(GOAL_TYPES.map((t) => [t]))('accepts goal type %s', (type) => {
    expect(validateGoal(goalRecord({ type }))).toEqual([]);
  });

  it.each(GOAL_STATUSES.filter((s) => s !== 'closed').map((s) => [s]))('accepts status %s without closed_reason', (status) => {
    expect(validateGoal(goalRecord({ status }))).toEqual([]);
  });

  it.each(CLOSED_REASONS.map((r) => [r]))('accepts a closed goal with closed_reason %s', (closed_reason) => {
    expect(validateGoal(goalRecord({ status: 'closed', closed_reason, closed_at: T1, updated_at: T1 }))).toEqual([]);
  });

  it('accepts the priority bounds and the default', () => {
    for (const priority of [PRIORITY_MIN, PRIORITY_DEFAULT, PRIORITY_MAX]) expect(validateGoal(goalRecord({ priority }))).toEqual([]);
    expect([PRIORITY_MIN, PRIORITY_DEFAULT, PRIORITY_MAX]).toEqual([0, 50, 100]);
  });

  it('accepts every optional field, an empty body and unknown fields', () => {
    const record = goalRecord({
      body: '',
      assigned_to: 'gardener',
      updated_at: T1,
      driver: 'claude',
      model: 'claude-opus-4-6',
      reasoning_effort: 'high',
      conversation_id: 'c-1',
      post_reply_hop: true,
      origin: { kind: 'operator' },
    });
    expect(validateGoal(record)).toEqual([]);
  });
});

describe('validateGoal: reason codes', () => {
  it.each(['id', 'type', 'status', 'priority', 'body', 'submitted_at'])('MISSING_REQUIRED_FIELD when %s is absent', (field) => {
    expectOnly(validateGoal(without(goalRecord(), field)), 'MISSING_REQUIRED_FIELD', field);
  });

  it.each([['0-a'], ['a'], ['1'], ['1-'], ['1-A'], ['1--a'], ['1-a_b'], ['../1-a'], ['1-a/b'], ['']])('INVALID_ID_FORMAT for id %j', (id) => {
    expectOnly(validateGoal(goalRecord({ id })), 'INVALID_ID_FORMAT', 'id');
  });

  it.each([['chore'], ['BUILD'], ['Build'], [''], [5]])('INVALID_GOAL_TYPE for type %j', (type) => {
    expectOnly(validateGoal(goalRecord({ type })), 'INVALID_GOAL_TYPE', 'type');
  });

  it.each([['done'], ['Queued'], ['success'], ['']])('INVALID_STATUS for status %j', (status) => {
    expectOnly(validateGoal(goalRecord({ status })), 'INVALID_STATUS', 'status');
  });

  it.each([[-1], [101], [1.5], ['50'], [null], [true]])('INVALID_PRIORITY for priority %j', (priority) => {
    expectOnly(validateGoal(goalRecord({ priority })), 'INVALID_PRIORITY', 'priority');
  });

  it.each([['../x'], ['a/b'], ['Gardener'], ['']])('INVALID_PLANT_NAME for assigned_to %j', (assigned_to) => {
    expectOnly(validateGoal(goalRecord({ assigned_to })), 'INVALID_PLANT_NAME', 'assigned_to');
  });

  it.each([['submitted_at'], ['updated_at'], ['closed_at']])('INVALID_TIMESTAMP for a non-UTC %s', (field) => {
    expectOnly(validateGoal(goalRecord({ [field]: '2024-05-01T12:00:00+01:00' })), 'INVALID_TIMESTAMP', field);
    expectOnly(validateGoal(goalRecord({ [field]: '2024-05-01' })), 'INVALID_TIMESTAMP', field);
  });

  it('MISSING_CLOSED_REASON for a closed goal without closed_reason', () => {
    expectOnly(validateGoal(goalRecord({ status: 'closed', closed_at: T1 })), 'MISSING_CLOSED_REASON', 'closed_reason');
  });

  it('MISSING_CLOSED_REASON for a closed goal whose closed_reason is null', () => {
    const issues = validateGoal(goalRecord({ status: 'closed', closed_reason: null }));
    expect(issues).toContainEqual({ code: 'MISSING_CLOSED_REASON', field: 'closed_reason', message: expect.any(String) });
  });

  it('no MISSING_CLOSED_REASON for goals that are not closed', () => {
    for (const status of GOAL_STATUSES.filter((s) => s !== 'closed')) {
      expect(validateGoal(goalRecord({ status })).map((i) => i.code)).not.toContain('MISSING_CLOSED_REASON');
    }
  });

  it.each([['meh'], ['SUCCESS'], ['completed']])('INVALID_CLOSED_REASON for closed_reason %j', (closed_reason) => {
    expectOnly(validateGoal(goalRecord({ status: 'closed', closed_reason })), 'INVALID_CLOSED_REASON', 'closed_reason');
  });

  it.each([[['1-Build']], [['x']], [[7]], [['../1-a']]])('INVALID_DEPENDENCY for depends_on %j', (depends_on) => {
    expectOnly(validateGoal(goalRecord({ depends_on })), depends_on[0] === 7 ? 'INVALID_FIELD_TYPE' : 'INVALID_DEPENDENCY', 'depends_on.0');
  });

  it.each([[0], [-1], ['lots'], [2_000_000]])('INVALID_BUDGET for budget_usd %j', (budget_usd) => {
    expectOnly(validateGoal(goalRecord({ budget_usd })), 'INVALID_BUDGET', 'budget_usd');
  });

  it('INVALID_DEPENDENCY for a dependency named twice or the goal itself; a list of goal ids is valid', () => {
    expectOnly(validateGoal(goalRecord({ depends_on: ['2-a', '2-a'] })), 'INVALID_DEPENDENCY', 'depends_on.1');
    const self = goalRecord({});
    expectOnly(validateGoal({ ...self, depends_on: [self.id] }), 'INVALID_DEPENDENCY', 'depends_on.0');
    expect(validateGoal(goalRecord({ depends_on: ['2-a', '3-b'], retry_of: '9-x' }))).toEqual([]);
    expectOnly(validateGoal(goalRecord({ depends_on: '2-a' })), 'INVALID_FIELD_TYPE', 'depends_on');
  });

  it('INVALID_GOAL_FORMAT for a retry_of that is no goal id', () => {
    expectOnly(validateGoal(goalRecord({ retry_of: '9 x' })), 'INVALID_GOAL_FORMAT', 'retry_of');
  });

  it('INVALID_FIELD_TYPE for a non-string body', () => {
    expectOnly(validateGoal(goalRecord({ body: 42 })), 'INVALID_FIELD_TYPE', 'body');
  });

  it.each([['array', []], ['null', null], ['string', 'goal'], ['number', 7]])('INVALID_SHAPE for a document that is %s', (_label, doc) => {
    expectOnly(validateGoal(doc), 'INVALID_SHAPE', '');
  });

  it('INVALID_SHAPE is the only issue of a non-object (no MISSING_CLOSED_REASON check)', () => {
    expect(validateGoal(['closed'])).toHaveLength(1);
  });

  it.each(weirdInputs())('never throws on %s', (_label, input) => {
    const issues = validateGoal(input);
    expect(Array.isArray(issues)).toBe(true);
    for (const i of issues) expect(REASON_CODES).toContain(i.code);
  });

  it('produced every code of the TSDoc', () => {
    for (const code of GOAL_CODES) expect([...produced], code).toContain(code);
  });
});

describe('goal state machine', () => {
  it('allows exactly the seed transitions (forward lifecycle, dispatch rollback, requeue after an interrupted run, cancel of a queued goal, blocking questions, requeue of work that did not land)', () => {
    const expected: Record<string, string[]> = {
      queued: ['blocked', 'closed', 'dispatched'],
      dispatched: ['queued', 'running'],
      running: ['blocked', 'completed', 'queued'],
      completed: ['closed', 'queued'],
      closed: [],
      blocked: ['closed', 'queued', 'running'],
    };
    const actual = Object.fromEntries(Object.entries(GOAL_TRANSITIONS).map(([from, to]) => [from, [...to].sort()]));
    expect(actual).toEqual(expected);
  });
});
