import fs from 'node:fs';
import path from 'node:path';
import { GARDEN_NAME_PATTERN } from '../contracts/index.js';
import { UserError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { GARDEN_TEMPLATE_ENTRIES, gardenNameFor, initialConfig } from './init.js';

/**
 * The authored export (seed 002, "Authored export contract"), mapped to pak2:
 * the garden template plus the code, its tests and what builds and checks it.
 * Nothing else at the package root is exported.
 */
export const AUTHORED_EXPORT_ENTRIES = [
  'source',
  'bin',
  'test',
  'scripts',
  'bench',
  '.ci',
  ...GARDEN_TEMPLATE_ENTRIES,
  'README.md',
  'LICENSE',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'vitest.config.ts',
] as const;

/** Files `pak2 publish` writes fresh into the destination instead of copying them. */
export const EXPORT_LOCAL_FILES = ['.gitignore', 'PAK2.toml'] as const;

/**
 * Live, garden-local or generated paths: never exported. At the root they are
 * simply not in {@link AUTHORED_EXPORT_ENTRIES}; the first four are also
 * skipped at any depth inside an exported directory.
 */
export const EXCLUDED_PATHS = ['.git', '.runtime', 'node_modules', 'dist', 'goals', 'runs', 'events', 'conversations', 'inbox', 'dashboard', 'plants', 'demo-garden'] as const;
const EXCLUDED_AT_ANY_DEPTH = new Set(['.git', '.runtime', 'node_modules', 'dist']);

/** The export-local .gitignore. */
export const EXPORT_GITIGNORE = `# pak2 runtime state (goals, runs, events, inbox, conversations): not authored files
.runtime/
# dependencies and build output
node_modules/
dist/
coverage/
*.log
/demo-garden/
`;

/** Options of {@link publishExport}. */
export interface PublishOptions {
  /** Where the export comes from; default: the installed package ({@link PACKAGE_ROOT}). */
  packageRoot?: string;
  /** `[garden].name` of the export-local PAK2.toml; default: the destination's name, made safe. */
  name?: string;
}

/** What {@link publishExport} did. */
export interface PublishReport {
  /** The destination, absolute. */
  destination: string;
  /** The authored entries copied, in {@link AUTHORED_EXPORT_ENTRIES} order (directories end in `/`). */
  exported: string[];
  /** The export-local files written fresh. */
  written: string[];
  /** True when the destination was a git checkout whose `.git` was kept. */
  keptGit: boolean;
  /** Entries of an existing checkout that were removed before the export (sorted). */
  removed: string[];
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** `fs.realpathSync` of the path, or of its nearest existing ancestor joined with the rest. */
function realish(p: string): string {
  const rest: string[] = [];
  let at = p;
  while (!fs.existsSync(at)) {
    rest.unshift(path.basename(at));
    const up = path.dirname(at);
    if (up === at) break;
    at = up;
  }
  return path.join(fs.realpathSync(at), ...rest);
}

/**
 * Writes the clean authored export of the pak2 package into `dir` (seed 002,
 * "Authored export contract": `pak2 publish`). Filesystem only: it runs no git
 * command (no init, add, commit, push or tag).
 *
 * - Copies {@link AUTHORED_EXPORT_ENTRIES} from the package root, skipping
 *   `.git`, `.runtime`, `node_modules` and `dist` at any depth; writes a
 *   fresh export-local `.gitignore` and `PAK2.toml`. examples/ (with
 *   charter-quickstart.md) is exported; no root CHARTER.md is written.
 * - `dir` may be new (its parent existing), empty, or a git checkout (it holds
 *   `.git`): then `.git` is kept untouched and every other entry is replaced.
 * - `name` is validated like `pak2 init --name`.
 *
 * Everything is checked before anything is touched.
 *
 * @throws UserError when `dir` is non-empty without `.git`, is a file, has no
 *   existing parent, overlaps the package root, or when the package root lacks
 *   part of the authored surface (an npm-installed pak2 ships no source/ or
 *   test/; publish from a checkout).
 */
export function publishExport(dir: string, options: PublishOptions = {}): PublishReport {
  const packageRoot = path.resolve(options.packageRoot ?? PACKAGE_ROOT);
  const dest = path.resolve(dir);

  const missing = AUTHORED_EXPORT_ENTRIES.filter((entry) => !fs.existsSync(path.join(packageRoot, entry)));
  if (missing.length) {
    throw new UserError(`${packageRoot}: not a complete pak2 checkout; missing ${missing.join(', ')}`, { hint: 'pak2 publish exports from a pak2 source checkout, not from an npm-installed package', exitCode: 1 });
  }
  const realRoot = fs.realpathSync(packageRoot);
  const realDest = realish(dest);
  if (isInside(realDest, realRoot) || isInside(realRoot, realDest)) {
    throw new UserError(`DIR ${dir}: overlaps the pak2 package at ${packageRoot}; publish into a directory outside it`);
  }

  let keptGit = false;
  let stale: string[] = [];
  if (fs.existsSync(dest)) {
    if (!fs.statSync(dest).isDirectory()) throw new UserError(`DIR ${dir}: exists and is not a directory`);
    const entries = fs.readdirSync(dest);
    keptGit = entries.includes('.git');
    if (entries.length && !keptGit) {
      throw new UserError(`DIR ${dir}: not empty and not a git checkout; pak2 publish writes into a new or empty directory, or replaces the worktree of a checkout (one holding .git)`);
    }
    stale = entries.filter((name) => name !== '.git').sort();
  } else {
    const parent = path.dirname(dest);
    if (!fs.existsSync(parent) || !fs.statSync(parent).isDirectory()) throw new UserError(`DIR ${dir}: its parent ${parent} is not an existing directory`);
  }
  const name = options.name ?? gardenNameFor(dest);
  if (!GARDEN_NAME_PATTERN.test(name)) throw new UserError(`--name ${name}: use lower-case letters, digits, '.', '_' and '-'`);

  // Checked: now write. The checkout's .git is never opened, only left in place.
  if (!fs.existsSync(dest)) fs.mkdirSync(dest);
  for (const entry of stale) fs.rmSync(path.join(dest, entry), { recursive: true, force: true });

  const exported: string[] = [];
  for (const entry of AUTHORED_EXPORT_ENTRIES) {
    const from = path.join(packageRoot, entry);
    const isDir = fs.statSync(from).isDirectory();
    fs.cpSync(from, path.join(dest, entry), {
      recursive: true,
      filter: (source) => source === from || !EXCLUDED_AT_ANY_DEPTH.has(path.basename(source)),
    });
    exported.push(isDir ? `${entry}/` : entry);
  }
  fs.writeFileSync(path.join(dest, '.gitignore'), EXPORT_GITIGNORE);
  fs.writeFileSync(path.join(dest, 'PAK2.toml'), initialConfig(name, 'claude'));
  return { destination: dest, exported, written: [...EXPORT_LOCAL_FILES], keptGit, removed: stale };
}
