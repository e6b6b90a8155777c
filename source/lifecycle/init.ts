import fs from 'node:fs';
import path from 'node:path';
import { GARDEN_NAME_PATTERN } from '../contracts/index.js';
import { UserError } from '../errors.js';
import { setGardenName } from '../garden/index.js';
import { PACKAGE_ROOT } from '../package-root.js';

/** Options of {@link initGarden}. */
export interface InitOptions {
  /** `[garden].name`; default: the directory's name, made safe. */
  name?: string;
  /** `[defaults].driver`; default `claude`. */
  driver?: string;
  /** Where the template comes from; default: the installed package ({@link PACKAGE_ROOT}). */
  packageRoot?: string;
}

/** A safe `[garden].name` from a directory's name (`garden` when nothing safe is left). */
export function gardenNameFor(dir: string): string {
  const base = path
    .basename(path.resolve(dir))
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return GARDEN_NAME_PATTERN.test(base) ? base : 'garden';
}

/**
 * The PAK2.toml `pak2 init` writes. `home` is `[garden].home`, written only
 * when pak2 adopts a repository (`.pak2`): pak2's own files live there.
 */
export function initialConfig(name: string, driver: string, home?: string): string {
  return [
    `# pak2 garden configuration. Every key is documented in ${home ? `${home}/` : ''}PAK2.toml.example.`,
    '',
    '[runtime]',
    '# Goals, runs, events and the inbox live here, apart from authored files.',
    'root = ".runtime"',
    '',
    '[garden]',
    `name = "${name}"`,
    ...(home ? ['# pak2\'s own files in this repository: seeds/, plants/, MOTIVATION.md, CHARTER.md, GARDEN.md, DONE.md.', `home = "${home}"`] : []),
    '',
    '[defaults]',
    `driver = "${driver}"`,
    '',
    '[coordinator]',
    'interval_seconds = 60',
    'watchdog_seconds = 300',
    'run_timeout_seconds = 3600',
    'max_concurrent_runs = 1',
    '',
    ...(driver === 'command'
      ? [`# The command driver runs your executable with the prompt on stdin (${home ? "pak2's " : ''}docs/run/level2.md).`, '[drivers.command]', '# command = ["node", "tools/my-agent.mjs"]', '']
      : []),
  ].join('\n');
}

/**
 * The garden template (seed 002, "Startup contract"): the authored files
 * `pak2 init` copies from the package into a fresh garden. They are also part
 * of the authored export (`pak2 publish`, publish.ts). The code (source/,
 * bin/, test/) stays in the installed package. MOTIVATION.md is the package's
 * own root file: its text is garden-neutral and serves every new garden.
 */
export const GARDEN_TEMPLATE_ENTRIES = [
  'seeds',
  'docs',
  'schema',
  'examples',
  'MOTIVATION.md',
  'GARDEN.md',
  'DONE.md',
  'PAK2.toml.example',
  'CHARTER.md.example',
] as const;

/** The example `pak2 init` writes as the garden's ready-to-run CHARTER.md. */
export const QUICKSTART_CHARTER = 'examples/charter-quickstart.md';

/** The .gitignore `pak2 init` writes. */
export const GARDEN_GITIGNORE = '# pak2 runtime state: goals, runs, events (not authored files)\n.runtime/\n';

/** The refusal of a directory that is neither empty nor a git repository: it says how to adopt it. */
export const NOT_EMPTY = (dir: string) =>
  `DIR ${dir}: not empty and not a git repository; pak2 init creates a garden in a new or empty directory, or adopts a git repository (to adopt this one: git init, then pak2 init again)`;

/** True when `root` holds nothing but, at most, `.git`. */
export function isEmptyDir(root: string): boolean {
  return fs.readdirSync(root).every((name) => name === '.git');
}

/** Refuses a garden inside a garden: its agents would work in the outer garden's repository and the two runtimes would mix. */
export function refuseInsideGarden(dir: string, root: string): void {
  for (let above = path.dirname(root); ; above = path.dirname(above)) {
    if (fs.existsSync(path.join(above, 'PAK2.toml'))) throw new UserError(`DIR ${dir}: inside the garden at ${above} (it holds PAK2.toml); create the new garden outside it`);
    if (path.dirname(above) === above) break;
  }
}

/** `--name` (default: from the directory's name) and `--driver` (default claude), checked. */
export function checkOptions(root: string, options: InitOptions): { name: string; driver: string } {
  const name = options.name ?? gardenNameFor(root);
  setGardenName(name);
  const driver = options.driver ?? 'claude';
  if (!['claude', 'codex', 'command'].includes(driver)) throw new UserError(`--driver ${driver}: must be claude, codex or command`);
  return { name, driver };
}

/** Refuses a package that lacks part of the template (before anything is written). */
export function checkTemplate(packageRoot: string, entries: readonly string[]): void {
  const missing = entries.filter((entry) => !fs.existsSync(path.join(packageRoot, entry)));
  if (missing.length) throw new UserError(`the pak2 package at ${packageRoot} lacks ${missing.join(', ')}; reinstall pak2`, { exitCode: 1 });
}

/**
 * Creates a fresh garden in `dir` (seed 002, "Startup contract": `pak2 init`):
 * the garden template ({@link GARDEN_TEMPLATE_ENTRIES}) copied from the
 * package, a ready-to-run CHARTER.md from examples/charter-quickstart.md,
 * PAK2.toml with a split runtime root and a .gitignore for the runtime root.
 * The code stays in the installed package.
 *
 * A repository with files of its own is adopted instead ({@link initOrAdopt},
 * adopt.ts); this function only makes a garden of its own.
 *
 * @throws UserError when `dir` exists and is not empty (only `.git` is
 *   allowed), names a file, its parent does not exist, or it lies inside
 *   another garden (an ancestor holds PAK2.toml); for a bad `--name`
 *   or `--driver`; when the package lacks part of the template.
 * @returns the files written, relative to `dir` (directories end in `/`).
 */
export function initGarden(dir: string, options: InitOptions = {}): string[] {
  const root = path.resolve(dir);
  const packageRoot = path.resolve(options.packageRoot ?? PACKAGE_ROOT);
  if (fs.existsSync(root)) {
    if (!fs.statSync(root).isDirectory()) throw new UserError(`DIR ${dir}: exists and is not a directory`);
    // An empty git checkout (only .git) counts as empty: a fresh repository can become a garden.
    if (!isEmptyDir(root)) throw new UserError(NOT_EMPTY(dir));
  } else {
    const parent = path.dirname(root);
    if (!fs.existsSync(parent) || !fs.statSync(parent).isDirectory()) throw new UserError(`DIR ${dir}: its parent ${parent} is not an existing directory`);
  }
  refuseInsideGarden(dir, root);
  const { name, driver } = checkOptions(root, options);
  checkTemplate(packageRoot, [...GARDEN_TEMPLATE_ENTRIES, QUICKSTART_CHARTER]);
  if (!fs.existsSync(root)) fs.mkdirSync(root);
  const written: string[] = [];
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
    written.push(rel);
  };
  write('PAK2.toml', initialConfig(name, driver));
  write('CHARTER.md', fs.readFileSync(path.join(packageRoot, QUICKSTART_CHARTER), 'utf8'));
  for (const entry of GARDEN_TEMPLATE_ENTRIES) {
    const from = path.join(packageRoot, entry);
    const isDir = fs.statSync(from).isDirectory();
    fs.cpSync(from, path.join(root, entry), { recursive: true });
    written.push(isDir ? `${entry}/` : entry);
  }
  write('.gitignore', GARDEN_GITIGNORE);
  return written;
}
