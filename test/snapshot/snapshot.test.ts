import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import { RunTail, SnapshotLoader, SnapshotSource, TAIL_OPEN_BYTES, renderRawLine, renderStreamLine, type TailUsage } from '../../source/snapshot/index.js';
import { createGoal, openRun, runEventsFile, transitionGoal } from '../../source/store/index.js';
import { sendOperatorMessage } from '../../source/submit/index.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
let source: SnapshotSource | undefined;
afterEach(async () => {
  await source?.stop();
  source = undefined;
  garden?.cleanup();
  garden = undefined;
});

const usage = (): TailUsage => ({ inputTokens: 0, outputTokens: 0, costUsd: undefined });

describe('the snapshot loader reads a real garden', () => {
  it('orders open goals first (running, then queued by dispatch order), then recently closed newest first, with runs and today’s cost', async () => {
    garden = await makeTestGarden();
    const done = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'finished first' });
    await reconcile({ garden, dispatch: (g, id) => dispatch(g, id, { garden: garden! }), awaitDispatch: true });
    const low = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'low', priority: 10 });
    const high = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'high', priority: 90 });
    const running = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'running' });
    await transitionGoal(garden.paths, running.id, 'dispatched');
    await openRun(garden.paths, running, { plant: 'gardener', driver: 'success', model: 'default' });
    await transitionGoal(garden.paths, running.id, 'running');

    const snapshot = await new SnapshotLoader(garden).load();
    expect(snapshot.goals.map((r) => r.goal.id)).toEqual([running.id, high.id, low.id, done.id]);
    expect(snapshot.goals[0]!.run?.status).toBe('running');
    expect(snapshot.goals[3]!.run?.status).toBe('success');
    expect(snapshot.counts).toEqual({ queued: 2, inFlight: 1, closedShown: 1 });
    expect(snapshot.costToday).toEqual({ usd: 0.02, runs: 1, unknown: 0 });
    expect(snapshot.plants.map((p) => p.plant.name)).toEqual(['gardener']);
    expect(snapshot.problems).toEqual([]);
  });

  it('reads plant memory, indexes and active threads, the inbox newest first, and the chat', async () => {
    garden = await makeTestGarden();
    const plantDir = path.join(garden.paths.plantsDir, 'gardener');
    fs.writeFileSync(path.join(plantDir, 'memory', 'MEMORY.md'), '# Memory\nThe garden is a test.\n');
    fs.writeFileSync(path.join(plantDir, 'skills', 'testing.md'), '# Testing\n## With vitest\n');
    fs.writeFileSync(path.join(plantDir, 'memory', 'active-threads.json'), JSON.stringify({ plant: 'gardener', updated_at: '2026-01-01T00:00:00Z', threads: [{ id: 't-flaky-test', title: 'Flaky test', status: 'active', summary: 'watching it', updated_at: '2026-01-01T00:00:00Z' }] }));
    const inbox = path.join(garden.paths.inboxDir, garden.config.gardenName);
    fs.mkdirSync(inbox, { recursive: true });
    fs.writeFileSync(path.join(inbox, 'a-old.md'), '# Old note\n');
    fs.utimesSync(path.join(inbox, 'a-old.md'), new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'));
    fs.writeFileSync(path.join(inbox, 'b-new.md'), '# New note\nbody\n');
    await sendOperatorMessage(garden, 'hello garden');

    const snapshot = await new SnapshotLoader(garden).load();
    const plant = snapshot.plants[0]!;
    expect(plant.memory).toContain('The garden is a test.');
    expect(plant.skills).toEqual(['- skills/testing.md — Testing; With vitest']);
    expect(plant.threads).toEqual([{ title: 'Flaky test', status: 'active', detail: 'watching it' }]);
    expect(snapshot.inbox.map((n) => [n.title, n.unread])).toEqual([
      ['New note', true],
      ['Old note', true],
    ]);
    expect(snapshot.chat.messages.map((m) => [m.sender, m.text])).toEqual([['operator', 'hello garden']]);
  });
});

describe('the run tail', () => {
  it('opens at the end of a large stream and then reads only what is appended', () => {
    const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'pak2-tail-'));
    try {
      const file = path.join(dir, 'events.jsonl');
      const filler = `${JSON.stringify({ type: 'text', text: 'x'.repeat(200) })}\n`;
      fs.writeFileSync(file, filler.repeat(Math.ceil((TAIL_OPEN_BYTES * 3) / filler.length)));
      const tail = new RunTail('1-a-r1', file);
      expect(tail.read()).toBe(true);
      const opened = tail.state();
      expect(opened.truncated).toBe(true);
      expect(opened.lines.length).toBeLessThanOrEqual(Math.ceil(TAIL_OPEN_BYTES / filler.length));
      expect(opened.lines.every((l) => l.text === 'x'.repeat(200))).toBe(true); // the cut first line was dropped
      expect(tail.read()).toBe(false);
      fs.appendFileSync(file, `${JSON.stringify({ type: 'text', text: 'the newest line' })}\n{"type":"text","te`);
      expect(tail.read()).toBe(true);
      expect(tail.state().lines.at(-1)).toEqual({ kind: 'text', text: 'the newest line' });
      fs.appendFileSync(file, 'xt":"completed later"}\n');
      tail.read();
      expect(tail.state().lines.at(-1)).toEqual({ kind: 'text', text: 'completed later' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('renders a character whole when a read ends inside it, and a 200 KB line without spaces', () => {
    const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'pak2-tail-'));
    try {
      const file = path.join(dir, 'events.jsonl');
      const line = Buffer.from(`${JSON.stringify({ type: 'text', text: 'done ✓ 漢字 😀' })}\n`);
      const at = line.indexOf(Buffer.from('✓')) + 1; // inside '✓'
      fs.writeFileSync(file, line.subarray(0, at));
      const tail = new RunTail('1-a-r1', file);
      tail.read();
      fs.appendFileSync(file, line.subarray(at, at + 9)); // ends inside '漢' or '字'
      tail.read();
      fs.appendFileSync(file, line.subarray(at + 9));
      tail.read();
      expect(tail.state().lines).toEqual([{ kind: 'text', text: 'done ✓ 漢字 😀' }]);
      const long = 'é'.repeat(100_000);
      fs.appendFileSync(file, `${JSON.stringify({ type: 'text', text: long })}\n`);
      tail.read();
      expect(tail.state().lines.at(-1)?.text.startsWith('éé')).toBe(true);
      expect(tail.state().lines.map((l) => l.text).join('')).not.toContain('\uFFFD');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('cuts long lines between characters (emoji, flags, combining marks), and shows a line that is not JSON whole', () => {
    const u = usage();
    const cut = (text: string) => renderRawLine(JSON.stringify({ type: 'result', status: 'success', text }), u)[0]!.text;
    for (const unit of ['🎉', '🇯🇵', '👩‍👩‍👧', 'é', 'e\u0301', '漢']) {
      const shown = cut(unit.repeat(300));
      expect(shown).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/); // no lone surrogate
      const body = shown.slice(2, shown.indexOf('…'));
      expect(body.length % unit.length, unit).toBe(0);
      expect(body).toBe(unit.repeat(body.length / unit.length));
    }
    const plain = `LONGPLAIN:  ${'🎉'.repeat(300)}  tail`;
    expect(renderRawLine(plain, u)).toEqual([{ kind: 'text', text: plain.trim() }]);
  });

  it('renders claude and codex events for a person, counting tokens and cost as they arrive', () => {
    const u = usage();
    expect(renderStreamLine({ type: 'assistant', message: { content: [{ type: 'tool_use', name: 'Write', input: { file_path: '/g/a.txt', content: 'y'.repeat(500) } }], usage: { input_tokens: 10, output_tokens: 3 } } }, u)).toEqual([
      { kind: 'tool', text: '▸ Write file_path=/g/a.txt content=(500 chars)' },
    ]);
    expect(renderStreamLine({ type: 'user', message: { content: [{ type: 'tool_result', is_error: true, content: 'permission denied' }] } }, u)).toEqual([{ kind: 'error', text: '◂ permission denied' }]);
    expect(renderStreamLine({ type: 'result', subtype: 'success', is_error: false, total_cost_usd: 0.0123, usage: { input_tokens: 100, output_tokens: 20 }, num_turns: 2 }, u)).toEqual([
      { kind: 'usage', text: '✓ success · $0.0123 · 100 in / 20 out · 2 turns' },
    ]);
    expect(u).toEqual({ inputTokens: 100, outputTokens: 20, costUsd: 0.0123, lastTotalUsd: 0.0123 });
    const c = usage();
    expect(renderStreamLine({ type: 'item.completed', item: { type: 'command_execution', command: 'ls', aggregated_output: 'a\nb', exit_code: 2 } }, c)).toEqual([{ kind: 'error', text: '◂ exit 2: a b' }]);
    expect(renderStreamLine({ type: 'turn.completed', usage: { input_tokens: 300, output_tokens: 7 } }, c)).toEqual([{ kind: 'usage', text: '✓ turn completed · 300 in / 7 out' }]);
    expect(c).toMatchObject({ inputTokens: 300, outputTokens: 7 });
    expect(renderStreamLine({ type: 'turn.failed', error: { message: 'unexpected status 401' } }, c)).toEqual([{ kind: 'error', text: '✗ unexpected status 401' }]);
  });
});

describe('the snapshot source', () => {
  it('publishes a new snapshot when another process changes the garden, and follows the chosen run', async () => {
    garden = await makeTestGarden();
    source = new SnapshotSource({ garden, coalesceMs: 20, tailPollMs: 50 });
    await source.start();
    const seen: number[] = [];
    source.subscribe(() => seen.push(source!.getSnapshot().version));
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'watch me' });
    await waitFor(() => source!.getSnapshot().goals.some((r) => r.goal.id === goal.id));
    expect(seen.length).toBeGreaterThan(0);

    await transitionGoal(garden.paths, goal.id, 'dispatched');
    const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'success', model: 'default' });
    await transitionGoal(garden.paths, goal.id, 'running');
    await waitFor(() => source!.getSnapshot().tail?.runId === run.id);
    fs.appendFileSync(runEventsFile(garden.paths, run.id), `${JSON.stringify({ type: 'text', text: 'live output' })}\n`);
    await waitFor(() => source!.getSnapshot().tail?.lines.some((l) => l.text === 'live output') ?? false);

    source.follow('999-nothing-r1');
    await waitFor(() => source!.getSnapshot().tail?.runId === '999-nothing-r1');
    expect(source.getSnapshot().tail?.lines).toEqual([]);
  });
});
