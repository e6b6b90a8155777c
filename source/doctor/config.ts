import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors.js';
import { findGardenRoot, loadGarden, type Garden } from '../garden/index.js';
import type { Problem } from './types.js';

/**
 * Finds and loads the garden doctor checks: `dir` itself, or with `search`
 * the nearest ancestor holding PAK2.toml. A PAK2.toml that does not parse or
 * validate (loadGarden's UserError, naming every problem) is one `config`
 * finding, and doctor stops there: without it the runtime root is unknown.
 *
 * @throws UserError when there is no garden at all (no PAK2.toml): that is a
 *   wrong argument, not a finding.
 */
export function loadForDoctor(dir: string, search: boolean): { garden: Garden } | { root: string; problem: Problem } {
  const root = search ? findGardenRoot(dir) : path.resolve(dir);
  const file = path.join(root, 'PAK2.toml');
  if (!fs.existsSync(file)) return { garden: loadGarden(root) }; // throws its own "no PAK2.toml" error
  try {
    return { garden: loadGarden(root) };
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    const message = error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message;
    return { root, problem: { check: 'config', file, message: `${message}; doctor stops here (the runtime root is unknown)${error.hint ? `; ${error.hint}` : ''}` } };
  }
}
