import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { PlantView, Snapshot } from '../../source/snapshot/index.js';
import type { SubmitGoalInput } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { KEYMAP } from '../../source/ui/keymap.js';
import { ago, goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';


const ESC = '\u001b';
const TAB = '\t';
const CTRL_S = '\u0013';

const gardener: PlantView = {
  plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) },
  memory: '',
  skills: [],
  knowledge: [],
  threads: [],
};

function setup(snapshot: Snapshot = snapshotOf({ plants: [gardener] }), readOnly = false) {
  const actions = {
    follow: vi.fn(),
    quit: vi.fn(),
    ...(readOnly
      ? {}
      : {
          submitGoal: vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never })),
          sendMessage: vi.fn(async () => undefined),
          markNoteRead: vi.fn(async () => undefined),
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
  return { ...ui, actions, store, press };
}

describe('workbench keys', () => {
  it('n opens the goal form; it submits through the core submit call and says what was queued', async () => {
    const { press, lastFrame, actions } = setup();
    await press('n');
    expect(lastFrame()).toContain('New goal');
    await press('Fix the flaky test', '\r', 'with a second line');
    await press(TAB, TAB, TAB); // body → submit → type → plant
    await press(TAB); // priority
    await press('\u007f', '\u007f', '8', '0');
    await press(CTRL_S);
    await tick();
    expect(actions.submitGoal).toHaveBeenCalledWith({ type: 'build', plant: 'gardener', body: 'Fix the flaky test\nwith a second line', priority: 80 });
    expect(lastFrame()).not.toContain('New goal');
    expect(lastFrame()).toContain('queued 42-from-the-form');
  });

  it('the form changes choices with ← → and shows a field error instead of submitting', async () => {
    const { press, lastFrame, actions } = setup();
    await press('n', TAB, TAB); // body → submit → type
    await press('\u001b[C'); // → : the next goal type
    expect(lastFrame()).toContain('‹ fix ›');
    await press(CTRL_S);
    expect(actions.submitGoal).not.toHaveBeenCalled();
    expect(lastFrame()).toContain('body: write the task first');
    await press(ESC); // a choice was changed: the form asks first
    expect(lastFrame()).toContain('discard this goal?');
    await press(ESC);
    expect(lastFrame()).not.toContain('New goal');
  });

  it('esc on a form as it opened closes it at once (issue 28)', async () => {
    const { press, lastFrame } = setup();
    await press('n');
    expect(lastFrame()).toContain('New goal');
    await press(ESC);
    expect(lastFrame()).not.toContain('New goal');
  });

  it('esc on a typed body asks before discarding: another key goes back to it, unapplied; esc again or y discards (issue 28)', async () => {
    const { press, lastFrame, actions } = setup();
    await press('n', 'A long body I typed');
    await press(ESC);
    expect(lastFrame()).toContain('New goal');
    expect(plain(lastFrame())).toContain('discard this goal? esc again or y discards it; any other key goes back to it');
    await press('x'); // back to the form: the x is not typed, the body is as it was
    expect(lastFrame()).not.toContain('discard this goal?');
    expect(plain(lastFrame())).toMatch(/│ {3}A long body I typed█/);
    await press(ESC, 'y');
    expect(lastFrame()).not.toContain('New goal');
    await press('n', 'Another body', ESC, ESC);
    expect(lastFrame()).not.toContain('New goal');
    expect(actions.submitGoal).not.toHaveBeenCalled();
    await press('n'); // a fresh form: nothing of the discarded bodies
    expect(lastFrame()).not.toContain('body I typed');
    expect(lastFrame()).not.toContain('Another body');
  });

  it('a refused submit keeps the form open with the core error', async () => {
    const { press, lastFrame, actions } = setup();
    actions.submitGoal!.mockRejectedValueOnce(new Error('plant gardener: the plant is archived'));
    await press('n', 'do it', CTRL_S);
    await tick();
    expect(lastFrame()).toContain('New goal');
    expect(lastFrame()).toContain('plant gardener: the plant is archived');
  });

  it('/ filters the goal queue; esc clears the filter', async () => {
    const goals = [goal(1, { body: 'alpha work' }), goal(2, { body: 'beta work' }), goal(3, { body: 'gamma' })].map((g) => ({ goal: g, run: undefined }));
    const { press, lastFrame } = setup(snapshotOf({ goals, plants: [gardener] }));
    await press('/', 'work');
    expect(lastFrame()).toContain('2 matching /work');
    expect(lastFrame()).not.toContain('3-goal-number-3');
    await press('\r', ESC);
    expect(lastFrame()).toContain('3-goal-number-3');
  });

  it('arrows and j/k move the selection, which the tail follows; enter opens the goal detail', async () => {
    const g1 = goal(1, { status: 'running' });
    const g2 = goal(2, { status: 'closed', closed_reason: 'success' });
    const goals = [
      { goal: g1, run: run(g1.id) },
      { goal: g2, run: run(g2.id, { status: 'success', completed_at: ago(1), cost: { source: 'provider', usd: 0.5 }, reflection: 'Learned a thing.' }) },
    ];
    const { press, lastFrame, actions } = setup(snapshotOf({ goals, plants: [gardener] }));
    expect(actions.follow).toHaveBeenLastCalledWith(`${g1.id}-r1`);
    await press('j');
    expect(actions.follow).toHaveBeenLastCalledWith(`${g2.id}-r1`);
    await press('\r');
    expect(lastFrame()).toContain('Reflection');
    expect(lastFrame()).toContain('Learned a thing.');
    expect(lastFrame()).toContain('cost $0.5000 (provider)');
    await press(ESC, 'k');
    expect(actions.follow).toHaveBeenLastCalledWith(`${g1.id}-r1`);
  });

  it('an Enter typed while the workbench starts (a line feed: the terminal was not raw yet) opens the detail too; in the chat input a line feed stays a new line', async () => {
    const g1 = goal(1, { status: 'closed', closed_reason: 'success' });
    const { press, lastFrame, actions } = setup(snapshotOf({ goals: [{ goal: g1, run: run(g1.id, { status: 'success', completed_at: ago(1), reflection: 'Learned a thing.' }) }], plants: [gardener] }));
    await press('\n');
    expect(lastFrame()).toContain(`Goal ${g1.id}`);
    expect(lastFrame()).toContain('Learned a thing.');
    await press(ESC, 'c', 'a', '\n', 'b');
    expect(actions.sendMessage).not.toHaveBeenCalled();
    await press('\r');
    await tick();
    expect(actions.sendMessage).toHaveBeenCalledWith('a\nb');
  });

  it('tab and shift-tab move between panes', async () => {
    const { press, lastFrame } = setup();
    // The focused pane's title is bold; the chat pane's input hint shows only when it is focused.
    await press(TAB, TAB, TAB, TAB);
    expect(lastFrame()).toContain('press c or enter to write');
    await press('\u001b[Z');
    expect(lastFrame()).not.toContain('press c or enter to write');
  });

  it('c writes to the garden through the core send call', async () => {
    const { press, actions, lastFrame } = setup();
    await press('c', 'hello garden');
    expect(lastFrame()).toContain('› hello garden█');
    await press('\r');
    await tick();
    expect(actions.sendMessage).toHaveBeenCalledWith('hello garden');
    expect(lastFrame()).toContain('message sent');
  });

  it('enter on an unread note opens it and marks it read', async () => {
    const snapshot = snapshotOf({ inbox: [{ name: 'reply.md', path: '/x/reply.md', title: 'A reply', body: '# A reply\nDetails here.', modifiedAt: ago(2), unread: true }] });
    const { press, actions, lastFrame } = setup(snapshot);
    await press(TAB, TAB, TAB, '\r');
    expect(lastFrame()).toContain('Details here.');
    expect(actions.markNoteRead).toHaveBeenCalledWith('reply.md');
  });

  it('? shows every key of the one keymap, the form\'s keys too, scrolled with ↓', async () => {
    const { press, lastFrame } = setup();
    await press('?');
    // Every description, read page by page (descriptions wrap: compare words, not lines).
    let seen = plain(lastFrame());
    for (let i = 0; i < 60; i++) {
      await press('j');
      seen += plain(lastFrame());
    }
    // Each binding's row: its keys, then the start of its description (the rest may wrap).
    for (const binding of KEYMAP) expect(seen).toContain(`${binding.keys.padEnd(17)} ${binding.description.slice(0, 30)}`);
    expect(seen).toContain('new-goal form');
    expect(seen).toContain(`${'ctrl-s'.padEnd(17)} submit the goal`);
    await press(ESC);
    expect(lastFrame()).toContain('Goals');
  });

  it('q quits at once when nothing is live, and asks first (saying what happens) while a run is live', async () => {
    const idle = setup();
    await idle.press('q');
    expect(idle.actions.quit).toHaveBeenCalledTimes(1);

    const g1 = goal(1, { status: 'running' });
    const busy = setup(snapshotOf({ goals: [{ goal: g1, run: run(g1.id) }], coordinator: { state: 'running', liveRuns: [`${g1.id}-r1`] }, plants: [gardener] }));
    await busy.press('q');
    expect(busy.actions.quit).not.toHaveBeenCalled();
    expect(busy.lastFrame()).toContain('1 run is live: 1-goal-number-1-r1');
    expect(busy.lastFrame()).toContain('coordinator_stopped');
    await busy.press('n');
    expect(busy.lastFrame()).not.toContain('Quit now?');
    await busy.press('q', 'y');
    expect(busy.actions.quit).toHaveBeenCalledTimes(1);
  });

  it('the read-only dashboard refuses writes and says so', async () => {
    const { press, lastFrame } = setup(snapshotOf({ plants: [gardener], garden: { ...snapshotOf().garden, readOnly: true } }), true);
    await press('n');
    expect(lastFrame()).not.toContain('New goal');
    expect(lastFrame()).toContain('read-only dashboard');
    await press('c');
    expect(lastFrame()).toContain('chat is off');
  });

  it('a new snapshot re-renders the open detail view with the finished run', async () => {
    const g1 = goal(1, { status: 'running' });
    const { press, lastFrame, store } = setup(snapshotOf({ goals: [{ goal: g1, run: run(g1.id) }], plants: [gardener] }));
    await press('\r');
    expect(lastFrame()).toContain('cost (running)');
    store.set(snapshotOf({ goals: [{ goal: { ...g1, status: 'closed', closed_reason: 'success' }, run: run(g1.id, { status: 'success', completed_at: ago(0), cost: { source: 'provider', usd: 0.25 }, reflection: 'Done and learned.' }) }], plants: [gardener] }));
    await tick();
    expect(lastFrame()).toContain('Done and learned.');
  });
});

describe('keys that arrive in one burst (tmux send-keys j j j, send-keys -l jj, tab tab: one input string)', () => {
  const five = () => [1, 2, 3, 4, 5].map((n) => goal(n)).map((g) => ({ goal: g, run: run(g.id) }));

  it('a burst of j / k / G / g in the goals list moves the selection that many rows', async () => {
    const { press, actions } = setup(snapshotOf({ goals: five(), plants: [gardener] }));
    expect(actions.follow).toHaveBeenLastCalledWith('1-goal-number-1-r1');
    await press('jjj');
    expect(actions.follow).toHaveBeenLastCalledWith('4-goal-number-4-r1');
    await press('kk');
    expect(actions.follow).toHaveBeenLastCalledWith('2-goal-number-2-r1');
    await press('jjjjjjjj'); // clamped at the last row
    expect(actions.follow).toHaveBeenLastCalledWith('5-goal-number-5-r1');
    await press('gj');
    expect(actions.follow).toHaveBeenLastCalledWith('2-goal-number-2-r1');
  });

  it('a burst that is not only navigation is text (a paste): the panes run no command from it', async () => {
    const { press, actions, lastFrame } = setup(snapshotOf({ goals: five(), plants: [gardener] }));
    await press('jn');
    await press('jq');
    expect(lastFrame()).not.toContain('New goal');
    expect(actions.quit).not.toHaveBeenCalled();
    expect(actions.follow).toHaveBeenLastCalledWith('1-goal-number-1-r1');
  });

  it('tab tab in one burst moves the focus two panes; in the detail, jjj scrolls three rows', async () => {
    const { press, lastFrame } = setup();
    await press(TAB.repeat(4));
    expect(lastFrame()).toContain('press c or enter to write');
    await press(TAB.repeat(5)); // round to the chat pane again
    expect(lastFrame()).toContain('press c or enter to write');
    const long = goal(1, { body: Array.from({ length: 60 }, (_, i) => `line ${i + 1}`).join('\n') });
    const burst = setup(snapshotOf({ goals: [{ goal: long, run: undefined }], plants: [gardener] }));
    const oneByOne = setup(snapshotOf({ goals: [{ goal: long, run: undefined }], plants: [gardener] }));
    await burst.press('\r');
    await oneByOne.press('\r');
    const top = burst.lastFrame();
    await burst.press('jjj');
    await oneByOne.press('j', 'j', 'j');
    expect(burst.lastFrame()).not.toBe(top);
    expect(burst.lastFrame()).toBe(oneByOne.lastFrame());
  });

  it('tab tab in the form moves two fields, and the text after them goes to the field reached', async () => {
    const { press, lastFrame, actions } = setup();
    await press('n', 'Fix the parser');
    // body → submit → type → plant → priority: backspace twice and 80, all in one read.
    await press(`${TAB.repeat(4)}80`);
    expect(plain(lastFrame())).toMatch(/│ priority +80█/);
    // priority → driver → model → after → class → verify, then the command.
    await press(`${TAB.repeat(5)}npm test`);
    expect(plain(lastFrame())).toMatch(/│ verify +npm test█/);
    await press(CTRL_S);
    await tick();
    expect(actions.submitGoal).toHaveBeenCalledWith({ type: 'build', plant: 'gardener', body: 'Fix the parser', priority: 80, guard: { verify: 'npm test' } });
  });

  it('in a text field a burst is text: jjj in the chat input, the filter, the form body', async () => {
    const goals = [goal(1, { body: 'jjj here' }), goal(2, { body: 'other' })].map((g) => ({ goal: g, run: undefined }));
    const { press, lastFrame } = setup(snapshotOf({ goals, plants: [gardener] }));
    await press('/', 'jjj');
    expect(lastFrame()).toContain('1 matching /jjj');
    await press(`${TAB}j`); // tab ends the filter; the j after it is a key again, not text
    expect(lastFrame()).toContain('1 matching /jjj');
    expect(lastFrame()).not.toContain('/jjj█');
    await press(ESC, 'c', 'jjj kk');
    expect(lastFrame()).toContain('› jjj kk█');
    await press(ESC, 'n', 'ggjj G');
    expect(plain(lastFrame())).toMatch(/│ {3}ggjj G█/);
  });
});

describe('tend goals in the workbench', () => {
  it('the detail of an automatic tend goal shows its origin', async () => {
    const tend = goal(9, {
      type: 'tend',
      body: 'Find out why 7-fix-it failed.',
      tend: { trigger: 'run_failure', key: 'run_failure:7-fix-it', origin: { goal: '7-fix-it', run: '7-fix-it-r1', status: 'failure', failure_reason: 'nonzero_exit', error: 'exit 3' } },
    } as never);
    const { press, lastFrame } = setup(snapshotOf({ goals: [{ goal: tend, run: undefined }], plants: [gardener] }));
    await press('\r');
    expect(lastFrame()).toContain('Tend origin');
    expect(lastFrame()).toContain('trigger run_failure  key run_failure:7-fix-it');
    expect(lastFrame()).toContain('from goal 7-fix-it  run 7-fix-it-r1  failure (nonzero_exit)');
    expect(lastFrame()).toContain('error exit 3');
  });
});

describe('top and end in the run pane and the overlays', () => {
  const HOME = '\u001b[H';
  const END = '\u001b[F';
  const lines = Array.from({ length: 120 }, (_, i) => ({ kind: 'text' as const, text: `line ${i + 1}` }));
  const live = goal(7, { status: 'running' });
  const snapshot = () =>
    snapshotOf({
      plants: [gardener],
      goals: [{ goal: live, run: run(live.id) }],
      tail: { runId: `${live.id}-r1`, file: '/g/events.jsonl', lines, usage: { inputTokens: 0, outputTokens: 0, costUsd: undefined }, bytes: 1000, truncated: false },
    });
  const backBy = (frame: string | undefined) => Number(/↑(\d+)/.exec(plain(frame))?.[1] ?? 0);

  it('g goes to the first line and says how far back that is; j, pgdn and End move from there; End reaches the end at once', async () => {
    const { press, lastFrame } = setup(snapshot());
    await press(TAB); // the run pane
    await press('g');
    await tick();
    const top = backBy(lastFrame());
    expect(plain(lastFrame())).toMatch(/ line 1 +│/);
    expect(top).toBeGreaterThan(50);
    expect(top).toBeLessThan(120); // the real distance, not a sentinel
    await press('j');
    expect(backBy(lastFrame())).toBe(top - 1);
    await press('g', 'g', 'k');
    expect(backBy(lastFrame())).toBe(top); // nothing above the first line
    await press(END);
    expect(backBy(lastFrame())).toBe(0);
    expect(plain(lastFrame())).toContain('line 120');
    await press('k');
    expect(backBy(lastFrame())).toBe(1);
    await press(HOME, 'j');
    expect(backBy(lastFrame())).toBe(top - 1);
  });

  it('in the help overlay End then k moves up one row from the last page', async () => {
    const { press, lastFrame } = setup(snapshot());
    await press('?');
    const first = plain(lastFrame());
    await press(END);
    const last = plain(lastFrame());
    expect(last).not.toBe(first);
    await press('k');
    const oneUp = plain(lastFrame());
    expect(oneUp).not.toBe(last);
    await press('j');
    expect(plain(lastFrame())).toBe(last);
    await press('j', 'j');
    expect(plain(lastFrame())).toBe(last); // nothing below the last page
  });

  it('page down in an overlay moves by the rows the overlay shows, not by the goals pane\'s page', async () => {
    const paged = setup(snapshot());
    await paged.press('?', '\u001b[6~'); // page down
    const stepped = setup(snapshot());
    await stepped.press('?');
    // The overlay's rows: those between its top and bottom borders.
    const rows = plain(stepped.lastFrame()).split('\n').filter((line) => line.startsWith('│')).length;
    expect(rows).toBeGreaterThan(20); // taller than the goals pane's page at 100x30
    for (let i = 0; i < rows; i++) await stepped.press('j');
    expect(plain(paged.lastFrame())).toBe(plain(stepped.lastFrame()));
  });
});
