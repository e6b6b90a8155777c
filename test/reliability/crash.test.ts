/**
 * The crash-injection harness in CI: PAK2_HARNESS_ITERATIONS (default 5)
 * kills at spread-out moments. `npm run harness:crash -- --iterations N` runs more.
 */
import { describe, expect, it } from 'vitest';
import { crashIteration } from './crash-harness.js';

const ITERATIONS = Number(process.env.PAK2_HARNESS_ITERATIONS ?? 5);

describe(`crash-injection harness (${ITERATIONS} iterations)`, () => {
  it('kill -9 at spread-out moments of dispatch, close and capture, then a restart: nothing lost, doubled or stuck', async () => {
    const found: string[] = [];
    for (let i = 0; i < ITERATIONS; i += 1) {
      // Spread the kills over the first runs' dispatch, reflection, close and capture.
      const killAfterMs = 150 + Math.floor(((i + Math.random()) / ITERATIONS) * 2000);
      const result = await crashIteration({ goals: 3, killAfterMs });
      for (const v of result.violations) found.push(`kill after ${killAfterMs} ms: ${v}`);
    }
    expect(found).toEqual([]);
  }, 60_000 + ITERATIONS * 20_000);
});
