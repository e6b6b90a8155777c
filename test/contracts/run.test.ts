import { describe, expect, it } from 'vitest';
import {
  COST_SOURCES,
  FAILED_RUN_STATUSES,
  FAILURE_REASONS,
  REASON_CODES,
  REFLECTION_REQUIRED_TYPES,
  RUN_STATUSES,
  TERMINAL_RUN_STATUSES,
  isIsoUtc,
  isTerminalRunStatus,
  timestamp,
  validateEvent,
  validateGoal,
  validateRun,
  validateRunClose,
  type ValidationIssue,
} from '../../source/contracts/index.js';
import { runningRun, terminalRun, weirdInputs, without } from '../helpers/records.js';

/** The reason codes listed in the run seed's "Failure modes" table. */
const SEED_RUN_CODES = [
  'MISSING_REQUIRED_FIELD',
  'INVALID_ID_FORMAT',
  'INVALID_GOAL_FORMAT',
  'INVALID_PLANT_NAME',
  'INVALID_STATUS',
  'INVALID_TIMESTAMP',
  'MISSING_COMPLETED_AT',
  'MISSING_COST',
  'INVALID_COST_SOURCE',
  'INVALID_COST_FIELD',
  'MISSING_FAILURE_REASON',
  'INVALID_FAILURE_REASON',
  'MISSING_REFLECTION',
  'INVALID_SHAPE',
] as const;

const produced = new Set<string>();

/** Asserts `issues` holds exactly one issue, with `code` and `field`, and records the code. */
function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  expect(issues[0]!.message.length).toBeGreaterThan(0);
  produced.add(code);
}

/** Asserts `issues` contains an issue with `code` and `field`, and records the code. */
function expectHas(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toContainEqual({ code, field, message: expect.any(String) });
  produced.add(code);
}

describe('validateRun: valid records', () => {
  it('accepts a valid running record', () => {
    expect(validateRun(runningRun())).toEqual([]);
  });

  it.each(TERMINAL_RUN_STATUSES.map((s) => [s]))('accepts a valid terminal %s record', (status) => {
    expect(validateRun(terminalRun(status))).toEqual([]);
  });

  it('accepts cost {source: "unknown"} with no amounts', () => {
    expect(validateRun(terminalRun('success', { cost: { source: 'unknown' } }))).toEqual([]);
    expect(validateRun(terminalRun('failure', { cost: { source: 'unknown' } }))).toEqual([]);
    expect(validateRunClose(terminalRun('success', { cost: { source: 'unknown' } }), 'build')).toEqual([]);
  });

  it.each(COST_SOURCES.map((s) => [s]))('accepts cost source %s', (source) => {
    expect(validateRun(terminalRun('success', { cost: { source } }))).toEqual([]);
  });

  it('accepts zero cost amounts and every documented cost field', () => {
    const cost = {
      source: 'estimated',
      usd: 0,
      input_tokens: 0,
      output_tokens: 10,
      cached_input_tokens: 5,
      cache_creation_input_tokens: 0,
      reasoning_output_tokens: 3,
      pricing: 'table-2025',
    };
    expect(validateRun(terminalRun('success', { cost }))).toEqual([]);
  });

  it('accepts the optional fields and unknown extra fields', () => {
    const record = terminalRun('success', {
      outputs: { final_text: 'done', extra: 1 },
      num_turns: 4,
      session_id: 'abc',
      exit_code: null,
      reasoning_effort: 'high',
      worktree_baseline: { tracked_dirty_paths: ['a.ts'], untracked_dirty_count: 2, untracked_dirty_roots: ['tmp'] },
      some_future_field: { anything: true },
    });
    expect(validateRun(record)).toEqual([]);
  });

  it.each([
    ['2024-02-29T00:00:00Z'],
    ['2024-12-31T23:59:59Z'],
    ['2024-05-01T12:00:00.1Z'],
    ['2024-05-01T12:00:00.123Z'],
    ['2024-05-01T12:00:00.123456789Z'],
    ['2026-11-30T10:00:00+00:00'],
    ['2026-11-30T10:00:00.5+00:00'],
    ['2026-11-30T10:00:00.123+00:00'],
    ['2024-02-29T23:59:59.123456789+00:00'],
  ])('accepts the UTC timestamp %s', (ts) => {
    expect(validateRun(runningRun({ started_at: ts }))).toEqual([]);
    expect(validateRun(terminalRun('success', { completed_at: ts }))).toEqual([]);
  });

  it.each([['a'], ['gardener'], ['plant-2'], ['a1'], ['a'.repeat(64)]])('accepts the plant name %s', (plant) => {
    expect(validateRun(runningRun({ plant }))).toEqual([]);
  });

  it('accepts every failure reason on every failed status', () => {
    for (const status of FAILED_RUN_STATUSES) {
      for (const reason of FAILURE_REASONS) {
        expect(validateRun(terminalRun(status, { failure_reason: reason })), `${status}/${reason}`).toEqual([]);
      }
    }
  });

  it('accepts high attempt numbers and long slugs', () => {
    expect(validateRun(runningRun({ id: '1234-a-b-c-d-r17', goal: '1234-a-b-c-d' }))).toEqual([]);
  });
});

describe('validateRun: reason codes', () => {
  it.each(['id', 'goal', 'plant', 'status', 'started_at', 'driver', 'model'])('MISSING_REQUIRED_FIELD when %s is absent', (field) => {
    expectOnly(validateRun(without(runningRun(), field)), 'MISSING_REQUIRED_FIELD', field);
  });

  it.each(['driver', 'model'])('MISSING_REQUIRED_FIELD when %s is an empty string', (field) => {
    expectOnly(validateRun(runningRun({ [field]: '' })), 'MISSING_REQUIRED_FIELD', field);
  });

  it('MISSING_REQUIRED_FIELD for cost.source when cost has no source', () => {
    expectOnly(validateRun(terminalRun('success', { cost: { usd: 1 } })), 'MISSING_REQUIRED_FIELD', 'cost.source');
  });

  it('reports every missing required field at once', () => {
    const issues = validateRun({});
    for (const field of ['id', 'goal', 'plant', 'status', 'started_at', 'driver', 'model']) {
      expectHas(issues, 'MISSING_REQUIRED_FIELD', field);
    }
  });

  it.each([
    ['42-fix-the-thing'],
    ['42-fix-the-thing-r0'],
    ['42-fix-the-thing-r'],
    ['0-fix-r1'],
    ['fix-r1'],
    ['42-Fix-r1'],
    ['42--fix-r1'],
    ['42-fix-r01'],
    ['42-fix-r1 '],
    ['../42-fix-r1'],
    ['42-fix/../x-r1'],
    [''],
  ])('INVALID_ID_FORMAT for id %j', (id) => {
    expectOnly(validateRun(runningRun({ id })), 'INVALID_ID_FORMAT', 'id');
  });

  it.each([
    ['5-other-r1', '4-thing'],
    ['4-thing-else-r1', '4-thing'],
    ['4-thin-r1', '4-thing'],
    ['44-thing-r2', '4-thing'],
  ])('INVALID_ID_FORMAT for id %s of a run of goal %s: the id does not belong to its goal', (id, goal) => {
    const issues = validateRun(runningRun({ id, goal }));
    expectOnly(issues, 'INVALID_ID_FORMAT', 'id');
    expect(issues[0]!.message).toContain(`does not belong to goal ${goal}`);
    expect(validateRunClose(terminalRun('success', { id, goal }), 'build')).toEqual(issues);
  });

  it('an id of its own goal is valid at any attempt number', () => {
    for (const id of ['4-thing-r1', '4-thing-r2', '4-thing-r10']) expect(validateRun(runningRun({ id, goal: '4-thing' })), id).toEqual([]);
  });

  it.each([['fix'], ['0-fix'], ['42'], ['42-'], ['42-Fix'], ['42-fix-'], ['../1-a'], ['1-a/b'], ['']])(
    'INVALID_GOAL_FORMAT for goal %j',
    (goal) => {
      expectOnly(validateRun(runningRun({ goal })), 'INVALID_GOAL_FORMAT', 'goal');
    },
  );

  it.each([
    ['../x'],
    ['a/b'],
    ['Gardener'],
    ['..'],
    ['a\\b'],
    ['1plant'],
    ['-plant'],
    ['plant-'],
    ['pl ant'],
    ['pl.ant'],
    ['a'.repeat(65)],
    [''],
  ])('INVALID_PLANT_NAME for plant %j', (plant) => {
    expectOnly(validateRun(runningRun({ plant })), 'INVALID_PLANT_NAME', 'plant');
  });

  it.each([['done'], ['RUNNING'], ['queued'], ['Success'], ['']])('INVALID_STATUS for status %j', (status) => {
    expectOnly(validateRun(runningRun({ status })), 'INVALID_STATUS', 'status');
  });

  it.each([
    ['non-UTC offset', '2024-05-01T12:00:00+01:00'],
    ['+02:00 offset', '2026-11-30T10:00:00+02:00'],
    ['+02:00 offset with fraction', '2026-11-30T10:00:00.123+02:00'],
    ['negative offset', '2024-05-01T12:00:00-05:00'],
    ['-00:00 (unknown local offset, RFC 3339)', '2024-05-01T12:00:00-00:00'],
    ['+0000 without colon', '2024-05-01T12:00:00+0000'],
    ['+00 hours only', '2024-05-01T12:00:00+00'],
    ['Z and an offset', '2024-05-01T12:00:00Z+00:00'],
    ['+00:00 on a date that does not exist', '2024-02-30T00:00:00+00:00'],
    ['no zone', '2024-05-01T12:00:00'],
    ['date only', '2024-05-01'],
    ['garbage', 'garbage'],
    ['empty', ''],
    ['space separator', '2024-05-01 12:00:00Z'],
    ['lower-case z', '2024-05-01T12:00:00z'],
    ['month 13', '2024-13-01T12:00:00Z'],
    ['hour 25', '2024-05-01T25:00:00Z'],
    ['epoch number', 1714564800],
  ])('INVALID_TIMESTAMP for started_at: %s', (_label, started_at) => {
    expectOnly(validateRun(runningRun({ started_at })), 'INVALID_TIMESTAMP', 'started_at');
  });

  it.each([
    ['non-UTC offset', '2024-05-01T12:00:00+02:00'],
    ['date only', '2024-05-01'],
    ['garbage', 'not a time'],
  ])('INVALID_TIMESTAMP for completed_at: %s', (_label, completed_at) => {
    expectOnly(validateRun(terminalRun('success', { completed_at })), 'INVALID_TIMESTAMP', 'completed_at');
  });

  // Calendar dates that do not exist: the pattern matches, the instant must not.
  it.each([
    ['Feb 30', '2024-02-30T00:00:00Z'],
    ['Feb 29 of a non-leap year', '2023-02-29T00:00:00Z'],
    ['Apr 31', '2024-04-31T00:00:00Z'],
  ])('INVALID_TIMESTAMP for a date that does not exist: %s', (_label, started_at) => {
    expectOnly(validateRun(runningRun({ started_at })), 'INVALID_TIMESTAMP', 'started_at');
  });

  it.each(TERMINAL_RUN_STATUSES.map((s) => [s]))('MISSING_COMPLETED_AT for a %s run without completed_at', (status) => {
    expectOnly(validateRun(without(terminalRun(status), 'completed_at')), 'MISSING_COMPLETED_AT', 'completed_at');
  });

  it.each(TERMINAL_RUN_STATUSES.map((s) => [s]))('MISSING_COST for a %s run without cost', (status) => {
    expectOnly(validateRun(without(terminalRun(status), 'cost')), 'MISSING_COST', 'cost');
  });

  it('MISSING_COMPLETED_AT and MISSING_COST together, not for a running run', () => {
    const issues = validateRun(runningRun({ status: 'success', reflection: 'x' }));
    expectHas(issues, 'MISSING_COMPLETED_AT', 'completed_at');
    expectHas(issues, 'MISSING_COST', 'cost');
    expect(validateRun(runningRun())).toEqual([]);
  });

  it('MISSING_COST when cost is null on a terminal run', () => {
    expectHas(validateRun(terminalRun('success', { cost: null })), 'MISSING_COST', 'cost');
  });

  it.each([['guess'], ['PROVIDER'], ['none'], [''], [3]])('INVALID_COST_SOURCE for cost.source %j', (source) => {
    expectOnly(validateRun(terminalRun('success', { cost: { source } })), 'INVALID_COST_SOURCE', 'cost.source');
  });

  it.each([['usd'], ['input_tokens'], ['output_tokens'], ['cached_input_tokens'], ['cache_creation_input_tokens'], ['reasoning_output_tokens']])(
    'INVALID_COST_FIELD for a negative cost.%s',
    (key) => {
      expectOnly(validateRun(terminalRun('success', { cost: { source: 'provider', [key]: -1 } })), 'INVALID_COST_FIELD', `cost.${key}`);
    },
  );

  it('INVALID_COST_FIELD for a non-numeric cost amount', () => {
    expectOnly(validateRun(terminalRun('success', { cost: { source: 'provider', usd: '0.10' } })), 'INVALID_COST_FIELD', 'cost.usd');
  });

  it.each(FAILED_RUN_STATUSES.map((s) => [s]))('MISSING_FAILURE_REASON for a %s run without failure_reason', (status) => {
    expectOnly(validateRun(without(terminalRun(status), 'failure_reason')), 'MISSING_FAILURE_REASON', 'failure_reason');
  });

  it('no MISSING_FAILURE_REASON for success or running', () => {
    expect(validateRun(without(terminalRun('success'), 'failure_reason'))).toEqual([]);
    expect(validateRun(runningRun())).toEqual([]);
  });

  it.each([['oops'], ['KILLED'], ['failure'], ['success'], [''], [5]])('INVALID_FAILURE_REASON for failure_reason %j', (reason) => {
    expectOnly(validateRun(terminalRun('failure', { failure_reason: reason })), 'INVALID_FAILURE_REASON', 'failure_reason');
  });

  it.each([
    ['array', []],
    ['array of records', [runningRun()]],
    ['null', null],
    ['string', 'running'],
    ['JSON text of a valid record', JSON.stringify(runningRun())],
    ['number', 42],
    ['boolean', true],
    ['undefined', undefined],
  ])('INVALID_SHAPE for a document that is %s', (_label, doc) => {
    expectOnly(validateRun(doc), 'INVALID_SHAPE', '');
  });

  it('reports several independent issues of one record', () => {
    const issues = validateRun(runningRun({ id: 'nope', goal: 'nope', plant: 'Nope', status: 'nope', started_at: 'nope' }));
    expect(issues.map((i) => i.code).sort()).toEqual(
      ['INVALID_GOAL_FORMAT', 'INVALID_ID_FORMAT', 'INVALID_PLANT_NAME', 'INVALID_STATUS', 'INVALID_TIMESTAMP'].sort(),
    );
  });

  // A present value of the wrong JSON type is not an absent field.
  it.each([
    ['num_turns', 'three'],
    ['reflection', 5],
    ['outputs', 'text'],
  ])('a wrong-typed optional %s is INVALID_FIELD_TYPE, never MISSING_REQUIRED_FIELD', (field, value) => {
    const issues = validateRun(runningRun({ [field]: value }));
    expect(issues).toEqual([{ code: 'INVALID_FIELD_TYPE', field, message: expect.any(String) }]);
  });

  it('a non-object cost on a running run is not reported as a missing field', () => {
    const issues = validateRun(runningRun({ cost: 'free' }));
    expect(issues.length).toBeGreaterThan(0);
    expect(issues.map((i) => i.code)).not.toContain('MISSING_REQUIRED_FIELD');
  });
});

describe('validateRunClose', () => {
  it.each(REFLECTION_REQUIRED_TYPES.map((t) => [t]))('MISSING_REFLECTION for a successful %s run without reflection', (type) => {
    expectOnly(validateRunClose(without(terminalRun('success'), 'reflection'), type), 'MISSING_REFLECTION', 'reflection');
  });

  it('the reflection-required types are exactly build, fix, evaluate and tend', () => {
    expect([...REFLECTION_REQUIRED_TYPES].sort()).toEqual(['build', 'evaluate', 'fix', 'tend']);
  });

  it.each([[''], ['   '], ['\n\t']])('MISSING_REFLECTION for a blank reflection %j', (reflection) => {
    expectOnly(validateRunClose(terminalRun('success', { reflection }), 'fix'), 'MISSING_REFLECTION', 'reflection');
  });

  it('MISSING_REFLECTION for a non-string reflection', () => {
    expectHas(validateRunClose(terminalRun('success', { reflection: 5 }), 'build'), 'MISSING_REFLECTION', 'reflection');
  });

  it.each([['spike'], ['research']])('no MISSING_REFLECTION for a successful %s run', (type) => {
    expect(validateRunClose(without(terminalRun('success'), 'reflection'), type)).toEqual([]);
  });

  it.each(FAILED_RUN_STATUSES.map((s) => [s]))('no MISSING_REFLECTION for a %s build run', (status) => {
    expect(validateRunClose(without(terminalRun(status), 'reflection'), 'build')).toEqual([]);
  });

  it('a successful build run with a reflection is valid', () => {
    expect(validateRunClose(terminalRun('success'), 'build')).toEqual([]);
  });

  it('includes every validateRun issue', () => {
    const record = without(terminalRun('success', { plant: '../x' }), 'cost', 'reflection');
    const issues = validateRunClose(record, 'evaluate');
    expectHas(issues, 'INVALID_PLANT_NAME', 'plant');
    expectHas(issues, 'MISSING_COST', 'cost');
    expectHas(issues, 'MISSING_REFLECTION', 'reflection');
    for (const i of validateRun(record)) expect(issues).toContainEqual(i);
  });

  it.each([[[]], [null], ['x'], [3]])('INVALID_SHAPE only for %j', (doc) => {
    expectOnly(validateRunClose(doc, 'build'), 'INVALID_SHAPE', '');
  });
});

describe('validators never throw', () => {
  const cases = weirdInputs();
  it.each(cases)('validateRun and validateRunClose on %s', (_label, input) => {
    for (const issues of [validateRun(input), ...['build', 'spike', '', '__proto__'].map((t) => validateRunClose(input, t))]) {
      expect(Array.isArray(issues)).toBe(true);
      for (const i of issues) {
        expect(REASON_CODES).toContain(i.code);
        expect(typeof i.field).toBe('string');
        expect(typeof i.message).toBe('string');
      }
    }
  });
});

describe('timestamp(): UTC written as Z or +00:00', () => {
  it.each([
    ['2026-11-30T10:00:00+00:00', '2026-11-30T10:00:00.000Z'],
    ['2026-11-30T10:00:00.250+00:00', '2026-11-30T10:00:00.250Z'],
    ['2026-11-30T23:59:59.999999+00:00', '2026-11-30T23:59:59.999Z'],
  ])('%s is accepted and read as the UTC instant %s', (value, utc) => {
    expect(timestamp().safeParse(value).success).toBe(true);
    expect(isIsoUtc(value)).toBe(true);
    expect(new Date(value).toISOString()).toBe(utc);
  });

  it.each([['2026-11-30T10:00:00+02:00'], ['2026-11-30T10:00:00.5-01:00'], ['2026-11-30T10:00:00+05:30']])('%s (not UTC) is INVALID_TIMESTAMP', (value) => {
    const result = timestamp().safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.message)).toContain('INVALID_TIMESTAMP');
    expect(isIsoUtc(value)).toBe(false);
  });

  it('the other records take +00:00 too (one helper)', () => {
    expect(validateGoal({ id: '7-add-a-readme', type: 'build', status: 'queued', priority: 50, body: 'x', submitted_at: '2026-11-30T10:00:00+00:00' })).toEqual([]);
    expect(validateEvent({ ts: '2026-11-30T10:00:00+00:00', type: 'GoalSubmitted', goal: '7-add-a-readme' }).map((i) => i.code)).not.toContain('INVALID_TIMESTAMP');
    expect(validateEvent({ ts: '2026-11-30T10:00:00+02:00', type: 'GoalSubmitted', goal: '7-add-a-readme' }).map((i) => i.code)).toContain('INVALID_TIMESTAMP');
  });
});

describe('run statuses', () => {
  it('running is the only non-terminal status', () => {
    for (const status of RUN_STATUSES) expect(isTerminalRunStatus(status), status).toBe(status !== 'running');
    expect(isTerminalRunStatus('bogus')).toBe(false);
  });
});

describe('coverage of the seed codes', () => {
  it('the tests above produced every reason code of the run seed', () => {
    for (const code of SEED_RUN_CODES) expect([...produced], code).toContain(code);
  });
});
