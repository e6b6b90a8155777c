/**
 * Operator actions in the workbench (issue 14, items 2-4 as views): `x`
 * cancels the selected goal, `s` / `S` stop its live run, `a` adds a
 * supplement; each asks first and says what happens, calls the core's
 * action, and an error becomes a one-line notice. The problems counter and
 * list; the status line describes a goal as the snapshot has it now.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import { UserError } from '../../source/errors.js';
import type { GoalRow, PlantView, Snapshot } from '../../source/snapshot/index.js';
import type { SubmitGoalInput } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { ago, goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';

const ESC = '\u001b';
const TAB = '\t';

const gardener: PlantView = { plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) }, memory: '', skills: [], knowledge: [], threads: [] };

const queued = goal(1, { body: 'queued work' });
const running = goal(2, { status: 'running' });
const done = goal(3, { status: 'closed', closed_reason: 'success' });
const rows = (): GoalRow[] => [
  { goal: running, run: run(running.id) },
  { goal: queued, run: undefined },
  { goal: done, run: run(done.id, { status: 'success', completed_at: ago(1) }) },
];

function setup(snapshot: Snapshot = snapshotOf({ goals: rows(), plants: [gardener], coordinator: { state: 'running', liveRuns: [`${running.id}-r1`] } }), readOnly = false) {
  const actions = {
    follow: vi.fn(),
    quit: vi.fn(),
    ...(readOnly
      ? {}
      : {
          submitGoal: vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never })),
          sendMessage: vi.fn(async () => undefined),
          markNoteRead: vi.fn(async () => undefined),
          cancelGoal: vi.fn(async (_id: string) => undefined),
          stopRun: vi.fn(async (_id: string, _o?: { requeue?: boolean }) => undefined),
          addSupplement: vi.fn(async (_id: string, _text: string) => undefined),
        }),
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
  /** The frame's words inside the borders, lines joined: wrapped sentences read whole. */
  const prose = () => frame().split('\n').map((l) => l.replace(/^[│╭╰]─*|[│╮╯]$/g, '').trim()).filter(Boolean).join(' ');
  return { ...ui, actions, store, press, frame, status, prose };
}

describe('x cancels the selected goal', () => {
  it('the filter, its Enter and x in one read (typed fast, or a loaded machine): x is a press, the question for the goal found', async () => {
    const { press, frame, actions } = setup();
    await press('/', `${queued.id}\rx`);
    expect(frame()).toContain(`Cancel ${queued.id}? y / n`);
    await press('y');
    await tick();
    expect(actions.cancelGoal).toHaveBeenCalledWith(queued.id);
  });

  it('several keys after the Enter in one read are text, not commands: none runs', async () => {
    const { press, frame, actions } = setup();
    await press('/', `${queued.id}\rxy`);
    expect(frame()).not.toContain('Cancel goal?');
    expect(actions.cancelGoal).not.toHaveBeenCalled();
  });

  it('a queued goal: asks, saying it closes cancelled and never runs; n leaves it; y cancels it through the core', async () => {
    const { press, frame, status, actions, store } = setup();
    await press('j', 'x');
    expect(frame()).toContain('Cancel goal?');
    expect(frame()).toContain(`${queued.id} (build, gardener) is queued.`);
    expect(frame()).toContain('Cancelling closes it cancelled; it never runs.');
    expect(frame()).toContain(`Cancel ${queued.id}? y / n`);
    await press('n');
    expect(frame()).not.toContain('Cancel goal?');
    expect(actions.cancelGoal).not.toHaveBeenCalled();
    await press('x', 'y');
    await tick();
    expect(actions.cancelGoal).toHaveBeenCalledWith(queued.id);
    expect(status()).toContain(`cancelling ${queued.id}…`);
    // The status line follows the goal in the snapshot, not the words of the moment.
    store.set(snapshotOf({ goals: [{ goal: { ...queued, status: 'closed', closed_reason: 'cancelled' }, run: undefined }], plants: [gardener] }));
    await tick();
    expect(status()).toContain(`closed:cancelled ${queued.id}`);
  });

  it('a running goal: says its run is stopped (killed, operator_stopped) and it closes cancelled; esc says no', async () => {
    const { press, frame, prose, actions } = setup();
    await press('x');
    expect(frame()).toContain(`${running.id} is running: its run ${running.id}-r1 is live.`);
    expect(prose()).toContain('the run closes killed, failure_reason operator_stopped, and the goal closes cancelled');
    await press(ESC);
    expect(frame()).not.toContain('Cancel goal?');
    await press('x', 'y');
    expect(actions.cancelGoal).toHaveBeenCalledWith(running.id);
  });

  it('a closed goal: a notice, no question', async () => {
    const { press, frame, status, actions } = setup();
    await press('G', 'x');
    expect(frame()).not.toContain('Cancel goal?');
    expect(status()).toContain(`goal ${done.id} is already closed (success): nothing to cancel`);
    expect(actions.cancelGoal).not.toHaveBeenCalled();
  });

  it('an error from the core is a one-line notice; the workbench goes on', async () => {
    const { press, status, frame, actions } = setup();
    actions.cancelGoal!.mockRejectedValueOnce(new UserError(`ID ${queued.id}: the goal is already closed (cancelled)`));
    await press('j', 'x', 'y');
    await tick();
    expect(status()).toContain(`ID ${queued.id}: the goal is already closed (cancelled)`);
    // Even an action that throws instead of rejecting.
    actions.stopRun!.mockImplementationOnce(() => {
      throw new Error('the coordinator socket is gone');
    });
    await press('k', 's', 'y');
    await tick();
    expect(status()).toContain('the coordinator socket is gone');
    await press('?');
    expect(frame()).toContain('Keys');
  });

  it('the read-only dashboard refuses and says so', async () => {
    const { press, status } = setup(snapshotOf({ goals: rows(), plants: [gardener], garden: { ...snapshotOf().garden, readOnly: true } }), true);
    await press('x');
    expect(status()).toContain('read-only dashboard: cancel goals with pak2 cancel');
  });
});

describe('s stops a live run', () => {
  it('s on a running goal: asks, saying killed, operator_stopped and the goal closes cancelled; y stops it through the core', async () => {
    const { press, frame, prose, status, actions, store } = setup();
    await press('s');
    expect(frame()).toContain('Stop run?');
    expect(frame()).toContain(`Run ${running.id}-r1 of goal ${running.id} is live (claude/claude-opus-4-6).`);
    expect(prose()).toContain(`it closes killed, failure_reason operator_stopped, and goal ${running.id} closes cancelled (S puts it back in the queue instead)`);
    await press('y');
    await tick();
    expect(actions.stopRun).toHaveBeenCalledWith(`${running.id}-r1`, {});
    expect(status()).toContain(`stopping ${running.id}-r1…`);
    store.set(snapshotOf({ goals: [{ goal: { ...running, status: 'closed', closed_reason: 'cancelled' }, run: run(running.id, { status: 'killed', failure_reason: 'operator_stopped', completed_at: ago(0) }) }], plants: [gardener] }));
    await tick();
    expect(status()).toContain(`killed (operator_stopped) ${running.id}-r1 · closed:cancelled ${running.id}`);
  });

  it('S stops and requeues; in the run pane s stops the run shown there', async () => {
    const { press, frame, prose, actions } = setup();
    await press('S');
    expect(frame()).toContain('Stop run and requeue?');
    expect(prose()).toContain(`goal ${running.id} goes back to the queue for a new attempt`);
    await press('y');
    expect(actions.stopRun).toHaveBeenLastCalledWith(`${running.id}-r1`, { requeue: true });

    const tailed = setup(snapshotOf({ goals: rows(), plants: [gardener], tail: { runId: `${running.id}-r1`, file: '/x', lines: [], usage: { inputTokens: 0, outputTokens: 0, costUsd: undefined }, bytes: 0, truncated: false } }));
    await tailed.press(TAB, 's');
    expect(tailed.frame()).toContain(`Stop ${running.id}-r1? y / n`);
    await tailed.press('y');
    expect(tailed.actions.stopRun).toHaveBeenCalledWith(`${running.id}-r1`, {});
  });

  it('s on a queued goal: a notice pointing at x', async () => {
    const { press, status, actions } = setup();
    await press('j', 's');
    expect(status()).toContain(`goal ${queued.id} is queued: no live run to stop (x cancels it)`);
    expect(actions.stopRun).not.toHaveBeenCalled();
  });
});

describe('a adds a supplement to a queued goal', () => {
  it('opens a field like the chat input: pasted lines stay lines, enter sends it through the core', async () => {
    const { press, frame, status, actions } = setup();
    await press('j', 'a');
    expect(frame()).toContain(`Supplement to ${queued.id}`);
    expect(frame()).toContain('enter sends · alt-enter adds a line · esc cancels');
    await press('Also check the ', '\u001b[200~edge case\rand the other\u001b[201~');
    expect(frame()).toContain('› Also check the edge case');
    expect(frame()).toContain('and the other█');
    await press('\r');
    await tick();
    expect(actions.addSupplement).toHaveBeenCalledWith(queued.id, 'Also check the edge case\nand the other');
    expect(status()).toContain(`supplement added to ${queued.id}`);
  });

  it('on a running goal: a notice; a refusal from the core: a notice', async () => {
    const { press, status, actions } = setup();
    await press('a');
    expect(status()).toContain(`goal ${running.id} is running: supplements are added before dispatch`);
    actions.addSupplement!.mockRejectedValueOnce(new UserError(`goal ${queued.id} takes no supplements: only a conversation-origin durable goal (with conversation_id, not converse) does`));
    await press('j', 'a', 'more', '\r');
    await tick();
    expect(status()).toContain(`goal ${queued.id} takes no supplements`);
  });
});

describe('problems', () => {
  const problems = ['/g/.runtime/goals/5-broken.json: invalid JSON (Unexpected token n)', 'coordinator: EACCES: permission denied, open goals/'];

  it('a counter on the status line; p lists them one line each; the list follows the snapshot', async () => {
    const { press, frame, status, store } = setup(snapshotOf({ goals: rows(), plants: [gardener], problems }));
    expect(status()).toContain('● coordinator idle · ⚠ 2 problems · 0 live');
    expect(status()).toContain('p problems · ? help');
    await press('p');
    expect(frame()).toContain('Problems');
    expect(frame()).toContain(`⚠ ${problems[0]}`);
    expect(frame()).toContain(`⚠ ${problems[1]}`);
    store.set(snapshotOf({ goals: rows(), plants: [gardener], problems: [problems[1]!] }));
    await tick();
    expect(frame()).not.toContain('5-broken.json');
    expect(status()).toContain('⚠ 1 problem ·');
    store.set(snapshotOf({ goals: rows(), plants: [gardener] }));
    await tick();
    expect(frame()).toContain('no problems');
    expect(status()).not.toContain('⚠');
    await press(ESC);
    expect(frame()).toContain('Goals');
  });

  it('a long list is windowed and scrolls', async () => {
    const many = Array.from({ length: 60 }, (_, i) => `/g/.runtime/goals/${i}-bad.json: invalid JSON`);
    const { press, frame } = setup(snapshotOf({ plants: [gardener], problems: many }));
    await press('p');
    expect(frame()).toContain('0-bad.json');
    expect(frame()).not.toContain('59-bad.json');
    await press('G');
    expect(frame()).toContain('59-bad.json');
    expect(frame().split('\n').length).toBeLessThanOrEqual(30);
  });
});

describe('the quit question follows the snapshot', () => {
  it('when the live run ends while it is open, it says no run is live any more', async () => {
    const { press, frame, store, actions } = setup();
    await press('q');
    expect(frame()).toContain(`1 run is live: ${running.id}-r1`);
    store.set(snapshotOf({ goals: rows(), plants: [gardener] }));
    await tick();
    expect(frame()).toContain('No run is live any more. Quitting stops the coordinator;');
    expect(frame()).toContain('Quit now? y / n');
    await press('y');
    expect(actions.quit).toHaveBeenCalledTimes(1);
  });
});

describe('the status line reads the current snapshot', () => {
  it('after a submit it says queued, then what became of the goal', async () => {
    const { press, status, store } = setup(snapshotOf({ plants: [gardener] }));
    await press('n', 'do it', '\u0013');
    await tick();
    expect(status()).toContain('queued 42-from-the-form');
    const submitted = goal(42, { id: '42-from-the-form', status: 'running' });
    store.set(snapshotOf({ goals: [{ goal: submitted, run: run(submitted.id) }], plants: [gardener] }));
    await tick();
    expect(status()).toContain('running 42-from-the-form');
    store.set(snapshotOf({ goals: [{ goal: { ...submitted, status: 'closed', closed_reason: 'success' }, run: run(submitted.id, { status: 'success' }) }], plants: [gardener] }));
    await tick();
    expect(status()).toContain('closed:success 42-from-the-form');
    expect(status()).not.toContain('queued 42');
  });
});
