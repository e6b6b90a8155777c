/**
 * The coordinator as a real `pak2 cycle --no-ui` process: a coordinator
 * killed with -9 is reclaimed by the next one, signals stop it cleanly, and
 * goals that cannot dispatch neither stop nor hang `--until-idle`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGoal } from '../../source/store/index.js';
import {
  cleanupAll,
  exitOf,
  expectNoCrash,
  pidfile,
  readEventLog,
  readGoalFile,
  readMeta,
  readPids,
  robustGarden,
  runCli,
  start,
  STUBBORN_AGENT,
  waitAllDead,
  waitFor,
  waitForPids,
} from './helpers.js';

afterEach(cleanupAll);

describe('orphan reclaim after kill -9 of the coordinator', () => {
  it('a second cycle takes over at once, kills the orphaned agent, closes r1 coordinator_stopped and requeues the goal', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Stall forever', driver: 'stall' });
    const firstPids = pidfile(garden.paths.gardenRoot, 'first.pids');
    const secondPids = pidfile(garden.paths.gardenRoot, 'second.pids');

    const first = start(['cycle', '--no-ui', ...g], { env: { FAKE_AGENT_PIDFILE: firstPids } });
    const [agent, grandchild] = await waitForPids(firstPids, first);
    expect(agent).toBeGreaterThan(0);
    expect(grandchild).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    expect((await exitOf(first)).signal).toBe('SIGKILL');
    // The agent outlived its coordinator: an orphan.
    expect([agent, grandchild].map((pid) => fs.existsSync(`/proc/${pid}`))).toEqual([true, true]);
    expect(readMeta(garden, `${goal.id}-r1`).status).toBe('running');

    // r2 will stall too: a short watchdog kills it so the goal closes and --until-idle ends.
    const toml = fs.readFileSync(garden.paths.configFile, 'utf8');
    fs.writeFileSync(garden.paths.configFile, toml.replace('interval_seconds = 3600', 'interval_seconds = 1').replace('watchdog_seconds = 300', 'watchdog_seconds = 2'));

    const second = start(['cycle', '--no-ui', '--until-idle', ...g], { env: { FAKE_AGENT_PIDFILE: secondPids } });
    const exit = await exitOf(second, 60_000);
    // (a) not refused: the dead holder's lock was taken over.
    expect(second.stderr()).not.toContain('another coordinator');
    expectNoCrash(second.stderr());
    expect(exit, `stderr:\n${second.stderr()}`).toEqual({ code: 0, signal: null });

    // (b) the orphaned agent and its grandchild are gone.
    await waitAllDead([agent!, grandchild!]);

    // (c) r1 closed killed / coordinator_stopped, with an error text.
    const r1 = readMeta(garden, `${goal.id}-r1`);
    expect(r1).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    expect(r1.outputs?.error).toEqual(expect.any(String));
    expect(String(r1.outputs?.error).length).toBeGreaterThan(0);

    // (d) the goal went back to the queue and was dispatched again as r2 (killed by the watchdog).
    const events = readEventLog(garden);
    expect(events).toContainEqual(expect.objectContaining({ type: 'GoalTransitioned', goal: goal.id, from: 'running', to: 'queued' }));
    const seen = `second cycle stdout:\n${second.stdout()}\nstderr:\n${second.stderr()}\ngoal: ${JSON.stringify(readGoalFile(garden, goal.id))}`;
    expect(fs.existsSync(path.join(garden.paths.runsDir, `${goal.id}-r2`, 'meta.json')), seen).toBe(true);
    expect(readMeta(garden, `${goal.id}-r2`)).toMatchObject({ status: 'killed', failure_reason: 'killed' });
    expect(events).toContainEqual(expect.objectContaining({ type: 'RunStarted', run: `${goal.id}-r2` }));
    expect(readGoalFile(garden, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    await waitAllDead(readPids(secondPids));
  }, 120_000);
});

describe('signals stop a headless coordinator cleanly', () => {
  it.each(['SIGHUP', 'SIGTERM'] as const)('%s: exit 0, the live run closed killed/coordinator_stopped, no agent survives', async (signal) => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Talk forever', driver: 'chatty-stall' });
    const pids = pidfile(garden.paths.gardenRoot);
    const cycle = start(['cycle', '--no-ui', ...g], { env: { FAKE_AGENT_PIDFILE: pids } });
    const agentPids = await waitForPids(pids, cycle);
    cycle.child.kill(signal);
    const exit = await exitOf(cycle, 30_000);
    expect(exit, `stderr:\n${cycle.stderr()}`).toEqual({ code: 0, signal: null });
    expect(cycle.stderr()).toMatch(/^pak2: stopping/m);
    expectNoCrash(cycle.stderr());
    expect(readMeta(garden, `${goal.id}-r1`)).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    await waitAllDead(agentPids);
    expect(cycle.stdout()).toContain('CoordinatorStopped');
  }, 60_000);

  it('two SIGINTs in a row (chatty-stall): still a clean stop with the run closed', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Talk forever', driver: 'chatty-stall' });
    const pids = pidfile(garden.paths.gardenRoot);
    const cycle = start(['cycle', '--no-ui', ...g], { env: { FAKE_AGENT_PIDFILE: pids } });
    const agentPids = await waitForPids(pids, cycle);
    cycle.child.kill('SIGINT');
    cycle.child.kill('SIGINT');
    const exit = await exitOf(cycle, 30_000);
    expect(exit, `stderr:\n${cycle.stderr()}`).toEqual({ code: 0, signal: null });
    expectNoCrash(cycle.stderr());
    expect(readMeta(garden, `${goal.id}-r1`)).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    await waitAllDead(agentPids);
  }, 60_000);

  it('a second SIGINT while an agent that ignores SIGINT is being stopped does not kill pak2 before the run is closed', async () => {
    const garden = await robustGarden({ extraToml: `[drivers.stubborn]\ncommand = ${JSON.stringify([process.execPath, STUBBORN_AGENT])}` });
    const g = ['--garden', garden.paths.gardenRoot];
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Ignore Ctrl-C', driver: 'stubborn' });
    const pids = pidfile(garden.paths.gardenRoot);
    const cycle = start(['cycle', '--no-ui', ...g], { env: { FAKE_AGENT_PIDFILE: pids } });
    const agentPids = await waitForPids(pids, cycle);
    cycle.child.kill('SIGINT');
    await waitFor(() => /^pak2: stopping/m.test(cycle.stderr()), 15_000);
    cycle.child.kill('SIGINT');
    const exit = await exitOf(cycle, 30_000);
    expect(exit, `stderr:\n${cycle.stderr()}`).toEqual({ code: 0, signal: null });
    expect(cycle.stderr()).toMatch(/^pak2: still stopping/m);
    expectNoCrash(cycle.stderr());
    const r1 = readMeta(garden, `${goal.id}-r1`);
    expect(r1).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    expect(r1.completed_at).toEqual(expect.any(String));
    await waitAllDead(agentPids);
  }, 60_000);
});

describe('goals that cannot run do not stop the coordinator', () => {
  it('a goal file whose name does not match its id is named; the other goals still dispatch and close', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const good = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'A valid goal' });
    const bad = path.join(garden.paths.goalsDir, '97-other.json');
    fs.writeFileSync(
      bad,
      `${JSON.stringify({ id: '98-wrong-name', type: 'spike', status: 'queued', priority: 50, assigned_to: 'gardener', body: 'misnamed', submitted_at: '2026-11-29T09:00:00.000Z' }, null, 2)}\n`,
    );

    const goals = await runCli(['goals', ...g]);
    expect(goals.code).toBe(1); // the listing could not read one entry: incomplete, and says so
    expect(goals.stderr).toContain(bad);
    expect(goals.stderr).toMatch(/does not match/);
    expect(goals.stdout).toContain(good.id);
    expectNoCrash(goals.stderr);

    const cycle = await runCli(['cycle', '--no-ui', '--until-idle', ...g]);
    expect(cycle.code, `stderr:\n${cycle.stderr}`).toBe(0);
    expectNoCrash(cycle.stderr);
    expect(cycle.stdout).toMatch(new RegExp(`GoalClosed\\s+${good.id} \\(success\\)`));
    expect(readGoalFile(garden, good.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    // Reported, never repaired.
    expect(JSON.parse(fs.readFileSync(bad, 'utf8'))).toMatchObject({ id: '98-wrong-name', status: 'queued' });
  }, 60_000);

  it('cycle --until-idle with a goal without plant and one whose plant does not exist: exit 0, both named as staying queued, with why', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const unassigned = await createGoal(garden.paths, { type: 'spike', body: 'Nobody is assigned' });
    const ghost = await createGoal(garden.paths, { type: 'spike', plant: 'ghost', body: 'Assigned to a ghost' });
    const cycle = start(['cycle', '--no-ui', '--until-idle', ...g]);
    const exit = await exitOf(cycle, 60_000);
    expect(exit, `stderr:\n${cycle.stderr()}`).toEqual({ code: 0, signal: null });
    expectNoCrash(cycle.stderr());
    const stderr = cycle.stderr();
    const lineFor = (id: string) => stderr.split('\n').filter((l) => l.includes(id) && /stay(s)? queued/.test(l));
    expect(lineFor(unassigned.id).join('\n'), `stderr:\n${stderr}`).toMatch(/no plant/);
    expect(lineFor(ghost.id).join('\n'), `stderr:\n${stderr}`).toMatch(/ghost/);
    expect(readGoalFile(garden, unassigned.id)).toMatchObject({ status: 'queued' });
    expect(readGoalFile(garden, ghost.id)).toMatchObject({ status: 'queued' });
  }, 60_000);
});
