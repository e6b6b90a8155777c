/**
 * Goal dependencies in the workbench (docs/goal/level2.md, "Dependencies";
 * docs/workbench/level2.md): the queue says `waits for 12` and `blocked:
 * 12 failed`, and the goal form's `after` field goes to the submit action
 * as `pak2 submit --after` does.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { GoalRow, PlantView, Snapshot } from '../../source/snapshot/index.js';
import type { SubmitGoalInput } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { GoalQueue, statusShown } from '../../source/ui/panes/goal-queue.js';
import { goal, NOW, plain, snapshotOf, tick } from './fixtures.js';

const gardener: PlantView = { plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: '2026-01-01T00:00:00Z' } as never, memory: '', skills: [], knowledge: [], threads: [] };

describe('dependencies in the queue', () => {
  it('a waiting goal says what it waits for; a blocked one names the dependency and how it closed', () => {
    const rows: GoalRow[] = [
      { goal: goal(12, { id: '12-build-the-api', status: 'running' }), run: undefined },
      { goal: goal(13, { id: '13-build-the-ui', depends_on: ['12-build-the-api'] }), run: undefined, waiting_for: ['12-build-the-api'] },
      { goal: goal(15, { id: '15-ship-it', depends_on: ['13-build-the-ui', '14-docs'] }), run: undefined, waiting_for: ['13-build-the-ui', '14-docs'] },
      { goal: goal(17, { id: '17-deploy', depends_on: ['16-migrate'] }), run: undefined, blocked_on: { goal: '16-migrate', closed_reason: 'failure' } },
      { goal: goal(18, { id: '18-announce', depends_on: ['17-deploy'] }), run: undefined, blocked_on: { goal: '16-migrate', closed_reason: 'cancelled', via: '17-deploy' } },
    ];
    expect(rows.map(statusShown)).toEqual(['running', 'waits for 12', 'waits for 13,14', 'blocked: 16 failed', 'blocked: 16 cancelled']);
    const frame = plain(render(<GoalQueue rows={rows} cursor={0} filter="" width={90} height={9} focused now={NOW} />).lastFrame());
    expect(frame).toMatch(/13-build-the-ui .* waits for 12 /);
    expect(frame).toMatch(/17-deploy .* blocked: 16 failed /);
  });
});

describe("the goal form's after field", () => {
  it('goes to the submit action as dependsOn (spaces or commas between); a refusal stays in the form', async () => {
    const submitGoal = vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never }));
    submitGoal.mockRejectedValueOnce(new Error('after 99-nothing: no such goal'));
    const all = { follow: vi.fn(), quit: vi.fn(), submitGoal } satisfies WorkbenchActions;
    const ui = render(<App store={fixedStore(snapshotOf({ plants: [gardener] }) as Snapshot)} actions={all} size={{ columns: 100, rows: 40 }} now={NOW} />);
    const press = async (...keys: string[]) => {
      for (const key of keys) {
        ui.stdin.write(key);
        await tick();
      }
    };
    // body → after: shift-tab nine times (redact, contract, pass env, forbid, allow, timeout, verify, class, after).
    await press('n', 'Ship it', ...Array<string>(9).fill('\u001b[Z'));
    expect(plain(ui.lastFrame())).toContain('goal ids it waits for');
    await press('99-nothing', '\u0013');
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'Ship it', priority: 50, dependsOn: ['99-nothing'] });
    expect(plain(ui.lastFrame())).toContain('after 99-nothing: no such goal');
    await press('\u0015', '3-a, 4-b', '\u0013');
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'Ship it', priority: 50, dependsOn: ['3-a', '4-b'] });
    expect(plain(ui.lastFrame())).toContain('queued 42-from-the-form');
  });
});
