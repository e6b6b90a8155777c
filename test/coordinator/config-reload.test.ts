/**
 * A running pak2 takes a changed PAK2.toml (issue 28, item 6;
 * docs/garden/level2.md, "Changing PAK2.toml while pak2 runs"): a running
 * `pak2 cycle --no-ui` runs a goal on a driver added to the file after it
 * started, keeps the last good configuration through a bad edit and says
 * so, and says "restart to apply" for a restart key; the workbench's
 * session shows the same in its snapshot (problems, status line); a
 * `pak2 serve` with no coordinator accepts the new driver.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { Session } from '../../source/session/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { configSegment } from '../../source/ui/status-line.js';
import { runCli, startCli } from '../support/cli.js';
import { FAKE_AGENT, makeTestGarden, readEventLog, waitFor } from '../support/garden.js';
import { api, serve } from '../server/support.js';

type TestGarden = Garden & { cleanup: () => void };
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(): Promise<TestGarden> {
  const g = await makeTestGarden();
  cleanups.push(() => g.cleanup());
  return g;
}

const TRAP = `\n[drivers.trap]\ncommand = ${JSON.stringify([process.execPath, FAKE_AGENT, 'success'])}\n`;

function edit(g: Garden, change: (text: string) => string): void {
  fs.writeFileSync(g.paths.configFile, change(fs.readFileSync(g.paths.configFile, 'utf8')));
}

/** Starts `pak2 cycle --no-ui` on the garden; its stderr is collected; it is stopped (SIGTERM) after the test. */
function headless(g: Garden): { child: ChildProcess; stderr: () => string } {
  const child = startCli(['cycle', '--no-ui', '--garden', g.paths.gardenRoot]);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout!.resume();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  return { child, stderr: () => stderr };
}

describe('a running coordinator process and PAK2.toml', () => {
  it('runs a goal on a driver added after it started; a bad edit keeps the last good config and says so; a restart key says restart to apply', async () => {
    const g = await garden();
    const cycle = headless(g);
    await waitFor(() => readEventLog(g).some((e) => e.type === 'CoordinatorStarted'), 20_000);

    edit(g, (t) => t + TRAP);
    const submitted = await runCli(['submit', '--garden', g.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--driver', 'trap', '--body', 'on the driver just added']);
    expect(submitted.stderr).toBe('');
    const id = submitted.stdout.trim();
    await waitFor(async () => (await readGoal(g.paths, id)).status === 'closed', 30_000);
    expect(await readGoal(g.paths, id)).toMatchObject({ closed_reason: 'success' });
    expect(await readRun(g.paths, `${id}-r1`)).toMatchObject({ driver: 'trap', status: 'success' });
    await waitFor(() => cycle.stderr().includes(`pak2: ${g.paths.configFile} read again: drivers.trap.command in force`));

    // A bad edit: said with the file and the key; the driver of the last good file still runs a goal another process writes.
    edit(g, (t) => t.replace('watchdog_seconds = 300', 'watchdog_seconds = -5'));
    await waitFor(() => cycle.stderr().includes(`pak2: ${g.paths.configFile}: coordinator.watchdog_seconds: INVALID_CONFIG_VALUE`));
    expect(cycle.stderr()).toContain('got -5); the configuration read last stays in force');
    const second = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'still on trap', driver: 'trap' });
    await waitFor(async () => (await readGoal(g.paths, second.id)).status === 'closed', 30_000);
    expect(await readRun(g.paths, `${second.id}-r1`)).toMatchObject({ driver: 'trap', status: 'success' });

    edit(g, (t) => t.replace('watchdog_seconds = -5', 'watchdog_seconds = 200'));
    await waitFor(() => cycle.stderr().includes(`pak2: ${g.paths.configFile} loads again: coordinator.watchdog_seconds in force`));

    edit(g, (t) => `${t}\n[garden]\nname = "renamed"\n`);
    await waitFor(() => cycle.stderr().includes(`pak2: ${g.paths.configFile}: garden.name changed: restart to apply (the value read at start stays in force)`));
    // No event records a reload: the seeds name none.
    expect(readEventLog(g).map((e) => e.type ?? '').filter((t) => /config/i.test(t))).toEqual([]);
  }, 120_000);
});

describe('the coordinator timer and PAK2.toml', () => {
  it('a new interval_seconds arms the timer again: passes come every second with nothing else to wake them', async () => {
    const g = await garden();
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    cleanups.push(() => coordinator.stop());
    let passes = 0;
    coordinator.on('pass', () => (passes += 1));
    await coordinator.start();
    await waitFor(() => passes > 0);
    edit(g, (t) => t.replace('interval_seconds = 3600', 'interval_seconds = 1'));
    // The edit wakes one pass; only the timer, armed again at one second, makes the others.
    const after = passes;
    await waitFor(() => passes >= after + 4, 20_000);
    expect(g.config.coordinator.intervalSeconds).toBe(1);
  }, 30_000);
});

describe('the workbench session and PAK2.toml', () => {
  it('a bad edit is a problem and a status-line segment naming the key until a good edit clears it; a restart key is "restart to apply"; a new driver can be chosen', async () => {
    const g = await garden();
    const session = new Session({ garden: g, command: 'test workbench', onStderr: () => undefined });
    cleanups.push(() => session.close());
    await session.open();
    const source = session.source!;
    const problem = (s = source.getSnapshot()) => s.problems.find((p) => p.includes('the configuration read last stays in force'));

    edit(g, (t) => t.replace('interval_seconds = 3600', 'interval_seconds = "soon"'));
    await waitFor(() => problem() !== undefined);
    const bad = source.getSnapshot();
    expect(problem(bad)).toContain(`${g.paths.configFile}: coordinator.interval_seconds: INVALID_CONFIG_VALUE`);
    expect(bad.garden.configFile).toEqual({ invalid: ['coordinator.interval_seconds'] });
    expect(configSegment(bad.garden.configFile)).toBe('⚠ PAK2.toml not applied: coordinator.interval_seconds');
    expect(g.config.coordinator.intervalSeconds).toBe(3600);

    edit(g, (t) => t.replace('interval_seconds = "soon"', 'interval_seconds = 3600') + TRAP + '\n[store]\nurl = "postgres://pak2@127.0.0.1:5432/garden"\n');
    await waitFor(() => problem() === undefined && source.getSnapshot().garden.drivers.includes('trap'));
    const good = source.getSnapshot();
    expect(good.garden.configFile).toEqual({ restart: ['store.url'] });
    expect(configSegment(good.garden.configFile)).toBe('restart to apply: store.url');
    expect(g.config.storeUrl).toBeUndefined();
    // The operator's submit takes the new driver at once.
    const goal = await session.actions!.submitGoal({ type: 'spike', plant: 'gardener', body: 'on trap', driver: 'trap' });
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 30_000);
    expect(await readRun(g.paths, `${goal.id}-r1`)).toMatchObject({ driver: 'trap', status: 'success' });
  }, 60_000);
});

describe('pak2 serve without a coordinator and PAK2.toml', () => {
  it('POST /goals takes a driver added to the file after the server started', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false, leaseCheckMs: false });
    const body = { type: 'spike', plant: 'gardener', body: 'on trap', driver: 'trap' };
    const before = await api(server, '/goals', { method: 'POST', body: JSON.stringify(body) });
    expect(before.status).toBe(400);
    edit(g, (t) => t + TRAP);
    const after = await api(server, '/goals', { method: 'POST', body: JSON.stringify(body) });
    expect(after.status).toBe(201);
    expect(((await after.json()) as { goal: { driver: string } }).goal.driver).toBe('trap');
  });
});
