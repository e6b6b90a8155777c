/**
 * What the snapshot holds of landings (docs/workbench/level2.md, "Review"):
 * each shown goal's latest run's landing, the count of those awaiting
 * review, and the landing as it changes (accepted, landed; rejected); and
 * `pak2 goals` says the same words as the queue.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotSource } from '../../source/snapshot/index.js';
import { readLanding } from '../../source/store/index.js';
import { landRun, rejectRun } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { waitFor } from '../support/garden.js';
import { makeGitGarden, runUntil, submitWork, type GitGarden } from '../landing/support.js';

let garden: GitGarden | undefined;
let source: SnapshotSource | undefined;
afterEach(async () => {
  await source?.stop();
  source = undefined;
  garden?.cleanup();
  garden = undefined;
});

describe('landings in the snapshot', () => {
  it('rows carry their run’s landing; counts.awaitingReview counts the held ones; a landing that moves on is read again, `pak2 goals` says the same', async () => {
    const g = (garden = await makeGitGarden({ coordinator: { max_concurrent_runs: 2 }, toml: '[merge]\nmode = "review"\n' }));
    const keep = await submitWork(g, ['write src/keep.txt keep me']);
    const drop = await submitWork(g, ['write src/drop.txt drop me']);
    await runUntil(g, [], async () => (await Promise.all([keep, drop].map((x) => readLanding(g.paths, `${x.id}-r1`)))).every((l) => l?.state === 'awaiting_review'));

    source = new SnapshotSource({ garden: g, coalesceMs: 20, tailPollMs: 50 });
    await source.start();
    const row = (id: string) => source!.getSnapshot().goals.find((r) => r.goal.id === id)!;
    expect(row(keep.id).landing).toMatchObject({ run: `${keep.id}-r1`, state: 'awaiting_review', files: [{ path: 'src/keep.txt', status: 'A' }] });
    expect(source.getSnapshot().counts.awaitingReview).toBe(2);
    const listed = await runCli(['goals', '--garden', g.root]);
    expect(listed.stdout).toMatch(new RegExp(`${keep.id}\\s+spike\\s+gardener\\s+\\d+\\s+awaiting review`));

    // Accepted and landed (no coordinator runs: landRun lands it), the other rejected: the snapshot follows the records.
    await landRun(g, `${keep.id}-r1`);
    await rejectRun(g, `${drop.id}-r1`, { comment: 'not this one' });
    await waitFor(async () => row(keep.id).landing?.state === 'landed' && row(drop.id).landing?.state === 'rejected', 10_000);
    expect(source.getSnapshot().counts.awaitingReview).toBeUndefined();
    expect(row(keep.id).goal).toMatchObject({ status: 'closed', closed_reason: 'success' });
    const after = (await runCli(['goals', '--garden', g.root])).stdout;
    expect(after).toMatch(new RegExp(`${keep.id}\\s+spike\\s+gardener\\s+\\d+\\s+landed`));
    expect(after).toMatch(new RegExp(`${drop.id}\\s+spike\\s+gardener\\s+\\d+\\s+rejected`));
    expect((await runCli(['goals', '--all', '--garden', g.root])).stdout).toMatch(new RegExp(`${keep.id}\\s+spike\\s+gardener\\s+\\d+\\s+landed`));
  }, 90_000);
});
