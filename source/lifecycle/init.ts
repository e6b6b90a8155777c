import fs from 'node:fs';
import path from 'node:path';
import { GARDEN_NAME_PATTERN } from '../contracts/index.js';
import { UserError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';

/** Options of {@link initGarden}. */
export interface InitOptions {
  /** `[garden].name`; default: the directory's name, made safe. */
  name?: string;
  /** `[defaults].driver`; default `claude`. */
  driver?: string;
}

function gardenNameFor(dir: string): string {
  const base = path
    .basename(path.resolve(dir))
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return GARDEN_NAME_PATTERN.test(base) ? base : 'garden';
}

/** The PAK2.toml `pak2 init` writes. */
export function initialConfig(name: string, driver: string): string {
  return [
    '# pak2 garden configuration. Every key is documented in PAK2.toml.example.',
    '',
    '[runtime]',
    '# Goals, runs, events and the inbox live here, apart from authored files.',
    'root = ".runtime"',
    '',
    '[garden]',
    `name = "${name}"`,
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
  ].join('\n');
}

const MOTIVATION = `# Motivation

This garden exists to get real work done on this repository by coding agents,
with every step recorded so a person can see, steer and trust what happened.

Work in small, verifiable steps. Leave the repository better than you found it.
Say plainly what you did not do or could not verify.
`;

/**
 * Creates a fresh garden in `dir` (seed 002, "Startup contract": `pak2 init`):
 * PAK2.toml with a split runtime root, MOTIVATION.md, the shipped seeds/ and a
 * .gitignore for the runtime root. The code stays in the installed package.
 *
 * @throws UserError when `dir` exists and is not empty, or names a file.
 * @returns the files written, relative to `dir`.
 */
export function initGarden(dir: string, options: InitOptions = {}): string[] {
  const root = path.resolve(dir);
  if (fs.existsSync(root)) {
    if (!fs.statSync(root).isDirectory()) throw new UserError(`DIR ${dir}: exists and is not a directory`);
    if (fs.readdirSync(root).length > 0) throw new UserError(`DIR ${dir}: not empty; pak2 init only writes into a new or empty directory`);
  }
  const name = options.name ?? gardenNameFor(root);
  if (!GARDEN_NAME_PATTERN.test(name)) throw new UserError(`--name ${name}: use lower-case letters, digits, '.', '_' and '-'`);
  fs.mkdirSync(root, { recursive: true });
  const written: string[] = [];
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
    written.push(rel);
  };
  write('PAK2.toml', initialConfig(name, options.driver ?? 'claude'));
  write('MOTIVATION.md', MOTIVATION);
  write('.gitignore', '# pak2 runtime state (it has its own history under .runtime/.git)\n.runtime/\n');
  fs.cpSync(path.join(PACKAGE_ROOT, 'seeds'), path.join(root, 'seeds'), { recursive: true });
  written.push('seeds/');
  return written;
}
