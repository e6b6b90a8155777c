import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../source/atomic-write.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';

afterEach(() => cleanupFixtures());

describe('writeFileAtomic', () => {
  it('replaces the file whole; keeps the mode of the file it replaces; writes of one file land in the order asked', async () => {
    const dir = makeTempDir({}, 'pak2-atomic-');
    const file = path.join(dir, 'meta.json');
    fs.writeFileSync(file, 'old\n');
    fs.chmodSync(file, 0o640);
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeFileAtomic(file, `write ${i}\n`)));
    expect(fs.readFileSync(file, 'utf8')).toBe('write 19\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(dir)).toEqual(['meta.json']);
  });

  it('a write that cannot land throws and leaves no temp file behind', async () => {
    const dir = makeTempDir({}, 'pak2-atomic-');
    const file = path.join(dir, 'taken');
    fs.mkdirSync(file);
    await expect(writeFileAtomic(file, 'x')).rejects.toThrow();
    expect(fs.readdirSync(dir)).toEqual(['taken']);
  });

  it('its temp files are *.tmp: a `git add -A` beside a stream of rewrites never meets a name that vanishes', async () => {
    const dir = makeTempDir({}, 'pak2-atomic-');
    const git = (...args: string[]) => promisify(execFile)('git', args, { cwd: dir, env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: dir } });
    await git('init', '-q');
    // The runtime repo's own exclusions (docs/runtime-history/level2.md).
    fs.appendFileSync(path.join(dir, '.git', 'info', 'exclude'), '*.lock\n*.tmp\n');
    const files = ['a.json', 'b.json', 'c.json'].map((f) => path.join(dir, f));
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i += 1) await Promise.all(files.map((f) => writeFileAtomic(f, `{"n": ${i}}\n`)));
    })();
    try {
      for (let i = 0; i < 15; i += 1) await git('add', '-A', '--', '.');
    } finally {
      writing = false;
      await writer;
    }
    expect((await git('ls-files')).stdout.split('\n').filter(Boolean)).toEqual(['a.json', 'b.json', 'c.json']);
  });
});
