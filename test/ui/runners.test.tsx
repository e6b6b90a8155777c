/**
 * Remote runners and blocking questions in the workbench (docs/workbench/
 * level2.md), from fixed snapshots: a blocked goal marked in the queue, a
 * runner's name in its goal's row, the run pane's runner block (heartbeat
 * age, progress, status line, artifacts) and an abandoned run; open
 * questions in the inbox, answered with `a` (enter posts, esc cancels) and
 * from the chat with `/answer`; long questions never overflow a pane.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import stringWidth from 'string-width';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import type { CommentRecord, LeaseRecord } from '../../source/contracts/index.js';
import { UserError } from '../../source/errors.js';
import type { GoalRow, QuestionView, Snapshot } from '../../source/snapshot/index.js';
import type { CommentResult } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { RunTail } from '../../source/ui/panes/run-tail.js';
import { ago, goal, NOW, plain, run, snapshotOf, tailOf, tick } from './fixtures.js';

const ESC = '\u001b';
const TAB = '\t';
const ENTER = '\r';

const remoteRun = run('2-goal-number-2', { runner: { name: 'box-7', host: 'build-7.lan', lease: '01K00000000000000000000007' } });
const lease: LeaseRecord = {
  id: '01K00000000000000000000007',
  run: remoteRun.id,
  goal: remoteRun.goal,
  plant: 'gardener',
  runner: { name: 'box-7', host: 'build-7.lan' },
  state: 'active',
  ttl_seconds: 600,
  claimed_at: ago(3),
  renewed_at: new Date(NOW - 12_000).toISOString(),
  expires_at: new Date(NOW + 588_000).toISOString(),
  heartbeats: 9,
  progress: 40,
  status_line: 'running the test suite',
};

function question(goalId: string, body: string, minutes: number, id = `01K0000000000000000000000${minutes}`): QuestionView {
  const comment: CommentRecord = { id, goal: goalId, author: `agent:${goalId}-r1`, body, blocking: true, created_at: ago(minutes) };
  return { goal: goalId, comment };
}

function snapshot(questions: QuestionView[] = [question('1-goal-number-1', 'Which database should the migration target: staging or prod?', 5)]): Snapshot {
  const blocked = goal(1, { status: 'blocked', blocked_on: { comment: questions[0]?.comment.id ?? 'x', from: 'running', since: ago(5) } });
  const remote = goal(2, { status: 'running' });
  const queued = goal(3);
  const rows: GoalRow[] = [
    { goal: remote, run: remoteRun },
    { goal: blocked, run: run(blocked.id) },
    { goal: queued, run: undefined },
  ];
  return snapshotOf({
    goals: rows,
    counts: { queued: 1, inFlight: 1, closedShown: 0, blocked: 1 },
    coordinator: { state: 'running', liveRuns: [] },
    leases: { [remoteRun.id]: lease },
    questions,
    tail: tailOf('claude-build', remoteRun.id),
    remote: { runId: remoteRun.id, lease, artifacts: [{ name: 'change.diff', kind: 'diff', run: remoteRun.id, attached_at: ago(1), by: 'box-7' }, { name: 'pr', kind: 'link', run: remoteRun.id, url: 'https://example.invalid/pr/1', attached_at: ago(1), by: 'box-7' }] },
  });
}

function setup(snap: Snapshot = snapshot(), options: { size?: { columns: number; rows: number }; readOnly?: boolean; answer?: (goalId: string, text: string, o?: { questionId?: string }) => Promise<CommentResult> } = {}) {
  const answerQuestion = vi.fn(options.answer ?? (async (goalId: string, text: string, o?: { questionId?: string }) => ({ comment: { id: '01K000000000000000000000AA', goal: goalId, author: 'operator', body: text, blocking: false, answers: o?.questionId, created_at: ago(0) }, goal: goal(1, { status: 'running' }) }) as CommentResult));
  const sendMessage = vi.fn(async () => undefined);
  const actions: WorkbenchActions = { follow: vi.fn(), quit: vi.fn(), ...(options.readOnly ? {} : { answerQuestion, sendMessage }) };
  const size = options.size ?? { columns: 100, rows: 30 };
  const element = <App store={fixedStore(snap)} actions={actions} size={size} now={NOW} />;
  const ui = render(element);
  if (size.columns > 100) {
    // ink-testing-library's stdout is 100 columns wide; Ink lays the root out at stdout's width.
    Object.defineProperty(ui.stdout, 'columns', { value: size.columns });
    ui.rerender(element);
  }
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  const frame = () => plain(ui.lastFrame());
  const status = () => frame().trimEnd().split('\n').at(-1)!;
  return { ...ui, answerQuestion, sendMessage, press, frame, status, size };
}

/** The chat pane's text (the right-hand bottom pane), its rows joined. */
function chatText(frame: string): string {
  const lines = frame.split('\n');
  const top = lines.findIndex((l) => l.includes('╭─ Chat'));
  return lines.slice(top + 1).map((l) => l.split('││').at(-1)!.replace(/[│╮╯]\s*$/, '').trim()).join(' ');
}

/** No line wider than the terminal; every line ending in a border ends exactly at `width`. */
function expectAligned(frame: string, width: number): void {
  for (const line of stripVTControlCharacters(frame).split('\n')) {
    expect(stringWidth(line)).toBeLessThanOrEqual(width);
    if (/[│╮╯]$/.test(line)) expect(stringWidth(line)).toBe(width);
  }
}

describe('remote runners and questions in the workbench', () => {
  it('the queue marks a blocked goal and names a goal\'s runner; the run pane shows the runner block; the inbox lists the question (stored frame)', async () => {
    const { frame, lastFrame, status } = setup();
    const text = frame();
    expectAligned(lastFrame()!, 100);
    expect(text).toMatch(/2-goal-numb… ⇄ box-7\s/); // the id is cut before the runner's name
    expect(text).toMatch(/1-goal-number-1\s.*\? blocked/);
    const tail = text.split('\n').map((l) => l.split('││')[1] ?? '').map((l) => l.replace(/│\s*$/, '').trim()).join(' ');
    expect(tail).toContain('runner box-7@build-7.lan · heartbeat 12s ago · 40% · running the test suite');
    expect(text).toContain('artifacts change.diff · pr (link)');
    expect(text).toContain('? 5m  Which database should …');
    expect(text).toContain('1 open');
    expect(status()).toContain('1 queued · 1 blocked');
    await expect(text).toMatchFileSnapshot('frames/runners-100x30.txt');
  });

  it('an abandoned run says so, with its reason; a lease that expired is named', () => {
    const abandoned = run('2-goal-number-2', { status: 'abandoned', failure_reason: 'lease_expired', completed_at: ago(1), runner: remoteRun.runner });
    const ended: LeaseRecord = { ...lease, state: 'expired', ended_at: ago(1) };
    const ui = render(<RunTail tail={tailOf('claude-build', abandoned.id)} run={abandoned} remote={{ runId: abandoned.id, lease: ended, artifacts: [] }} scroll={0} width={80} height={14} focused={false} now={NOW} />);
    const text = plain(ui.lastFrame());
    expect(text).toContain('abandoned (lease_expired)');
    expect(text).toContain('runner box-7@build-7.lan · lease expired 11:59:00');
    expect(text).toContain('abandoned · lease_expired: no heartbeat from box-7 within its lease');
    expectAligned(ui.lastFrame()!, 80);
  });

  it('a in the inbox opens a one-line answer; enter posts it through answerQuestion and the status line says where the goal went', async () => {
    const { press, frame, status, answerQuestion } = setup();
    await press(TAB, TAB, TAB); // goals → run → plants → inbox
    expect(frame()).toContain('a answers');
    await press('a');
    expect(frame()).toContain('Answer 1-goal-number-1');
    expect(frame()).toContain('Which database should the migration target: staging or prod?');
    expect(frame()).toContain('enter posts · esc cancels');
    await press('staging, with a fresh snapshot');
    await press(ENTER);
    expect(answerQuestion).toHaveBeenCalledWith('1-goal-number-1', 'staging, with a fresh snapshot', { questionId: '01K00000000000000000000005' });
    await tick();
    expect(status()).toContain('answered 1-goal-number-1: back to running');
    expect(frame()).not.toContain('Answer 1-goal-number-1');
  });

  it('esc cancels the answer, nothing is posted; a refusal is a one-line notice; a read-only dashboard says how to answer', async () => {
    const one = setup();
    await one.press(TAB, TAB, TAB, 'a', 'never mind', ESC);
    expect(one.answerQuestion).not.toHaveBeenCalled();
    expect(one.frame()).not.toContain('Answer 1-goal-number-1');

    const refused = setup(snapshot(), { answer: async () => Promise.reject(new UserError('GOAL 1-goal-number-1: no open question to answer (post a comment without --answer)', { exitCode: 1 })) });
    await refused.press(TAB, TAB, TAB, 'a', 'yes', ENTER);
    await tick();
    expect(refused.status()).toContain('GOAL 1-goal-number-1: no open question to answer');

    const readOnly = setup(snapshot(), { readOnly: true });
    await readOnly.press(TAB, TAB, TAB, 'a');
    expect(readOnly.status()).toContain('read-only dashboard: answer with pak2 comment GOAL --answer TEXT');

    // On a goal (not the inbox), a is still the supplement key.
    const goals = setup(snapshot(), { readOnly: true });
    await goals.press('a');
    expect(goals.status()).toContain('read-only dashboard: add supplements');
  });

  it('/answer in the chat answers the oldest open question and narrates which goal; with none it says so and sends nothing', async () => {
    const questions = [question('1-goal-number-1', 'oldest?', 9), question('3-goal-number-3', 'newer?', 2)];
    const { press, frame, answerQuestion, sendMessage } = setup(snapshot(questions));
    await press('c', '/answer use the staging database', ENTER);
    await tick();
    expect(answerQuestion).toHaveBeenCalledWith('1-goal-number-1', 'use the staging database', { questionId: '01K00000000000000000000009' });
    expect(sendMessage).not.toHaveBeenCalled();
    const chat = chatText(frame());
    expect(chat).toContain(`system: answered agent:1-goal-number-1-r1's question on 1-goal-number-1 ("oldest?"): the goal is back to running`);

    const none = setup(snapshot([]));
    await none.press('c', '/answer yes', ENTER);
    expect(none.answerQuestion).not.toHaveBeenCalled();
    expect(none.sendMessage).not.toHaveBeenCalled();
    expect(chatText(none.frame())).toContain('system: no open question to answer: nothing was sent');
  });

  it('the help overlay lists the answer key', async () => {
    const { press, frame } = setup();
    await press('?');
    expect(frame()).toContain('in the inbox: answer the selected question');
  });

  it.each([
    [80, 24],
    [200, 40],
  ])('a long question (no spaces, emoji, CJK) and a long runner name stay inside their panes at %i columns', async (columns, rows) => {
    const aligned = (label: string) => {
      try {
        expectAligned(ui.lastFrame()!, columns);
      } catch (error) {
        throw new Error(`${label}:\n${ui.lastFrame()}\n${(error as Error).message}`);
      }
    };
    const long = `${'x'.repeat(300)}🌱🌱漢字漢字${'確認'.repeat(80)}🚀`;
    const snap = snapshot([question('1-goal-number-1', long, 5)]);
    const named = { ...snap, goals: snap.goals.map((r) => (r.run?.runner ? { ...r, run: { ...r.run, runner: { ...r.run.runner, name: 'runner-with-a-very-long-name-漢字-🌱-0123456789' } } } : r)) };
    const ui = setup(named, { size: { columns, rows } });
    aligned('panes');
    await ui.press(TAB, TAB, TAB);
    aligned('inbox focused');
    await ui.press('a', `${'y'.repeat(250)}漢字🌱`);
    aligned('answer field');
    await ui.press(ENTER, '?');
    aligned('help');
  });
});
