import { afterAll, describe, expect, it } from 'vitest';
import {
  OPERATOR_MESSAGE_LIMITS,
  operatorMessageId,
  parseOperatorMessageId,
  REASON_CODES,
  validateOperatorMessage,
  type ValidationIssue,
} from '../../source/contracts/index.js';
import { T0, without } from '../helpers/records.js';

/** The codes validateOperatorMessage documents; each must be produced below. */
const MESSAGE_CODES = [
  'MISSING_REQUIRED_FIELD',
  'INVALID_ID_FORMAT',
  'INVALID_PLANT_NAME',
  'INVALID_MESSAGE_KIND',
  'INVALID_TITLE',
  'MESSAGE_TOO_LARGE',
  'INVALID_TIMESTAMP',
  'INVALID_GOAL_TYPE',
  'INVALID_GOAL_FORMAT',
  'KIND_FIELD_MISMATCH',
  'INVALID_FIELD_TYPE',
  'INVALID_SHAPE',
] as const;

const produced = new Set<string>();

function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  expect(issues[0]!.message.length).toBeGreaterThan(0);
  produced.add(code);
}

function survey(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'om-12-tend-the-garden-r1-1',
    run: '12-tend-the-garden-r1',
    plant: 'gardener',
    kind: 'tend_survey',
    title: 'Tend survey: two stale goals',
    body: 'I looked at the queue and the last ten runs.',
    emitted_at: T0,
    findings: ['3-fix-login has been queued for 9 days', 'runs of 5-docs keep timing out'],
    suggested_goals: [{ type: 'fix', body: 'Raise the docs run timeout or split the goal' }],
    ...overrides,
  };
}

function concluded(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'om-12-tend-the-garden-r1-2',
    run: '12-tend-the-garden-r1',
    plant: 'gardener',
    kind: 'recently_concluded',
    title: 'Recently concluded: 2 goals',
    body: 'Both succeeded.',
    emitted_at: T0,
    goals: ['3-fix-login', '5-docs'],
    ...overrides,
  };
}

describe('validateOperatorMessage: valid records', () => {
  it('accepts a tend_survey and a recently_concluded message', () => {
    expect(validateOperatorMessage(survey())).toEqual([]);
    expect(validateOperatorMessage(concluded())).toEqual([]);
  });

  it('accepts a survey with no findings and no suggested goals, and keeps unknown fields', () => {
    expect(validateOperatorMessage(survey({ findings: [], suggested_goals: undefined, extra: { any: 1 } }))).toEqual([]);
  });

  it('accepts values exactly at every bound', () => {
    const L = OPERATOR_MESSAGE_LIMITS;
    const record = survey({
      title: 'x'.repeat(L.titleChars),
      body: 'é'.repeat(L.bodyBytes / 2),
      findings: Array.from({ length: L.findings }, () => 'f'.repeat(L.findingChars)),
      suggested_goals: Array.from({ length: L.suggestedGoals }, () => ({ type: 'build', body: 'b'.repeat(L.suggestedGoalBodyBytes) })),
    });
    expect(validateOperatorMessage(record)).toEqual([]);
    expect(validateOperatorMessage(concluded({ goals: Array.from({ length: L.goals }, (_, i) => `${i + 1}-goal`) }))).toEqual([]);
  });
});

describe('validateOperatorMessage: every code, with its field', () => {
  it.each(['id', 'run', 'plant', 'kind', 'title', 'body', 'emitted_at'])('MISSING_REQUIRED_FIELD when %s is absent', (field) => {
    const issues = validateOperatorMessage(without(survey(), field));
    expect(issues).toContainEqual({ code: 'MISSING_REQUIRED_FIELD', field, message: expect.any(String) });
    produced.add('MISSING_REQUIRED_FIELD');
  });

  it('MISSING_REQUIRED_FIELD for a blank title or body, and for a blank finding', () => {
    expectOnly(validateOperatorMessage(survey({ title: '   ' })), 'MISSING_REQUIRED_FIELD', 'title');
    expectOnly(validateOperatorMessage(survey({ body: '\n\n' })), 'MISSING_REQUIRED_FIELD', 'body');
    expectOnly(validateOperatorMessage(survey({ findings: ['ok', ''] })), 'MISSING_REQUIRED_FIELD', 'findings.1');
    expectOnly(validateOperatorMessage(survey({ suggested_goals: [{ type: 'fix' }] })), 'MISSING_REQUIRED_FIELD', 'suggested_goals.0.body');
  });

  it('MISSING_REQUIRED_FIELD for the kind-specific field a kind requires', () => {
    expectOnly(validateOperatorMessage(without(survey(), 'findings')), 'MISSING_REQUIRED_FIELD', 'findings');
    expectOnly(validateOperatorMessage(without(concluded(), 'goals')), 'MISSING_REQUIRED_FIELD', 'goals');
    expectOnly(validateOperatorMessage(concluded({ goals: [] })), 'MISSING_REQUIRED_FIELD', 'goals');
  });

  it('INVALID_ID_FORMAT for a malformed id, an id of another run, and a malformed run', () => {
    expectOnly(validateOperatorMessage(survey({ id: 'msg-1' })), 'INVALID_ID_FORMAT', 'id');
    expectOnly(validateOperatorMessage(survey({ id: 'om-12-tend-the-garden-r1-0' })), 'INVALID_ID_FORMAT', 'id');
    expectOnly(validateOperatorMessage(survey({ id: 'om-99-other-r1-1' })), 'INVALID_ID_FORMAT', 'id');
    const badRun = validateOperatorMessage(survey({ run: '12-tend-the-garden' }));
    expect(badRun).toEqual([{ code: 'INVALID_ID_FORMAT', field: 'run', message: expect.any(String) }]);
  });

  it('INVALID_PLANT_NAME', () => {
    expectOnly(validateOperatorMessage(survey({ plant: '../evil' })), 'INVALID_PLANT_NAME', 'plant');
  });

  it('INVALID_MESSAGE_KIND (and no kind-specific rules for an unknown kind)', () => {
    expectOnly(validateOperatorMessage(survey({ kind: 'chat' })), 'INVALID_MESSAGE_KIND', 'kind');
    expectOnly(validateOperatorMessage(survey({ kind: 7 })), 'INVALID_MESSAGE_KIND', 'kind');
  });

  it.each(['two\nlines', 'carriage\rreturn', 'a\ttab', 'line\u2028separator'])('INVALID_TITLE for %j', (title) => {
    expectOnly(validateOperatorMessage(survey({ title })), 'INVALID_TITLE', 'title');
  });

  it('MESSAGE_TOO_LARGE for every bound, naming the field', () => {
    const L = OPERATOR_MESSAGE_LIMITS;
    expectOnly(validateOperatorMessage(survey({ title: 'x'.repeat(L.titleChars + 1) })), 'MESSAGE_TOO_LARGE', 'title');
    expectOnly(validateOperatorMessage(survey({ body: 'x'.repeat(L.bodyBytes + 1) })), 'MESSAGE_TOO_LARGE', 'body');
    // bytes, not characters: 8193 two-byte characters are 16386 bytes
    expectOnly(validateOperatorMessage(survey({ body: 'é'.repeat(L.bodyBytes / 2 + 1) })), 'MESSAGE_TOO_LARGE', 'body');
    expectOnly(validateOperatorMessage(survey({ findings: Array.from({ length: L.findings + 1 }, () => 'f') })), 'MESSAGE_TOO_LARGE', 'findings');
    expectOnly(validateOperatorMessage(survey({ findings: ['ok', 'f'.repeat(L.findingChars + 1)] })), 'MESSAGE_TOO_LARGE', 'findings.1');
    expectOnly(
      validateOperatorMessage(survey({ suggested_goals: Array.from({ length: L.suggestedGoals + 1 }, () => ({ type: 'fix', body: 'b' })) })),
      'MESSAGE_TOO_LARGE',
      'suggested_goals',
    );
    expectOnly(
      validateOperatorMessage(survey({ suggested_goals: [{ type: 'fix', body: 'b'.repeat(L.suggestedGoalBodyBytes + 1) }] })),
      'MESSAGE_TOO_LARGE',
      'suggested_goals.0.body',
    );
    expectOnly(validateOperatorMessage(concluded({ goals: Array.from({ length: L.goals + 1 }, (_, i) => `${i + 1}-g`) })), 'MESSAGE_TOO_LARGE', 'goals');
  });

  it.each(['2024-05-01', '2024-05-01T12:00:00+02:00', '2024-02-30T00:00:00Z', 1714564800])('INVALID_TIMESTAMP for emitted_at %j', (emitted_at) => {
    expectOnly(validateOperatorMessage(survey({ emitted_at })), 'INVALID_TIMESTAMP', 'emitted_at');
  });

  it('INVALID_GOAL_TYPE for a suggested goal of an unknown type', () => {
    expectOnly(validateOperatorMessage(survey({ suggested_goals: [{ type: 'chore', body: 'b' }] })), 'INVALID_GOAL_TYPE', 'suggested_goals.0.type');
  });

  it.each(['fix-login', '0-zero', '3-Fix', '3-fix login', '../3-x', '3-fix-'])('INVALID_GOAL_FORMAT for concluded goal %j', (goal) => {
    expectOnly(validateOperatorMessage(concluded({ goals: ['1-ok', goal] })), 'INVALID_GOAL_FORMAT', 'goals.1');
  });

  it('KIND_FIELD_MISMATCH for a field of the other kind', () => {
    expectOnly(validateOperatorMessage(survey({ goals: ['3-fix-login'] })), 'KIND_FIELD_MISMATCH', 'goals');
    expectOnly(validateOperatorMessage(concluded({ findings: ['x'] })), 'KIND_FIELD_MISMATCH', 'findings');
    expectOnly(validateOperatorMessage(concluded({ suggested_goals: [] })), 'KIND_FIELD_MISMATCH', 'suggested_goals');
  });

  it('INVALID_FIELD_TYPE for a value of the wrong JSON type', () => {
    expectOnly(validateOperatorMessage(survey({ title: 42 })), 'INVALID_FIELD_TYPE', 'title');
    expectOnly(validateOperatorMessage(survey({ body: ['x'] })), 'INVALID_FIELD_TYPE', 'body');
    expectOnly(validateOperatorMessage(survey({ findings: 'one finding' })), 'INVALID_FIELD_TYPE', 'findings');
    expectOnly(validateOperatorMessage(survey({ findings: ['ok', 3] })), 'INVALID_FIELD_TYPE', 'findings.1');
    expectOnly(validateOperatorMessage(survey({ suggested_goals: ['fix it'] })), 'INVALID_FIELD_TYPE', 'suggested_goals.0');
    expectOnly(validateOperatorMessage(concluded({ goals: '3-fix-login' })), 'INVALID_FIELD_TYPE', 'goals');
    expectOnly(validateOperatorMessage(concluded({ goals: [3] })), 'INVALID_FIELD_TYPE', 'goals.0');
  });

  it.each([null, [], 'text', 42, undefined])('INVALID_SHAPE for %j', (data) => {
    expectOnly(validateOperatorMessage(data), 'INVALID_SHAPE', '');
  });

  it('returns every issue at once', () => {
    const issues = validateOperatorMessage({ id: 'x', run: 'y', plant: 'Z', kind: 'tend_survey', title: 'a\nb', body: '', emitted_at: 'now', goals: [] });
    expect(issues.map((i) => `${i.field}:${i.code}`).sort()).toEqual(
      [
        'id:INVALID_ID_FORMAT',
        'run:INVALID_ID_FORMAT',
        'plant:INVALID_PLANT_NAME',
        'title:INVALID_TITLE',
        'body:MISSING_REQUIRED_FIELD',
        'emitted_at:INVALID_TIMESTAMP',
        'goals:MISSING_REQUIRED_FIELD',
        'findings:MISSING_REQUIRED_FIELD',
        'goals:KIND_FIELD_MISMATCH',
      ].sort(),
    );
  });

  it('never throws on hostile input', () => {
    const cyclic: Record<string, unknown> = { kind: 'tend_survey' };
    cyclic.self = cyclic;
    for (const data of [cyclic, Object.create(null), { __proto__: { kind: 'x' } }, { findings: new Array(10_000).fill(null) }]) {
      expect(() => validateOperatorMessage(data)).not.toThrow();
    }
  });

  afterAll(() => {
    expect([...produced].sort()).toEqual([...MESSAGE_CODES].sort());
    for (const code of produced) expect(REASON_CODES).toContain(code);
  });
});

describe('operator-message ids', () => {
  it('round-trips om-<run>-<n>, even when the goal slug itself ends in rN', () => {
    expect(operatorMessageId('12-tend-r1', 3)).toBe('om-12-tend-r1-3');
    expect(parseOperatorMessageId('om-12-tend-r1-3')).toEqual({ run: '12-tend-r1', n: 3 });
    expect(parseOperatorMessageId('om-4-fix-r2-r1-10')).toEqual({ run: '4-fix-r2-r1', n: 10 });
    expect(parseOperatorMessageId('om-12-tend-3')).toBeUndefined();
    expect(parseOperatorMessageId('12-tend-r1-3')).toBeUndefined();
  });
});
