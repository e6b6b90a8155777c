import { render } from 'ink-testing-library';
import React from 'react';
import stringWidth from 'string-width';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { displayWidth } from '../../source/format.js';
import type { GoalRow, PlantView, Snapshot } from '../../source/snapshot/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { GoalQueue } from '../../source/ui/panes/goal-queue.js';
import { RunTail } from '../../source/ui/panes/run-tail.js';
import { ago, goal, NOW, plain, run, snapshotOf, tailOf, tick } from './fixtures.js';

const noop: WorkbenchActions = {
  follow: () => undefined,
  quit: () => undefined,
  submitGoal: async () => goal(1),
  sendMessage: async () => undefined,
  markNoteRead: async () => undefined,
};

function app(snapshot: Snapshot, size: { columns: number; rows: number }, actions: WorkbenchActions = noop) {
  return render(<App store={fixedStore(snapshot)} actions={actions} size={size} now={NOW} />);
}

/**
 * No line is wider than the terminal, and every line that ends in a pane
 * border ends exactly at `width` (no wide character broke the alignment).
 */
function expectAligned(frame: string, width: number): void {
  for (const line of stripVTControlCharacters(frame).split('\n')) {
    expect(stringWidth(line)).toBeLessThanOrEqual(width);
    if (/[│╮╯]$/.test(line)) expect(stringWidth(line)).toBe(width);
  }
}

const gardener: PlantView = {
  plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) },
  memory: '# Gardener memory\n\n- The demo garden.\n',
  skills: ['- skills/reporting.md — Reporting to the operator'],
  knowledge: ['- knowledge/pak2-garden-layout.md — How a pak2 garden is laid out'],
  threads: [{ title: 'Flaky date test', status: 'active', detail: 'waiting on a fix goal' }],
};

function failedRunSnapshot(): Snapshot {
  const failed = goal(7, { type: 'fix', status: 'closed', closed_reason: 'failure', closed_at: ago(1), body: 'Fix the flaky date test' });
  const failedRun = run(failed.id, {
    status: 'failure',
    failure_reason: 'agent_error',
    completed_at: ago(1),
    cost: { source: 'provider', usd: 0, input_tokens: 0, output_tokens: 0 },
    outputs: { error: 'Invalid API key · Fix external API key' },
  });
  return snapshotOf({
    goals: [{ goal: failed, run: failedRun }],
    counts: { queued: 0, inFlight: 0, closedShown: 1 },
    plants: [gardener],
    tail: tailOf('claude-401', failedRun.id),
    costToday: { usd: 0, runs: 1, unknown: 0 },
  });
}

describe('workbench views from fixed snapshots, compared with stored frames', () => {
  it('an empty garden at 80×24', async () => {
    const { lastFrame } = app(snapshotOf(), { columns: 80, rows: 24 });
    const frame = lastFrame()!;
    expect(frame.split('\n')).toHaveLength(23); // the root stays one row below the terminal height
    expectAligned(frame, 80);
    await expect(plain(frame)).toMatchFileSnapshot('frames/empty-80x24.txt');
  });

  it('goals that could not be read are said in the queue, not shown as "no goals yet"; rows of the last read stay below', async () => {
    const why = '/g/.runtime/goals/.closed: the closed ledger is a directory; move it aside and pak2 rebuilds the ledger from the goal files';
    const none = render(<GoalQueue rows={[]} cursor={0} filter="" width={70} height={8} focused now={NOW} unread={why} />);
    const text = plain(none.lastFrame());
    expect(text).not.toContain('no goals yet');
    expect(text.replace(/[│\s]+/g, ' ')).toContain(`goals not read: ${why}`);
    expectAligned(none.lastFrame()!, 70);
    const rows = [1, 2].map((n) => ({ goal: goal(n), run: undefined }) as GoalRow);
    const stale = plain(render(<GoalQueue rows={rows} cursor={0} filter="" width={70} height={10} focused now={NOW} unread={why} />).lastFrame());
    expect(stale.replace(/[│\s]+/g, ' ')).toContain('(below: as last read)');
    expect(stale).toContain(goal(2).id);
    // The status line does not count what it could not read.
    const whole = plain(app(snapshotOf({ goals: [], unread: why }), { columns: 120, rows: 30 }).lastFrame());
    expect(whole).toContain('goals not read');
    expect(whole).not.toContain('0 queued');
  });

  it('10,000 goals: the queue windows them and says how many', async () => {
    const goals: GoalRow[] = [];
    for (let n = 1; n <= 10_000; n += 1) {
      const status = n <= 2 ? 'running' : n <= 6000 ? 'queued' : 'closed';
      const g = goal(n, { status, ...(status === 'closed' ? { closed_reason: n % 7 === 0 ? 'failure' : 'success', closed_at: ago(n % 500) } : {}) });
      goals.push({ goal: g, run: status === 'queued' ? undefined : run(g.id, status === 'closed' ? { status: 'success', completed_at: ago(1), cost: { source: 'provider', usd: 0.0123 } } : {}) });
    }
    const snapshot = snapshotOf({ goals, counts: { queued: 5998, inFlight: 2, closedShown: 4000 }, coordinator: { state: 'running', liveRuns: ['1-goal-number-1-r1', '2-goal-number-2-r1'] }, plants: [gardener] });
    const { lastFrame } = app(snapshot, { columns: 100, rows: 30 });
    const frame = lastFrame()!;
    expect(frame.split('\n')).toHaveLength(29);
    expect(frame).toContain(' 10000 ');
    expectAligned(frame, 100);
    await expect(plain(frame)).toMatchFileSnapshot('frames/10000-goals-100x30.txt');
  });

  it('a failed run: the queue, the tail with the error, and the detail view', async () => {
    const { lastFrame, stdin } = app(failedRunSnapshot(), { columns: 100, rows: 30 });
    expect(lastFrame()).toContain('Invalid API key');
    await expect(plain(lastFrame())).toMatchFileSnapshot('frames/failed-run-100x30.txt');
    stdin.write('\r');
    await tick();
    const detail = lastFrame()!;
    expect(detail).toContain('status failure (agent_error)');
    expect(detail).toContain('error Invalid API key');
    await expect(plain(detail)).toMatchFileSnapshot('frames/failed-run-detail-100x30.txt');
  });

  it('a codex stream in the run tail', async () => {
    const r = run('3-add-notes-md', { driver: 'codex', model: 'gpt-5', status: 'success', completed_at: ago(2), cost: { source: 'estimated', usd: 0.00622, input_tokens: 4200, output_tokens: 97 } });
    const { lastFrame } = render(<RunTail tail={tailOf('codex-build', r.id)} run={r} scroll={0} width={90} height={16} focused now={NOW} />);
    const frame = lastFrame()!;
    expect(frame).toContain('▸ $ /bin/bash -lc');
    expect(frame).toContain('I added notes.md');
    expect(frame).toContain('— reflection —');
    await expect(plain(frame)).toMatchFileSnapshot('frames/codex-stream.txt');
  });

  it('a claude stream in the run tail', async () => {
    const r = run('4-add-notes-md', { status: 'running' });
    const { lastFrame } = render(<RunTail tail={tailOf('claude-build', r.id)} run={r} scroll={0} width={90} height={18} focused now={NOW} />);
    const frame = lastFrame()!;
    expect(frame).toContain('▸ Bash');
    expect(frame).toContain('▸ Write');
    expect(frame).toMatch(/✓ success · \$0\.\d{4}/);
    expect(frame).toContain('running');
    await expect(plain(frame)).toMatchFileSnapshot('frames/claude-stream.txt');
  });

  it('a claude run whose background task was stopped at exit: the stream says so, and the pane names the unfinished task under the header', async () => {
    const r = run('4-add-notes-md', {
      status: 'failure',
      failure_reason: 'background_unfinished',
      completed_at: new Date(NOW - 1000).toISOString(),
      cost: { source: 'provider', usd: 0.0015 },
      background_tasks: [{ id: 'bj40avinu', type: 'local_bash', description: 'long bg job', status: 'stopped', unfinished: true }],
    });
    const { lastFrame } = render(<RunTail tail={tailOf('claude-background-stopped', r.id)} run={r} scroll={0} width={100} height={16} focused={false} now={NOW} />);
    const frame = plain(lastFrame());
    expect(frame).toContain('failure (background_unfinished)');
    expect(frame).toContain('background: local_bash "long bg job" stopped (1 unfinished)');
    expect(frame).toContain('⧗ background local_bash "long bg job" started');
    expect(frame).toContain('◂ background task stopped');
    await expect(frame).toMatchFileSnapshot('frames/claude-background-stopped.txt');
  });

  it('a body with emoji and CJK text keeps the columns aligned', async () => {
    const rows: GoalRow[] = [
      { goal: goal(1, { id: '1-build', body: '漢字とかなの説明を書く 🌱🌸 emoji 👩‍💻', type: 'build' }), run: undefined },
      { goal: goal(2, { id: '2-漢字', body: 'x' }) as never, run: undefined },
      { goal: goal(3, { id: '3-plain', body: 'plain' }), run: undefined },
    ];
    const { lastFrame } = render(<GoalQueue rows={rows} cursor={0} filter="" width={70} height={8} focused now={NOW} />);
    expectAligned(lastFrame()!, 70);
    await expect(plain(lastFrame())).toMatchFileSnapshot('frames/cjk-emoji-queue.txt');
    const detail = app(snapshotOf({ goals: rows.slice(0, 1) }), { columns: 80, rows: 24 });
    detail.stdin.write('\r');
    await tick();
    expect(detail.lastFrame()).toContain('漢字とかなの説明を書く 🌱🌸');
    expectAligned(detail.lastFrame()!, 80);
    await expect(plain(detail.lastFrame())).toMatchFileSnapshot('frames/cjk-emoji-detail-80x24.txt');
  });

  it('a busy garden at 80×24: every pane fits', async () => {
    const snapshot = failedRunSnapshot();
    snapshot.inbox = [{ name: 'startup.md', path: '/x', title: 'Startup note', body: '# Startup note\nHello.', modifiedAt: ago(5), unread: true }];
    snapshot.chat = { conversationId: 'c-20261129T115500-0a1b2c3d', messages: [{ ts: ago(4), sender: 'system', text: 'pak2 started the garden demo.' }, { ts: ago(3), sender: 'operator', text: 'How is it going?' }] };
    const { lastFrame } = app(snapshot, { columns: 80, rows: 24 });
    const frame = lastFrame()!;
    expect(frame.split('\n')).toHaveLength(23);
    expectAligned(frame, 80);
    expect(frame).toContain('● ');
    expect(frame).toContain('Flaky date test');
    await expect(plain(frame)).toMatchFileSnapshot('frames/busy-80x24.txt');
  });

  it('the operator actions at 80×24: the stop question, a supplement being written, the problems list, the help', async () => {
    const live = goal(2, { status: 'running' });
    const waiting = goal(3, { body: 'Summarise the chat' });
    const snapshot = snapshotOf({
      goals: [{ goal: live, run: run(live.id) }, { goal: waiting, run: undefined }],
      coordinator: { state: 'running', liveRuns: [`${live.id}-r1`] },
      plants: [gardener],
      problems: ['/work/garden/.runtime/goals/5-broken.json: malformed JSON (Expected property name or \'}\' in JSON at position 1)', 'coordinator: startup note not delivered: ENOSPC'],
    });
    const actions: WorkbenchActions = { ...noop, cancelGoal: async () => undefined, stopRun: async () => undefined, addSupplement: async () => undefined };
    const frames: Record<string, string> = {};
    const { lastFrame, stdin } = app(snapshot, { columns: 80, rows: 24 }, actions);
    const press = async (...keys: string[]) => {
      for (const key of keys) {
        stdin.write(key);
        await tick();
      }
    };
    await press('s');
    frames.stop = lastFrame()!;
    await press('n', 'j', 'a', 'Also look at the', '\u001b[200~ thread\rfrom Tuesday\u001b[201~');
    frames.supplement = lastFrame()!;
    await press('\u001b', 'p');
    frames.problems = lastFrame()!;
    await press('\u001b', '?');
    frames.help = lastFrame()!;
    for (const frame of Object.values(frames)) {
      expect(frame.split('\n').length).toBeLessThanOrEqual(23);
      // ⚠ (text presentation) is one column, as terminals draw it (test/tmux/hostile.test.ts); string-width says two.
      for (const line of stripVTControlCharacters(frame).split('\n')) {
        expect(displayWidth(line)).toBeLessThanOrEqual(80);
        if (/[│╮╯]$/.test(line)) expect(displayWidth(line)).toBe(80);
      }
    }
    const all = Object.entries(frames).map(([name, frame]) => `--- ${name}\n${plain(frame)}`).join('');
    await expect(all).toMatchFileSnapshot('frames/actions-80x24.txt');
  });
});
