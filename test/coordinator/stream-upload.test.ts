/**
 * A local run's agent stream on a PostgreSQL garden (issue 27, "Agent
 * streams are stored so every server can tail them";
 * source/coordinator/stream-upload.ts, source/store/streams.ts): a real
 * `pak2 cycle` runs a command agent; another process (this test, as
 * another machine's checkout of the garden: no run directory of it) reads
 * the stream from the store while the run is live, and all of it once the
 * run is closed, redacted as the run directory's files are.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadGarden } from '../../source/garden/index.js';
import { attachStore, commissionPlant, createGoal, detachStore, readRun, readRunStream, runIdsForGoal, runStreamFile, tailRunStream } from '../../source/store/index.js';
import { openPostgresStore } from '../../source/store/postgres/store.js';
import { until } from '../server/support.js';
import { startCli } from '../support/cli.js';
import { testDatabase } from '../support/pg-test.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An agent that says the token on stdout and stderr, waits for the gate file, then reports its result. */
const AGENT = `import fs from 'node:fs';
fs.readFileSync(0, 'utf8');
const say = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
const token = process.env.STREAM_TEST_TOKEN;
say({ type: 'assistant', text: 'calling the API with ' + token });
process.stderr.write('debug: token=' + token + '\\n');
while (!fs.existsSync(process.env.STREAM_TEST_GATE)) await new Promise((r) => setTimeout(r, 20));
say({ type: 'result', status: 'success', text: 'done', cost_usd: 0.01, session_id: 'stream-session', num_turns: 1 });
`;

/** A checkout of the garden (each machine has its own directory), its records in the database at `url`. */
function checkout(url: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-stream-'));
  cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'PAK2.toml': [
      '[runtime]',
      'root = ".runtime"',
      '[defaults]',
      'driver = "leaky"',
      '[coordinator]',
      'interval_seconds = 1',
      '[drivers.leaky]',
      `command = ${JSON.stringify([process.execPath, path.join(root, 'agent.mjs')])}`,
      '[store]',
      `url = ${JSON.stringify(url)}`,
      '',
    ].join('\n'),
    'MOTIVATION.md': '# Motivation\n\nA garden on PostgreSQL.\n',
    'seeds/gardener.md': '# Seed: gardener\n\nYou look after the garden.\n',
    'agent.mjs': AGENT,
  };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

describe('a local run’s stream on a PostgreSQL garden', () => {
  it('is in the store as the agent writes it, and whole and redacted once the run is closed, for a process on another machine', { timeout: 120_000 }, async () => {
    const db = await testDatabase('pak2_stream');
    cleanups.push(() => db.drop());
    const rootA = checkout(db.url);
    const rootB = checkout(db.url);
    // This process is machine B: its own checkout, the same database, no run directory of A's runs.
    const b = loadGarden(rootB);
    const store = await openPostgresStore(db.url);
    attachStore(b.paths, store);
    cleanups.push(async () => {
      detachStore(b.paths);
      await store.close();
    });
    await commissionPlant(b.paths, 'gardener', 'gardener');
    fs.cpSync(path.join(rootB, 'plants'), path.join(rootA, 'plants'), { recursive: true });
    const goal = await createGoal(b.paths, { type: 'spike', plant: 'gardener', body: 'say the token' });

    const token = 'tok-0123456789-stream-secret';
    const gate = path.join(rootA, 'gate');
    const cycle = startCli(['cycle', '--no-ui', '--until-idle', '--garden', rootA], { env: { STREAM_TEST_TOKEN: token, STREAM_TEST_GATE: gate } });
    let output = '';
    cycle.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    cycle.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => cycle.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (cycle.exitCode === null && cycle.signalCode === null) cycle.kill('SIGKILL');
      await exited;
    });

    // Live: the agent's first line reaches the store while it waits at the gate.
    await until(async () => (await runIdsForGoal(b.paths, goal.id)).length > 0, 60_000, 'the run opened');
    const [runId] = await runIdsForGoal(b.paths, goal.id);
    await until(async () => (await readRunStream(b.paths, runId!, 'events')).includes('calling the API'), 60_000, 'the first line in the store');
    expect((await readRun(b.paths, runId!)).status).toBe('running');
    expect(fs.existsSync(runStreamFile(b.paths, runId!, 'events'))).toBe(false);

    fs.writeFileSync(gate, '');
    expect(await exited).toBe(0);
    expect((await readRun(b.paths, runId!)).status).toBe('success');

    // Closed: all of it, redacted, the same bytes as A's run directory.
    const events = (await readRunStream(b.paths, runId!, 'events')).toString('utf8');
    const stderr = (await readRunStream(b.paths, runId!, 'stderr')).toString('utf8');
    expect(events).toContain('calling the API with [REDACTED:STREAM_TEST_TOKEN]');
    expect(events).toContain('"session_id":"stream-session"');
    expect(stderr).toContain('debug: token=[REDACTED:STREAM_TEST_TOKEN]');
    expect(events + stderr).not.toContain(token);
    const a = loadGarden(rootA);
    expect(events).toBe(fs.readFileSync(runStreamFile(a.paths, runId!, 'events'), 'utf8'));
    expect(stderr).toBe(fs.readFileSync(runStreamFile(a.paths, runId!, 'stderr'), 'utf8'));
    const tail = await tailRunStream(b.paths, runId!, 'events', { lines: 1, maxBytes: 4096 });
    expect(JSON.parse(tail.lines[0]!)).toMatchObject({ type: 'result', status: 'success' });
    expect(output).not.toContain(token);
  });
});
