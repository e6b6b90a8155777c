/**
 * `[coordinator] sandbox = "bubblewrap"` (issue 25, item 5;
 * docs/run/isolation.md): the agent runs with the runtime root read-only
 * but for its run directory, worktree and reply directory. An agent that
 * tries to forge its seal, append to the garden's event log or drop a goal
 * file is refused by the kernel (EROFS); its work and its run directory
 * are written; the record it rewrote in meta.json is pak2's again, named as
 * tampering. Skipped where bwrap cannot run. CI unpacks Debian's bubblewrap
 * package beside the tests and names it in PAK2_TEST_BWRAP, not installing
 * it: codex takes a bwrap on PATH for its own sandbox, which a container
 * refuses.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { bubblewrapSpec } from '../../source/driver/sandbox.js';
import { createGoal, readGoal, readRun, runEventsFile } from '../../source/store/index.js';
import { makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

const TRUTH_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/truth-agent.mjs');
const BWRAP = process.env.PAK2_TEST_BWRAP ?? 'bwrap';
const bwrapWorks = spawnSync(BWRAP, ['--dev-bind', '/', '/', 'true']).status === 0;
/** The coordinator's environment: bwrap found on its PATH, as the sandbox finds it. */
const withBwrap = { ...process.env, PATH: process.env.PAK2_TEST_BWRAP ? `${path.dirname(process.env.PAK2_TEST_BWRAP)}${path.delimiter}${process.env.PATH ?? ''}` : process.env.PATH };

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('bubblewrapSpec', () => {
  it('binds the runtime root read-only and, over it, only the writable paths inside it', () => {
    const spec = bubblewrapSpec({ command: 'claude', args: ['-p', '--verbose'], env: { A: '1' } }, { runtimeRoot: '/g/.runtime', writable: ['/g/.runtime/runs/1-x-r1', '/g', '/g/.runtime/inbox/g', '/g/.runtime/runs/1-x-r1'], hidden: ['/g/.runtime/serve'], readOnly: ['/g/PAK2.toml'] });
    expect(spec).toEqual({
      command: 'bwrap',
      args: ['--dev-bind', '/', '/', '--ro-bind', '/g/.runtime', '/g/.runtime', '--tmpfs', '/g/.runtime/serve', '--bind', '/g/.runtime/inbox/g', '/g/.runtime/inbox/g', '--bind', '/g/.runtime/runs/1-x-r1', '/g/.runtime/runs/1-x-r1', '--ro-bind', '/g/PAK2.toml', '/g/PAK2.toml', '--', 'claude', '-p', '--verbose'],
      env: { A: '1' },
    });
  });
});

describe.skipIf(!bwrapWorks)('an agent in the bubblewrap sandbox', () => {
  it('cannot forge its seal, the event log or a goal; its work and run directory are written; its rewritten meta.json is tampering', async () => {
    const g = await makeTestGarden({ extraToml: `[drivers.t]\ncommand = ${JSON.stringify([process.execPath, TRUTH_AGENT, 'sandbox-probe'])}` });
    cleanups.push(() => g.cleanup());
    expect(g.paths.runtimeRoot).not.toBe(g.paths.gardenRoot);
    g.config.isolation = 'tree';
    g.config.coordinator.sandbox = 'bubblewrap';
    fs.mkdirSync(path.join(g.paths.runtimeRoot, 'serve'), { recursive: true });
    fs.writeFileSync(path.join(g.paths.runtimeRoot, 'serve', 'token'), 'the-operator-token\n', { mode: 0o600 });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'probe the sandbox', driver: 't' });
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined, env: withBwrap });
    cleanups.push(() => coordinator.stop());
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 30_000);
    await coordinator.stop();
    const run = await readRun(g.paths, `${goal.id}-r1`);
    const probe = fs.readFileSync(runEventsFile(g.paths, run.id), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, string>).find((l) => l.type === 'probe');
    // The server's token is hidden (an empty tmpfs over serve/), the garden's PAK2.toml read-only.
    expect(probe).toEqual({ type: 'probe', seal: 'EROFS', log: 'EROFS', goal: 'EROFS', work: 'ok', run_dir: 'ok', token: 'ENOENT', config: 'EROFS', meta: 'ok' });
    expect(fs.readFileSync(path.join(g.paths.runtimeRoot, 'serve', 'token'), 'utf8')).toBe('the-operator-token\n');
    expect(fs.readFileSync(g.paths.configFile, 'utf8')).not.toContain('sandbox = "none"');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: 3 });
    expect(run.record_tampering?.fields).toEqual(expect.arrayContaining(['status', 'completed_at']));
    expect(fs.readFileSync(path.join(g.paths.gardenRoot, 'work.txt'), 'utf8')).toBe('done');
    expect(fs.existsSync(path.join(g.paths.goalsDir, 'forged.json'))).toBe(false);
    expect(readEventLog(g).filter((e) => e.run === run.id).map((e) => e.type)).toEqual(['RunStarted', 'RunRecordTampered', 'RunClosed']);
    expect(await readGoal(g.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
  });

  it('a sandbox with no bwrap to run is a launch failure that says how to fix it', async () => {
    const g = await makeTestGarden({ extraToml: `[drivers.t]\ncommand = ${JSON.stringify([process.execPath, TRUTH_AGENT, 'sandbox-probe'])}` });
    cleanups.push(() => g.cleanup());
    g.config.isolation = 'tree';
    g.config.coordinator.sandbox = 'bubblewrap';
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'no bwrap here', driver: 't' });
    // A PATH with nothing on it: the agent is named by its absolute path, bwrap is not found.
    const empty = fs.mkdtempSync(path.join(g.paths.gardenRoot, 'empty-path-'));
    const coordinator = new Coordinator({ garden: g, onStderr: () => undefined, env: { ...process.env, PATH: empty } });
    cleanups.push(() => coordinator.stop());
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 30_000);
    await coordinator.stop();
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'launch_failed' });
    expect(run.outputs?.error).toMatch(/cannot start bwrap: .*install Debian's bubblewrap package, or set sandbox = "none"/);
  });
});
