/**
 * `pak2 doctor`'s dashboard check (docs/doctor/level2.md, "dashboard"):
 * every dashboard invocation record must validate; a damaged one is one
 * finding naming the file and the field, `--fix` moves it aside, and the
 * valid records are left as they are.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dashboardInvocationFile, writeDashboardInvocation } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { doctor, doctorJson } from './support.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

describe('pak2 doctor: dashboard', () => {
  it('valid invocation records are no finding; a damaged one is, naming file and field, and --fix moves only it aside', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    const root = garden.paths.gardenRoot;
    const good = { id: '20260501T100000-0a1b2c3d', command: 'pak2 dashboard', pid: 4242, started_at: '2026-05-01T10:00:00.000Z', finished_at: '2026-05-01T10:00:05.000Z', cost: { source: 'estimated' as const, wall_seconds: 5 } };
    await writeDashboardInvocation(garden.paths, good);
    expect((await doctorJson(root)).findings.filter((f) => f.check === 'dashboard')).toEqual([]);

    const bad = dashboardInvocationFile(garden.paths, '20260501T110000-ffffffff');
    fs.writeFileSync(bad, JSON.stringify({ ...good, id: '20260501T110000-ffffffff', cost: { source: 'estimated', wall_seconds: 'five' } }));
    const found = await doctorJson(root);
    expect(found.findings.filter((f) => f.check === 'dashboard')).toEqual([
      {
        check: 'dashboard',
        file: bad,
        field: 'cost.wall_seconds',
        message: 'cost.wall_seconds: INVALID_COST_FIELD (cost field must be a non-negative number); not a valid dashboard invocation record',
        fix: 'move it aside (nothing else reads it)',
      },
    ]);
    expect(found.code).toBe(1);
    const text = await doctor(root);
    expect(text.stdout).toContain('dashboard: .runtime/dashboard/invocations/20260501T110000-ffffffff.json: cost.wall_seconds: INVALID_COST_FIELD');

    const fixed = await doctorJson(root, '--fix');
    const finding = fixed.findings.find((f) => f.check === 'dashboard')!;
    expect(finding.fixed).toBe(true);
    const moved = /moved it to (\S+)$/.exec(finding.fix!)![1]!;
    expect(fs.existsSync(bad)).toBe(false);
    expect(JSON.parse(fs.readFileSync(path.isAbsolute(moved) ? moved : path.join(root, moved), 'utf8')).cost.wall_seconds).toBe('five');
    expect(JSON.parse(fs.readFileSync(dashboardInvocationFile(garden.paths, good.id), 'utf8'))).toEqual(good);
    expect((await doctorJson(root)).findings.filter((f) => f.check === 'dashboard')).toEqual([]);
  });
});
