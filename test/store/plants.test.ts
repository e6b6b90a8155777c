import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validatePlant } from '../../source/contracts/index.js';
import { archivePlant, commissionPlant, listPlants, plantDir, readPlant, seedFile, StoreError, PLANT_DIRS } from '../../source/store/index.js';
import { cleanupFixtures, eventsOfType, makeGarden, readJson, readLog, writeJson } from '../helpers/fixtures.js';

afterEach(cleanupFixtures);

const NOW = new Date('2024-05-01T12:00:00.000Z');
const LATER = new Date('2024-06-01T08:00:00.000Z');

async function storeError(promise: Promise<unknown>, code: string): Promise<StoreError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe(code);
    return error as StoreError;
  }
  return expect.fail(`expected StoreError ${code}`);
}

/** A garden whose gardener seed has skills and knowledge (one of them nested). */
function seededGarden() {
  return makeGarden({
    'seeds/gardener/skills/reporting.md': '# Reporting\n\nSay what changed.\n',
    'seeds/gardener/skills/testing.md': '# Testing\n',
    'seeds/gardener/knowledge/layout.md': '# Layout\n',
    'seeds/gardener/knowledge/deep/more.md': '# More\n',
    'seeds/bare.md': '# Seed: bare\n',
  });
}

describe('commissionPlant', () => {
  it('creates plants/<name>/ with memory, skills and knowledge, copies the seed assets, writes meta.json', async () => {
    const garden = seededGarden();
    const { paths } = garden;
    const plant = await commissionPlant(paths, 'helper', 'gardener', { description: 'helps', now: NOW });
    expect(plant).toEqual({ name: 'helper', seed: 'gardener', status: 'active', commissioned_at: NOW.toISOString(), description: 'helps' });

    const dir = path.join(garden.root, 'plants', 'helper');
    expect(plantDir(paths, 'helper')).toBe(dir);
    for (const sub of PLANT_DIRS) expect(fs.statSync(path.join(dir, sub)).isDirectory(), sub).toBe(true);
    for (const rel of ['skills/reporting.md', 'skills/testing.md', 'knowledge/layout.md', 'knowledge/deep/more.md']) {
      expect(fs.readFileSync(path.join(dir, rel), 'utf8'), rel).toBe(fs.readFileSync(path.join(garden.root, 'seeds', 'gardener', rel), 'utf8'));
    }
    expect(fs.readdirSync(path.join(dir, 'memory'))).toEqual([]);
    const meta = readJson(path.join(dir, 'meta.json'));
    expect(meta).toEqual(plant);
    expect(validatePlant(meta)).toEqual([]);
    expect(eventsOfType(paths, 'PlantCommissioned')).toEqual([
      { ts: NOW.toISOString(), type: 'PlantCommissioned', plant: 'helper', detail: 'seed gardener' },
    ]);
  });

  it('the copies are independent of the seed', async () => {
    const garden = seededGarden();
    await commissionPlant(garden.paths, 'helper', 'gardener');
    fs.writeFileSync(path.join(garden.root, 'plants', 'helper', 'skills', 'reporting.md'), 'changed');
    expect(fs.readFileSync(path.join(garden.root, 'seeds', 'gardener', 'skills', 'reporting.md'), 'utf8')).toContain('Say what changed');
  });

  it('a seed without skills/ or knowledge/ gives empty directories', async () => {
    const garden = seededGarden();
    await commissionPlant(garden.paths, 'plain', 'bare');
    for (const sub of PLANT_DIRS) expect(fs.readdirSync(path.join(garden.root, 'plants', 'plain', sub)), sub).toEqual([]);
  });

  it('PLANT_EXISTS for a second commission, leaving the first intact', async () => {
    const garden = seededGarden();
    await commissionPlant(garden.paths, 'helper', 'gardener', { now: NOW });
    const metaFile = path.join(garden.root, 'plants', 'helper', 'meta.json');
    const before = fs.readFileSync(metaFile);
    const error = await storeError(commissionPlant(garden.paths, 'helper', 'bare', { now: LATER }), 'PLANT_EXISTS');
    expect(error.message).toContain('helper');
    expect(fs.readFileSync(metaFile).equals(before)).toBe(true);
    expect(eventsOfType(garden.paths, 'PlantCommissioned')).toHaveLength(1);
  });

  it('PLANT_EXISTS also for a plant directory without meta.json', async () => {
    const garden = seededGarden();
    fs.mkdirSync(path.join(garden.root, 'plants', 'squatter'), { recursive: true });
    await storeError(commissionPlant(garden.paths, 'squatter', 'gardener'), 'PLANT_EXISTS');
  });

  it('SEED_NOT_FOUND for a seed without seeds/<seed>.md, creating nothing', async () => {
    const garden = makeGarden({ 'seeds/orphan/skills/x.md': 'x' });
    const error = await storeError(commissionPlant(garden.paths, 'helper', 'missing'), 'SEED_NOT_FOUND');
    expect(error.message).toContain(seedFile(garden.paths, 'missing'));
    await storeError(commissionPlant(garden.paths, 'helper', 'orphan'), 'SEED_NOT_FOUND');
    expect(fs.existsSync(path.join(garden.root, 'plants', 'helper'))).toBe(false);
    expect(readLog(garden.paths)).toEqual([]);
  });

  it.each([['../evil'], ['a/b'], [''], ['X'], ['..'], ['.hidden'], ['a\\b'], ['Gardener'], ['/abs']])(
    'INVALID_PLANT_NAME for %j, creating nothing anywhere',
    async (name) => {
      const garden = seededGarden();
      // Where a name that escaped would land (the shared temp directory beside the garden is others' to change).
      const candidates = [path.resolve(garden.root, 'plants', name), path.resolve(garden.root, name), path.resolve(path.dirname(garden.root), name)].filter((p) => !fs.existsSync(p));
      await storeError(commissionPlant(garden.paths, name, 'gardener'), 'INVALID_PLANT_NAME');
      expect(fs.existsSync(path.join(garden.root, 'plants'))).toBe(false);
      expect(candidates.filter((p) => fs.existsSync(p))).toEqual([]);
      expect(fs.existsSync(path.join(garden.root, 'evil'))).toBe(false);
      expect(readLog(garden.paths)).toEqual([]);
    },
  );

  it.each([['../gardener'], ['Gardener'], ['']])('INVALID_PLANT_NAME for the seed name %j', async (seed) => {
    const garden = seededGarden();
    await storeError(commissionPlant(garden.paths, 'helper', seed), 'INVALID_PLANT_NAME');
    expect(fs.existsSync(path.join(garden.root, 'plants', 'helper'))).toBe(false);
  });
});

describe('readPlant and archivePlant', () => {
  it('readPlant returns the commissioned record', async () => {
    const garden = seededGarden();
    const plant = await commissionPlant(garden.paths, 'helper', 'gardener');
    expect(await readPlant(garden.paths, 'helper')).toEqual(plant);
  });

  it('PLANT_NOT_FOUND and INVALID_PLANT_NAME from readPlant', async () => {
    const garden = seededGarden();
    await storeError(readPlant(garden.paths, 'ghost'), 'PLANT_NOT_FOUND');
    await storeError(readPlant(garden.paths, '../ghost'), 'INVALID_PLANT_NAME');
  });

  it('archivePlant marks it archived, keeps its files and appends PlantArchived', async () => {
    const garden = seededGarden();
    const plant = await commissionPlant(garden.paths, 'helper', 'gardener', { now: NOW });
    fs.writeFileSync(path.join(garden.root, 'plants', 'helper', 'memory', 'MEMORY.md'), '# memory\n');
    const archived = await archivePlant(garden.paths, 'helper', LATER);
    expect(archived).toEqual({ ...plant, status: 'archived', archived_at: LATER.toISOString() });
    const meta = readJson(path.join(garden.root, 'plants', 'helper', 'meta.json'));
    expect(meta).toEqual(archived);
    expect(validatePlant(meta)).toEqual([]);
    expect(fs.readFileSync(path.join(garden.root, 'plants', 'helper', 'memory', 'MEMORY.md'), 'utf8')).toBe('# memory\n');
    expect(fs.existsSync(path.join(garden.root, 'plants', 'helper', 'skills', 'reporting.md'))).toBe(true);
    expect(eventsOfType(garden.paths, 'PlantArchived')).toEqual([{ ts: LATER.toISOString(), type: 'PlantArchived', plant: 'helper' }]);
  });

  it('archivePlant of an unknown plant is PLANT_NOT_FOUND', async () => {
    const garden = seededGarden();
    await storeError(archivePlant(garden.paths, 'ghost'), 'PLANT_NOT_FOUND');
    expect(readLog(garden.paths)).toEqual([]);
  });

  it('archivePlant of a plant with a malformed meta.json is INVALID_RECORD and changes nothing', async () => {
    const garden = seededGarden();
    await commissionPlant(garden.paths, 'helper', 'gardener');
    const file = path.join(garden.root, 'plants', 'helper', 'meta.json');
    fs.writeFileSync(file, '{ broken');
    const error = await storeError(archivePlant(garden.paths, 'helper'), 'INVALID_RECORD');
    expect(error.message).toContain(file);
    expect(fs.readFileSync(file, 'utf8')).toBe('{ broken');
  });
});

describe('listPlants', () => {
  it('is empty without a plants directory', async () => {
    const garden = seededGarden();
    expect(await listPlants(garden.paths)).toEqual({ plants: [], problems: [] });
  });

  it('lists plants by name and reports a malformed meta.json, keeping the file', async () => {
    const garden = seededGarden();
    const b = await commissionPlant(garden.paths, 'bravo', 'gardener');
    const a = await commissionPlant(garden.paths, 'alpha', 'bare');
    await commissionPlant(garden.paths, 'broken', 'bare');
    const brokenFile = path.join(garden.root, 'plants', 'broken', 'meta.json');
    fs.writeFileSync(brokenFile, '{"name": "broken",');
    const invalidFile = path.join(garden.root, 'plants', 'invalid', 'meta.json');
    writeJson(invalidFile, { name: 'invalid', seed: 'bare', status: 'withered', commissioned_at: NOW.toISOString() });
    fs.mkdirSync(path.join(garden.root, 'plants', 'Not-A-Plant'), { recursive: true });
    fs.writeFileSync(path.join(garden.root, 'plants', 'README.md'), 'notes');

    const list = await listPlants(garden.paths);
    expect(list.plants).toEqual([a, b]);
    expect(list.problems.map((p) => p.file)).toEqual([brokenFile, invalidFile]);
    expect(list.problems[0]!.message).toContain(brokenFile);
    expect(list.problems[1]!.message).toContain('INVALID_STATUS');
    expect(fs.readFileSync(brokenFile, 'utf8')).toBe('{"name": "broken",');
  });

  it('reports a plant directory without meta.json', async () => {
    const garden = seededGarden();
    fs.mkdirSync(path.join(garden.root, 'plants', 'empty'), { recursive: true });
    const list = await listPlants(garden.paths);
    expect(list.plants).toEqual([]);
    expect(list.problems.map((p) => p.file)).toEqual([path.join(garden.root, 'plants', 'empty', 'meta.json')]);
  });
});
