/**
 * Where the operator sees the control of automatic tends and a reply's wait
 * (docs/automatic-tend/level2.md, "Operator control"; docs/conversation/level2.md,
 * "Waiting for a reply"): the status line, the startup note, the snapshot,
 * the chat pane, and `t` in the workbench.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotLoader, tendWords, type TendView } from '../../source/snapshot/index.js';
import { buildStartupNote } from '../../source/session/startup.js';
import { createGoal } from '../../source/store/index.js';
import { sendOperatorMessage, setTendsPaused } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { Chat } from '../../source/ui/panes/chat.js';
import { StatusLine } from '../../source/ui/status-line.js';
import { makeTestGarden } from '../support/garden.js';
import { plain, snapshotOf, tick } from '../ui/fixtures.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

const view = (over: Partial<TendView> = {}): TendView => ({ state: 'on', triggers: { run_failure: true, queued_attention_needed: true }, priority: 70, daily_cap: null, today: null, day: '2026-05-01', timezone: 'UTC', ...over });

describe('the status line and the startup note', () => {
  it('tendWords: nothing while tends run as the seeds have them; off, paused, capped, a trigger off', () => {
    expect(tendWords(undefined)).toBeUndefined();
    expect(tendWords(view())).toBeUndefined();
    expect(tendWords(view({ state: 'paused', paused: { by: 'operator', at: 'x' } }))).toBe('tends: paused');
    expect(tendWords(view({ state: 'paused', problem: 'tend.json: bad' }))).toBe('tends: paused (tend.json unreadable)');
    expect(tendWords(view({ state: 'off', triggers: { run_failure: false, queued_attention_needed: false } }))).toBe('tends: off');
    expect(tendWords(view({ state: 'capped', daily_cap: 5, today: 5 }))).toBe('tends: capped 5/5 today');
    expect(tendWords(view({ state: 'partial', triggers: { run_failure: false, queued_attention_needed: true } }))).toBe('tends: run_failure off');
  });

  it('the status line says tends: paused', () => {
    const frame = plain(render(<StatusLine snapshot={snapshotOf({ tend: view({ state: 'paused', paused: { by: 'operator', at: 'x' } }) })} message={undefined} width={200} />).lastFrame());
    expect(frame).toMatch(/ · tends: paused · \$0\.0000 today · /);
    expect(plain(render(<StatusLine snapshot={snapshotOf({ tend: view() })} message={undefined} width={200} />).lastFrame())).not.toContain('tends');
  });

  it('the snapshot carries the tend view; the startup note says when tends are paused or capped, with the way back', async () => {
    const garden = await makeTestGarden({ extraToml: '[tend]\ndaily_cap = 2\n' });
    cleanups.push(garden.cleanup);
    expect(await buildStartupNote(garden)).not.toContain('Automatic tends');
    await setTendsPaused(garden, true, 'operator', new Date('2026-05-01T10:00:00.000Z'));
    const loaded = await new SnapshotLoader(garden).load();
    expect(loaded.tend).toMatchObject({ state: 'paused', daily_cap: 2, today: 0, paused: { by: 'operator', at: '2026-05-01T10:00:00.000Z' } });
    expect(await buildStartupNote(garden)).toContain('- Automatic tends: paused (by operator at 2026-05-01T10:00:00.000Z; pak2 tend resume)\n');
    await setTendsPaused(garden, false);
    const zero = await makeTestGarden({ extraToml: '[tend]\ndaily_cap = 0\n' });
    cleanups.push(zero.cleanup);
    expect(await buildStartupNote(zero)).toContain('- Automatic tends: capped 0/0 today ([tend] daily_cap; more tomorrow (UTC))\n');
    const off = await makeTestGarden({ extraToml: '[tend]\nrun_failure = false\nqueued_attention_needed = false\n' });
    cleanups.push(off.cleanup);
    expect(await buildStartupNote(off)).toContain('- Automatic tends: off ([tend] in PAK2.toml)\n');
  });
});

describe('the chat pane says what a reply waits for', () => {
  it('the snapshot names the wait of the latest operator message\'s goal while it is queued', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'work' });
    const { goal } = await sendOperatorMessage(garden, 'hello?');
    const loaded = await new SnapshotLoader(garden).load();
    // No coordinator holds this garden.
    expect(loaded.chat.waiting).toBe('waiting for a coordinator: start `pak2` or `pak2 cycle` in another terminal');
    expect(loaded.chat.messages.at(-1)).toMatchObject({ sender: 'operator', goal: goal.id });
  });

  it('the pane shows the line above its input row, and drops it when there is no room', () => {
    const messages = [{ ts: '2026-05-01T10:00:00.000Z', sender: 'operator' as const, text: 'hello?', goal: '2-reply-hello' }];
    const waiting = 'waiting: 1 conversation slot busy (run 1-reply-r1)';
    const frame = plain(render(<Chat messages={messages} waiting={waiting} draft={undefined} readOnly={false} width={70} height={8} focused={false} />).lastFrame());
    const rows = frame.split('\n');
    expect(rows.findIndex((r) => r.includes(waiting))).toBeGreaterThan(rows.findIndex((r) => r.includes('operator: hello?')));
    expect(plain(render(<Chat messages={messages} waiting={waiting} draft={undefined} readOnly={false} width={70} height={3} focused={false} />).lastFrame())).not.toContain('waiting');
  });
});

describe('t in the workbench', () => {
  it('pauses when tends run, resumes when paused, through the one operator action', async () => {
    const calls: boolean[] = [];
    const actions: WorkbenchActions = { follow: () => undefined, quit: () => undefined, setTendsPaused: async (paused) => void calls.push(paused) };
    const running = render(<App store={fixedStore(snapshotOf({ tend: view() }))} actions={actions} size={{ columns: 160, rows: 40 }} />);
    await tick();
    running.stdin.write('t');
    await tick();
    expect(calls).toEqual([true]);
    expect(plain(running.lastFrame())).toContain('automatic tends paused (t resumes)');
    running.unmount();
    const paused = render(<App store={fixedStore(snapshotOf({ tend: view({ state: 'paused', paused: { by: 'operator', at: 'x' } }) }))} actions={actions} size={{ columns: 160, rows: 40 }} />);
    await tick();
    paused.stdin.write('t');
    await tick();
    expect(calls).toEqual([true, false]);
    expect(plain(paused.lastFrame())).toContain('automatic tends resumed');
    paused.unmount();
    // The read-only dashboard has no action: it says how instead.
    const dashboard = render(<App store={fixedStore(snapshotOf())} actions={{ follow: () => undefined, quit: () => undefined }} size={{ columns: 160, rows: 40 }} />);
    await tick();
    dashboard.stdin.write('t');
    await tick();
    expect(plain(dashboard.lastFrame())).toContain('read-only dashboard: pause tends with pak2 tend pause');
    dashboard.unmount();
  });
});
