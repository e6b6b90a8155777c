import { describe, expect, it } from 'vitest';
import { cronProblem, timezoneProblem, validateEvent, validateGoal, validateSchedulesState } from '../../source/contracts/index.js';

describe('validateSchedulesState (<runtime-root>/schedules.json)', () => {
  it('accepts an empty record and a full one', () => {
    expect(validateSchedulesState({ schedules: {} })).toEqual([]);
    expect(
      validateSchedulesState({ schedules: { nightly: { since: '2026-05-01T10:00:20.000Z', last_due_at: '2026-05-02T03:00:00.000Z', last_fired_at: '2026-05-02T03:00:00.412Z', last_goal: '12-nightly-tidy' } } }),
    ).toEqual([]);
  });

  it('names the field of each bad value', () => {
    const codes = (data: unknown) => validateSchedulesState(data).map((i) => [i.code, i.field]);
    expect(codes([])).toEqual([['INVALID_SHAPE', '']]);
    expect(codes({})).toEqual([['MISSING_REQUIRED_FIELD', 'schedules']]);
    expect(codes({ schedules: { a: {} } })).toEqual([['MISSING_REQUIRED_FIELD', 'schedules.a.since']]);
    expect(codes({ schedules: { a: { since: 'yesterday' } } })).toEqual([['INVALID_TIMESTAMP', 'schedules.a.since']]);
    expect(codes({ schedules: { a: { since: '2026-05-01T10:00:00Z', last_due_at: '2026-05-01T10:00:00+02:00' } } })).toEqual([['INVALID_TIMESTAMP', 'schedules.a.last_due_at']]);
    expect(codes({ schedules: { a: { since: '2026-05-01T10:00:00Z', last_goal: 'not a goal' } } })).toEqual([['INVALID_GOAL_FORMAT', 'schedules.a.last_goal']]);
    expect(codes({ schedules: { 'Bad Name': { since: '2026-05-01T10:00:00Z' } } })[0]?.[1]).toBe('schedules.Bad Name');
  });
});

describe('schedule fields of other records', () => {
  it("ScheduleFired's schedule, due_at and missed are checked", () => {
    const event = { ts: '2026-05-01T10:01:00Z', type: 'ScheduleFired', status: 'submitted', goal: '3-minutely', schedule: 'minutely', due_at: '2026-05-01T10:01:00.000Z', missed: 0 };
    expect(validateEvent(event)).toEqual([]);
    expect(validateEvent({ ...event, due_at: 'now' }).map((i) => i.field)).toEqual(['due_at']);
    expect(validateEvent({ ...event, missed: -1 }).map((i) => i.field)).toEqual(['missed']);
    expect(validateEvent({ ...event, schedule: 'Not A Name' }).map((i) => i.field)).toEqual(['schedule']);
  });

  it("a goal's schedule names a schedule", () => {
    const goal = { id: '3-minutely', type: 'tend', status: 'queued', priority: 50, body: 'x', submitted_at: '2026-05-01T10:01:00Z', schedule: 'minutely' };
    expect(validateGoal(goal)).toEqual([]);
    expect(validateGoal({ ...goal, schedule: '../x' }).map((i) => i.field)).toEqual(['schedule']);
  });
});

describe('cronProblem and timezoneProblem', () => {
  it('accept what croner and Intl read, and say what is wrong otherwise', () => {
    expect(cronProblem('*/15 * * * *')).toBeUndefined();
    expect(cronProblem('0 9 * * MON-FRI')).toBeUndefined();
    expect(cronProblem('*/2 * * * * *')).toBeUndefined();
    expect(cronProblem('61 * * * *')).toMatch(/Invalid value for minute: 61/);
    expect(cronProblem('every day')).toMatch(/^a cron line such as/);
    expect(cronProblem('0 0 30 2 *')).toBe('a cron line that fires at least once');
    expect(timezoneProblem('Europe/Paris')).toBeUndefined();
    expect(timezoneProblem('UTC')).toBeUndefined();
    expect(timezoneProblem('Mars/Base')).toMatch(/IANA timezone/);
  });
});
