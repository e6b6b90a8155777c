/**
 * `pak2 logs RUN|GOAL [-f] [--raw]` through bin/pak2.js (docs/run/level2.md,
 * "Reading a run's stream"): a run's stream as the run pane renders it
 * (the same renderRawLine), its raw lines, a goal's latest run, a live run
 * followed until it closes, a PostgreSQL garden's stored stream; refusals
 * in one line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { renderRawLine, type TailUsage } from '../../source/snapshot/stream-lines.js';
import { appendRunStream, closeRun, createGoal, openRun, runStreamFile } from '../../source/store/index.js';
import { runCli, startCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';
import { gardenOn } from '../store/contract/stores.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An agent that says a line, then waits for GATE_FILE before it finishes (the test opens the gate when it has seen the line). */
const GATE_AGENT = `
import fs from 'node:fs';
fs.readFileSync(0, 'utf8');
const say = (v) => process.stdout.write(JSON.stringify(v) + '\\n');
say({ type: 'text', text: 'before the gate' });
say({ type: 'assistant', message: { content: [{ type: 'tool_use', name: 'Bash', input: { command: 'ls gate' } }] } });
while (!fs.existsSync(process.env.GATE_FILE)) await new Promise((r) => setTimeout(r, 20));
say({ type: 'text', text: 'after the gate' });
say({ type: 'result', status: 'success', text: 'done', cost_usd: 0.02 });
`;

async function gateGarden() {
  const garden = await makeTestGarden({ files: { 'gate-agent.mjs': GATE_AGENT }, extraToml: `[drivers.gate]\ncommand = ${JSON.stringify([process.execPath, 'GARDEN/gate-agent.mjs'])}\n` });
  // The driver's script by its absolute path.
  fs.writeFileSync(garden.paths.configFile, fs.readFileSync(garden.paths.configFile, 'utf8').replace('GARDEN/gate-agent.mjs', path.join(garden.paths.gardenRoot, 'gate-agent.mjs')));
  cleanups.push(() => garden.cleanup());
  return garden;
}

/** What the run pane shows of a stream: each line rendered as the pane renders it. */
function rendered(stream: string): string[] {
  const usage: TailUsage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
  return stream.split('\n').flatMap((raw) => renderRawLine(raw, usage)).map((l) => l.text);
}

describe('pak2 logs', () => {
  it('a finished run: a header, the lines the run pane shows, how it ended; --raw the stream’s own lines; a goal id is its latest run', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const g = ['--garden', garden.paths.gardenRoot];
    const id = (await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--driver', 'error-result', '--body', 'Fix it'])).stdout.trim();
    expect((await runCli(['cycle', ...g, '--no-ui', '--until-idle'])).code).toBe(0);
    const runId = `${id}-r1`;
    const stream = fs.readFileSync(runStreamFile(garden.paths, runId, 'events'), 'utf8');

    const shown = await runCli(['logs', ...g, runId]);
    expect(shown.code, shown.stderr).toBe(0);
    const out = shown.stdout.trimEnd().split('\n');
    expect(out[0]).toMatch(new RegExp(`^run ${runId} · goal ${id} · error-result/\\S+ · started \\S+Z$`));
    expect(out.slice(1, -1)).toEqual(rendered(stream));
    expect(out.slice(1, -1)).toContain('✗ model refused · $0.0050');
    expect(out.at(-1)).toMatch(/^— failure \(agent_error\) · \d+s · error-result\/\S+ · \$0\.0050$/);

    const raw = await runCli(['logs', ...g, runId, '--raw']);
    expect(raw.stdout).toBe(stream);
    // The goal's id: its latest run.
    expect((await runCli(['logs', ...g, id])).stdout).toBe(shown.stdout);
  }, 60_000);

  it('refusals, one line each: not an id (exit 2), no such run or goal, a queued goal with no run yet (exit 1)', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const g = ['--garden', garden.paths.gardenRoot];
    const queued = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Later' });
    const cases: [string, number, string][] = [
      ['not an id', 2, 'pak2: not an id: not a run id (N-slug-rN) or a goal id (N-slug)'],
      ['9-nothing-r1', 1, 'pak2: 9-nothing-r1: no such run or goal'],
      ['9-nothing', 1, 'pak2: 9-nothing: no such run or goal'],
      [queued.id, 1, `pak2: goal ${queued.id} has no run yet (it is queued); pak2 logs -f ${queued.id} waits for it`],
    ];
    for (const [id, code, line] of cases) {
      const r = await runCli(['logs', ...g, id]);
      expect([r.code, r.stderr.trim()], id).toEqual([code, line]);
    }
  });

  it('-f on a goal: waits for its first run, prints each line as the run writes it, and ends when the run closes', async () => {
    const garden = await gateGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const gate = path.join(garden.paths.gardenRoot, 'gate-open');
    const id = (await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--driver', 'gate', '--body', 'Wait at the gate'])).stdout.trim();
    const follower = startCli(['logs', '-f', ...g, id]);
    let out = '';
    let err = '';
    follower.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    follower.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number>((resolve) => follower.once('exit', (code) => resolve(code ?? -1)));
    cleanups.push(() => follower.exitCode === null && follower.kill('SIGKILL'));
    await waitFor(() => err.includes(`goal ${id} is queued: waiting for its first run`), 30_000);
    const cycle = startCli(['cycle', ...g, '--no-ui', '--until-idle'], { env: { GATE_FILE: gate } });
    const cycleExited = new Promise<number>((resolve) => cycle.once('exit', (code) => resolve(code ?? -1)));
    cleanups.push(() => cycle.exitCode === null && cycle.kill('SIGKILL'));
    // The run is live and its first lines are printed while it waits at the gate.
    await waitFor(() => out.includes('▸ Bash command=ls gate'), 30_000).catch((e: Error) => { throw new Error(`${e.message}: out ${out} err ${err}`); });
    expect(out).toContain('before the gate');
    expect(out).not.toContain('after the gate');
    expect(follower.exitCode).toBeNull();
    fs.writeFileSync(gate, '');
    expect(await exited).toBe(0);
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^run ${id}-r1 · goal ${id} · gate/`));
    expect(lines.slice(1)).toEqual(['before the gate', '▸ Bash command=ls gate', 'after the gate', '✓ done · $0.0200', expect.stringMatching(/^— success · \d+s · gate\/\S+ · \$0\.0200$/)]);
    expect(await cycleExited).toBe(0);
  }, 90_000);

  it('a PostgreSQL garden: the stream the store holds (a runner’s upload, no file here) is printed, rendered and raw', async () => {
    const garden = await gardenOn('postgres');
    cleanups.push(garden.cleanup);
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'remote work' });
    const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'claude', model: 'opus' });
    const stream = '{"type":"assistant","message":{"content":[{"type":"text","text":"from the runner"}]}}\n{"type":"result","subtype":"success","total_cost_usd":0.03,"usage":{"input_tokens":10,"output_tokens":5},"num_turns":1}\n';
    await appendRunStream(garden.paths, run.id, 'events', 0, Buffer.from(stream));
    await closeRun(garden.paths, run.id, 'spike', { status: 'success', cost: { source: 'provider', usd: 0.03 } });
    expect(fs.existsSync(runStreamFile(garden.paths, run.id, 'events'))).toBe(false);
    const env = { PAK2_STORE_URL: garden.url! };
    const shown = await runCli(['logs', '--garden', garden.paths.gardenRoot, run.id], { env });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.trimEnd().split('\n').slice(1)).toEqual(['from the runner', '✓ success · $0.0300 · 10 in / 5 out · 1 turns', expect.stringMatching(/^— success · \d+s · claude\/opus · 10 in\/5 out · \$0\.0300$/)]);
    expect((await runCli(['logs', '--garden', garden.paths.gardenRoot, run.id, '--raw'], { env })).stdout).toBe(stream);
  }, 60_000);
});
