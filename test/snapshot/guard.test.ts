/**
 * The snapshot holds the followed run's guard files (issue 10, item 8),
 * read through readGuardRecord for that one run only, again as they change.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDir } from '../../source/garden/index.js';
import { GuardFollower } from '../../source/snapshot/guard.js';
import { SnapshotSource } from '../../source/snapshot/index.js';
import { createGoal, openRun, transitionGoal } from '../../source/store/index.js';
import { envelopeFixture, phasesFixture, writeGuardFiles } from '../helpers/guard-fixtures.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
let source: SnapshotSource | undefined;
afterEach(async () => {
  await source?.stop();
  source = undefined;
  garden?.cleanup();
  garden = undefined;
});

const ROUTING = '[routing.simple]\ntiers = [{ driver = "success" }, { driver = "success", model = "big" }, { driver = "success", model = "bigger" }]\nmax_escalations = 1\n';

async function liveRun(body: string) {
  const goal = await createGoal(garden!.paths, { type: 'build', plant: 'gardener', body });
  await transitionGoal(garden!.paths, goal.id, 'dispatched');
  const run = await openRun(garden!.paths, goal, { plant: 'gardener', driver: 'success', model: 'default' });
  await transitionGoal(garden!.paths, goal.id, 'running');
  return run;
}

describe('the snapshot source and the guard of the followed run', () => {
  it('publishes the followed run\'s guard files, again as they change, with its routing class\'s bound', async () => {
    garden = await makeTestGarden({ extraToml: ROUTING });
    source = new SnapshotSource({ garden, coalesceMs: 20, tailPollMs: 50 });
    await source.start();
    const run = await liveRun('watch the guard');
    await waitFor(() => source!.getSnapshot().tail?.runId === run.id);
    expect(source.getSnapshot().guard).toBeUndefined();
    expect(source.getSnapshot().garden.taskClasses).toEqual(['simple']);

    writeGuardFiles(garden.paths, run.id, { envelope: null, outcome: null, patch: null, phases: phasesFixture(run.id).slice(0, 1) });
    await waitFor(() => source!.getSnapshot().guard?.phases.length === 1);
    expect(source.getSnapshot().guard).toMatchObject({ runId: run.id, guarded: true });

    const envelope = envelopeFixture(run.id, { routing: { task_class: 'simple', tier_index: 0, escalations: 0, attempts: [] } });
    writeGuardFiles(garden.paths, run.id, { envelope });
    await waitFor(() => source!.getSnapshot().guard?.outcome !== undefined);
    expect(source.getSnapshot().guard).toMatchObject({ runId: run.id, maxAttempts: 2, phases: phasesFixture(run.id) });

    // Another run followed: its guard (none) replaces this one's.
    const other = await liveRun('another');
    source.follow(other.id);
    await waitFor(() => source!.getSnapshot().tail?.runId === other.id);
    await waitFor(() => source!.getSnapshot().guard === undefined);
    source.follow(run.id);
    await waitFor(() => source!.getSnapshot().guard?.runId === run.id);
  });

  it('the follower reads only when a file changed', async () => {
    garden = await makeTestGarden();
    const run = await liveRun('stamps');
    const follower = new GuardFollower(garden);
    expect(await follower.refresh(run.id)).toBe(false);
    writeGuardFiles(garden.paths, run.id);
    expect(await follower.refresh(run.id)).toBe(true);
    expect(await follower.refresh(run.id)).toBe(false);
    expect(follower.viewOf(run.id)?.outcome?.diagnostic_code).toBe('scope_violation');
    expect(follower.viewOf('9-other-r1')).toBeUndefined();
    fs.appendFileSync(path.join(runDir(garden.paths, run.id), 'phase_events.jsonl'), `${JSON.stringify({ ...phasesFixture(run.id)[0], phase: 'decision' })}\n`);
    expect(await follower.refresh(run.id)).toBe(true);
    expect(follower.viewOf(run.id)?.phases).toHaveLength(8);
    expect(await follower.refresh(undefined)).toBe(true);
    expect(follower.viewOf(run.id)).toBeUndefined();
  });
});
