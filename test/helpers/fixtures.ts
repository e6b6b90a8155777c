/**
 * Temp-directory fixtures for unit tests. Every directory made here is
 * recorded and removed by {@link cleanupFixtures}; call it from `afterEach`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadGarden, type Garden, type GardenPaths } from '../../source/garden/index.js';

/** Relative path → file content. `null` leaves a default file out. */
export type FileMap = Record<string, string | Buffer | null>;

/** A loaded temp garden and its root directory. */
export interface TempGarden extends Garden {
  root: string;
}

/** PAK2.toml of the default fixture garden: split layout under `.runtime`. */
export const DEFAULT_TOML = '[runtime]\nroot = ".runtime"\n';

/** Seed prompt of the default fixture garden. */
export const DEFAULT_SEED = '# Seed: gardener\n\nYou look after the test garden.\n';

/** The files every {@link makeGarden} garden starts with (override or drop with `null`). */
export const DEFAULT_GARDEN_FILES: Readonly<Record<string, string>> = {
  'PAK2.toml': DEFAULT_TOML,
  'MOTIVATION.md': '# Motivation\n\nUnit-test garden.\n',
  'seeds/gardener.md': DEFAULT_SEED,
};

const created: string[] = [];

/** Writes `files` (relative paths) under `root`, creating parent directories. */
export function writeFiles(root: string, files: FileMap): void {
  for (const [rel, content] of Object.entries(files)) {
    if (content === null) continue;
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}

/** A fresh temp directory holding `files`; removed by {@link cleanupFixtures}. */
export function makeTempDir(files: FileMap = {}, prefix = 'pak2-unit-'): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(root);
  writeFiles(root, files);
  return root;
}

/**
 * A temp garden built from {@link DEFAULT_GARDEN_FILES} merged with `files`,
 * loaded with loadGarden. Pass `{ defaults: false }` to start from nothing.
 */
export function makeGarden(files: FileMap = {}, options: { defaults?: boolean } = {}): TempGarden {
  const all: FileMap = options.defaults === false ? { ...files } : { ...DEFAULT_GARDEN_FILES, ...files };
  const root = makeTempDir(all, 'pak2-garden-');
  return { root, ...loadGarden(root) };
}

/** Removes every directory made by this module since the last call. */
export function cleanupFixtures(): void {
  while (created.length > 0) {
    const dir = created.pop()!;
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(`${dir}.lock`, { recursive: true, force: true });
  }
}

/** Every line of the coordinator event log, parsed (no validation). */
export function readLog(paths: GardenPaths): Array<Record<string, unknown>> {
  let text: string;
  try {
    text = fs.readFileSync(paths.coordinatorLog, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The log's events of one type. */
export function eventsOfType(paths: GardenPaths, type: string): Array<Record<string, unknown>> {
  // Every event carries a ULID id (seed 004); the tests compare the rest.
  return readLog(paths)
    .filter((event) => event.type === type)
    .map(({ id, ...rest }) => {
      if (typeof id !== 'string' || !/^[0-9A-HJKMNP-TV-Z]{26}$/.test(id)) throw new Error(`event without a ULID id: ${JSON.stringify({ id, ...rest })}`);
      return rest;
    });
}

/** Reads a JSON file as a plain object. */
export function readJson(file: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** Writes `data` as pretty JSON, creating the parent directory. */
export function writeJson(file: string, data: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
}
