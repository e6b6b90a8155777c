/**
 * `readRunLog` (source/snapshot/run-log.ts), what `pak2 logs` prints from,
 * on the file store and on PostgreSQL: a run's stream read whole in bounded
 * chunks (a line across chunks kept whole), a live run's half-written last
 * line held back, and a followed run read to its close, once per line even
 * when the close rewrites the stream (redaction).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GardenPaths } from '../../source/garden/index.js';
import { readRunLog, RUN_LOG_CHUNK_BYTES } from '../../source/snapshot/run-log.js';
import { appendRunStream, closeRun, createGoal, openRun, readRunStream, runStreamSize } from '../../source/store/index.js';
import { waitFor } from '../support/garden.js';
import { gardenOn, STORE_KINDS } from '../store/contract/stores.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function liveRun(paths: GardenPaths) {
  const goal = await createGoal(paths, { type: 'spike', plant: 'gardener', body: 'stream me' });
  return openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'm' });
}

/** Appends `text` at the stream's end. */
async function append(paths: GardenPaths, runId: string, text: string) {
  const size = await runStreamSize(paths, runId, 'events');
  expect((await appendRunStream(paths, runId, 'events', size, Buffer.from(text))).appended).toBe(true);
}

describe.each(STORE_KINDS)('readRunLog (%s)', (kind) => {
  it('reads the stream whole, a line longer than a chunk kept whole; a live run’s half-written last line waits, a closed run’s is given', async () => {
    const garden = await gardenOn(kind);
    cleanups.push(garden.cleanup);
    const run = await liveRun(garden.paths);
    const long = `{"type":"text","text":"${'é'.repeat(RUN_LOG_CHUNK_BYTES)}"}`;
    await append(garden.paths, run.id, `{"type":"text","text":"one"}\n${long}\n`);
    await append(garden.paths, run.id, '{"type":"text","text":"half');
    const lines: string[] = [];
    const live = await readRunLog(garden.paths, run.id, { onLine: (l) => lines.push(l) });
    expect(live).toMatchObject({ lines: 2, interrupted: false, run: { status: 'running' } });
    expect(lines).toEqual(['{"type":"text","text":"one"}', long]);

    await closeRun(garden.paths, run.id, 'spike', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' } });
    lines.length = 0;
    const closed = await readRunLog(garden.paths, run.id, { onLine: (l) => lines.push(l) });
    expect(closed).toMatchObject({ lines: 3, run: { status: 'failure' } });
    expect(lines.at(-1)).toBe('{"type":"text","text":"half');
  });

  it('follows a live run to its close: each line once, in order, though the close rewrote the stream (a secret redacted)', async () => {
    const garden = await gardenOn(kind);
    cleanups.push(garden.cleanup);
    const run = await liveRun(garden.paths);
    const secret = 'hunter2-very-secret-value';
    const lines: string[] = [];
    const following = readRunLog(garden.paths, run.id, { follow: true, pollMs: 20, onLine: (l) => lines.push(l) });
    await append(garden.paths, run.id, '{"type":"text","text":"first"}\n');
    await waitFor(() => lines.length === 1);
    await append(garden.paths, run.id, `{"type":"text","text":"the key is ${secret}"}\n{"type":"text","text":"third"}\n{"type":"result","status":"success","text":"done"`);
    await waitFor(() => lines.length === 3);
    await closeRun(garden.paths, run.id, 'spike', { status: 'success', cost: { source: 'unknown' }, redaction: { enabled: true, secrets: [{ name: 'KEY', value: secret }] } });
    // The close did rewrite it: the stored stream is shorter than what was followed.
    expect((await readRunStream(garden.paths, run.id, 'events')).toString()).toContain('[REDACTED:KEY]');
    const result = await following;
    expect(result).toMatchObject({ interrupted: false, lines: 4, run: { status: 'success' } });
    expect(lines).toEqual(['{"type":"text","text":"first"}', `{"type":"text","text":"the key is ${secret}"}`, '{"type":"text","text":"third"}', '{"type":"result","status":"success","text":"done"']);
  });

  it('a follow stopped by its signal says so and ends while the run goes on', async () => {
    const garden = await gardenOn(kind);
    cleanups.push(garden.cleanup);
    const run = await liveRun(garden.paths);
    await append(garden.paths, run.id, '{"type":"text","text":"first"}\n');
    const controller = new AbortController();
    const lines: string[] = [];
    const following = readRunLog(garden.paths, run.id, { follow: true, pollMs: 20, signal: controller.signal, onLine: (l) => lines.push(l) });
    await waitFor(() => lines.length === 1);
    controller.abort();
    expect(await following).toMatchObject({ interrupted: true, lines: 1, run: { status: 'running' } });
  });
});
