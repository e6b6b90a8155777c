/**
 * One operator session for every mode (issue 14): the same scenario through
 * the workbench's session and the headless one leaves the same events, the
 * same records and one stderr.log line per agent stderr line; headless
 * prints every event in the log, whoever wrote it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../source/contracts/index.js';
import type { Garden } from '../../source/garden/index.js';
import { Session } from '../../source/session/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';

type TestGarden = Garden & { cleanup: () => void };
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An agent that writes three stderr lines and succeeds. */
const NOISY = `process.stdin.resume(); process.stdin.on('end', () => { for (const n of [1, 2, 3]) process.stderr.write('warning ' + n + '\\n'); process.stdout.write(JSON.stringify({ type: 'result', status: 'success', text: 'done' }) + '\\n'); });`;

async function noisyGarden(): Promise<TestGarden> {
  const g = await makeTestGarden({ extraToml: `[drivers.noisy]\ncommand = ${JSON.stringify([process.execPath, '-e', NOISY])}` });
  cleanups.push(() => g.cleanup());
  return g;
}

/** Runs one goal through a session configured as `mode` configures it; returns its events (types, normalised) and record. */
async function runThrough(mode: 'workbench' | 'headless') {
  const g = await noisyGarden();
  const session = new Session({
    garden: g,
    command: `test ${mode}`,
    ...(mode === 'workbench' ? { noticesToRunLog: true, onStderr: () => undefined } : { snapshot: false, onStderr: () => undefined }),
  });
  const seen: EventRecord[] = [];
  session.onEvent((e) => seen.push(e));
  const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'be noisy', driver: 'noisy' });
  await session.open();
  await session.coordinator!.untilIdle();
  await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 10_000);
  await session.close();
  const run = await readRun(g.paths, `${goal.id}-r1`);
  const stderrLog = fs.readFileSync(path.join(g.paths.runsDir, run.id, 'stderr.log'), 'utf8');
  const { started_at: _s, completed_at: _c, ...record } = run;
  return { events: seen.map((e) => `${e.type}${e.from ? ` ${e.from}>${e.to}` : ''}${e.status ? ` ${e.status}` : ''}`), record, stderrLog };
}

describe('one session, every mode', () => {
  it('the workbench session and the headless one leave the same events, the same record, and each stderr line once', async () => {
    const workbench = await runThrough('workbench');
    const headless = await runThrough('headless');
    expect(workbench.events).toEqual(headless.events);
    expect(workbench.events).toContain('RunClosed success');
    expect(workbench.record).toEqual(headless.record);
    // The agent's lines once each (the workbench adds pak2's own notices about the run after them).
    for (const log of [workbench.stderrLog, headless.stderrLog]) expect(log.split('\n').filter((l) => !l.startsWith('pak2: '))).toEqual(['warning 1', 'warning 2', 'warning 3', '']);
  });

  it('headless `pak2 cycle --no-ui` prints a GoalSubmitted written by a separate `pak2 submit`', async () => {
    const g = await noisyGarden();
    const cycle = spawn(process.execPath, [PAK2_BIN, 'cycle', '--garden', g.paths.gardenRoot, '--no-ui'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    cycle.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => cycle.once('close', r));
    cleanups.push(async () => {
      cycle.kill('SIGKILL');
      await exited;
    });
    await waitFor(() => out.includes('CoordinatorStarted') || fs.existsSync(path.join(g.paths.runtimeRoot, 'coordinator.holder.json')), 10_000);
    const submitted = await runCli(['submit', '--garden', g.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--driver', 'noisy', '--body', 'from another terminal']);
    const id = submitted.stdout.trim();
    await waitFor(() => out.includes(`GoalSubmitted`) && out.includes(id), 10_000);
    await waitFor(() => out.includes(`GoalClosed`), 10_000);
    cycle.kill('SIGTERM');
    await exited;
    const lines = out.split('\n').filter((l) => l.includes(id));
    expect(lines[0]).toMatch(new RegExp(`GoalSubmitted +${id}`));
  });

  it('a session refused because another coordinator holds the garden hears none of its events (issue 28)', async () => {
    const g = await noisyGarden();
    const holder = new Session({ garden: g, command: 'test holder', snapshot: false, onStderr: () => undefined });
    cleanups.push(() => holder.close());
    await holder.open();
    const loser = new Session({ garden: g, command: 'test loser', snapshot: false, onStderr: () => undefined });
    const heard: EventRecord[] = [];
    loser.onEvent((e) => heard.push(e));
    await expect(loser.open()).rejects.toThrow(/another coordinator is running this garden/);
    // The holder goes on writing; the loser's last read, at its close, hands none of it over.
    const goal = await holder.actions!.submitGoal({ type: 'spike', plant: 'gardener', body: 'the holder keeps working', driver: 'noisy' });
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 10_000);
    await loser.close();
    expect(heard).toEqual([]);
  });

  it('the loser of `pak2 cycle --no-ui` prints nothing of the holder before it refuses (issue 28)', async () => {
    const g = await noisyGarden();
    const holder = new Session({ garden: g, command: 'test holder', snapshot: false, onStderr: () => undefined });
    cleanups.push(() => holder.close());
    await holder.open();
    // The holder writes events the whole time the newcomer starts, looks and refuses.
    const { appendEvent } = await import('../../source/store/index.js');
    let writing = true;
    const writer = (async () => {
      for (let n = 0; writing; n += 1) {
        await appendEvent(g.paths, { type: 'GardenGenesis', detail: `the holder's event ${n}` });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const loser = await runCli(['cycle', '--garden', g.paths.gardenRoot, '--no-ui']);
    writing = false;
    await writer;
    expect(loser.code).toBe(1);
    expect(loser.stderr).toContain('another coordinator is running this garden');
    expect(loser.stdout).toBe('');
  });
});
