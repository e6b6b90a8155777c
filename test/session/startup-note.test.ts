/** The startup note says how runs are taken: here, or by remote runners only (docs/runners/level2.md). */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { buildStartupNote, firstRunNotes, StartupWindow, startupWindowClosed } from '../../source/session/startup.js';
import { appendConversationMessage, closeRun, createGoal, openRun, readConversationMessages, readGoal, transitionGoal } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('buildStartupNote', () => {
  it('names the runs at a time, or says remote runners take the goals when the garden runs none itself', async () => {
    const local = await makeTestGarden({ coordinator: { max_concurrent_runs: 2 } });
    cleanups.push(local.cleanup);
    expect(await buildStartupNote(local)).toContain('2 run(s) at a time');
    const remote = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 } });
    cleanups.push(remote.cleanup);
    const note = await buildStartupNote(remote);
    expect(note).toContain('no runs here: remote runners (pak2 runner) take the goals');
    expect(note).not.toContain('0 run(s)');
    // Chat would be refused there: the note does not invite it.
    expect(note).not.toContain('Reply with `pak2 chat`');
    expect(note.trim().split('\n').at(-1)).toBe("I will post short updates on the first run here. Chat is off: this garden's coordinator runs no goals and remote runners do not answer a conversation (set [coordinator] max_concurrent_runs to 1 or more to chat).");
    expect(await buildStartupNote(local)).toContain('Reply with `pak2 chat` or the chat pane.');
  });

  it('names the blocked chains by the dependency that failed (docs/goal/level2.md, "Dependencies")', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    const a = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build a' });
    const b = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build b', depends_on: [a.id] });
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build c', depends_on: [b.id] });
    expect(await buildStartupNote(garden)).not.toContain('Blocked');
    await transitionGoal(garden.paths, a.id, 'closed', { closedReason: 'cancelled' });
    expect(await buildStartupNote(garden)).toContain(`- Blocked: 2 goals blocked by ${a.id} (cancelled) — pak2 retry ${a.id}, pak2 depends GOAL --drop ${a.id}, or cancel`);
  });
});

/**
 * The startup window's play-by-play (seed 002, "Startup contract"): only the
 * first durable run's own reply notes are posted, and the window closes once
 * that run's close is said (or the operator writes); a restart does not
 * reopen it.
 */
describe('StartupWindow: the first run only, and a window that closes', () => {
  const at = (s: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, s));
  const note = (g: Garden, name: string, text: string, when: Date) => {
    const file = path.join(g.paths.inboxDir, g.config.gardenName, name);
    fs.writeFileSync(file, text);
    fs.utimesSync(file, when, when);
    return file;
  };

  it('posts the notes written while the first run was live, not later ones nor ones another run may have written; closes with its close line', async () => {
    const g = await makeTestGarden({ coordinator: { max_concurrent_runs: 2 } });
    cleanups.push(g.cleanup);
    const window = new StartupWindow(g);
    const conversation = await window.open(at(0));
    expect(conversation).toBeDefined();
    const first = await createGoal(g.paths, { type: 'tend', plant: 'gardener', body: 'Survey' }, at(1));
    const second = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Build' }, at(1));
    const runOf = async (id: string, when: Date) => {
      await transitionGoal(g.paths, id, 'dispatched', { now: when });
      return openRun(g.paths, await readGoal(g.paths, id), { plant: 'gardener', driver: 'success', model: 'm' }, when);
    };
    const r1 = await runOf(first.id, at(10));
    const own = note(g, 'survey.md', 'What I found: a tidy garden.', at(12));
    await window.update(at(13));
    const r2 = await runOf(second.id, at(20));
    // Written while both runs were live: no single run wrote it for certain.
    note(g, 'shared.md', 'Either run could have written this.', at(25));
    await closeRun(g.paths, r1.id, 'tend', { status: 'success', reflection: 'Learned the layout.', cost: { source: 'unknown' } }, at(30));
    // Written after the first run closed: the second run's, never the first's reply.
    note(g, 'later.md', 'A note from the second run.', at(40));
    await window.update(at(41));
    expect(window.isOpen).toBe(false);
    const messages = await readConversationMessages(g.paths, conversation!.id);
    expect(messages.map((m) => m.fact)).toEqual(['startup_note', `run_started:${r1.id}`, 'reply_note:survey.md', `run_closed:${r1.id}`]);
    expect(messages[2]).toMatchObject({ sender: 'garden', run: r1.id, note: own, text: 'What I found: a tidy garden.' });
    expect(messages[3]!.text).toBe(`Run ${r1.id} succeeded, cost ? (unknown); reflection recorded.`);

    // Closed: later passes add nothing, though more notes and the second run's close come.
    note(g, 'much-later.md', 'Another note.', at(50));
    await closeRun(g.paths, r2.id, 'build', { status: 'failure', failureReason: 'nonzero_exit', cost: { source: 'unknown' } }, at(51));
    await window.update(at(52));
    // A restart finds the startup conversation closed and does not resume it.
    const restarted = new StartupWindow(g);
    expect(await restarted.open(at(60))).toBeUndefined();
    await restarted.update(at(61));
    expect((await readConversationMessages(g.paths, conversation!.id)).map((m) => m.fact)).toEqual(['startup_note', `run_started:${r1.id}`, 'reply_note:survey.md', `run_closed:${r1.id}`]);
  });

  it('closes with the operator\'s first message, before the first run ends', async () => {
    const g = await makeTestGarden();
    cleanups.push(g.cleanup);
    const window = new StartupWindow(g);
    const conversation = (await window.open(at(0)))!;
    await appendConversationMessage(g.paths, conversation.id, { sender: 'operator', text: 'hello' }, at(5));
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Build' }, at(6));
    await transitionGoal(g.paths, goal.id, 'dispatched', { now: at(7) });
    await openRun(g.paths, await readGoal(g.paths, goal.id), { plant: 'gardener', driver: 'success', model: 'm' }, at(7));
    await window.update(at(8));
    expect(window.isOpen).toBe(false);
    expect((await readConversationMessages(g.paths, conversation.id)).map((m) => m.fact ?? m.sender)).toEqual(['startup_note', 'operator']);
  });

  it('firstRunNotes: pak2\'s own deliveries and files that are not Markdown never count', () => {
    const first = { id: '1-a-r1', startedMs: 1000 };
    const notes = [
      { name: '20300101T000000Z-startup.md', path: '/x/s', mtimeMs: 1500 },
      { name: '20300101T000001Z-reply-2-b-r1.md', path: '/x/r', mtimeMs: 1500 },
      { name: 'data.json', path: '/x/d', mtimeMs: 1500 },
      { name: 'b.md', path: '/x/b', mtimeMs: 1500 },
      { name: 'a.md', path: '/x/a', mtimeMs: 999 },
    ];
    expect(firstRunNotes(notes, first, [first], 2000).map((n) => n.name)).toEqual(['b.md']);
    expect(startupWindowClosed([{ sender: 'system', fact: 'startup_note' }])).toBe(false);
    expect(startupWindowClosed([{ sender: 'system', fact: 'run_closed:1-a-r1' }])).toBe(true);
  });
});
