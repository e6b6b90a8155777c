/**
 * `pak2 retry GOAL [--driver D] [--model M]` through bin/pak2.js
 * (docs/goal/level2.md, "Retry"): a goal whose run really failed is queued
 * again as a new goal naming it (`retry_of`), with the old goal's body,
 * type, plant, priority, budget and settings, on another driver or model
 * when asked; refusals are one line naming the goal or the flag.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GoalRecord } from '../../source/contracts/index.js';
import { readGoal } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden();
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

/** The one line a refusal prints. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

/** A goal on the `exit3` driver, run to its end by a real coordinator: its run ends failure and the goal closes failure. */
async function failedGoal(...flags: string[]): Promise<string> {
  const submitted = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--priority', '60', '--driver', 'exit3', '--body', 'Fix the flaky date test', ...flags]);
  expect(submitted.code, submitted.stderr).toBe(0);
  const id = submitted.stdout.trim();
  const cycle = await runCli(['cycle', ...g, '--no-ui', '--until-idle']);
  expect(cycle.code, cycle.stderr).toBe(0);
  const goal = await readGoal(garden.paths, id);
  expect([goal.status, goal.closed_reason]).toEqual(['closed', 'failure']);
  return id;
}

describe('pak2 retry', () => {
  it('a failed goal: a new goal with its body, type, plant, priority and settings, retry_of naming it; --model keeps the driver', async () => {
    const old = await failedGoal('--model', 'm-old', '--effort', 'high', '--budget', '2.5');
    const retried = await runCli(['retry', ...g, old, '--model', 'm-new', '--json']);
    expect(retried.code, retried.stderr).toBe(0);
    const goal = JSON.parse(retried.stdout) as GoalRecord & { moved: string[] };
    expect(goal).toMatchObject({ type: 'fix', assigned_to: 'gardener', priority: 60, body: 'Fix the flaky date test', status: 'queued', driver: 'exit3', model: 'm-new', reasoning_effort: 'high', budget_usd: 2.5, retry_of: old, moved: [] });
    expect(goal.id).toMatch(/^\d+-fix-the-flaky-date-test$/);
    expect(goal.id).not.toBe(old);
    // The old goal stays closed, as it was.
    expect(await readGoal(garden.paths, old)).toMatchObject({ status: 'closed', closed_reason: 'failure' });
    expect((await runCli(['show', ...g, goal.id])).stdout).toContain(`  retry of ${old}`);
  }, 60_000);

  it('--driver runs the retry on another driver (the old model and effort were the old driver’s: dropped); the retry then succeeds', async () => {
    const old = await failedGoal('--model', 'm-old', '--effort', 'high');
    const retried = await runCli(['retry', ...g, old, '--driver', 'success']);
    expect(retried.code, retried.stderr).toBe(0);
    const id = retried.stdout.trim();
    const goal = await readGoal(garden.paths, id);
    expect(goal).toMatchObject({ driver: 'success', retry_of: old });
    expect(goal.model).toBeUndefined();
    expect(goal.reasoning_effort).toBeUndefined();
    expect((await runCli(['cycle', ...g, '--no-ui', '--until-idle'])).code).toBe(0);
    expect(await readGoal(garden.paths, id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    // A goal that closed success has nothing to retry.
    const again = await runCli(['retry', ...g, id]);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toBe(`pak2: goal ${id}: the goal closed success; nothing to retry`);
  }, 90_000);

  it('refusals: one line, nothing queued — an unknown goal, not a goal id, an open goal, an open retry, a driver that is not one, an empty model', async () => {
    const old = await failedGoal();
    const before = (await runCli(['goals', ...g, '--json'])).stdout;
    const cases: [string[], number, string][] = [
      [['99-nothing'], 1, 'pak2: goal 99-nothing: no such goal'],
      [['nothing'], 2, 'pak2: goal nothing: not a goal id (N-slug)'],
      [[old, '--driver', 'trap'], 2, 'pak2: driver trap: not a driver (claude, codex, command, or a [drivers.<name>] entry in PAK2.toml)'],
      [[old, '--model', ' '], 2, 'pak2: model: empty; name a model or leave it out'],
    ];
    for (const [args, code, line] of cases) {
      const r = await runCli(['retry', ...g, ...args]);
      expect([r.code, oneLine(r.stderr)], args.join(' ')).toEqual([code, line]);
    }
    expect((await runCli(['goals', ...g, '--json'])).stdout).toBe(before);

    const first = (await runCli(['retry', ...g, old])).stdout.trim();
    const open = await runCli(['retry', ...g, first]);
    expect([open.code, oneLine(open.stderr)]).toEqual([1, `pak2: goal ${first}: the goal is queued; only a closed goal is retried`]);
    const twice = await runCli(['retry', ...g, old]);
    expect([twice.code, oneLine(twice.stderr)]).toEqual([1, `pak2: goal ${old}: its retry ${first} is still open (queued); retry that one once it closes`]);
  }, 60_000);

  it('pak2 retry --help says what it does and names its flags', async () => {
    const help = await runCli(['retry', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--driver <driver>');
    expect(help.stdout).toContain('--model <model>');
  });
});
