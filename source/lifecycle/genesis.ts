import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { gardenRelative, resolveSettings, type Garden, type GardenPaths } from '../garden/index.js';
import { driverProblem, getDriverPlugin, pluginDefaults } from '../driver/plugins/index.js';
import { appendEvent, commissionPlant, ensureRuntimeRoot, listGoalIds, readPlant, StoreError } from '../store/index.js';
import { submitTendGoal } from '../submit/index.js';
import { GENESIS_TEND_TRIGGER } from '../contracts/index.js';
import { UserError } from '../errors.js';
import { authoredGitEnv, describeFailure, runGit } from '../history/index.js';
import { ADOPT_TEMPLATE_ENTRIES } from './adopt.js';
import { findExecutable } from './which.js';

/** The plant genesis commissions, and its seed. */
export const GARDENER = 'gardener';

/** The body of the gardener's first goal; `home` is where pak2's own files are, as the agent writes it (`''` for the garden root, `.pak2/` in an adopted repository). */
export function firstGardenerGoal(home = ''): string {
  return `Survey this garden and start your memory.

1. Read ${home}MOTIVATION.md and look over the repository: its layout, how it builds and tests, what state it is in.
2. Write ${home}plants/gardener/memory/MEMORY.md: what this garden is, how to work in it, and what you would do next.
3. Read ${home}CHARTER.md (what the operator wants from this garden) and ${home}DONE.md (what done means here) if they exist, and keep them in mind.
4. Finish with a short report for the operator: what you found, and the three goals you would queue next.`;
}

/** The body of the gardener's first goal in a garden of its own. */
export const FIRST_GARDENER_GOAL = firstGardenerGoal();

/** What genesis did; every list is empty when the garden was already set up. */
export interface GenesisReport {
  created: string[];
  commissioned: string[];
  queued: string[];
  warnings: string[];
  /** The commit of the bootstrap scaffold in the garden's own git repo, when one was made. */
  committed?: { commit: string; paths: string[] };
}

/**
 * Sets up a fresh garden (seed 002, "Startup contract": `pak2 genesis`):
 * checks prerequisites, creates the runtime directories, commissions the
 * gardener from seeds/gardener.md and queues its first goal, then stops
 * before dispatch. Running it again changes nothing.
 *
 * @throws UserError when the default driver's CLI is missing (with how to install it) or the gardener seed is absent.
 */
export async function genesis(garden: Garden, env: NodeJS.ProcessEnv = process.env): Promise<GenesisReport> {
  const { paths, config } = garden;
  const report: GenesisReport = { created: [], commissioned: [], queued: [], warnings: [] };
  if (!findExecutable('git', env)) report.warnings.push('git is not on PATH: pak2 records runtime history with git (install git)');
  const settings = resolveSettings({}, config, env, (d) => pluginDefaults(d, config));
  const problem = driverProblem(settings.driver, config);
  if (problem) throw new UserError(`${paths.configFile}: the default driver (from ${settings.sources.driver}): ${problem}`, { exitCode: 1 });
  const plugin = getDriverPlugin(settings.driver, config)!;
  const executable = config.drivers[settings.driver]?.command?.[0] ?? plugin.executable;
  if (executable && !findExecutable(executable, env)) {
    throw new UserError(`the default driver ${settings.driver} needs \`${executable}\`, which is not on PATH`, { hint: `install it: ${plugin.installHint}`, exitCode: 1 });
  }
  if (!fs.existsSync(path.join(paths.seedsDir, `${GARDENER}.md`)) && !fs.existsSync(path.join(paths.plantsDir, GARDENER, 'meta.json'))) {
    throw new UserError(`${path.join(paths.seedsDir, `${GARDENER}.md`)}: missing; genesis commissions the gardener from it`, { hint: 'pak2 init writes it; or copy seeds/ from the pak2 package' });
  }
  if (!fs.existsSync(paths.runtimeRoot)) report.created.push(path.relative(paths.gardenRoot, paths.runtimeRoot) || '.');
  await ensureRuntimeRoot(paths);
  for (const dir of [paths.runtimeRoot, paths.goalsDir, paths.runsDir, paths.eventsDir, paths.inboxDir, paths.conversationsDir, paths.plantsDir]) {
    if (!fs.existsSync(dir)) {
      await fsp.mkdir(dir, { recursive: true });
      report.created.push(path.relative(paths.gardenRoot, dir) || '.');
    }
  }
  try {
    await readPlant(paths, GARDENER);
  } catch (error) {
    if (!(error instanceof StoreError && error.code === 'PLANT_NOT_FOUND')) throw error;
    try {
      await commissionPlant(paths, GARDENER, GARDENER, { description: 'looks after the garden' });
    } catch (commissionError) {
      if (commissionError instanceof StoreError && commissionError.code === 'SEED_NOT_FOUND') {
        throw new UserError(`${commissionError.message}; genesis needs seeds/gardener.md (pak2 init writes it)`);
      }
      throw commissionError;
    }
    report.commissioned.push(GARDENER);
  }
  if ((await listGoalIds(paths)).length === 0) {
    // Through the one tend goal builder the automatic tends use: its `tend` metadata gives the run its # Tend Context (seed 002, "Prompt structure").
    const goal = await submitTendGoal(garden, { trigger: GENESIS_TEND_TRIGGER, key: GENESIS_TEND_TRIGGER, origin: {}, priority: 60, title: 'survey the garden', body: firstGardenerGoal(paths.homeDir === paths.gardenRoot ? '' : `${gardenRelative(paths, paths.homeDir)}/`) }, new Date());
    report.queued.push(goal.id);
  }
  try {
    const committed = await commitScaffold(paths, report.commissioned.length > 0, env);
    if ('warning' in committed) report.warnings.push(committed.warning);
    else if (committed.commit) report.committed = committed.commit;
  } catch (error) {
    report.warnings.push(`the garden is a git repo, but the scaffold was not committed: ${(error as Error).message.split('\n')[0]}`);
  }
  if (report.created.length || report.commissioned.length || report.queued.length) {
    await appendEvent(paths, { type: 'GardenGenesis', detail: [...report.commissioned.map((p) => `commissioned ${p}`), ...report.queued.map((g) => `queued ${g}`)].join('; ') || 'runtime directories created' });
  }
  return report;
}

/** The git repository whose top is the garden root, or undefined (none, another top, no git). */
async function isGitRepo(root: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  if (!findExecutable('git', env)) return false;
  const result = await runGit(['rev-parse', '--show-toplevel'], root, authoredGitEnv(env));
  if (!result.ok) return false;
  try {
    return fs.realpathSync(result.stdout.trim()) === fs.realpathSync(root);
  } catch {
    return false;
  }
}

/** Runs git in the garden root with the operator's own config; throws the first line of what went wrong. */
async function git(root: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const result = await runGit(args, root, authoredGitEnv(env));
  if (!result.ok) throw new Error(describeFailure(args, result));
  return result.stdout;
}

const lines = (text: string) => text.split('\n').filter(Boolean);

/**
 * The paths genesis may commit: only what pak2 itself wrote. In a garden of
 * its own (seed 002): the gardener it just commissioned, and CHARTER.md
 * when git does not track it yet. In an adopted repository: PAK2.toml and
 * the files `pak2 init` wrote in `.pak2/` while git does not track them yet,
 * and the gardener it just commissioned; files the project ignores are left
 * out.
 */
async function scaffoldPaths(paths: GardenPaths, commissioned: boolean, env: NodeJS.ProcessEnv): Promise<string[]> {
  const root = paths.gardenRoot;
  const gardener = gardenRelative(paths, path.join(paths.plantsDir, GARDENER));
  if (paths.homeDir === root) {
    const candidates: string[] = [];
    if (commissioned) candidates.push(gardener);
    if (fs.existsSync(path.join(root, 'CHARTER.md')) && !(await git(root, ['ls-files', '--', 'CHARTER.md'], env)).trim()) candidates.push('CHARTER.md');
    return candidates;
  }
  const home = gardenRelative(paths, paths.homeDir);
  const adoption = ['PAK2.toml', ...[...ADOPT_TEMPLATE_ENTRIES, 'CHARTER.md'].map((entry) => `${home}/${entry}`)];
  const untracked = lines(await git(root, ['ls-files', '--others', '--exclude-standard', '--', ...adoption.map((p) => `:(literal)${p}`)], env));
  // The adoption is committed once, with the gardener; later runs commit only a gardener they commission.
  const adopting = untracked.includes('PAK2.toml');
  const own = adopting ? untracked : [];
  if (commissioned) own.push(...lines(await git(root, ['ls-files', '--others', '--exclude-standard', '--', `:(literal)${gardener}`], env)));
  return own;
}

/**
 * Commits the durable source-side bootstrap scaffold genesis just
 * materialised, when the garden root is the top of a git repo (seed 002,
 * "Startup contract"), with a pathspec of exactly those paths
 * ({@link scaffoldPaths}): `git commit --only`, so whatever else the
 * operator has staged stays staged and uncommitted, and whatever they changed
 * stays changed. It commits nothing when one of those paths has a change
 * staged already (that change is the operator's), and skips the pre-commit
 * and commit-msg hooks (`--no-verify`: a project's pre-commit hook formats or
 * stashes the operator's files; this commit holds only pak2's). A commit that
 * fails unstages what genesis staged. A repo without an identity commits as
 * `pak2 genesis`.
 *
 * @returns the commit and its paths; `{}` when there was nothing to commit or no repo; a warning when it would not commit.
 */
async function commitScaffold(paths: GardenPaths, commissioned: boolean, env: NodeJS.ProcessEnv): Promise<{ commit?: { commit: string; paths: string[] } } | { warning: string }> {
  const root = paths.gardenRoot;
  if ((await isGitRepo(root, env)) !== true) return {};
  const candidates = await scaffoldPaths(paths, commissioned, env);
  if (candidates.length === 0) return {};
  const pathspec = candidates.map((p) => `:(literal)${p}`);
  const stagedBefore = lines(await git(root, ['diff', '--cached', '--name-only', '--', ...pathspec], env));
  if (stagedBefore.length > 0) {
    return { warning: `not committed: ${stagedBefore.join(', ')} has a change staged already; commit ${candidates.join(', ')} yourself` };
  }
  await git(root, ['add', '--', ...pathspec], env);
  const staged = lines(await git(root, ['diff', '--cached', '--name-only', '--', ...pathspec], env));
  if (staged.length === 0) return {};
  const identity = async (key: string) => {
    const result = await runGit(['config', '--get', key], root, authoredGitEnv(env));
    return result.ok ? result.stdout.trim() : '';
  };
  const extra = [...((await identity('user.name')) ? [] : ['-c', 'user.name=pak2 genesis']), ...((await identity('user.email')) ? [] : ['-c', 'user.email=pak2@localhost'])];
  const adopted = paths.homeDir !== root && staged.includes('PAK2.toml');
  const message = adopted ? `pak2 genesis: adopt this repository (PAK2.toml, ${gardenRelative(paths, paths.homeDir)}/)${commissioned ? ' and commission the gardener' : ''}` : 'pak2 genesis: commission the gardener';
  try {
    await git(root, [...extra, 'commit', '--only', '--no-verify', '--quiet', '-m', message, '--', ...pathspec], env);
  } catch (error) {
    // Back to how they were: untracked (every candidate was, and nothing of them was staged).
    await runGit(['rm', '--cached', '-r', '-q', '--ignore-unmatch', '--', ...pathspec], root, authoredGitEnv(env));
    throw error;
  }
  const commit = (await git(root, ['rev-parse', 'HEAD'], env)).trim();
  return { commit: { commit, paths: staged } };
}
