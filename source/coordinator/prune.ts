import { isTerminalLandingState } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { listLandings, writeLanding } from '../store/index.js';
import { git } from '../worktree/index.js';

/**
 * Deletes the branches of landings that ended more than `[worktree]
 * keep_days` ago (docs/landing/level2.md, "Nothing left behind"), each
 * noted in its record (`branch_pruned_at`). A branch some worktree has
 * checked out is left. Run once at a coordinator's start; `pak2 doctor
 * --fix` does the same.
 *
 * @returns the branches deleted.
 */
export async function pruneLandedBranches(garden: Garden, env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): Promise<string[]> {
  const { paths, config } = garden;
  const cutoff = now().getTime() - config.worktree.keepDays * 86_400_000;
  const pruned: string[] = [];
  const { landings } = await listLandings(paths);
  for (const landing of landings) {
    if (!isTerminalLandingState(landing.state) || landing.branch_pruned_at || Date.parse(landing.updated_at) > cutoff) continue;
    const deleted = await git(['branch', '-D', landing.branch], paths.gardenRoot, env, [1]);
    // Gone already (`not found`) counts as pruned; checked out somewhere (`used by worktree`) is left for later.
    if (!deleted.ok && !/not found/i.test(deleted.stderr)) continue;
    await writeLanding(paths, { ...landing, branch_pruned_at: now().toISOString() });
    if (deleted.ok) pruned.push(landing.branch);
  }
  return pruned;
}
