/**
 * The goals pane's AGE is what it prints (issue 28): ages under a minute are
 * printed to the second, so the pane redraws them every second; a 10 s clock
 * printed `0s` for ten seconds, then jumped. The workbench's own clock runs
 * here (no fixed `now`), on a fake Date and interval.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { age } from '../../source/format.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { goal, NOW, plain, snapshotOf, tick } from './fixtures.js';

const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined };

afterEach(() => vi.useRealTimers());

/** The AGE cell of the goal's row. */
function ageShown(frame: string | undefined, id: string): string | undefined {
  const row = plain(frame).split('\n').find((l) => l.includes(id));
  return row?.match(/queued\s+(\S+)/)?.[1];
}

describe('the goals pane ages', () => {
  it('count the seconds as they pass, and turn into minutes at the minute', async () => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date', 'setInterval', 'clearInterval'] });
    const g = goal(1, { submitted_at: new Date(NOW - 400).toISOString() });
    const ui = render(<App store={fixedStore(snapshotOf({ goals: [{ goal: g, run: undefined }] }))} actions={actions} size={{ columns: 100, rows: 20 }} />);
    await tick();
    expect(ageShown(ui.lastFrame(), g.id)).toBe('0s');
    for (const [after, shown] of [[3_000, '3s'], [4_000, '7s'], [6_000, '13s'], [46_000, '59s'], [1_000, '1m']] as const) {
      vi.advanceTimersByTime(after);
      await tick();
      expect(ageShown(ui.lastFrame(), g.id), `${(Date.now() - NOW) / 1000} s on`).toBe(shown);
    }
    ui.unmount();
  });

  it('age() counts whole units passed: 59.7 s is 59s, never 60s', () => {
    expect(age(new Date(NOW - 59_700).toISOString(), new Date(NOW))).toBe('59s');
    expect(age(new Date(NOW - 60_000).toISOString(), new Date(NOW))).toBe('1m');
    expect(age(new Date(NOW + 5_000).toISOString(), new Date(NOW))).toBe('0s');
  });
});
