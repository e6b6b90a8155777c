/**
 * The needs-you list in the workbench, rendered from a fixed snapshot
 * (docs/attention/level2.md, "In the workbench"): the status line counts
 * the items, `!` lists them, ↓ selects, `a` acknowledges the selected one
 * through the operator action, `A` all, enter selects the item's goal.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { AttentionItem } from '../../source/contracts/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { ago, goal, NOW, snapshotOf, tick } from './fixtures.js';

const ITEMS: AttentionItem[] = [
  { id: 'run:2-goal-number-2-r1', kind: 'run', summary: '2-goal-number-2: 2-goal-number-2-r1 ended failure (nonzero_exit)', goal: '2-goal-number-2', run: '2-goal-number-2-r1', since: ago(1) },
  { id: 'question:01JAAAAAAAAAAAAAAAAAAAAAAA', kind: 'question', summary: '1-goal-number-1 asks: Which port?', goal: '1-goal-number-1', since: ago(5) },
];

function setup(items: AttentionItem[] = ITEMS) {
  const actions = { follow: vi.fn(), quit: vi.fn(), ackAttention: vi.fn(async () => undefined) } satisfies WorkbenchActions;
  const snapshot = snapshotOf({ goals: [{ goal: goal(1, { status: 'blocked' }), run: undefined }, { goal: goal(2, { status: 'closed', closed_reason: 'failure' }), run: undefined }], attention: items });
  const ui = render(<App store={fixedStore(snapshot)} actions={actions} size={{ columns: 100, rows: 30 }} now={NOW} />);
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  return { ...ui, actions, press };
}

describe('the needs-you list', () => {
  it('the status line says N need you; nothing when the list is empty', () => {
    expect(setup().lastFrame()!.split('\n').at(-1)).toMatch(/● coordinator \S+ · 2 need you · .*│ ! needs you · \? help/);
    expect(setup(ITEMS.slice(0, 1)).lastFrame()!.split('\n').at(-1)).toContain(' · 1 needs you · ');
    expect(setup([]).lastFrame()).not.toMatch(/need/);
  });

  it('! lists the items newest first; ↓ selects; a acknowledges the selected one; A all', async () => {
    const { press, lastFrame, actions } = setup();
    await press('!');
    const frame = lastFrame()!;
    expect(frame).toContain('Needs you');
    expect(frame).toMatch(/› failed +1m +2-goal-number-2: 2-goal-number-2-r1 ended failure \(nonzero_exit\)/);
    expect(frame).toMatch(/ {3}question +5m +1-goal-number-1 asks: Which port\?/);
    await press('j', 'a');
    expect(actions.ackAttention).toHaveBeenCalledWith(['question:01JAAAAAAAAAAAAAAAAAAAAAAA']);
    await press('A');
    expect(actions.ackAttention).toHaveBeenLastCalledWith('all');
  });

  it('enter closes the list and selects the item\'s goal; esc closes it', async () => {
    const { press, lastFrame } = setup();
    await press('!', '\r');
    const frame = lastFrame()!;
    expect(frame).not.toContain('Needs you');
    expect(frame).toMatch(/❯? ?2-goal-number-2/);
    await press('!', '\u001b');
    await tick();
    expect(lastFrame()).not.toContain('Needs you');
  });

  it('the read-only dashboard lists but does not acknowledge', async () => {
    const snapshot = snapshotOf({ attention: ITEMS });
    const actions = { follow: vi.fn(), quit: vi.fn() } satisfies WorkbenchActions;
    const ui = render(<App store={fixedStore(snapshot)} actions={actions} size={{ columns: 100, rows: 30 }} now={NOW} />);
    ui.stdin.write('!');
    await tick();
    ui.stdin.write('a');
    await tick();
    expect(ui.lastFrame()).toContain('read-only dashboard: acknowledge with pak2 ack');
  });
});
