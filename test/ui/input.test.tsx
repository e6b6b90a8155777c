/**
 * Text that reaches the workbench's fields (issue 16, items 3 and 7):
 * pasted lines keep their line breaks in the chat input (bracketed paste and
 * plain fast typing), enter sends; terminal reports that are not keys
 * (focus, cursor position, mouse, device attributes, OSC) are dropped whole
 * and never reach the filter or the chat input.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { PlantView, Snapshot } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { createInputFilter, PASTE_END, PASTE_START } from '../../source/ui/terminal-input.js';
import { ago, goal, NOW, plain, snapshotOf, tick } from './fixtures.js';

const gardener: PlantView = { plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) }, memory: '', skills: [], knowledge: [], threads: [] };

/** The four lines of the field report (issue 16 item 3). */
const FOUR_LINES = ['Two things broke after the upgrade:', '1. the date test fails in UTC+13', '2. parser drops the last field', '3. both only on CI'];

/** Reports a terminal writes into stdin that are not keys. */
export const REPORTS = {
  focusIn: '\u001b[I',
  focusOut: '\u001b[O',
  cursorPosition: '\u001b[24;80R',
  sgrMouse: '\u001b[<0;10;5M',
  sgrMouseRelease: '\u001b[<0;10;5m',
  x10Mouse: '\u001b[M !!',
  deviceAttributes: '\u001b[?1;2c',
  secondaryAttributes: '\u001b[>0;276;0c',
  osc: '\u001b]11;rgb:0000/0000/0000\u001b\\',
};

function setup(snapshot: Snapshot = snapshotOf({ plants: [gardener] })) {
  const actions = {
    follow: vi.fn(),
    quit: vi.fn(),
    submitGoal: vi.fn(async () => goal(42)),
    sendMessage: vi.fn(async (_text: string) => undefined),
    markNoteRead: vi.fn(async () => undefined),
  } satisfies WorkbenchActions;
  const ui = render(<App store={fixedStore(snapshot)} actions={actions} size={{ columns: 100, rows: 30 }} now={NOW} />);
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  return { ...ui, actions, press, frame: () => plain(ui.lastFrame()) };
}

describe('pasting lines into the chat input', () => {
  it('a bracketed paste of four lines is one message with its line breaks; enter sends it', async () => {
    const { press, actions, frame } = setup();
    await press('c', `${PASTE_START}${FOUR_LINES.join('\r')}${PASTE_END}`);
    expect(actions.sendMessage).not.toHaveBeenCalled();
    // The input shows the end of the message, line by line.
    expect(frame()).toContain('2. parser drops the last');
    expect(frame()).toContain('3. both only on CI█');
    expect(frame()).not.toContain('UTC+132.');
    await press('\r');
    await tick();
    expect(actions.sendMessage).toHaveBeenCalledTimes(1);
    expect(actions.sendMessage).toHaveBeenCalledWith(FOUR_LINES.join('\n'));
  });

  it('plain fast typing (one read with \\r, \\n or \\r\\n between lines) keeps the lines too', async () => {
    const { press, actions } = setup();
    await press('c', `${FOUR_LINES[0]}\r${FOUR_LINES[1]}\n${FOUR_LINES[2]}\r\n${FOUR_LINES[3]}`, '\r');
    await tick();
    expect(actions.sendMessage).toHaveBeenCalledWith(FOUR_LINES.join('\n'));
  });

  it('a bracketed paste split over reads, with a lone \\r inside, is still text; alt-enter adds a line', async () => {
    const { press, actions } = setup();
    await press('c', 'first', `${PASTE_START}\r`, 'second', `\r${PASTE_END}`, '\u001b\r', 'third', '\r');
    await tick();
    expect(actions.sendMessage).toHaveBeenCalledWith('first\nsecond\n\nthird');
  });

  it('a paste outside a text field runs no command; into the goal form body it keeps its lines', async () => {
    const { press, actions, frame } = setup();
    await press(`${PASTE_START}q${PASTE_END}`);
    expect(actions.quit).not.toHaveBeenCalled();
    await press('n', `${PASTE_START}line one\rline two${PASTE_END}`, '\u0013');
    await tick();
    expect(actions.submitGoal).toHaveBeenCalledWith(expect.objectContaining({ body: 'line one\nline two' }));
    expect(frame()).not.toContain('New goal');
  });
});

describe('terminal reports never reach text inputs', () => {
  it('the filter still matches after focus, cursor-position, mouse, device-attribute and OSC reports', async () => {
    const goals = [goal(1, { body: 'write the report' }), goal(2, { body: 'other work' })].map((g) => ({ goal: g, run: undefined }));
    const { press, frame } = setup(snapshotOf({ goals, plants: [gardener] }));
    await press('/', 're', REPORTS.focusIn, 'p', REPORTS.cursorPosition, REPORTS.sgrMouse, 'o', REPORTS.x10Mouse, REPORTS.deviceAttributes, 'r', REPORTS.osc, REPORTS.focusOut, 't', REPORTS.secondaryAttributes, REPORTS.sgrMouseRelease);
    expect(frame()).toContain('1 matching /report█');
    expect(frame()).toContain('1-goal-number-1');
    expect(frame()).not.toContain('2-goal-number-2');
  });

  it('reports in one read with typed text around them: the text stays, the reports go', async () => {
    const { press, actions } = setup();
    await press('c', `hel${REPORTS.focusIn}lo${REPORTS.cursorPosition} wor${REPORTS.x10Mouse}ld${REPORTS.deviceAttributes}`, '\r');
    await tick();
    expect(actions.sendMessage).toHaveBeenCalledWith('hello world');
  });

  it('keys still work: arrows move the cursor, esc clears the filter', async () => {
    const goals = [goal(1, { body: 'abc' })].map((g) => ({ goal: g, run: undefined }));
    const { press, frame } = setup(snapshotOf({ goals, plants: [gardener] }));
    await press('/', 'ac', '\u001b[D', 'b', REPORTS.focusIn);
    expect(frame()).toContain('1 matching /abc█');
    await press('\u001b');
    expect(frame()).not.toContain('matching');
  });
});

describe('the input filter', () => {
  it('says what each raw event is', () => {
    const f = createInputFilter();
    expect(f.push('a')).toEqual({ kind: 'key' });
    expect(f.push('\u001b[A')).toEqual({ kind: 'sequence' }); // up: a key when Ink names it
    expect(f.push(REPORTS.focusIn)).toEqual({ kind: 'sequence' }); // Ink names no key: dropped
    expect(f.push('\u001b[97;5u')).toEqual({ kind: 'key' }); // kitty ctrl-a
    expect(f.push('\u001b[M')).toEqual({ kind: 'drop' });
    expect(f.push(' !!xy')).toEqual({ kind: 'text', text: 'xy' });
    expect(f.push('\u001b]')).toEqual({ kind: 'drop' });
    expect(f.push('11;rgb:0/0/0\u0007after')).toEqual({ kind: 'text', text: 'after' });
    expect(f.push(PASTE_START)).toEqual({ kind: 'drop' });
    expect(f.push('\r')).toEqual({ kind: 'paste', text: '\r' });
    expect(f.push('\u001b[A')).toEqual({ kind: 'drop' });
    expect(f.push(PASTE_END)).toEqual({ kind: 'drop' });
    expect(f.push('\r')).toEqual({ kind: 'key' });
  });

  it('a report’s tail expected in the same read is settled after it: later typing is the operator’s', () => {
    const f = createInputFilter();
    f.push('\u001b[M');
    expect(f.expecting).toBe(true);
    f.settle();
    expect(f.push('abc')).toEqual({ kind: 'key' });
  });
});
