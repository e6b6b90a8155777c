import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decideRouteStep, streamVersion, type RoutePlan } from '../../source/guard/index.js';
import type { RoutingAttempt } from '../../source/contracts/index.js';

/** Every routing stop reason of seed 001, and the two ways a chain goes on, from decideRouteStep. */
const plan = (over: Partial<RoutePlan> = {}): RoutePlan => ({
  taskClass: 'simple',
  tierIndex: 0,
  tier: { driver: 'codex' },
  attempts: [],
  escalations: 0,
  pinned: false,
  tiers: [{ driver: 'codex' }, { driver: 'claude' }, { driver: 'claude', model: 'opus' }],
  maxEscalations: 2,
  ...over,
});
const attempt = (cost: number | null): RoutingAttempt => ({ run_id: '1-a-r1', tier_index: 0, executor: 'codex', model: 'm', diagnostic_code: 'verify_failed', cost_usd: cost });
const failed = { state: 'degraded' as const, diagnostic: 'verify_failed', interrupted: false };

describe('decideRouteStep', () => {
  it('kept: the work was kept', () => {
    expect(decideRouteStep(plan(), { state: 'ready', diagnostic: 'ready', interrupted: false }, [])).toEqual({ stop: 'kept' });
  });
  it('escalates a verify failure to the next tier', () => {
    expect(decideRouteStep(plan(), failed, [attempt(0.01)])).toEqual({ nextTierIndex: 1, why: 'escalate' });
    expect(decideRouteStep(plan(), { ...failed, diagnostic: 'verify_timeout' }, [attempt(0.01)])).toEqual({ nextTierIndex: 1, why: 'escalate' });
  });
  it('runs the same tier again after an interruption (coordinator shutdown)', () => {
    expect(decideRouteStep(plan({ tierIndex: 1 }), { state: 'degraded', diagnostic: 'executor_killed', interrupted: true }, [])).toEqual({ nextTierIndex: 1, why: 'retry' });
  });
  it('non_retryable: a scope violation, an executor failure, or a pinned model', () => {
    expect(decideRouteStep(plan(), { ...failed, diagnostic: 'scope_violation' }, [])).toEqual({ stop: 'non_retryable' });
    expect(decideRouteStep(plan(), { ...failed, diagnostic: 'executor_failed' }, [])).toEqual({ stop: 'non_retryable' });
    expect(decideRouteStep(plan({ pinned: true }), failed, [])).toEqual({ stop: 'non_retryable' });
    expect(decideRouteStep(plan(), { state: 'blocked', diagnostic: 'launch_failed', interrupted: false }, [])).toEqual({ stop: 'non_retryable' });
  });
  it('last_tier: no tier after this one', () => {
    expect(decideRouteStep(plan({ tierIndex: 2, escalations: 2, maxEscalations: 5 }), failed, [])).toEqual({ stop: 'last_tier' });
  });
  it('max_escalations: the escalations are used up before the tiers', () => {
    expect(decideRouteStep(plan({ tierIndex: 1, escalations: 1, maxEscalations: 1 }), failed, [])).toEqual({ stop: 'max_escalations' });
    expect(decideRouteStep(plan({ maxEscalations: 0 }), failed, [])).toEqual({ stop: 'max_escalations' });
  });
  it('budget: the attempts cost the budget (USD); an attempt that never reached the model counts 0', () => {
    expect(decideRouteStep(plan({ budgetUsd: 0.5 }), failed, [attempt(0.3), attempt(0.25)])).toEqual({ stop: 'budget' });
    expect(decideRouteStep(plan({ budgetUsd: 0.5 }), failed, [attempt(0.3), attempt(0), attempt(null)])).toEqual({ nextTierIndex: 1, why: 'escalate' });
  });
  it('blocked_after_escalation: a blocked attempt after an escalation', () => {
    expect(decideRouteStep(plan({ tierIndex: 1, escalations: 1 }), { state: 'blocked', diagnostic: 'verify_unavailable', interrupted: false }, [])).toEqual({ stop: 'blocked_after_escalation' });
  });
});

describe('streamVersion', () => {
  const streams = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/streams');
  it("reads claude's version from its init line, and says null where the stream does not say", () => {
    expect(streamVersion(path.join(streams, 'claude-build.jsonl'))).toBe('2.1.197');
    expect(streamVersion(path.join(streams, 'codex-build.jsonl'))).toBeNull();
    expect(streamVersion(path.join(streams, 'no-such-file.jsonl'))).toBeNull();
  });
});

describe('onePath', () => {
  it('keeps a path with a line break on one line of the trace', async () => {
    const { onePath } = await import('../../source/guard/describe.js');
    expect(onePath('src/new\nline.txt')).toBe('src/new\\nline.txt');
    expect(onePath('a\tb\x1bc')).toBe('a\\tb\\x1bc');
    expect(onePath('plain/path.ts')).toBe('plain/path.ts');
  });
});
