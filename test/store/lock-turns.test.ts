import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { withLock } from '../../source/store/index.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';

afterEach(() => cleanupFixtures());

describe('withLock within one process', () => {
  it('holders take their turns in the order they asked, one at a time, each holding the lock file; a failing holder passes the turn on', async () => {
    const dir = makeTempDir({ 'target.json': '{}' }, 'pak2-lock-');
    const target = path.join(dir, 'target.json');
    const log: string[] = [];
    let holding = 0;
    const holder = (name: string, fail = false) =>
      withLock(target, async () => {
        holding += 1;
        log.push(`${name} in (${holding} holding, lock ${fs.existsSync(`${target}.lock`) ? 'held' : 'free'})`);
        await new Promise((resolve) => setImmediate(resolve));
        holding -= 1;
        log.push(`${name} out`);
        if (fail) throw new Error(`${name} failed`);
        return name;
      });
    const results = await Promise.allSettled([holder('a'), holder('b', true), holder('c'), holder('d')]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['a', 'b failed', 'c', 'd']);
    expect(log).toEqual(['a', 'b', 'c', 'd'].flatMap((n) => [`${n} in (1 holding, lock held)`, `${n} out`]));
    expect(fs.existsSync(`${target}.lock`)).toBe(false);
  });
});
