/**
 * What the snapshot holds for remote runners and blocking questions
 * (docs/workbench/level2.md, "Panes"): the active leases by run, the open
 * questions of blocked goals only (closed goals' threads are never read),
 * and the followed remote run's lease and artifacts, as they change.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { GoalRecord, LeaseRecord, RunRecord } from '../../source/contracts/index.js';
import { SnapshotSource } from '../../source/snapshot/index.js';
import { QuestionReader } from '../../source/snapshot/questions.js';
import { appendComment, artifactsFile, createGoal, endLease, openRun, runMetaFile, runSealFile, transitionGoal, writeJsonAtomic, writeLease } from '../../source/store/index.js';
import { answerQuestion, postComment } from '../../source/submit/index.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
let source: SnapshotSource | undefined;
afterEach(async () => {
  await source?.stop();
  source = undefined;
  garden?.cleanup();
  garden = undefined;
});

/** A live run of a new goal; with `runner`, a remote one (its record names the runner and lease). */
async function liveRun(body: string, runner?: RunRecord['runner']): Promise<RunRecord> {
  const g = garden!;
  const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body });
  await transitionGoal(g.paths, goal.id, 'dispatched');
  let run = await openRun(g.paths, goal, { plant: 'gardener', driver: 'success', model: 'default' });
  await transitionGoal(g.paths, goal.id, 'running');
  if (runner) {
    run = { ...run, runner };
    await writeJsonAtomic(runSealFile(g.paths, run.id), run);
    await writeJsonAtomic(runMetaFile(g.paths, run.id), run);
  }
  return run;
}

function leaseOf(run: RunRecord, overrides: Partial<LeaseRecord> = {}): LeaseRecord {
  const now = new Date().toISOString();
  return { id: run.runner!.lease, run: run.id, goal: run.goal, plant: run.plant, runner: { name: run.runner!.name, host: run.runner!.host }, state: 'active', ttl_seconds: 30, claimed_at: now, renewed_at: now, expires_at: now, heartbeats: 0, ...overrides };
}

describe('the snapshot and remote runners', () => {
  it('holds the active leases by run, the followed remote run\'s lease and artifacts, again as they change', async () => {
    garden = await makeTestGarden();
    source = new SnapshotSource({ garden, coalesceMs: 20, tailPollMs: 50 });
    await source.start();
    const run = await liveRun('a remote run', { name: 'box-7', host: 'build-7.lan', lease: '01K00000000000000000000007' });
    await writeLease(garden.paths, leaseOf(run, { progress: 10, status_line: 'reading the code' }));
    await waitFor(() => source!.getSnapshot().leases[run.id]?.progress === 10);
    await waitFor(() => source!.getSnapshot().remote?.lease?.status_line === 'reading the code');
    expect(source.getSnapshot().remote).toMatchObject({ runId: run.id, artifacts: [] });

    // A heartbeat rewrites the lease: the snapshot follows.
    await writeLease(garden.paths, leaseOf(run, { progress: 40, status_line: 'running the tests', heartbeats: 3 }));
    await waitFor(() => source!.getSnapshot().remote?.lease?.progress === 40);
    expect(source.getSnapshot().leases[run.id]).toMatchObject({ heartbeats: 3, status_line: 'running the tests' });

    // An artifact attached: read on the next poll (artifacts.jsonl changed).
    fs.appendFileSync(artifactsFile(garden.paths, run.id), `${JSON.stringify({ name: 'change.diff', kind: 'diff', run: run.id, bytes: 120, attached_at: new Date().toISOString(), by: 'box-7' })}\n`);
    await waitFor(() => source!.getSnapshot().remote?.artifacts.length === 1);
    expect(source.getSnapshot().remote?.artifacts[0]).toMatchObject({ name: 'change.diff', kind: 'diff' });

    // The lease ends: no longer active; the followed run shows the ended one.
    await endLease(garden.paths, leaseOf(run), 'expired', new Date());
    await waitFor(() => source!.getSnapshot().leases[run.id] === undefined);
    await waitFor(() => source!.getSnapshot().remote?.lease?.state === 'expired');

    // A local run followed: no remote view.
    const local = await liveRun('a local run');
    source.follow(local.id);
    await waitFor(() => source!.getSnapshot().tail?.runId === local.id && source!.getSnapshot().remote === undefined);
  });

  it('lists the open questions of blocked goals, oldest first, as they are asked and answered; a second question on a blocked goal shows too', async () => {
    garden = await makeTestGarden();
    source = new SnapshotSource({ garden, coalesceMs: 20, tailPollMs: 50 });
    await source.start();
    const a = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'first' });
    const b = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'second' });
    const q1 = (await postComment(garden, a.id, { body: 'Which database?', blocking: true, author: 'agent:1-first-r1' })).comment;
    await waitFor(() => source!.getSnapshot().questions.length === 1);
    expect(source.getSnapshot().questions[0]).toMatchObject({ goal: a.id, comment: { id: q1.id, body: 'Which database?' } });
    expect(source.getSnapshot().counts.blocked).toBe(1);
    expect(source.getSnapshot().goals.map((r) => r.goal.id)).toEqual([a.id, b.id]); // blocked before queued
    const q2 = (await postComment(garden, b.id, { body: 'Which region?', blocking: true })).comment;
    // The goal file does not change for a second question on a blocked goal: the comments directory wakes the reload.
    const q3 = (await postComment(garden, a.id, { body: 'And which schema?', blocking: true })).comment;
    await waitFor(() => source!.getSnapshot().questions.length === 3);
    expect(source.getSnapshot().questions.map((q) => q.comment.id)).toEqual([q1.id, q2.id, q3.id]);
    await answerQuestion(garden, a.id, 'staging');
    await waitFor(() => source!.getSnapshot().questions.length === 2);
    await answerQuestion(garden, a.id, 'public');
    await answerQuestion(garden, b.id, 'eu');
    await waitFor(() => source!.getSnapshot().questions.length === 0 && source!.getSnapshot().counts.blocked === undefined);
  });

  it('reads only blocked goals\' threads: an open question in a queued or closed goal\'s thread is not looked at', async () => {
    garden = await makeTestGarden();
    const queued = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'queued' });
    await appendComment(garden.paths, { goal: queued.id, author: 'operator', body: 'stray question', blocking: true });
    const blocked = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'blocked' });
    await postComment(garden, blocked.id, { body: 'real question', blocking: true });
    const reader = new QuestionReader(garden.paths);
    const goals = [{ ...queued }, { ...blocked, status: 'blocked' }, { ...queued, id: '99-closed', status: 'closed', closed_reason: 'success' }] as GoalRecord[];
    // A closed goal's thread that would throw if it were read: a directory where the file should be.
    fs.mkdirSync(path.join(garden.paths.runtimeRoot, 'comments', '99-closed.jsonl'), { recursive: true });
    const problems: string[] = [];
    const first = await reader.read(goals, problems);
    expect(first.map((q) => q.comment.body)).toEqual(['real question']);
    expect(problems).toEqual([]);
    expect(await reader.read(goals, problems)).toBe(first); // unchanged: the same array
  });
});
