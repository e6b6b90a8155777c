/**
 * `pak2 doctor`'s schedules check (docs/doctor/level2.md, "schedules"): a
 * damaged `<runtime-root>/schedules.json` is one finding naming the field;
 * `--fix` moves it aside, and the next pass starts the schedule afresh.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { schedulesFile, writeSchedulesState } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { doctorJson } from './support.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('pak2 doctor: schedules', () => {
  it('a readable schedules.json is no finding; a damaged one is, and --fix moves it aside', async () => {
    const garden = await makeTestGarden({ extraToml: '[[schedule]]\nname = "nightly"\ncron = "0 3 * * *"\nbody = "Tidy"\n' });
    cleanups.push(garden.cleanup);
    const root = garden.paths.gardenRoot;
    await writeSchedulesState(garden.paths, { schedules: { nightly: { since: '2026-05-01T10:00:00.000Z' } } });
    expect((await doctorJson(root)).findings.filter((f) => f.check === 'schedules')).toEqual([]);

    const file = schedulesFile(garden.paths);
    fs.writeFileSync(file, JSON.stringify({ schedules: { nightly: { since: 'yesterday' } } }));
    const found = await doctorJson(root);
    expect(found.findings.filter((f) => f.check === 'schedules')).toEqual([
      {
        check: 'schedules',
        file,
        field: 'schedules.nightly.since',
        message: expect.stringMatching(/^schedules\.nightly\.since: INVALID_TIMESTAMP .*; no schedule fires while pak2 cannot read it$/),
        fix: expect.stringMatching(/^move it aside/),
      },
    ]);
    expect(found.code).toBe(1);

    const fixed = await doctorJson(root, '--fix');
    const finding = fixed.findings.find((f) => f.check === 'schedules')!;
    expect(finding.fixed).toBe(true);
    const moved = /moved it to (\S+);/.exec(finding.fix!)![1]!;
    expect(fs.existsSync(file)).toBe(false);
    expect(JSON.parse(fs.readFileSync(path.isAbsolute(moved) ? moved : path.join(root, moved), 'utf8'))).toEqual({ schedules: { nightly: { since: 'yesterday' } } });
    expect((await doctorJson(root)).findings.filter((f) => f.check === 'schedules')).toEqual([]);
  });
});
