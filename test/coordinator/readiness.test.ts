import { describe, expect, it } from 'vitest';
import { blockedChains, chainOrder, decideReadiness, dependencyReason, dependencyViews, findCycle, type DependencyFact } from '../../source/coordinator/readiness.js';
import type { GoalRecord } from '../../source/contracts/index.js';

const facts = (entries: Record<string, DependencyFact>) => new Map(Object.entries(entries));

describe('decideReadiness (pure)', () => {
  it('is ready with no dependencies, or when every one closed success', () => {
    expect(decideReadiness({ id: '3-c' }, facts({}))).toEqual({ state: 'ready' });
    expect(decideReadiness({ id: '3-c', depends_on: ['1-a', '2-b'] }, facts({ '1-a': { status: 'closed', closed_reason: 'success' }, '2-b': { status: 'closed', closed_reason: 'success' } }))).toEqual({ state: 'ready' });
  });

  it('waits for the dependencies still open, whatever their status', () => {
    const f = facts({ '1-a': { status: 'running' }, '2-b': { status: 'closed', closed_reason: 'success' }, '4-d': { status: 'completed' }, '5-e': { status: 'blocked' } });
    expect(decideReadiness({ id: '3-c', depends_on: ['1-a', '2-b', '4-d', '5-e'] }, f)).toEqual({ state: 'waiting', waiting_for: ['1-a', '4-d', '5-e'] });
  });

  it('is blocked by a dependency that closed failure or cancelled, or is missing; blocked wins over waiting', () => {
    expect(decideReadiness({ id: '3-c', depends_on: ['2-b', '1-a'] }, facts({ '1-a': { status: 'closed', closed_reason: 'failure' }, '2-b': { status: 'queued' } }))).toEqual({ state: 'blocked', blocked_on: { goal: '1-a', closed_reason: 'failure' } });
    expect(decideReadiness({ id: '3-c', depends_on: ['1-a'] }, facts({ '1-a': { status: 'closed', closed_reason: 'cancelled' } }))).toEqual({ state: 'blocked', blocked_on: { goal: '1-a', closed_reason: 'cancelled' } });
    expect(decideReadiness({ id: '3-c', depends_on: ['9-gone'] }, facts({}))).toEqual({ state: 'blocked', blocked_on: { goal: '9-gone', closed_reason: 'missing' } });
    expect(decideReadiness({ id: '3-c', depends_on: ['9-gone'] }, facts({ '9-gone': { missing: true } }))).toEqual({ state: 'blocked', blocked_on: { goal: '9-gone', closed_reason: 'missing' } });
  });

  it('names the root of a blocked chain, through the dependency it came by', () => {
    const f = facts({ '1-a': { status: 'closed', closed_reason: 'failure' }, '2-b': { status: 'queued', depends_on: ['1-a'] }, '3-c': { status: 'queued', depends_on: ['2-b'] } });
    expect(decideReadiness({ id: '2-b', depends_on: ['1-a'] }, f)).toEqual({ state: 'blocked', blocked_on: { goal: '1-a', closed_reason: 'failure' } });
    expect(decideReadiness({ id: '3-c', depends_on: ['2-b'] }, f)).toEqual({ state: 'blocked', blocked_on: { goal: '1-a', closed_reason: 'failure', via: '2-b' } });
    expect(decideReadiness({ id: '4-d', depends_on: ['3-c'] }, f)).toEqual({ state: 'blocked', blocked_on: { goal: '1-a', closed_reason: 'failure', via: '3-c' } });
  });

  it('a chain still running upstream waits; a cycle a hand edit made waits, never ready', () => {
    const f = facts({ '1-a': { status: 'running' }, '2-b': { status: 'queued', depends_on: ['1-a'] } });
    expect(decideReadiness({ id: '3-c', depends_on: ['2-b'] }, f)).toEqual({ state: 'waiting', waiting_for: ['2-b'] });
    const loop = facts({ '1-a': { status: 'queued', depends_on: ['2-b'] }, '2-b': { status: 'queued', depends_on: ['1-a'] } });
    expect(decideReadiness({ id: '1-a', depends_on: ['2-b'] }, loop)).toEqual({ state: 'waiting', waiting_for: ['2-b'] });
  });
});

describe('dependency helpers (pure)', () => {
  it('dependencyReason starts with `dependency ` and names the goal and how it closed', () => {
    expect(dependencyReason({ goal: '3-build-a', closed_reason: 'failure' })).toBe('dependency 3-build-a closed failure');
    expect(dependencyReason({ goal: '3-build-a', closed_reason: 'cancelled', via: '4-b' })).toBe('dependency 3-build-a closed cancelled (through 4-b)');
    expect(dependencyReason({ goal: '3-build-a', closed_reason: 'missing' })).toBe('dependency 3-build-a is missing');
  });

  it('findCycle names the loop a new edge would close, or nothing', () => {
    const deps: Record<string, string[]> = { '2-b': ['1-a'], '3-c': ['2-b'] };
    expect(findCycle('1-a', ['3-c'], (id) => deps[id])).toEqual(['1-a', '3-c', '2-b', '1-a']);
    expect(findCycle('4-d', ['3-c'], (id) => deps[id])).toBeUndefined();
  });

  it('chainOrder lists a goal after the listed goals it depends on, the order kept otherwise', () => {
    const goals = [{ id: '3-c', depends_on: ['2-b'] }, { id: '5-e' }, { id: '2-b', depends_on: ['1-a'] }, { id: '1-a' }, { id: '4-d', depends_on: ['9-elsewhere'] }];
    expect(chainOrder(goals).map((g) => g.id)).toEqual(['1-a', '2-b', '3-c', '5-e', '4-d']);
  });

  it('dependencyViews and blockedChains: waiting_for or blocked_on per queued dependent, chains by their root', () => {
    const goal = (id: string, status: GoalRecord['status'], depends_on?: string[]) => ({ id, status, depends_on, type: 'build', priority: 50, body: 'x', submitted_at: '2026-01-01T00:00:00Z' }) as GoalRecord;
    const goals = [goal('2-b', 'queued', ['1-a']), goal('3-c', 'queued', ['2-b']), goal('5-e', 'running'), goal('6-f', 'queued', ['5-e']), goal('7-g', 'queued')];
    const f = facts({ '1-a': { status: 'closed', closed_reason: 'failure' }, '2-b': { status: 'queued', depends_on: ['1-a'] }, '3-c': { status: 'queued', depends_on: ['2-b'] }, '5-e': { status: 'running' } });
    const views = dependencyViews(goals, f);
    expect(Object.fromEntries(views)).toEqual({
      '2-b': { blocked_on: { goal: '1-a', closed_reason: 'failure' } },
      '3-c': { blocked_on: { goal: '1-a', closed_reason: 'failure', via: '2-b' } },
      '6-f': { waiting_for: ['5-e'] },
    });
    expect(blockedChains(views)).toEqual([{ root: '1-a', closed_reason: 'failure', goals: ['2-b', '3-c'] }]);
  });
});
