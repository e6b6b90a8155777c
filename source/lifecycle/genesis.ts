import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Garden } from '../garden/index.js';
import { resolveSettings } from '../garden/index.js';
import { driverProblem, getDriverPlugin, pluginDefaults } from '../driver/plugins/index.js';
import { appendEvent, commissionPlant, listGoalIds, readPlant, StoreError } from '../store/index.js';
import { submitGoal } from '../submit/index.js';
import { UserError } from '../errors.js';
import { simpleGit } from 'simple-git';
import { findExecutable } from './which.js';

/** The plant genesis commissions, and its seed. */
export const GARDENER = 'gardener';

/** The body of the gardener's first goal. */
export const FIRST_GARDENER_GOAL = `Survey this garden and start your memory.

1. Read MOTIVATION.md and look over the repository: its layout, how it builds and tests, what state it is in.
2. Write plants/gardener/memory/MEMORY.md: what this garden is, how to work in it, and what you would do next.
3. Read CHARTER.md (what the operator wants from this garden) and DONE.md (what done means here) if they exist, and keep them in mind.
4. Finish with a short report for the operator: what you found, and the three goals you would queue next.`;

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
    // Through the one public submit API, like every goal an operator command creates.
    const goal = await submitGoal(garden, { type: 'tend', plant: GARDENER, priority: 60, title: 'survey the garden', body: FIRST_GARDENER_GOAL }, new Date(), env);
    report.queued.push(goal.id);
  }
  try {
    const committed = await commitScaffold(paths.gardenRoot, report.commissioned.length > 0);
    if (committed) report.committed = committed;
  } catch (error) {
    report.warnings.push(`the garden is a git repo, but the scaffold was not committed: ${(error as Error).message.split('\n')[0]}`);
  }
  if (report.created.length || report.commissioned.length || report.queued.length) {
    await appendEvent(paths, { type: 'GardenGenesis', detail: [...report.commissioned.map((p) => `commissioned ${p}`), ...report.queued.map((g) => `queued ${g}`)].join('; ') || 'runtime directories created' });
  }
  return report;
}

async function isGitRepo(root: string): Promise<boolean> {
  if (!findExecutable('git')) return false;
  try {
    const top = (await simpleGit(root).revparse(['--show-toplevel'])).trim();
    return path.resolve(top) === path.resolve(root);
  } catch {
    return false;
  }
}

/**
 * Commits the durable source-side bootstrap scaffold genesis just
 * materialised, when the garden root is the top of a git repo (seed 002,
 * "Startup contract"): the commissioned gardener (meta and seed assets), and
 * CHARTER.md when it is present but not yet tracked. Only those paths are
 * staged; anything else the operator has staged or changed is left alone.
 * A repo without an identity commits as `pak2 genesis`.
 *
 * @returns the commit and the paths, or undefined when there was nothing to commit or no repo.
 */
async function commitScaffold(root: string, commissioned: boolean): Promise<{ commit: string; paths: string[] } | undefined> {
  if ((await isGitRepo(root)) !== true) return undefined;
  const git = simpleGit(root);
  const candidates: string[] = [];
  if (commissioned) candidates.push(path.join('plants', GARDENER));
  if (fs.existsSync(path.join(root, 'CHARTER.md'))) {
    const tracked = (await git.raw(['ls-files', '--', 'CHARTER.md'])).trim();
    if (!tracked) candidates.push('CHARTER.md');
  }
  if (candidates.length === 0) return undefined;
  await git.raw(['add', '--', ...candidates]);
  const staged = (await git.raw(['diff', '--cached', '--name-only', '--', ...candidates])).split('\n').filter(Boolean);
  if (staged.length === 0) return undefined;
  const identity = async (key: string) => (await git.raw(['config', '--get', key]).catch(() => '')).trim();
  const extra = [...((await identity('user.name')) ? [] : ['-c', 'user.name=pak2 genesis']), ...((await identity('user.email')) ? [] : ['-c', 'user.email=pak2@localhost'])];
  await git.raw([...extra, 'commit', '-m', 'pak2 genesis: commission the gardener', '--', ...candidates]);
  const commit = (await git.revparse(['HEAD'])).trim();
  return { commit, paths: staged };
}
