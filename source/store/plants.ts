import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { formatIssue, PLANT_NAME_PATTERN, validatePlant, type PlantRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { appendEvent } from './events.js';
import { readJsonFile, StoreError, writeJsonAtomic } from './files.js';

/** Directories inside `plants/<name>/` (seed 002, "File layout"). */
export const PLANT_DIRS = ['memory', 'skills', 'knowledge'] as const;

/** Checks a plant name before it is ever joined into a path. @throws StoreError INVALID_PLANT_NAME. */
export function assertPlantName(name: string, what = 'plant'): void {
  if (!PLANT_NAME_PATTERN.test(name)) {
    throw new StoreError(
      'INVALID_PLANT_NAME',
      `${what} name ${JSON.stringify(name)} is invalid: use lower-case letters, digits and inner hyphens, starting with a letter (e.g. gardener)`,
    );
  }
}

/** `plants/<name>/`, after checking the name. */
export function plantDir(paths: GardenPaths, name: string): string {
  assertPlantName(name);
  return path.join(paths.plantsDir, name);
}

/** `seeds/<seed>.md`, after checking the seed name. */
export function seedFile(paths: GardenPaths, seed: string): string {
  assertPlantName(seed, 'seed');
  return path.join(paths.seedsDir, `${seed}.md`);
}

/**
 * Commissions a plant from a seed (seed 002, plants.py): creates
 * `plants/<name>/{memory,skills,knowledge}/`, copies `seeds/<seed>/skills/`
 * and `seeds/<seed>/knowledge/` into it, writes meta.json and appends
 * PlantCommissioned.
 *
 * @throws StoreError INVALID_PLANT_NAME, SEED_NOT_FOUND (no `seeds/<seed>.md`), PLANT_EXISTS, IO_ERROR.
 */
export async function commissionPlant(
  paths: GardenPaths,
  name: string,
  seed: string,
  options: { description?: string; now?: Date } = {},
): Promise<PlantRecord> {
  const dir = plantDir(paths, name);
  const seedPath = seedFile(paths, seed);
  if (!fs.existsSync(seedPath)) throw new StoreError('SEED_NOT_FOUND', `no seed ${seed}: ${seedPath} does not exist`, seedPath);
  await fsp.mkdir(paths.plantsDir, { recursive: true });
  try {
    await fsp.mkdir(dir);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) throw new StoreError('PLANT_EXISTS', `plant ${name} already exists (${dir})`, dir);
    throw new StoreError('IO_ERROR', `${dir}: ${(error as Error).message}`, dir);
  }
  for (const sub of PLANT_DIRS) await fsp.mkdir(path.join(dir, sub), { recursive: true });
  for (const sub of ['skills', 'knowledge'] as const) {
    const from = path.join(paths.seedsDir, seed, sub);
    if (fs.existsSync(from)) await fsp.cp(from, path.join(dir, sub), { recursive: true });
  }
  const now = options.now ?? new Date();
  const record: PlantRecord = {
    name,
    seed,
    status: 'active',
    commissioned_at: now.toISOString(),
    ...(options.description ? { description: options.description } : {}),
  };
  await writeJsonAtomic(path.join(dir, 'meta.json'), record);
  await appendEvent(paths, { type: 'PlantCommissioned', plant: name, detail: `seed ${seed}` }, now);
  return record;
}

/**
 * Reads and validates `plants/<name>/meta.json`.
 *
 * @throws StoreError INVALID_PLANT_NAME, PLANT_NOT_FOUND, INVALID_RECORD.
 */
export async function readPlant(paths: GardenPaths, name: string): Promise<PlantRecord> {
  const file = path.join(plantDir(paths, name), 'meta.json');
  const read = await readJsonFile(file);
  if (!read.ok) {
    if (read.missing) throw new StoreError('PLANT_NOT_FOUND', `no plant ${name} (looked for ${file})`, file);
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validatePlant(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  return read.value as PlantRecord;
}

/** Marks a plant archived (its files stay). @throws StoreError as {@link readPlant}, IO_ERROR. */
export async function archivePlant(paths: GardenPaths, name: string, now: Date = new Date()): Promise<PlantRecord> {
  const plant = await readPlant(paths, name);
  const next: PlantRecord = { ...plant, status: 'archived', archived_at: now.toISOString() };
  await writeJsonAtomic(path.join(plantDir(paths, name), 'meta.json'), next);
  await appendEvent(paths, { type: 'PlantArchived', plant: name }, now);
  return next;
}

/** Every plant with a readable meta.json; the others are reported. */
export async function listPlants(paths: GardenPaths): Promise<{ plants: PlantRecord[]; problems: { file: string; message: string }[] }> {
  let names: string[];
  try {
    names = await fsp.readdir(paths.plantsDir);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { plants: [], problems: [] };
    throw error;
  }
  const plants: PlantRecord[] = [];
  const problems: { file: string; message: string }[] = [];
  for (const name of names.sort()) {
    if (!PLANT_NAME_PATTERN.test(name)) continue;
    try {
      plants.push(await readPlant(paths, name));
    } catch (error) {
      problems.push({ file: path.join(paths.plantsDir, name, 'meta.json'), message: (error as Error).message });
    }
  }
  return { plants, problems };
}

/** The `.md` files under `dir`, depth first in name order, as absolute paths; a missing or unreadable directory has none. */
export function markdownFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (current: string) => {
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of names.sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && entry.name.endsWith('.md')) found.push(full);
    }
  };
  walk(dir);
  return found;
}

/** `- skills/x.md — Heading; Heading` lines for every .md file under `dir` (headings only, never the text). */
export function indexMarkdown(dir: string, label: string): string[] {
  const entries = markdownFiles(dir).map((full) => {
    let text = '';
    try {
      text = fs.readFileSync(full, 'utf8');
    } catch {
      // unreadable: listed without headings
    }
    const headings = text
      .split('\n')
      .filter((line) => /^#{1,3} /.test(line))
      .map((line) => line.replace(/^#+ /, '').trim())
      .slice(0, 8);
    const rel = path.relative(path.dirname(dir), full).split(path.sep).join('/');
    return `- ${rel}${headings.length ? ` — ${headings.join('; ')}` : ''}`;
  });
  return entries.length ? entries : [`(no ${label} yet)`];
}

/** The most bytes one plant document may hold to be sent or written over the server (docs/runners/level2.md). */
export const MAX_PLANT_DOCUMENT_BYTES = 1024 * 1024;

/**
 * A plant directory's documents: the `.md` files under its `memory/`,
 * `skills/` and `knowledge/`, keyed by their path relative to it
 * (`memory/MEMORY.md`), at most {@link MAX_PLANT_DOCUMENT_BYTES} each (a
 * larger or unreadable one is left out). What a runner's claim carries and
 * `documents_upsert` writes back.
 */
export function readPlantDocuments(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const sub of ['memory', 'skills', 'knowledge']) {
    for (const full of markdownFiles(path.join(dir, sub))) {
      try {
        if (fs.statSync(full).size > MAX_PLANT_DOCUMENT_BYTES) continue;
        out[path.relative(dir, full).split(path.sep).join('/')] = fs.readFileSync(full, 'utf8');
      } catch {
        // unreadable: not a document that can be sent
      }
    }
  }
  return out;
}

