/** A guarded run's environment (seed 001, env_passthrough; docs/guarded-runs/level2.md, "Environment"). */
import { describe, expect, it } from 'vitest';
import { guardedEnvironment } from '../../source/guard/index.js';

describe('guardedEnvironment', () => {
  const base = { PATH: '/bin', HOME: '/h', SECRET_TOKEN: 's', ANTHROPIC_API_KEY: 'k', PAK2_GOAL_ID: '3-fix', PAK2_RUN_ID: '3-fix-r1', PAK2_OUTBOX: '/o', PAK2_INBOX: '/i', PAK2_STORE_URL: 'postgres://x', KEEP: 'y' };

  it("the agent gets the base, its driver's variables, the pass-through names and pak2's own hand-over (goal, run, outbox, inbox), nothing else", () => {
    expect(guardedEnvironment(base, ['KEEP'], 'claude')).toEqual({ PATH: '/bin', HOME: '/h', ANTHROPIC_API_KEY: 'k', PAK2_GOAL_ID: '3-fix', PAK2_RUN_ID: '3-fix-r1', PAK2_OUTBOX: '/o', PAK2_INBOX: '/i', KEEP: 'y' });
  });

  it('verify gets neither the driver\'s variables nor the hand-over', () => {
    expect(guardedEnvironment(base, ['KEEP'])).toEqual({ PATH: '/bin', HOME: '/h', KEEP: 'y' });
  });
});
