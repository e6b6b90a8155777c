/**
 * readGuardRecord (issue 10): a guarded run's files read and validated,
 * a malformed one a problem line naming the file and field, never a throw.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDir } from '../../source/garden/index.js';
import { readGuardRecord } from '../../source/guard/read.js';
import { createGoal, openRun, transitionGoal } from '../../source/store/index.js';
import { envelopeFixture, outcomeFixture, phasesFixture, writeGuardFiles } from '../helpers/guard-fixtures.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

async function liveRun(body: string) {
  const goal = await createGoal(garden!.paths, { type: 'build', plant: 'gardener', body });
  await transitionGoal(garden!.paths, goal.id, 'dispatched');
  const run = await openRun(garden!.paths, goal, { plant: 'gardener', driver: 'success', model: 'default' });
  await transitionGoal(garden!.paths, goal.id, 'running');
  return run;
}

describe('readGuardRecord', () => {
  it('reads a valid run directory; a run without guard files is not guarded', async () => {
    garden = await makeTestGarden();
    const run = await liveRun('guarded');
    expect(await readGuardRecord(garden.paths, run.id)).toEqual({ guarded: false, phases: [], problems: [] });
    writeGuardFiles(garden.paths, run.id);
    const record = await readGuardRecord(garden.paths, run.id);
    expect(record).toEqual({
      guarded: true,
      envelope: envelopeFixture(run.id),
      outcome: outcomeFixture(run.id),
      phases: phasesFixture(run.id),
      patch: { file: path.join(runDir(garden.paths, run.id), 'rejected.patch'), bytes: expect.any(Number) },
      problems: [],
    });
  });

  it('an id that is not N-slug-rN reads nothing', async () => {
    garden = await makeTestGarden();
    expect(await readGuardRecord(garden.paths, '../../etc')).toEqual({ guarded: false, phases: [], problems: ['run id "../../etc" is not of the form N-slug-rN'] });
  });

  it('a malformed envelope is a problem naming the file and field; unknown fields are kept; a partial last phase line is no problem', async () => {
    garden = await makeTestGarden();
    const run = await liveRun('malformed');
    const phases = phasesFixture(run.id).map((p) => JSON.stringify(p));
    const dir = writeGuardFiles(garden.paths, run.id, {
      envelope: { ...envelopeFixture(run.id), executor: { name: 'x' } },
      outcome: { ...outcomeFixture(run.id), future_field: 1 },
      phases: `${phases.slice(0, 3).join('\n')}\n{"ts":"2026-`,
    });
    const record = await readGuardRecord(garden.paths, run.id);
    expect(record.envelope).toBeUndefined();
    expect(record.outcome).toMatchObject({ future_field: 1 });
    expect(record.phases).toHaveLength(3);
    expect(record.problems.length).toBeGreaterThan(0);
    for (const p of record.problems) expect(p).toMatch(new RegExp(`^${path.join(dir, 'execution_envelope.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: executor\\.`));
  });
});
