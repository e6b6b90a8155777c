import path from 'node:path';
import type { FailureReason, RunRecord } from '../contracts/index.js';
import { runDir, type Garden } from '../garden/index.js';
import { appendEvent } from '../store/index.js';
import { copyIntoWorktree, createWorktree, prepareRepository, runSetup } from './worktree.js';

/** File in the run directory that keeps `[worktree] setup`'s output. */
export const SETUP_LOG_FILE = 'setup.log';

/** A worktree made ready, or why it could not be (the run's own failure reason and words). */
export type PreparedWorktree = { ok: true; path: string; copied: string[] } | { ok: false; failureReason: Extract<FailureReason, 'worktree_failed' | 'setup_failed'>; message: string };

/** The runtime root relative to the garden root, when it lies inside it (for the repository's exclude). */
export function runtimeRelative(garden: Garden): string | undefined {
  const rel = path.relative(garden.paths.gardenRoot, garden.paths.runtimeRoot);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : undefined;
}

/** The garden's plants directory relative to its root (`plants`, or `.pak2/plants` in an adopted repository). */
export function plantsRelative(garden: Garden): string {
  return path.relative(garden.paths.gardenRoot, garden.paths.plantsDir).split(path.sep).join('/');
}

/**
 * Makes a run's worktree ready before its agent starts (docs/landing/level2.md,
 * "Worktrees"): the repository prepared (plant documents' union merge, the
 * runtime root excluded), the worktree created on the run's branch from its
 * base commit (`WorktreeCreated`), `[worktree] copy` files copied in, and
 * `[worktree] setup` run in it with its limit and its log (`setup.log` in
 * the run directory). Safe to run again for a run whose earlier attempt at
 * this died.
 *
 * @returns the worktree's path, or the failure: `worktree_failed` (git
 *   could not make it) or `setup_failed` (the setup command failed, could
 *   not start, or ran past `setup_timeout_seconds`).
 */
export async function prepareRunWorktree(garden: Garden, run: RunRecord, env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): Promise<PreparedWorktree> {
  const wt = run.worktree;
  if (!wt) return { ok: false, failureReason: 'worktree_failed', message: `run ${run.id} has no worktree in its record` };
  const { paths, config } = garden;
  let copied: string[];
  try {
    await prepareRepository(paths.gardenRoot, runtimeRelative(garden), env, plantsRelative(garden));
    const made = await createWorktree(paths.gardenRoot, wt, env);
    if (made === 'created') await appendEvent(paths, { type: 'WorktreeCreated', run: run.id, goal: run.goal, plant: run.plant, detail: `${wt.branch} from ${wt.base_branch} at ${wt.base_commit.slice(0, 12)} in ${wt.path}` }, now());
    copied = await copyIntoWorktree(paths.gardenRoot, wt.path, config.worktree.copy, env);
  } catch (error) {
    return { ok: false, failureReason: 'worktree_failed', message: `pak2 could not make the run's worktree ${wt.path} on ${wt.branch}: ${(error as Error).message}` };
  }
  if (config.worktree.setup) {
    const setup = await runSetup(config.worktree.setup, wt.path, config.worktree.setupTimeoutSeconds, path.join(runDir(paths, run.id), SETUP_LOG_FILE), env);
    if (!setup.ok) return { ok: false, failureReason: 'setup_failed', message: setup.message ?? '[worktree] setup failed' };
  }
  return { ok: true, path: wt.path, copied };
}
