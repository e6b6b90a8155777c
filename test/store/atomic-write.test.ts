import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../source/atomic-write.js';
import { WRITE_FAULT_ENV } from '../../source/checked-write.js';
import { StoreError, writeJsonAtomic } from '../../source/store/index.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';
import { canMountTmpfs, fillDisk, mountTmpfs, unmountAll } from '../support/tmpfs.js';

afterEach(() => {
  delete process.env[WRITE_FAULT_ENV];
  unmountAll();
  cleanupFixtures();
});

/** A record of about `kb` KB. */
const bigRecord = (kb: number) => ({ id: '1-x-r1', status: 'success', text: 'y'.repeat(kb * 1024) });

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

  for (const fault of ['ENOSPC', 'EIO', 'EROFS', 'short'] as const) {
    it(`a write that fails part-way (${fault}, injected) never publishes a torn file: the old file stays, the temp is removed, the error names the file and the errno`, async () => {
      const dir = makeTempDir({}, 'pak2-atomic-');
      const file = path.join(dir, 'meta.json');
      fs.writeFileSync(file, '{"status": "running"}\n');
      process.env[WRITE_FAULT_ENV] = `${fault}@meta.json`;
      const error = await writeJsonAtomic(file, bigRecord(64)).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).message).toContain(file);
      expect((error as StoreError).message).toContain(fault === 'short' ? 'EIO' : fault);
      expect((error as StoreError).message).toMatch(fault === 'short' ? /short write \(\d+ of \d+ bytes\)/ : /injected fault/);
      expect(fs.readFileSync(file, 'utf8')).toBe('{"status": "running"}\n');
      expect(fs.readdirSync(dir)).toEqual(['meta.json']);
    });
  }

  it.skipIf(!canMountTmpfs)('on a real full tmpfs: ENOSPC leaves the old file whole and no temp file, and names the file', async () => {
    const dir = mountTmpfs(512)!;
    const file = path.join(dir, 'meta.json');
    fs.writeFileSync(file, '{"status": "running"}\n');
    fillDisk(dir, 128);
    const error = await writeJsonAtomic(file, bigRecord(400)).then(() => undefined, (e: unknown) => e);
    expect((error as StoreError).message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: write failed \\(ENOSPC`));
    expect(fs.readFileSync(file, 'utf8')).toBe('{"status": "running"}\n');
    expect(fs.readdirSync(dir).sort()).toEqual(['filler', 'meta.json']);
    // Room again: the same write lands whole.
    fs.rmSync(path.join(dir, 'filler'));
    await writeJsonAtomic(file, bigRecord(400));
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(bigRecord(400));
  });
});
