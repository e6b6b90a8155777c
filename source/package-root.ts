import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The installed pak2 package's root (where `seeds/`, `schema/`, `docs/` and
 * `examples/` ship): the nearest directory above this module holding
 * package.json. Works from `source/` (tsx), `dist/` and the bundle's chunks
 * (`dist/bundle/chunks/`) alike.
 */
export const PACKAGE_ROOT = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(here, '..');
  }
})();

/** The installed package's version, from its package.json. */
export const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();
