/**
 * Where a loaded garden's records live (docs/store/level2.md): its
 * `[store].url` or `PAK2_STORE_URL` names a PostgreSQL store, attached here
 * to its paths (it connects on first use); without one, the seeds' files.
 */
import type { Garden } from '../garden/index.js';
import { storeUrlOf, storeUrlProblem } from '../garden/index.js';
import { UserError } from '../errors.js';
import { attachStore, storeOf, type GardenStore } from './backend.js';
import { PostgresStore } from './postgres/store.js';

/**
 * Attaches the garden's configured store (once per runtime root in this
 * process), and returns it; undefined for a file garden.
 *
 * @throws UserError naming `PAK2_STORE_URL` when that variable holds no usable URL (`[store].url` was checked with PAK2.toml).
 */
export function attachConfiguredStore(garden: Garden, env: NodeJS.ProcessEnv = process.env): GardenStore | undefined {
  const chosen = storeUrlOf(garden.config.storeUrl, env);
  if (!chosen) return undefined;
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
