/**
 * The attached workbench as a view (issue 28, item 3; docs/workbench/
 * level2.md, "Attached"): the status line says it is attached and to whom
 * (pid, host, since when), the other coordinator's state and live runs;
 * when it stops, in red, that nothing runs the garden and that `T` takes
 * over; a restart attached to is said. `T` asks first, only once the
 * coordinator has stopped, and calls the session's take-over; quitting an
 * attached workbench asks nothing (no run of its own is live).
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { UserError } from '../../source/errors.js';
import type { AttachedView, Snapshot } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { attachedSegment, attachmentNews, clockTime, StatusLine } from '../../source/ui/status-line.js';
import { ago, goal, NOW, plain, run, snapshotOf, tick } from './fixtures.js';

const holder = { pid: 4242, host: 'box-1', started_at: ago(90), command: 'pak2 cycle --no-ui' };
const live = goal(2, { status: 'running' });
const alive: AttachedView = { holder, state: 'running', liveRuns: [`${live.id}-r1`] };
const gone: AttachedView = { holder, liveRuns: [], goneAt: ago(1) };

function snapshotWith(attached: AttachedView | undefined): Snapshot {
  return snapshotOf({ goals: [{ goal: live, run: run(live.id) }], coordinator: { state: 'stopped', liveRuns: [], ...(attached ? { attached } : {}) } });
}

function setup(attached: AttachedView | undefined, takeOver: WorkbenchActions['takeOver'] = vi.fn(async () => `this workbench runs the coordinator now (pid 77)`)) {
  const actions = { follow: vi.fn(), quit: vi.fn(), takeOver: vi.fn(takeOver!) } satisfies WorkbenchActions;
  const store = fixedStore(snapshotWith(attached));
  const ui = render(<App store={store} actions={actions} size={{ columns: 160, rows: 30 }} now={NOW} />);
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  const frame = () => plain(ui.lastFrame());
  const status = () => frame().trimEnd().split('\n').at(-1)!;
  return { ...ui, actions, store, press, frame, status };
}

describe('the status line of an attached workbench', () => {
  // Colour on while this suite runs (a test's stdout is not a terminal, so Ink's chalk draws none).
  let chalk: { level: number };
  let level = 0;
  beforeAll(async () => {
    const chalkEntry = createRequire(createRequire(import.meta.url).resolve('ink')).resolve('chalk');
    chalk = ((await import(pathToFileURL(chalkEntry).href)) as { default: { level: number } }).default;
    level = chalk.level;
    chalk.level = 3;
  });
  afterAll(() => void (chalk.level = level));

  it('names the coordinator attached to (pid, host, since when), its state and live runs', () => {
    const since = clockTime(holder.started_at, NOW);
    expect(attachedSegment(alive, NOW)).toBe(`attached to pid 4242 on box-1 (since ${since}) · coordinator running`);
    const rendered = render(<StatusLine snapshot={snapshotWith(alive)} message={undefined} width={160} />).lastFrame();
    expect(plain(rendered)).toContain(`● attached to pid 4242 on box-1 (since ${clockTime(holder.started_at)}) · coordinator running · 1 live · 0 queued`);
    // Its colour says a run is live (yellow), as the workbench's own does.
    expect(rendered).toContain('\u001b[33m●');
  });

  it('once it stopped: no coordinator, when, T takes over; runs counted from their records; red', () => {
    const since = clockTime(gone.goneAt!, NOW);
    expect(attachedSegment(gone, NOW)).toBe(`no coordinator: pid 4242 on box-1 stopped ${since} · T takes over`);
    const rendered = render(<StatusLine snapshot={snapshotWith(gone)} message={undefined} width={160} />).lastFrame();
    expect(plain(rendered)).toContain(`● no coordinator: pid 4242 on box-1 stopped ${clockTime(gone.goneAt!)} · T takes over · 1 running · 0 queued`);
    expect(rendered).toContain('\u001b[31m●');
  });

  it('a time of another day carries its date', () => {
    expect(clockTime('2026-11-27T08:05:09.000Z', NOW)).toMatch(/^2026-11-2\d \d\d:05:09$/);
    expect(clockTime('not a time', NOW)).toBe('not a time');
  });

  it('says when it stops, and when another one is attached to', () => {
    expect(attachmentNews(alive, { ...alive, state: 'idle', liveRuns: [] })).toBeUndefined();
    expect(attachmentNews(undefined, alive)).toBeUndefined();
    expect(attachmentNews(alive, gone)).toEqual({ text: 'the coordinator stopped (pid 4242 on box-1, pak2 cycle --no-ui): nothing runs the garden; T takes over, or the workbench attaches to the next one that starts', error: true });
    const next: AttachedView = { holder: { ...holder, pid: 5151, started_at: ago(0) }, state: 'idle', liveRuns: [] };
    expect(attachmentNews(gone, next)).toEqual({ text: 'attached to pid 5151 on box-1 (pak2 cycle --no-ui)', error: false });
    // Taken over: the attachment ends; the take-over's own message says so.
    expect(attachmentNews(gone, undefined)).toBeUndefined();
  });
});

describe('T takes over once the coordinator attached to has stopped', () => {
  it('while it runs: a one-line refusal, nothing asked', async () => {
    const { press, status, frame, actions } = setup(alive);
    await press('T');
    expect(frame()).not.toContain('Take over?');
    expect(status()).toContain('attached to pid 4242 on box-1: that coordinator runs the garden; nothing to take over');
    expect(actions.takeOver).not.toHaveBeenCalled();
  });

  it('after it stopped: the status line says so; T asks, n leaves it, y takes over and says so', async () => {
    const { press, status, frame, actions, store } = setup(alive);
    store.set(snapshotWith(gone));
    await tick();
    expect(status()).toContain('the coordinator stopped (pid 4242 on box-1, pak2 cycle --no-ui): nothing runs the garden; T takes over');
    await press('T');
    expect(frame()).toContain('Take over?');
    expect(frame()).toContain('Take over? y / n');
    await press('n');
    expect(frame()).not.toContain('Take over?');
    expect(actions.takeOver).not.toHaveBeenCalled();
    await press('T', 'y');
    await tick();
    expect(actions.takeOver).toHaveBeenCalledTimes(1);
    expect(status()).toContain('this workbench runs the coordinator now (pid 77)');
  });

  it("a refusal from the session is the notice, in red; the workbench's own coordinator has nothing to take over", async () => {
    const { press, status } = setup(gone, async () => {
      throw new UserError('another coordinator is running this garden: pid 9 on box-2');
    });
    await press('T', 'y');
    await tick();
    expect(status()).toContain('another coordinator is running this garden: pid 9 on box-2');
    const own = setup(undefined);
    await own.press('T');
    expect(own.status()).toContain('this workbench runs the coordinator: nothing to take over');
  });

  it('q quits at once: the runs live in the other process stay live', async () => {
    const { press, frame, actions } = setup(alive);
    await press('q');
    expect(frame()).not.toContain('Quit?');
    expect(actions.quit).toHaveBeenCalledTimes(1);
  });
});
