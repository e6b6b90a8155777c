/**
 * `pak2 history [RUN] [--json]` through the built CLI, and the workbench's
 * run detail (snapshot loader + goalDetail) showing the provenance.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { historyRecordFile } from '../../source/history/index.js';
import { SnapshotLoader } from '../../source/snapshot/index.js';
import { goalDetail } from '../../source/ui/overlays/detail.js';
import { reconcile } from '../../source/coordinator/index.js';
import { closeRun, createGoal, readRun } from '../../source/store/index.js';
import { cleanupFixtures } from '../helpers/fixtures.js';
import { runCli } from '../support/cli.js';
import { closeOneRun, git, makeGitGarden, recordOutcomes } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

function quiet(): void {
  restore = recordOutcomes().restore;
}

describe('pak2 history', () => {
  it('lists every recorded run with its authored HEAD, tree state and runtime commit; --json gives the records', async () => {
    quiet();
    const garden = await makeGitGarden();
    const first = await closeOneRun(garden, 'first');
    const afterFirst = git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD').trim();
    fs.writeFileSync(path.join(garden.root, 'scratch.txt'), 'operator edit\n');
    const second = await closeOneRun(garden, 'second');
    const afterSecond = git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD').trim();
    const head = git(garden.root, 'rev-parse', 'HEAD').trim();

    const table = await runCli(['history', '--garden', garden.root]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^RUN\s+STATUS\s+AUTHORED HEAD\s+TREE\s+RUNTIME COMMIT\s+CLOSED$/);
    expect(lines[1]).toMatch(new RegExp(`^${first}\\s+success\\s+${head.slice(0, 12)}\\s+clean\\s+${afterFirst.slice(0, 12)}\\s`));
    expect(lines[2]).toMatch(new RegExp(`^${second}\\s+success\\s+${head.slice(0, 12)}\\s+dirty\\s+${afterSecond.slice(0, 12)}\\s`));

    const json = await runCli(['history', '--json', '--garden', garden.root]);
    expect(json.code).toBe(0);
    const entries = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(entries.map((e) => [e.run_id, e.authored_tree, e.runtime_commit])).toEqual([
      [first, 'clean', afterFirst],
      [second, 'dirty', afterSecond],
    ]);
    expect(entries[0]).toMatchObject({ authored_head: head, runtime_root: '.runtime', runtime_subject: `pak2 run ${first} closed: success` });
  });

  it('shows one run; --json gives the record with its runtime commit', async () => {
    quiet();
    const garden = await makeGitGarden();
    const runId = await closeOneRun(garden);
    const commit = git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD').trim();
    const head = git(garden.root, 'rev-parse', 'HEAD').trim();
    const shown = await runCli(['history', runId, '--garden', garden.root]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`run ${runId}  success, closed `);
    expect(shown.stdout).toContain(`authored head ${head}  authored tree clean`);
    expect(shown.stdout).toContain(`record .runtime/history/commits/${runId}.json`);
    expect(shown.stdout).toContain(`runtime commit ${commit}  pak2 run ${runId} closed: success`);
    const json = await runCli(['history', runId, '--json', '--garden', garden.root]);
    expect(JSON.parse(json.stdout)).toMatchObject({ run_id: runId, runtime_commit: commit, authored_head: head });
  });

  it('a record whose capture did not commit shows no runtime commit', async () => {
    quiet();
    const garden = await makeGitGarden();
    await closeOneRun(garden);
    fs.writeFileSync(path.join(garden.paths.runtimeRoot, '.git', 'index.lock'), '');
    const runId = await closeOneRun(garden, 'blocked');
    const shown = await runCli(['history', runId, '--garden', garden.root]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('runtime commit none: the capture wrote the record but did not commit');
    const json = await runCli(['history', runId, '--json', '--garden', garden.root]);
    expect(JSON.parse(json.stdout).runtime_commit).toBeNull();
  });

  it('errors: an unknown run, a malformed id, a run without a record, a malformed record', async () => {
    quiet();
    const garden = await makeGitGarden({ init: false });
    const unknown = await runCli(['history', '99-nope-r1', '--garden', garden.root]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^pak2: no run 99-nope-r1/);

    const bad = await runCli(['history', 'not-a-run', '--garden', garden.root]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('RUN not-a-run: not a run id (N-slug-rN)');

    // Not a git repository: the close was authored_repo_unavailable, so there is no record.
    const runId = await closeOneRun(garden);
    const none = await runCli(['history', runId, '--garden', garden.root]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`pak2: run ${runId} has no runtime provenance record: its close wrote no record`);
    const empty = await runCli(['history', '--garden', garden.root]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toMatch(/^no runtime history yet/);

    fs.mkdirSync(path.dirname(historyRecordFile(garden.paths, runId)), { recursive: true });
    fs.writeFileSync(historyRecordFile(garden.paths, runId), '{"run_id": "x"}\n');
    const malformed = await runCli(['history', runId, '--garden', garden.root]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain(`${runId}.json: run_id: INVALID_ID_FORMAT`);
  });

  it('legacy layout: the list says history is off; a run is refused', async () => {
    const garden = await makeGitGarden({ toml: '' });
    const list = await runCli(['history', '--garden', garden.root]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('runtime history is off: this garden uses the legacy unified layout');
    expect(JSON.parse((await runCli(['history', '--json', '--garden', garden.root])).stdout)).toEqual([]);
    const one = await runCli(['history', '1-x-r1', '--garden', garden.root]);
    expect(one.code).toBe(1);
    expect(one.stderr).toContain('no runtime history for 1-x-r1');
  });
});

describe('workbench run detail', () => {
  it('the snapshot carries the provenance record and the detail view shows it with the worktree baseline', async () => {
    quiet();
    const garden = await makeGitGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'shown' });
    await reconcile({
      garden,
      awaitDispatch: true,
      dispatch: async (g, id) => {
        await closeRun(garden.paths, id, g.type, { status: 'success', cost: { source: 'unknown' } });
      },
    });
    const runId = `${goal.id}-r1`;
    const snapshot = await new SnapshotLoader(garden).load();
    const row = snapshot.goals.find((g) => g.run?.id === runId)!;
    expect(row.provenance).toMatchObject({ run_id: runId, authored_tree: 'clean' });

    const run = { ...(await readRun(garden.paths, runId)), worktree_baseline: { tracked_dirty_paths: ['src/app.ts'], untracked_dirty_count: 2, untracked_dirty_roots: ['notes'] } };
    const sections = goalDetail(row.goal, run, row.provenance);
    const provenance = sections.find((s) => s.heading === 'Provenance')!;
    expect(provenance.lines).toEqual([
      `authored head ${row.provenance!.authored_head.slice(0, 12)}  authored tree clean at close`,
      `record .runtime/history/commits/${runId}.json  (pak2 history ${runId})`,
      'baseline at start: 1 tracked dirty, 2 untracked in notes',
      '  dirty src/app.ts',
    ]);
    // The real run was dispatched in a clean git garden: its baseline is empty, and says so.
    expect(row.run?.worktree_baseline).toEqual({ tracked_dirty_paths: [], untracked_dirty_count: 0, untracked_dirty_roots: [] });
    expect(goalDetail(row.goal, row.run, row.provenance).find((s) => s.heading === 'Provenance')!.lines.at(-1)).toBe('baseline at start: 0 tracked dirty, 0 untracked');
    const show = await runCli(['show', runId, '--garden', garden.root]);
    expect(show.stdout).toContain('  baseline 0 tracked dirty, 0 untracked at start');
    // No record and no baseline: no section.
    const { worktree_baseline: _baseline, ...bare } = await readRun(garden.paths, runId);
    expect(goalDetail(row.goal, bare).map((s) => s.heading)).not.toContain('Provenance');
  });
});
