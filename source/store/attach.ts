/**
 * Where a loaded garden's records live (docs/store/level2.md): its
 * `[store].url` or `PAK2_STORE_URL` names a PostgreSQL store, attached here
 * to its paths (it connects on first use); without one, the seeds' files.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Garden } from '../garden/index.js';
import { storeUrlOf, storeUrlProblem } from '../garden/index.js';
import { UserError } from '../errors.js';
import { attachStore, storeOf, type GardenStore } from './backend.js';
import { PostgresStore } from './postgres/store.js';

/**
 * Attaches the garden's configured store (once per runtime root in this
 * process), and returns it; undefined for a file garden.
 *
 * @throws UserError naming `PAK2_STORE_URL` when that variable holds no usable URL (`[store].url` was checked with PAK2.toml);
 *   naming the marker when no store is named but the runtime root's records were moved into one ({@link markMovedToStore}).
 */
export function attachConfiguredStore(garden: Garden, env: NodeJS.ProcessEnv = process.env): GardenStore | undefined {
  const chosen = storeUrlOf(garden.config.storeUrl, env);
  if (!chosen) {
    refuseMovedFiles(garden);
    return undefined;
  }
  const existing = storeOf(garden.paths);
  if (existing) return existing;
  if (chosen.from === 'PAK2_STORE_URL') {
    const problem = storeUrlProblem(chosen.url);
    if (problem) throw new UserError(`PAK2_STORE_URL: ${problem}`, { hint: 'set it to postgres://user@host:port/database, or unset it to use the garden\'s files' });
  }
  const store = new PostgresStore(chosen.url);
  attachStore(garden.paths, store);
  return store;
}

/** `<runtime-root>/moved-to-store.json`: written by `pak2 store import` into the runtime root it moved. */
export const MOVED_MARKER = 'moved-to-store.json';

/**
 * Marks a runtime root whose records `pak2 store import` moved into the
 * store at `where` (password hidden): from then on a process that names no
 * store refuses these files instead of working on a stale copy.
 */
export function markMovedToStore(runtimeRoot: string, where: string, now: Date = new Date()): string {
  const file = path.join(runtimeRoot, MOVED_MARKER);
  fs.writeFileSync(file, `${JSON.stringify({ moved_to: where, at: now.toISOString(), by: 'pak2 store import' }, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** @throws UserError when the garden names no store but its runtime root was moved into one. */
function refuseMovedFiles(garden: Garden): void {
  const file = path.join(garden.paths.runtimeRoot, MOVED_MARKER);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return;
  }
  let moved: { moved_to?: unknown; at?: unknown } = {};
  try {
    moved = JSON.parse(text) as typeof moved;
  } catch {
    // a damaged marker still says the records moved
  }
  const where = typeof moved.moved_to === 'string' ? moved.moved_to : 'a PostgreSQL store';
  throw new UserError(`${file}: this garden's records were moved to ${where}${typeof moved.at === 'string' ? ` on ${moved.at}` : ''} (pak2 store import); the files here are a stale copy`, {
    hint: 'name the store: [store] url in PAK2.toml, or PAK2_STORE_URL; to work on these files again instead, remove that file',
  });
}
