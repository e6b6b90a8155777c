import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { archivePlant, readGoal } from '../../source/store/index.js';
import { COMMISSION_PRIORITY, renderCommissionContext, submitPlantCommissionGoal } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
beforeEach(async () => {
  garden = await makeTestGarden({ files: { 'seeds/worker.md': '# Seed: worker\n' } });
});
afterEach(() => garden.cleanup());

const goalFiles = () => (fs.existsSync(garden.paths.goalsDir) ? fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json')) : []);
const good = { plant: 'helper', seed: 'worker', purpose: 'Keeps the docs tidy.', firstGoal: { type: 'build', body: 'Fix the broken links.' } };

describe('submitPlantCommissionGoal', () => {
  it('queues a commission goal for the gardener, priority 60, with its commission metadata', async () => {
    const goal = await submitPlantCommissionGoal(garden, good);
    const record = await readGoal(garden.paths, goal.id);
    expect(record).toMatchObject({ type: 'commission', status: 'queued', assigned_to: 'gardener', priority: COMMISSION_PRIORITY });
    expect(COMMISSION_PRIORITY).toBe(60);
    expect((record as Record<string, unknown>).commission).toEqual({ plant: 'helper', seed: 'worker', purpose: 'Keeps the docs tidy.', first_goal: { type: 'build', body: 'Fix the broken links.' } });
    expect(record.body).toContain('pak2 plant commission helper --seed worker');
    expect(record.body).toContain("pak2 submit --plant helper --type build --body 'Fix the broken links.'");
    expect(record.body).toMatch(/fits the purpose/);
    // The plant is not commissioned by queuing the goal.
    expect(fs.existsSync(path.join(garden.paths.plantsDir, 'helper'))).toBe(false);
  });

  it('refuses bad input, naming the field', async () => {
    await expect(submitPlantCommissionGoal(garden, { ...good, plant: 'Bad Name' })).rejects.toThrow(/^plant "Bad Name": not a valid plant name/);
    await expect(submitPlantCommissionGoal(garden, { ...good, plant: 'gardener' })).rejects.toThrow('plant gardener: a plant of that name already exists');
    await expect(submitPlantCommissionGoal(garden, { ...good, seed: 'nope' })).rejects.toThrow(/^seed "nope": no such seed/);
    await expect(submitPlantCommissionGoal(garden, { ...good, seed: '../x' })).rejects.toThrow(/^seed "\.\.\/x": no such seed/);
    await expect(submitPlantCommissionGoal(garden, { ...good, purpose: '  ' })).rejects.toThrow('purpose: empty');
    await expect(submitPlantCommissionGoal(garden, { ...good, firstGoal: { type: 'dance', body: 'x' } })).rejects.toThrow(/^first-type "dance": must be one of build/);
    await expect(submitPlantCommissionGoal(garden, { ...good, firstGoal: { type: 'build', body: ' ' } })).rejects.toThrow(/^first-body:/);
    expect(goalFiles()).toEqual([]);
  });

  it('refuses when the gardener is not active', async () => {
    await archivePlant(garden.paths, 'gardener');
    await expect(submitPlantCommissionGoal(garden, good)).rejects.toThrow('plant gardener: the plant is archived; nobody can commission');
  });

  it('renderCommissionContext states the target, seed, purpose and the first-goal contract', () => {
    const text = renderCommissionContext({ plant: 'helper', seed: 'worker', purpose: 'P', first_goal: { type: 'fix', body: 'B' } })!;
    expect(text.split('\n').slice(0, 3)).toEqual(['Target plant: helper', 'Seed: worker (seeds/worker.md)', 'Purpose: P']);
    expect(text).toContain('exactly one first goal, for plant helper only, of type fix');
    expect(renderCommissionContext(undefined)).toBeUndefined();
  });
});

describe('pak2 plant propose', () => {
  const g = () => ['--garden', garden.paths.gardenRoot];
  const args = (over: Record<string, string> = {}) => {
    const o = { '--seed': 'worker', '--purpose': 'Keeps the docs tidy.', '--first-type': 'build', '--first-body': 'Fix the broken links.', ...over };
    return Object.entries(o).flat();
  };
  function oneLine(stderr: string): string {
    const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  it('queues the commission goal and prints its id', async () => {
    const result = await runCli(['plant', 'propose', 'helper', ...args(), ...g()]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const id = result.stdout.trim();
    expect(id).toMatch(/^\d+-commission-helper/);
    expect(await readGoal(garden.paths, id)).toMatchObject({ type: 'commission', assigned_to: 'gardener', commission: { plant: 'helper', seed: 'worker' } });
  });

  it('one-line errors naming the flag', async () => {
    const cases: [string[], RegExp, number][] = [
      [['plant', 'propose', 'Bad', ...args()], /NAME "Bad": INVALID_PLANT_NAME/, 2],
      [['plant', 'propose', 'gardener', ...args()], /NAME gardener: a plant of that name already exists/, 1],
      [['plant', 'propose', 'helper', ...args({ '--seed': 'nope' })], /--seed "nope": no such seed/, 2],
      [['plant', 'propose', 'helper', ...args({ '--purpose': ' ' })], /--purpose: empty/, 2],
      [['plant', 'propose', 'helper', ...args({ '--first-type': 'dance' })], /--first-type "dance": must be one of/, 2],
      [['plant', 'propose', 'helper', ...args({ '--first-body': ' ' })], /--first-body:/, 2],
    ];
    for (const [argv, pattern, code] of cases) {
      const result = await runCli([...argv, ...g()]);
      expect(result.code, argv.join(' ')).toBe(code);
      expect(oneLine(result.stderr)).toMatch(pattern);
    }
    const missing = await runCli(['plant', 'propose', 'helper', '--seed', 'worker', ...g()]);
    expect(missing.code).not.toBe(0);
    expect(oneLine(missing.stderr)).toMatch(/--purpose/);
    expect(goalFiles()).toEqual([]);
  });
});
