import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readPlant, upsertThread } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden({ files: { 'seeds/worker.md': '# Seed: worker\n', 'seeds/worker/skills/build.md': '# Building\n' } });
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

function plantDirs(): string[] {
  return fs.readdirSync(garden.paths.plantsDir).sort();
}

describe('pak2 plant commission and archive', () => {
  it('commissions a plant from a seed, copying its skills, then archives it', async () => {
    const made = await runCli(['plant', 'commission', 'helper', '--seed', 'worker', '--description', 'Builds things', ...g]);
    expect(made).toMatchObject({ code: 0, stderr: '' });
    expect(made.stdout.trim()).toBe('commissioned helper (seed worker)');
    expect(await readPlant(garden.paths, 'helper')).toMatchObject({ name: 'helper', seed: 'worker', status: 'active', description: 'Builds things' });
    expect(fs.existsSync(path.join(garden.paths.plantsDir, 'helper', 'skills', 'build.md'))).toBe(true);

    const archived = await runCli(['plant', 'archive', 'helper', ...g]);
    expect(archived).toMatchObject({ code: 0, stdout: 'archived helper\n', stderr: '' });
    expect(await readPlant(garden.paths, 'helper')).toMatchObject({ status: 'archived', archived_at: expect.any(String) });
    expect(readEventLog(garden).map((e) => [e.type, e.plant])).toEqual(expect.arrayContaining([['PlantCommissioned', 'helper'], ['PlantArchived', 'helper']]));
  });

  it.each([['../x'], ['A'], ['a/b'], ['two words'], ['9x'], ['x-']])('refuses the name %j: INVALID_PLANT_NAME naming NAME, exit 2, nothing made', async (name) => {
    const r = await runCli(['plant', 'commission', name, '--seed', 'worker', ...g]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(oneLineError(r.stderr)).toBe(`pak2: NAME ${JSON.stringify(name)}: INVALID_PLANT_NAME (use lower-case letters, digits and inner hyphens, starting with a letter, e.g. gardener)`);
    expect(plantDirs()).toEqual(['gardener']);
  });

  it.each([['nope'], ['../gardener']])('refuses the unknown seed %j naming the seeds there are, exit 2', async (seed) => {
    const r = await runCli(['plant', 'commission', 'helper', '--seed', seed, ...g]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain(`pak2: --seed ${JSON.stringify(seed)}: no such seed in ${garden.paths.seedsDir} (seeds: gardener, worker)`);
    expect(plantDirs()).toEqual(['gardener']);
  });

  it('refuses a plant that exists (exit 1) and leaves it as it was', async () => {
    const before = fs.readFileSync(path.join(garden.paths.plantsDir, 'gardener', 'meta.json'), 'utf8');
    const r = await runCli(['plant', 'commission', 'gardener', '--seed', 'worker', ...g]);
    expect(r.code).toBe(1);
    expect(oneLineError(r.stderr)).toContain('pak2: NAME gardener: a plant of that name already exists');
    expect(fs.readFileSync(path.join(garden.paths.plantsDir, 'gardener', 'meta.json'), 'utf8')).toBe(before);
  });

  it('refuses a multi-line description and a missing --seed (exit 2)', async () => {
    const multi = await runCli(['plant', 'commission', 'helper', '--seed', 'worker', '--description', 'a\nb', ...g]);
    expect(multi.code).toBe(2);
    expect(oneLineError(multi.stderr)).toContain('--description: give one non-empty line');
    const noSeed = await runCli(['plant', 'commission', 'helper', ...g]);
    expect(noSeed.code).toBe(2);
    expect(oneLineError(noSeed.stderr)).toContain("required option '--seed <seed>' not specified");
    expect(plantDirs()).toEqual(['gardener']);
  });

  it('archive: an unknown plant is exit 2 naming the plants, a bad name INVALID_PLANT_NAME, archiving twice exit 1', async () => {
    const unknown = await runCli(['plant', 'archive', 'nobody', ...g]);
    expect(unknown.code).toBe(2);
    expect(oneLineError(unknown.stderr)).toBe('pak2: NAME nobody: no such plant in this garden (plants: gardener)');
    const bad = await runCli(['plant', 'archive', '../gardener', ...g]);
    expect(bad.code).toBe(2);
    expect(oneLineError(bad.stderr)).toContain('NAME "../gardener": INVALID_PLANT_NAME');
    expect((await runCli(['plant', 'archive', 'gardener', ...g])).code).toBe(0);
    const twice = await runCli(['plant', 'archive', 'gardener', ...g]);
    expect(twice.code).toBe(1);
    expect(oneLineError(twice.stderr)).toContain('pak2: NAME gardener: already archived');
  });
});

describe('pak2 plants', () => {
  it('prints a table and --json with thread counts', async () => {
    await runCli(['plant', 'commission', 'helper', '--seed', 'worker', ...g]);
    await upsertThread(garden.paths, 'gardener', { id: 't-a', title: 'A', status: 'active' });
    await upsertThread(garden.paths, 'gardener', { id: 't-b', title: 'B', status: 'done' });
    const r = await runCli(['plants', ...g]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+SEED\s+STATUS\s+COMMISSIONED\s+THREADS$/);
    expect(lines[1]).toMatch(/^gardener\s+gardener\s+active\s+\d{4}-\d{2}-\d{2} \(\w+\)\s+2$/);
    expect(lines[2]).toMatch(/^helper\s+worker\s+active\s+.*\s+0$/);
    const json = JSON.parse((await runCli(['plants', '--json', ...g])).stdout);
    expect(json).toEqual([
      expect.objectContaining({ name: 'gardener', seed: 'gardener', status: 'active', threads: 2 }),
      expect.objectContaining({ name: 'helper', seed: 'worker', status: 'active', threads: 0 }),
    ]);
  });

  it('a malformed threads file shows ? and one line on stderr', async () => {
    fs.writeFileSync(path.join(garden.paths.plantsDir, 'gardener', 'memory', 'active-threads.json'), '[');
    const r = await runCli(['plants', ...g]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')[1]).toMatch(/\s\?$/);
    expect(oneLineError(r.stderr)).toContain('active-threads.json: malformed JSON');
  });
});

describe('pak2 threads', () => {
  it('prints a plant\'s threads, and --json', async () => {
    const empty = await runCli(['threads', 'gardener', ...g]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('no active threads for gardener');
    await upsertThread(garden.paths, 'gardener', { id: 't-flaky', title: 'Flaky date test', status: 'blocked', goals: ['3-fix-date'], next: 'ask the operator' });
    const r = await runCli(['threads', 'gardener', ...g]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+UPDATED\s+TITLE$/);
    expect(lines[1]).toMatch(/^t-flaky\s+blocked\s+\w+\s+Flaky date test$/);
    expect(lines[2]).toBe('t-flaky  next: ask the operator  goals: 3-fix-date');
    const json = JSON.parse((await runCli(['threads', 'gardener', '--json', ...g])).stdout);
    expect(json).toEqual({ plant: 'gardener', threads: [expect.objectContaining({ id: 't-flaky', status: 'blocked', title: 'Flaky date test' })] });
  });

  it.each([
    [['nobody'], 'pak2: PLANT nobody: no such plant in this garden (plants: gardener)'],
    [['../x'], 'pak2: PLANT "../x": INVALID_PLANT_NAME'],
  ])('%j: one-line error, exit 2', async (args, message) => {
    const r = await runCli(['threads', ...args, ...g]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(oneLineError(r.stderr)).toContain(message);
  });

  it('a malformed file is exit 2 naming the file and field', async () => {
    const file = path.join(garden.paths.plantsDir, 'gardener', 'memory', 'active-threads.json');
    fs.writeFileSync(file, JSON.stringify({ plant: 'gardener', updated_at: '2026-01-01T00:00:00Z', threads: [{ id: 't-a', title: 'A', status: 'paused', updated_at: '2026-01-01T00:00:00Z' }] }));
    const r = await runCli(['threads', 'gardener', ...g]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toBe(`pak2: ${file}: threads.0.status: INVALID_STATUS (status is not a valid status word)`);
  });
});
