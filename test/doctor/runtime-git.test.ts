/**
 * `pak2 doctor` on the runtime git repository `<runtime-root>/.git` of a
 * split git garden: a stale lock file, and breakage git fsck finds.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupFixtures } from '../helpers/fixtures.js';
import { closeOneRun, git, makeGitGarden, recordOutcomes } from '../history/support.js';
import { doctor, doctorJson, expectNothingLost, filesUnder, findingLines } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

describe('pak2 doctor: the runtime git repository', () => {
  it('names a stale runtime index.lock and --fix removes it, so the next close commits without clearing anything', async () => {
    const outcomes = recordOutcomes();
    restore = outcomes.restore;
    const garden = await makeGitGarden();
    await closeOneRun(garden, 'first');
    expect(outcomes.results.at(-1)!.result.outcome).toBe('committed');
    const lock = path.join(garden.paths.runtimeRoot, '.git', 'index.lock');
    fs.writeFileSync(lock, '');
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(lock, past, past); // a git that died a minute ago

    const text = await doctor(garden.root);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      expect.stringMatching(/^runtime-git: \.runtime\/\.git\/index\.lock: stale lock: no live process holds it open, last written 6\d s ago; git commands on the runtime repo that need it fail until it is removed — fix: remove it$/),
    ]);

    const before = filesUnder(garden.root);
    const fixed = await doctorJson(garden.root, '--fix');
    expect(fixed.code).toBe(0);
    expect(fixed.findings).toEqual([expect.objectContaining({ check: 'runtime-git', file: lock, fix: 'removed it', fixed: true })]);
    expect(fs.existsSync(lock)).toBe(false);
    expectNothingLost(before, filesUnder(garden.root), ['.runtime/.git/index.lock']);

    await closeOneRun(garden, 'after');
    expect(outcomes.results.at(-1)!.result).toMatchObject({ outcome: 'committed' });
    expect(outcomes.results.at(-1)!.result.cleared).toBeUndefined();
    expect((await doctor(garden.root)).code).toBe(0);
  });

  it('leaves a lock that a live process holds open alone', async () => {
    restore = recordOutcomes().restore;
    const garden = await makeGitGarden();
    await closeOneRun(garden);
    const lock = path.join(garden.paths.runtimeRoot, '.git', 'index.lock');
    const fd = fs.openSync(lock, 'w'); // this test process holds it, as a running git would
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(lock, past, past);
    try {
      const json = await doctorJson(garden.root, '--fix');
      expect(json.findings).toEqual([]);
      expect(fs.existsSync(lock)).toBe(true);
    } finally {
      fs.closeSync(fd);
    }
  });

  it('names an object git fsck finds missing, with no automatic fix', async () => {
    restore = recordOutcomes().restore;
    const garden = await makeGitGarden();
    await closeOneRun(garden);
    const tree = git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD^{tree}').trim();
    const object = path.join(garden.paths.runtimeRoot, '.git', 'objects', tree.slice(0, 2), tree.slice(2));
    fs.rmSync(object, { force: true });

    const json = await doctorJson(garden.root, '--fix');
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([
      {
        check: 'runtime-git',
        file: path.join(garden.paths.runtimeRoot, '.git'),
        message: expect.stringMatching(new RegExp(`^git fsck --connectivity-only exited \\d+: (broken link|missing tree ${tree}).*the runtime history repository is damaged: no automatic fix$`)),
        fixed: false,
      },
    ]);
  });
});
