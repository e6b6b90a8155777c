import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
/**
 * The installed pak2 package's root (where `seeds/`, `schema/`, `docs/` and
 * `examples/` ship). Works from `source/` (tsx) and `dist/` alike: both sit
 * one level below the root.
 */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The installed package's version, from its package.json. */
export const PACKAGE_VERSION = (() => {
    try {
        return JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')).version;
    }
    catch {
        return 'unknown';
    }
})();
//# sourceMappingURL=package-root.js.map