/**
 * Goal dependencies from the command line (docs/goal/level2.md,
 * "Dependencies"): `pak2 submit --after`, `pak2 depends --add/--drop`,
 * `pak2 retry`, `pak2 goals` saying what waits, and the refusals: one line
 * naming the flag, exit 1, nothing written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { transitionGoal } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden();
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

const submit = (body: string, ...flags: string[]) => runCli(['submit', ...g, '--plant', 'gardener', '--type', 'build', '--body', body, ...flags]);

/** The one line a refusal prints. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('pak2 submit --after, pak2 depends, pak2 retry', () => {
  it('--after records depends_on; an unknown goal or a cycle is refused in one line, exit 1, and nothing changes', async () => {
    const a = (await submit('Build a')).stdout.trim();
    const b = await submit('Build b', '--after', a, '--json');
    expect(b.code).toBe(0);
    const bGoal = JSON.parse(b.stdout) as { id: string; depends_on: string[] };
    expect(bGoal.depends_on).toEqual([a]);

    const unknown = await submit('Build c', '--after', a, '--after', '99-nothing');
    expect(unknown.code).toBe(1);
    expect(oneLine(unknown.stderr)).toMatch(/^pak2: --after 99-nothing: no such goal$/);
    const cycle = await runCli(['depends', ...g, a, '--add', bGoal.id]);
    expect(cycle.code).toBe(1);
    expect(oneLine(cycle.stderr)).toBe(`pak2: --add ${bGoal.id}: a cycle: ${a} → ${bGoal.id} → ${a}`);

    const listed = await runCli(['goals', ...g]);
    expect(listed.stdout).toMatch(new RegExp(`${bGoal.id} .* waits for 1 `));
    const json = JSON.parse((await runCli(['goals', ...g, '--json'])).stdout) as { id: string; waiting_for?: string[] }[];
    expect(json.map((x) => [x.id, x.waiting_for])).toEqual([
      [a, undefined],
      [bGoal.id, [a]],
    ]);
  });

  it('a cancelled dependency blocks; pak2 retry moves the dependent to the new goal; pak2 depends --drop releases it', async () => {
    const a = (await submit('Build a')).stdout.trim();
    const b = (await submit('Build b', '--after', a)).stdout.trim();
    expect((await runCli(['cancel', ...g, a])).code).toBe(0);
    const blocked = JSON.parse((await runCli(['goals', ...g, '--json'])).stdout) as { id: string; blocked_on?: unknown }[];
    expect(blocked.find((x) => x.id === b)?.blocked_on).toEqual({ goal: a, closed_reason: 'cancelled' });
    expect((await runCli(['goals', ...g])).stdout).toMatch(new RegExp(`${b} .* blocked: 1 cancelled`));
    expect((await runCli(['show', ...g, b])).stdout).toContain(`  after ${a}  (blocked: 1 cancelled)`);

    const retry = await runCli(['retry', ...g, a]);
    expect(retry.code).toBe(0);
    const retried = retry.stdout.trim().split(' ')[0]!;
    expect(retry.stdout.trim()).toBe(`${retried} (now awaited by ${b})`);
    expect(retried).toMatch(/^3-build-a$/);
    expect((await runCli(['show', ...g, retried])).stdout).toContain(`  retry of ${a}`);
    expect((await runCli(['show', ...g, b])).stdout).toContain(`  after ${retried}  (waits for 3)`);
    const again = await runCli(['retry', ...g, b]);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toBe(`pak2: goal ${b}: the goal is queued; only a closed goal is retried`);

    const dropped = await runCli(['depends', ...g, b, '--drop', retried]);
    expect(dropped.code).toBe(0);
    expect(dropped.stdout.trim()).toBe(`${b} waits for nothing`);
    const notAnEdge = await runCli(['depends', ...g, b, '--drop', a]);
    expect(notAnEdge.code).toBe(1);
    expect(oneLine(notAnEdge.stderr)).toBe(`pak2: --drop ${a}: ${b} does not depend on it (depends on: nothing)`);
    await transitionGoal(garden.paths, b, 'closed', { closedReason: 'cancelled' });
    const closed = await runCli(['depends', ...g, b, '--add', retried]);
    expect(closed.code).toBe(1);
    expect(oneLine(closed.stderr)).toMatch(new RegExp(`^pak2: goal ${b} is closed \\(cancelled\\); its dependencies no longer matter$`));
  });
});
