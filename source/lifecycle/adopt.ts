/**
 * `pak2 init` in the operator's own repository (docs/startup/level2.md,
 * "pak2 in your own repository"): the repository is adopted, not filled with
 * pak2's template. pak2 writes `PAK2.toml` and one folder of its own,
 * `.pak2/` (seeds, MOTIVATION.md, CHARTER.md, GARDEN.md, DONE.md, the two
 * examples), and ignores `.runtime/` in `.git/info/exclude`, so no file the
 * project tracks is touched. pak2's docs, schemas and examples stay in the
 * installed package. A new or empty directory still gets the whole template
 * (init.ts, seed 002 "Startup contract").
 */
import fs from 'node:fs';
import path from 'node:path';
import { gardenPaths } from '../garden/index.js';
import { authoredGitEnv, runGit } from '../history/index.js';
import { UserError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { checkOptions, checkTemplate, initGarden, initialConfig, isEmptyDir, NOT_EMPTY, QUICKSTART_CHARTER, refuseInsideGarden, type InitOptions } from './init.js';
import { appendIgnore, gardenRepo, planIgnore, runtimeIgnored, type IgnorePlan } from './runtime-ignore.js';
import { findExecutable } from './which.js';

/** pak2's own folder in an adopted repository: `[garden].home` of the PAK2.toml init writes there. */
export const ADOPT_HOME = '.pak2';

/**
 * What `pak2 init` copies from the package into `.pak2/` of an adopted
 * repository (CHARTER.md is written beside them from
 * examples/charter-quickstart.md). Not docs/, schema/ or examples/: they are
 * pak2's reference, read from the installed package, and would clash with the
 * project's own.
 */
export const ADOPT_TEMPLATE_ENTRIES = ['seeds', 'MOTIVATION.md', 'GARDEN.md', 'DONE.md', 'CHARTER.md.example', 'PAK2.toml.example'] as const;

/** What `pak2 init` did. Paths in `written` are relative to `root` (directories end in `/`). */
export type InitReport =
  | { mode: 'fresh'; root: string; written: string[] }
  | {
      mode: 'adopt';
      root: string;
      written: string[];
      /** The ignore line init added, or where git already ignores the runtime root. */
      ignore: { added: true; file: string; pattern: string } | { added: false; by?: string };
      /** The operator's uncommitted changes to tracked files, left as they were. */
      uncommitted: number;
    };

/**
 * `pak2 init DIR`: a new or empty directory (or one holding only `.git`)
 * becomes a fresh garden with the whole template ({@link initGarden}); the
 * top of a git repository with files of its own is adopted
 * ({@link adoptRepository}); any other non-empty directory is refused,
 * saying how to adopt it.
 *
 * @throws UserError for every refusal, before anything is written.
 */
export async function initOrAdopt(dir: string, options: InitOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<InitReport> {
  const root = path.resolve(dir);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory() || isEmptyDir(root)) return { mode: 'fresh', root, written: initGarden(dir, options) };
  return adoptRepository(dir, options, env);
}

/**
 * Adopts the git repository at `dir` as a garden: writes PAK2.toml (with
 * `[garden].home = ".pak2"`), `.pak2/` ({@link ADOPT_TEMPLATE_ENTRIES} and
 * CHARTER.md), and `/.runtime/` in the repository's `.git/info/exclude`
 * unless git ignores it already. Nothing else is written: the project's
 * tracked files, its uncommitted changes and its index stay as they were.
 *
 * @throws UserError (nothing written) when `dir` is not the top of a git
 *   work tree (naming the top when it lies inside one), lies inside a garden,
 *   holds PAK2.toml or `.pak2` already, for a bad `--name` or `--driver`,
 *   when git is absent, or when the package lacks part of the template.
 */
export async function adoptRepository(dir: string, options: InitOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<InitReport> {
  const root = path.resolve(dir);
  const packageRoot = path.resolve(options.packageRoot ?? PACKAGE_ROOT);
  const configFile = path.join(root, 'PAK2.toml');
  if (fs.existsSync(configFile)) throw new UserError(`${configFile}: exists; this directory is a garden already (next: pak2 genesis, then pak2); pak2 init changed nothing`);
  refuseInsideGarden(dir, root);
  if (!findExecutable('git', env)) throw new UserError(`DIR ${dir}: not empty; pak2 init adopts a git repository, and git is not on PATH`, { hint: 'install git; a new garden needs a new or empty directory' });
  const repo = await gardenRepo(root, env);
  if (!repo) throw new UserError(NOT_EMPTY(dir));
  if (repo.top !== fs.realpathSync(root)) {
    throw new UserError(`DIR ${dir}: inside the git repository at ${repo.top}, not its top; pak2 adopts a whole repository (pak2 init ${repo.top}), or make this directory a repository of its own (git init)`);
  }
  const home = path.join(root, ADOPT_HOME);
  if (fs.existsSync(home)) throw new UserError(`${home}: exists; pak2 init keeps its own files there and writes over nothing (move it away, then pak2 init again)`);
  const { name, driver } = checkOptions(root, options);
  checkTemplate(packageRoot, [...ADOPT_TEMPLATE_ENTRIES, QUICKSTART_CHARTER]);

  const paths = gardenPaths(root, '.runtime', ADOPT_HOME);
  let ignored: { ignored: boolean; by?: string };
  try {
    ignored = await runtimeIgnored(paths, repo, env);
  } catch (error) {
    throw new UserError(`DIR ${dir}: cannot ask git whether .runtime/ is ignored (${(error as Error).message}); pak2 init changed nothing`, { exitCode: 1 });
  }
  const plan: IgnorePlan | undefined = ignored.ignored ? undefined : planIgnore(paths, repo, 'exclude');
  const status = await runGit(['--no-optional-locks', 'status', '--porcelain', '--untracked-files=no'], root, authoredGitEnv(env));
  const uncommitted = status.ok ? status.stdout.split('\n').filter(Boolean).length : 0;

  const written: string[] = ['PAK2.toml'];
  fs.mkdirSync(home);
  fs.writeFileSync(path.join(home, 'CHARTER.md'), fs.readFileSync(path.join(packageRoot, QUICKSTART_CHARTER)));
  written.push(`${ADOPT_HOME}/CHARTER.md`);
  for (const entry of ADOPT_TEMPLATE_ENTRIES) {
    const from = path.join(packageRoot, entry);
    fs.cpSync(from, path.join(home, entry), { recursive: true });
    written.push(`${ADOPT_HOME}/${entry}${fs.statSync(from).isDirectory() ? '/' : ''}`);
  }
  fs.writeFileSync(configFile, initialConfig(name, driver, ADOPT_HOME));
  if (plan) await appendIgnore(plan);
  return {
    mode: 'adopt',
    root,
    written,
    ignore: plan ? { added: true, file: plan.file, pattern: plan.pattern } : { added: false, ...(ignored.by ? { by: ignored.by } : {}) },
    uncommitted,
  };
}
