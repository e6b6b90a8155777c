import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The installed pak2 package's root (where `seeds/`, `schema/`, `docs/` and
 * `examples/` ship). Works from `source/` (tsx) and `dist/` alike: both sit
 * one level below the root.
 */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
