/**
 * Budgets through the coordinator (docs/budget/level2.md): a run stopped
 * mid-run when its spend crosses its cap, a day cap that holds the queue
 * until it is raised, and the report that says so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { claimTask, Coordinator } from '../../source/coordinator/index.js';
import type { Garden } from '../../source/garden/index.js';
import { budgetReport } from '../../source/snapshot/index.js';
import { appendEvent, createGoal, listGoals, readBudgetWarned, readGoal, readRun } from '../../source/store/index.js';
import { retryGoal, setBudgetCap } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { createToken } from '../../source/server/index.js';
import { api, serve } from '../server/support.js';
import { makeTestGarden, readEventLog, waitFor } from '../support/garden.js';

const AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/spend-agent.mjs');
let garden: (Garden & { cleanup: () => void }) | undefined;
let coordinator: Coordinator | undefined;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await coordinator?.stop();
  coordinator = undefined;
  garden?.cleanup();
  garden = undefined;
});

async function gardenWith(budget: string, drivers: Record<string, string>): Promise<Garden & { cleanup: () => void }> {
  const tables = Object.entries(drivers).map(([name, scenario]) => `[drivers.${name}]\ncommand = ${JSON.stringify([process.execPath, AGENT, scenario])}`);
  garden = await makeTestGarden({ extraToml: `${tables.join('\n')}\n[budget]\n${budget}` });
  return garden;
}

describe('budgets through the coordinator', () => {
  it('a run whose spend crosses the run cap mid-run is stopped at the line that crossed it: killed / budget_exceeded, the cost so far kept with its source; one warning at 80 %', async () => {
    const g = await gardenWith('run_usd = 1', { climb: 'climb' });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'spend', driver: 'climb' });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed', 20_000);
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'budget_exceeded', budget: { cap: 'run', cap_usd: 1, spent_usd: 1.2 }, cost: { source: 'provider' } });
    // What the stream carried up to the stop is the cost: never below what crossed the cap, never the $3 of a finished climb.
    expect(run.cost!.usd!).toBeGreaterThanOrEqual(1.2);
    expect(run.cost!.usd!).toBeLessThan(3);
    expect(run.outputs?.error).toBe('stopped: run cap $1.00 reached ($1.20 spent, $0.00 left); it had spent $1.20 (provider)');
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    const events = readEventLog(g);
    expect(events.find((e) => e.type === 'RunClosed')).toMatchObject({ reason: 'budget_exceeded', cost_source: 'provider' });
    const warnings = events.filter((e) => e.type === 'BudgetWarning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ reason: 'run', detail: `run cap of ${goal.id}-r1: $0.90 of $1.00 spent (90%)` });
  });

  it('a run whose result line alone crosses its cap is not stopped: its work had ended, so it is recorded as it ended (success), and its spend counts', async () => {
    const g = await gardenWith('run_usd = 1\ngarden_day_usd = 2', { big: 'spend:2.5' });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'one big turn', driver: 'big' });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed');
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({ status: 'success', cost: { source: 'provider', usd: 2.5 } });
    expect(run.budget).toBeUndefined();
    const next = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'next', driver: 'big' });
    await waitFor(() => readEventLog(g).some((e) => e.type === 'GoalBlocked' && e.goal === next.id && e.reason === 'budget'));
  });

  it('a day cap reached holds further dispatch (GoalBlocked, reason budget, once) until pak2 budget set raises it; then the goal runs', async () => {
    const g = await gardenWith('garden_day_usd = 1', { pay: 'spend:1', cheap: 'spend:0.1' });
    const first = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'spend a dollar', driver: 'pay' });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, first.id)).status === 'closed');
    const second = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'spend a dime', driver: 'cheap' });
    await waitFor(() => readEventLog(g).some((e) => e.type === 'GoalBlocked' && e.goal === second.id));
    const blocked = readEventLog(g).filter((e) => e.type === 'GoalBlocked' && e.goal === second.id);
    expect(blocked).toEqual([expect.objectContaining({ reason: 'budget', detail: 'cannot dispatch: budget: garden_day cap $1.00 reached ($1.00 spent, $0.00 left); it waits in the queue' })]);
    expect((await readGoal(g.paths, second.id)).status).toBe('queued');
    // A budget hold waits for the operator's budget: no automatic tend, which would spend the room a raised cap frees.
    expect((await listGoals(g.paths)).goals.filter((goal) => goal.type === 'tend')).toEqual([]);
    const report = await budgetReport(g);
    expect(report.caps.find((c) => c.cap === 'garden_day')).toMatchObject({ usd: 1, from: 'config', spent_usd: 1, left_usd: 0 });
    expect(report.held).toEqual([{ goal: second.id, reason: 'budget: garden_day cap $1.00 reached' }]);
    expect(readEventLog(g).filter((e) => e.type === 'BudgetWarning')).toEqual([expect.objectContaining({ reason: 'garden_day' })]);

    const set = await setBudgetCap(g, 'garden_day_usd', '5');
    expect(set).toMatchObject({ key: 'garden_day_usd', before: 1, after: 5, woke: true });
    await waitFor(async () => (await readGoal(g.paths, second.id)).status === 'closed');
    expect((await readRun(g.paths, `${second.id}-r1`)).status).toBe('success');
    expect(readEventLog(g).find((e) => e.type === 'BudgetChanged')?.detail).toBe('garden_day_usd set to $5.00 by operator (was $1.00 from PAK2.toml)');
    // Said once across restarts: the key is kept, and a new coordinator does not warn again.
    expect((await readBudgetWarned(g.paths)).size).toBe(1);
    await coordinator.stop();
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await coordinator.untilIdle();
    expect(readEventLog(g).filter((e) => e.type === 'BudgetWarning')).toHaveLength(1);
  });

  it('runs of unknown cost count as [budget] unknown_run_usd, never as zero', async () => {
    const g = await gardenWith('garden_day_usd = 1\nunknown_run_usd = 1', { free: 'free', cheap: 'spend:0.1' });
    const first = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'cost unknown', driver: 'free' });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, first.id)).status === 'closed');
    const second = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'next', driver: 'cheap' });
    await waitFor(() => readEventLog(g).some((e) => e.type === 'GoalBlocked' && e.goal === second.id && e.reason === 'budget'));
    expect((await budgetReport(g)).unknown_runs).toEqual({ count: 1, counted_usd_each: 1 });
  });

  it('a damaged budget.json holds every goal (the caps set in it are never dropped) and is never written over', async () => {
    const g = await gardenWith('', { cheap: 'spend:0.1' });
    fs.writeFileSync(path.join(g.paths.runtimeRoot, 'budget.json'), '{"caps":{"run_usd":"x"},"updated_at":"2026-12-02T00:00:00.000Z"}\n');
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'x', driver: 'cheap' });
    const said: string[] = [];
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined, onError: (e) => said.push(e.message) });
    await coordinator.start();
    await waitFor(() => readEventLog(g).some((e) => e.type === 'GoalBlocked' && e.goal === goal.id && e.reason === 'budget'));
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
    expect(said.filter((m) => m.includes('budget.json'))).toHaveLength(1);
    const set = await runCli(['budget', 'set', 'run_usd', '3', '--garden', g.paths.gardenRoot]);
    expect(set.code).toBe(1);
    expect(set.stderr).toContain('budget.json cannot be read');
    expect(fs.readFileSync(path.join(g.paths.runtimeRoot, 'budget.json'), 'utf8')).toContain('"x"');
    // Removed, the goal runs.
    fs.rmSync(path.join(g.paths.runtimeRoot, 'budget.json'));
    coordinator.wake(0);
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed');
  });

  it('a retry keeps the goal\'s own cap', async () => {
    const g = await gardenWith('', {});
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'fails', driver: 'exit3', budget_usd: 0.5 });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await waitFor(async () => (await readGoal(g.paths, goal.id)).status === 'closed');
    await coordinator.stop();
    coordinator = undefined;
    const retried = await retryGoal(g, goal.id);
    expect(retried.goal).toMatchObject({ budget_usd: 0.5, retry_of: goal.id });
    // One retry at a time.
    await expect(retryGoal(g, goal.id)).rejects.toThrow(`goal ${goal.id}: its retry ${retried.goal.id} is still open (queued); retry that one once it closes`);
  });

  it('runners never claim a goal a cap holds; raising the cap lets them', async () => {
    const g = await gardenWith('garden_day_usd = 1', {});
    await appendEvent(g.paths, { type: 'RunClosed', run: '1-earlier-r1', goal: '1-earlier', plant: 'gardener', status: 'success', cost_source: 'provider', cost_usd: 1.25 });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'remote work' });
    const who = { name: 'far', host: 'elsewhere', instance: 'i-1' };
    expect(await claimTask(g, who)).toBeUndefined();
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
    await setBudgetCap(g, 'garden_day_usd', '3');
    expect((await claimTask(g, who))?.goal.id).toBe(goal.id);
  });

  it('pak2 budget: the report, --json, and one line naming the argument for a bad cap or amount', async () => {
    const g = await gardenWith('garden_day_usd = 10\ntimezone = "Europe/Berlin"', {});
    const json = await runCli(['budget', '--json', '--garden', g.paths.gardenRoot]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ timezone: 'Europe/Berlin', caps: expect.arrayContaining([{ cap: 'garden_day', key: 'garden_day_usd', usd: 10, from: 'config', spent_usd: 0, reserved_usd: 0, left_usd: 10 }]) });
    const text = await runCli(['budget', '--garden', g.paths.gardenRoot]);
    expect(text.stdout).toMatch(/garden_day_usd\s+\$10\.00\s+config\s+\$0\.00\s+\$10\.00/);
    const badCap = await runCli(['budget', 'set', 'day_usd', '5', '--garden', g.paths.gardenRoot]);
    expect(badCap.code).toBe(2);
    expect(badCap.stderr.trim().split('\n')[0]).toBe('pak2: CAP "day_usd": not a budget cap; one of run_usd, goal_usd, plant_day_usd, garden_day_usd, garden_month_usd');
    const badUsd = await runCli(['budget', 'set', 'run_usd', '-3', '--garden', g.paths.gardenRoot]);
    expect(badUsd.code).not.toBe(0);
    expect(badUsd.stderr).toContain('-3');
    const ok = await runCli(['budget', 'set', 'run_usd', '2.50', '--garden', g.paths.gardenRoot]);
    expect(ok.stdout.trim()).toBe('run_usd: $2.50 (was none)');
    const off = await runCli(['budget', 'set', 'garden_day_usd', 'off', '--garden', g.paths.gardenRoot]);
    expect(off.stdout.trim()).toBe('garden_day_usd: none (was $10.00)');
    expect((await runCli(['budget', '--garden', g.paths.gardenRoot])).stdout).toMatch(/garden_day_usd\s+-\s+off \(set\)/);
    const back = await runCli(['budget', 'set', 'garden_day_usd', 'config', '--garden', g.paths.gardenRoot]);
    expect(back.stdout.trim()).toBe('garden_day_usd: $10.00 (was none)');
    expect(readEventLog(g).filter((e) => e.type === 'BudgetChanged').map((e) => e.detail)).toEqual([
      'run_usd set to $2.50 by operator (was none from PAK2.toml)',
      'garden_day_usd lifted by operator (was $10.00 from PAK2.toml)',
      "garden_day_usd back to PAK2.toml's ($10.00) by operator (was none)",
    ]);
    const huge = await runCli(['budget', 'set', 'run_usd', '2000000', '--garden', g.paths.gardenRoot]);
    expect(huge.stderr).toContain('at most 1000000');
    const badSubmit = await runCli(['submit', '--plant', 'gardener', '--type', 'spike', '--body', 'x', '--budget', 'lots', '--garden', g.paths.gardenRoot]);
    expect(badSubmit.code).not.toBe(0);
    expect(badSubmit.stderr).toContain('--budget "lots": an amount in USD greater than 0');
  });

  it('over HTTP: GET /budget for a read token, POST /budget/caps for an operator only; a bad cap is a 400 naming the field', async () => {
    const g = await gardenWith('garden_day_usd = 2', {});
    const server = await serve(g, cleanups);
    const reader = (await createToken(g.paths, { role: 'read', name: 'dash' })).token;
    const got = await api(server, '/budget', { token: reader });
    expect(got.status).toBe(200);
    expect(((await got.json()) as { caps: unknown[] }).caps).toContainEqual({ cap: 'garden_day', key: 'garden_day_usd', usd: 2, from: 'config', spent_usd: 0, reserved_usd: 0, left_usd: 2 });
    expect((await api(server, '/budget/caps', { method: 'POST', token: reader, body: JSON.stringify({ cap: 'garden_day_usd', usd: 9 }) })).status).toBe(403);
    const bad = await api(server, '/budget/caps', { method: 'POST', body: JSON.stringify({ cap: 'day_usd', usd: 9 }) });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).not.toContain(g.paths.runtimeRoot);
    // No type coercion: "" is not null, true is not 1, "5" is not 5; one 400 naming /usd, nothing written.
    for (const usd of ['', true, '5']) {
      const coerced = await api(server, '/budget/caps', { method: 'POST', body: JSON.stringify({ cap: 'garden_day_usd', usd }) });
      expect(coerced.status).toBe(400);
      expect(await coerced.json()).toMatchObject({ field: '/usd' });
    }
    for (const [field, value] of [['budget_usd', true], ['budget_usd', '2'], ['depends_on', '1-x']] as const) {
      const goal = await api(server, '/goals', { method: 'POST', body: JSON.stringify({ type: 'spike', plant: 'gardener', body: 'x', [field]: value }) });
      expect(goal.status).toBe(400);
      expect(await goal.json()).toMatchObject({ field: `/${field}` });
    }
    expect(readEventLog(g).filter((e) => e.type === 'BudgetChanged' || e.type === 'GoalSubmitted')).toEqual([]);
    const set = await api(server, '/budget/caps', { method: 'POST', body: JSON.stringify({ cap: 'garden_day_usd', usd: null }) });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ key: 'garden_day_usd', before: 2, after: null, woke: false });
    expect((await budgetReport(g)).caps.find((c) => c.cap === 'garden_day')).toMatchObject({ usd: null, from: 'set' });
  });
});
