/**
 * `r` in the workbench (docs/goal/level2.md, "Retry"; docs/workbench/level2.md):
 * on a goal in the goals pane that closed failure or cancelled, it asks
 * first, saying what a retry is (a new goal; this one stays closed; who
 * will wait for it), then calls the core's retry, the same action as
 * `pak2 retry`; on anything else it says why not, in one line.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import { UserError } from '../../source/errors.js';
import type { GoalRow, PlantView, Snapshot } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { ago, goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';

const gardener: PlantView = { plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) }, memory: '', skills: [], knowledge: [], threads: [] };

const failed = goal(3, { type: 'fix', status: 'closed', closed_reason: 'failure', closed_at: ago(2) });
const waiting = goal(4, { body: 'after the fix', depends_on: [failed.id] });
const done = goal(5, { status: 'closed', closed_reason: 'success', closed_at: ago(1) });
const rows = (): GoalRow[] => [
  { goal: waiting, run: undefined },
  { goal: failed, run: run(failed.id, { status: 'failure', failure_reason: 'agent_error', completed_at: ago(2) }) },
  { goal: done, run: run(done.id, { status: 'success', completed_at: ago(1) }) },
];

function setup(snapshot: Snapshot = snapshotOf({ goals: rows(), plants: [gardener] }), readOnly = false) {
  const retried = goal(9, { id: '9-goal-number-3', type: 'fix', retry_of: failed.id });
  const actions = {
    follow: vi.fn(),
    quit: vi.fn(),
    ...(readOnly ? {} : { retryGoal: vi.fn(async (_id: string) => ({ goal: retried, moved: [waiting.id] })), rejectRun: vi.fn(async () => ({}) as never) }),
  } satisfies WorkbenchActions;
  const store = fixedStore(snapshot);
  const ui = render(<App store={store} actions={actions} size={{ columns: 100, rows: 30 }} now={NOW} />);
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  const frame = () => plain(ui.lastFrame());
  const status = () => frame().trimEnd().split('\n').at(-1)!;
  const prose = () => frame().split('\n').map((l) => l.replace(/^[│╭╰]─*|[│╮╯]$/g, '').trim()).filter(Boolean).join(' ');
  return { ...ui, actions, store, press, frame, status, prose, retried };
}

describe('r retries the selected goal', () => {
  it('a goal that closed failure: asks, saying what a retry is and who waits for it; n leaves it; y retries through the core and says the new goal', async () => {
    const { press, frame, prose, status, actions, store, retried } = setup();
    await press('j', 'r');
    expect(frame()).toContain('Retry goal?');
    expect(prose()).toContain(`${failed.id} (fix, gardener) closed failure; its run ${failed.id}-r1 ended failure (agent_error).`);
    expect(prose()).toContain(`retry_of names ${failed.id}, which stays closed. ${waiting.id} will wait for the new goal.`);
    expect(frame()).toContain(`Retry ${failed.id}? y / n`);
    await press('n');
    expect(frame()).not.toContain('Retry goal?');
    expect(actions.retryGoal).not.toHaveBeenCalled();
    await press('r', 'y');
    await tick();
    expect(actions.retryGoal).toHaveBeenCalledWith(failed.id);
    expect(status()).toContain(`queued ${retried.id} (retry of ${failed.id}); ${waiting.id} wait for it`);
    // The status line then follows the new goal as the snapshot has it.
    store.set(snapshotOf({ goals: [{ goal: { ...retried, status: 'running' }, run: run(retried.id) }, ...rows()], plants: [gardener] }));
    await tick();
    expect(status()).toContain(`running ${retried.id}`);
  });

  it('a goal that closed success, an open goal, a goal whose retry is open: one line each, no question, no call', async () => {
    const { press, frame, status, actions } = setup();
    await press('G', 'r');
    expect(status()).toContain(`goal ${done.id} closed success: nothing to retry`);
    await press('g', 'r');
    expect(status()).toContain(`goal ${waiting.id} is queued: only a goal that closed failure or cancelled is retried`);
    expect(frame()).not.toContain('Retry goal?');
    expect(actions.retryGoal).not.toHaveBeenCalled();

    const open = goal(9, { id: '9-goal-number-3', retry_of: failed.id });
    const second = setup(snapshotOf({ goals: [{ goal: open, run: undefined }, ...rows()], plants: [gardener] }));
    await second.press('j', 'j', 'r');
    expect(second.status()).toContain(`goal ${failed.id}: its retry ${open.id} is still open (queued)`);
    expect(second.actions.retryGoal).not.toHaveBeenCalled();
  });

  it("the core's refusal is a one-line notice; outside the goals pane r says where to go; the read-only dashboard says to use pak2 retry", async () => {
    const { press, status, actions } = setup();
    actions.retryGoal!.mockRejectedValueOnce(new UserError(`goal ${failed.id}: its retry 9-goal-number-3 is still open (queued); retry that one once it closes`, { exitCode: 1 }));
    await press('j', 'r', 'y');
    await tick();
    expect(status()).toContain(`goal ${failed.id}: its retry 9-goal-number-3 is still open (queued)`);
    await press('\t', 'r');
    expect(status()).toContain('select a closed goal in the goals pane first');

    const dashboard = setup(undefined, true);
    await dashboard.press('j', 'r');
    expect(dashboard.status()).toContain('read-only dashboard: retry goals with pak2 retry');
  });

  it('in a goal awaiting review, r is still reject (the review keys come first)', async () => {
    const completed = goal(6, { status: 'completed' });
    const landing = { run: `${completed.id}-r1`, goal: completed.id, state: 'awaiting_review', branch: 'pak2/6', base_branch: 'main', base_commit: 'a'.repeat(40), files: [], updated_at: ago(1) } as unknown as NonNullable<GoalRow['landing']>;
    const { press, frame, prose, actions } = setup(snapshotOf({ goals: [{ goal: completed, run: run(completed.id, { status: 'success', completed_at: ago(1) }), landing }], plants: [gardener] }));
    await press('r');
    expect(prose()).toContain(`Rejecting ${completed.id}-r1 discards its work`);
    expect(frame()).not.toContain('Retry goal?');
    expect(actions.retryGoal).not.toHaveBeenCalled();
  });
});
