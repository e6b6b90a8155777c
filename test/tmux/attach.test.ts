/**
 * The workbench attaches (issue 28, item 3; docs/workbench/level2.md,
 * "Attached"), in a real terminal: `pak2 cycle --no-ui` runs the garden (a
 * real process, as on a server); `pak2` opened beside it attaches instead
 * of refusing, and says so and to whom on the status line. A goal typed
 * into its form is run by the cycle process; `x`, `y` on its live run has
 * the cycle kill the agent. When the cycle stops, the workbench says so;
 * a restarted cycle is attached to again; `T`, `y` takes over once none
 * runs, and a new `pak2 cycle` is then refused. `q` leaves the other
 * coordinator running.
 *
 * Waits are bounded and assert outcomes, never durations.
 * PAK2_SHOW_SCREENS=1 prints the screens the tests read.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_PROCESS_FILE } from '../../source/driver/dispatch.js';
import { readGoal, readRun } from '../../source/store/index.js';
import { runCli, startCli } from '../support/cli.js';
import { isAlive, makeTestGarden } from '../support/garden.js';
import { cleanupsAfterEach, goalRows, PAK2_BIN, show, showsId, statusLine, TmuxSession } from './tmux.js';

const cleanups = cleanupsAfterEach();

/** `pak2 cycle --no-ui` on the garden, once its CoordinatorStarted line is out; killed after the test if still running. */
async function startCycle(root: string, env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const child = startCli(['cycle', '--no-ui', '--garden', root], { env });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const end = Date.now() + 30_000;
  while (!/CoordinatorStarted/.test(output)) {
    if (child.exitCode !== null || Date.now() > end) throw new Error(`pak2 cycle did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, output: () => output, exited };
}

/** Waits until `check` holds (20 s at most), then goes on; fails naming `what`. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`waiting for ${what}: not seen within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the workbench attached to a running pak2 cycle --no-ui (tmux)', () => {
  it('says it is attached and to whom; a goal from its form is run by the cycle; x y kills the live agent there; a stop is seen, a restart attached to, T y takes over', async () => {
    // The garden's default driver stalls, talking: a run stays live until it is stopped.
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const toml = path.join(garden.paths.gardenRoot, 'PAK2.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('driver = "success"', 'driver = "chatty-stall"'));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' };

    const cycle = await startCycle(garden.paths.gardenRoot, { ...env, CI: '' });
    const pid = cycle.child.pid!;

    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({ cwd: garden.paths.gardenRoot, env, argv: [process.execPath, PAK2_BIN], columns: 140, rows: 36 });
    let screen = await tmux.waitFor('the workbench attached', (s) => (statusLine(s).includes(`● attached to pid ${pid} on ${os.hostname()} (since `) && statusLine(s).includes('coordinator idle') ? s : undefined));
    show('attached', screen);
    expect(statusLine(screen)).toMatch(new RegExp(`^● attached to pid ${pid} on \\S+ \\(since [0-9:]+\\) · coordinator idle · 0 live · 0 queued`));

    // n: the form (the cursor on the body), type, ctrl-s: queued here, run by the cycle process.
    tmux.keys('n');
    await tmux.waitFor('the goal form', (s) => s.includes('─ New goal '));
    tmux.type('a long job, from the attached workbench');
    await tmux.waitFor('the typed body', (s) => s.includes('a long job, from the attached workbench'));
    tmux.keys('C-s');
    const id = await tmux.waitFor('the new goal on the status line', (s) => /^(?:queued|dispatched|running) (\S+) │/.exec(statusLine(s))?.[1]);
    screen = await tmux.waitFor('its run live in the cycle', (s) => (goalRows(s).some((r) => showsId(r.id, id) && r.status === 'running') && /coordinator running · 1 live/.test(statusLine(s)) ? s : undefined), 20_000);
    show('running in the cycle', screen);
    const runId = `${id}-r1`;
    const agent = (JSON.parse(fs.readFileSync(path.join(garden.paths.runsDir, runId, RUN_PROCESS_FILE), 'utf8')) as { pid: number }).pid;
    const stat = fs.readFileSync(`/proc/${agent}/stat`, 'utf8');
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), "the agent is the cycle process's child").toBe(pid);
    await until('the cycle printing RunStarted', () => new RegExp(`RunStarted\\s+${runId.slice(0, 20)}`).test(cycle.output()));

    // x, y: the cycle process stops it.
    tmux.type('x');
    screen = await tmux.waitFor('the cancel question', (s) => (s.includes(`Cancel ${id}? y / n`) ? s : undefined));
    show('cancel question', screen);
    tmux.type('y');
    screen = await tmux.waitFor('the goal closed:cancelled', (s) => (goalRows(s).some((r) => showsId(r.id, id) && r.status === 'closed:cancelled') ? s : undefined), 20_000);
    await tmux.waitFor('the status line saying so', (s) => statusLine(s).includes(`killed (operator_stopped) ${runId} · closed:cancelled ${id}`));
    show('cancelled', tmux.capture());
    expect(await readRun(garden.paths, runId)).toMatchObject({ status: 'killed', failure_reason: 'operator_stopped' });
    expect(await readGoal(garden.paths, id)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
    expect(isAlive(agent)).toBe(false);
    await until('the cycle printing the RunClosed', () => /RunClosed\s+\S+ killed \(operator_stopped\) closed by operator/.test(cycle.output()));

    // The cycle stops (systemctl stop): the workbench says nothing runs the garden, and what to do.
    cycle.child.kill('SIGTERM');
    expect(await cycle.exited).toBe(0);
    screen = await tmux.waitFor('the coordinator gone', (s) => (statusLine(s).includes(`the coordinator stopped (pid ${pid} on `) ? s : undefined), 10_000);
    show('coordinator stopped', screen);
    expect(statusLine(screen)).toContain('nothing runs the garden; T takes over');
    tmux.keys('j'); // a key clears the message: the state stays on the status line
    screen = await tmux.waitFor('no coordinator on the status line', (s) => (statusLine(s).startsWith(`● no coordinator: pid ${pid} on `) ? s : undefined));
    expect(statusLine(screen)).toContain('· T takes over · 0 running · 0 queued');

    // Restarted (systemd): attached again, to the new one.
    const again = await startCycle(garden.paths.gardenRoot, { ...env, CI: '' });
    screen = await tmux.waitFor('attached to the restarted cycle', (s) => (statusLine(s).includes(`attached to pid ${again.child.pid} on `) ? s : undefined), 10_000);
    show('attached again', screen);
    // T while it runs: nothing to take over.
    tmux.type('T');
    await tmux.waitFor('the refusal', (s) => statusLine(s).includes(`attached to pid ${again.child.pid} on ${os.hostname()}: that coordinator runs the garden; nothing to take over`));

    // It stops; T, y: this workbench runs the coordinator now.
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
    await tmux.waitFor('the coordinator gone again', (s) => statusLine(s).includes(`the coordinator stopped (pid ${again.child.pid} on `), 10_000);
    tmux.type('T');
    screen = await tmux.waitFor('the take-over question', (s) => (s.includes('Take over? y / n') ? s : undefined));
    show('take over?', screen);
    expect(screen).toContain("Taking over starts this workbench's own coordinator");
    tmux.type('y');
    screen = await tmux.waitFor('its own coordinator', (s) => (/^● coordinator (idle|reconciling|running) · /.test(statusLine(s).split(' │ ').at(-1) ?? '') && statusLine(s).includes('this workbench runs the coordinator now') ? s : undefined), 20_000);
    show('taken over', screen);
    const refused = await runCli(['cycle', '--no-ui', '--garden', garden.paths.gardenRoot], { env: { ...env, CI: '' } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(pak2 (workbench))');

    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
  }, 120_000);

  it('q in an attached workbench leaves the cycle running', async () => {
    const garden = await makeTestGarden();
    cleanups.push(() => garden.cleanup());
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' };
    const cycle = await startCycle(garden.paths.gardenRoot, { ...env, CI: '' });
    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({ cwd: garden.paths.gardenRoot, env, argv: [process.execPath, PAK2_BIN, 'cycle'], columns: 100, rows: 30 });
    await tmux.waitFor('the workbench attached', (s) => statusLine(s).startsWith(`● attached to pid ${cycle.child.pid} on `));
    tmux.type('q');
    expect(await tmux.exitStatus()).toBe(0);
    expect(cycle.child.exitCode).toBeNull();
    // The cycle still runs the garden: a goal submitted now is run by it.
    const submitted = await runCli(['submit', '--plant', 'gardener', '--type', 'spike', '--body', 'after the workbench quit', '--json', '--garden', garden.paths.gardenRoot]);
    const id = (JSON.parse(submitted.stdout) as { id: string }).id;
    await until(`${id} closed`, async () => (await readGoal(garden.paths, id)).status === 'closed');
    expect(await readGoal(garden.paths, id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
  }, 60_000);
});
