import { afterAll, describe, expect, it } from 'vitest';
import { ACTIVE_THREADS_LIMITS, REASON_CODES, THREAD_STATUSES, validateActiveThreads, type ValidationIssue } from '../../source/contracts/index.js';
import { T0, without } from '../helpers/records.js';

/** The codes validateActiveThreads documents; each must be produced below. */
const THREAD_CODES = [
  'MISSING_REQUIRED_FIELD',
  'INVALID_PLANT_NAME',
  'INVALID_TIMESTAMP',
  'INVALID_ID_FORMAT',
  'INVALID_TITLE',
  'INVALID_STATUS',
  'INVALID_GOAL_FORMAT',
  'VALUE_TOO_LARGE',
  'DUPLICATE_THREAD_ID',
  'INVALID_FIELD_TYPE',
  'INVALID_SHAPE',
] as const;

const produced = new Set<string>();

function expectOnly(issues: ValidationIssue[], code: string, field: string): void {
  expect(issues).toEqual([{ code, field, message: expect.any(String) }]);
  expect(issues[0]!.message.length).toBeGreaterThan(0);
  produced.add(code);
}

function thread(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 't-flaky-date-test',
    title: 'Flaky date test',
    status: 'active',
    summary: 'The date test fails near midnight UTC.',
    goals: ['3-fix-date-test'],
    next: 'Wait for 3-fix-date-test to close',
    updated_at: T0,
    ...overrides,
  };
}

function doc(overrides: Record<string, unknown> = {}, threads: unknown[] = [thread()]): Record<string, unknown> {
  return { plant: 'gardener', updated_at: T0, threads, ...overrides };
}

describe('validateActiveThreads', () => {
  it('accepts a full document, a minimal thread, every status, and no threads', () => {
    expect(validateActiveThreads(doc())).toEqual([]);
    expect(validateActiveThreads(doc({}, [{ id: 't-a', title: 'A', status: 'waiting', updated_at: T0 }]))).toEqual([]);
    for (const status of THREAD_STATUSES) expect(validateActiveThreads(doc({}, [thread({ status })]))).toEqual([]);
    expect(validateActiveThreads(doc({}, []))).toEqual([]);
    expect(validateActiveThreads(doc({ extra: 1 }, [thread({ owner: 'x' })]))).toEqual([]);
    expect(validateActiveThreads(doc(), { plant: 'gardener' })).toEqual([]);
  });

  it.each([
    ['plant absent', without(doc(), 'plant'), 'MISSING_REQUIRED_FIELD', 'plant'],
    ['updated_at absent', without(doc(), 'updated_at'), 'MISSING_REQUIRED_FIELD', 'updated_at'],
    ['threads absent', without(doc(), 'threads'), 'MISSING_REQUIRED_FIELD', 'threads'],
    ['thread id absent', doc({}, [without(thread(), 'id')]), 'MISSING_REQUIRED_FIELD', 'threads.0.id'],
    ['thread title blank', doc({}, [thread({ title: '   ' })]), 'MISSING_REQUIRED_FIELD', 'threads.0.title'],
    ['thread status absent', doc({}, [without(thread(), 'status')]), 'MISSING_REQUIRED_FIELD', 'threads.0.status'],
    ['thread updated_at absent', doc({}, [without(thread(), 'updated_at')]), 'MISSING_REQUIRED_FIELD', 'threads.0.updated_at'],
    ['plant not a name', doc({ plant: '../evil' }), 'INVALID_PLANT_NAME', 'plant'],
    ['updated_at not UTC', doc({ updated_at: '2024-05-01 12:00' }), 'INVALID_TIMESTAMP', 'updated_at'],
    ['thread updated_at impossible', doc({}, [thread({ updated_at: '2024-02-30T00:00:00Z' })]), 'INVALID_TIMESTAMP', 'threads.0.updated_at'],
    ['thread id without t-', doc({}, [thread({ id: 'flaky' })]), 'INVALID_ID_FORMAT', 'threads.0.id'],
    ['thread id too long', doc({}, [thread({ id: `t-${'a'.repeat(63)}` })]), 'INVALID_ID_FORMAT', 'threads.0.id'],
    ['title with a line break', doc({}, [thread({ title: 'one\ntwo' })]), 'INVALID_TITLE', 'threads.0.title'],
    ['status not a thread status', doc({}, [thread({ status: 'running' })]), 'INVALID_STATUS', 'threads.0.status'],
    ['goal not N-slug', doc({}, [thread({ goals: ['3-fix', 'fix'] })]), 'INVALID_GOAL_FORMAT', 'threads.0.goals.1'],
    ['title too long', doc({}, [thread({ title: 'x'.repeat(ACTIVE_THREADS_LIMITS.titleChars + 1) })]), 'VALUE_TOO_LARGE', 'threads.0.title'],
    ['summary too long', doc({}, [thread({ summary: 'x'.repeat(ACTIVE_THREADS_LIMITS.summaryChars + 1) })]), 'VALUE_TOO_LARGE', 'threads.0.summary'],
    ['next too long', doc({}, [thread({ next: 'x'.repeat(ACTIVE_THREADS_LIMITS.nextChars + 1) })]), 'VALUE_TOO_LARGE', 'threads.0.next'],
    ['too many goals', doc({}, [thread({ goals: Array.from({ length: ACTIVE_THREADS_LIMITS.goals + 1 }, (_, i) => `${i + 1}-g`) })]), 'VALUE_TOO_LARGE', 'threads.0.goals'],
    ['too many threads', doc({}, Array.from({ length: ACTIVE_THREADS_LIMITS.threads + 1 }, (_, i) => thread({ id: `t-${i}` }))), 'VALUE_TOO_LARGE', 'threads'],
    ['a repeated id', doc({}, [thread(), thread({ title: 'Again' })]), 'DUPLICATE_THREAD_ID', 'threads.1.id'],
    ['threads not an array', doc({ threads: {} }), 'INVALID_FIELD_TYPE', 'threads'],
    ['summary a number', doc({}, [thread({ summary: 3 })]), 'INVALID_FIELD_TYPE', 'threads.0.summary'],
    ['goals a string', doc({}, [thread({ goals: '3-fix' })]), 'INVALID_FIELD_TYPE', 'threads.0.goals'],
  ])('%s: one issue, with its code and field', (_name, data, code, field) => {
    expectOnly(validateActiveThreads(data), code, field);
  });

  it('a plant other than the owning one is INVALID_PLANT_NAME on plant, saying both', () => {
    const issues = validateActiveThreads(doc({ plant: 'helper' }), { plant: 'gardener' });
    expectOnly(issues, 'INVALID_PLANT_NAME', 'plant');
    expect(issues[0]!.message).toContain('helper');
    expect(issues[0]!.message).toContain('gardener');
  });

  it.each([[null], [[]], ['threads'], [42]])('%j is INVALID_SHAPE and never throws', (data) => {
    expectOnly(validateActiveThreads(data), 'INVALID_SHAPE', '');
  });

  it('never throws on junk, and reports only known reason codes', () => {
    for (const junk of [{ threads: [null, 1, 'x', [], { id: {} }] }, { plant: 1, updated_at: 2, threads: 3 }, Object.create(null)]) {
      const issues = validateActiveThreads(junk);
      expect(issues.length).toBeGreaterThan(0);
      for (const i of issues) expect(REASON_CODES).toContain(i.code);
    }
  });

  afterAll(() => {
    expect([...produced].sort()).toEqual([...THREAD_CODES].sort());
    for (const code of THREAD_CODES) expect(REASON_CODES).toContain(code);
  });
});
