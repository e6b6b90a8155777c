import path from 'node:path';

/**
 * Every on-disk location of a garden (seed 002, "File layout"). Code resolves
 * runtime locations through this and never joins `root/"goals"` by hand.
 * All paths are absolute.
 */
export interface GardenPaths {
  /** The garden root: the directory holding PAK2.toml. */
  gardenRoot: string;
  /** Where goals, runs and events live: `<garden>/<[runtime].root>`, or the garden root in the legacy layout. */
  runtimeRoot: string;
  /** True when `[runtime].root` is set and resolves somewhere other than the garden root. */
  split: boolean;
  configFile: string;
  goalsDir: string;
  runsDir: string;
  eventsDir: string;
  coordinatorLog: string;
  historyDir: string;
  inboxDir: string;
  conversationsDir: string;
  dashboardDir: string;
  /**
   * Where the garden's authored files live (seeds/, plants/, MOTIVATION.md,
   * CHARTER.md, GARDEN.md, DONE.md): the garden root, or `<garden>/<[garden].home>`
   * (`.pak2`) in a repository pak2 adopted.
   */
  homeDir: string;
  plantsDir: string;
  seedsDir: string;
  motivationFile: string;
}

/**
 * Resolves the layout of a garden. `runtimeRootSetting` is `[runtime].root`
 * from PAK2.toml, relative to the garden root (absolute is allowed); absent
 * means the legacy unified layout (runtime root = garden root).
 * `homeSetting` is `[garden].home` (relative to the garden root): where
 * seeds/, plants/ and MOTIVATION.md live; absent means the garden root.
 */
export function gardenPaths(gardenRoot: string, runtimeRootSetting?: string, homeSetting?: string): GardenPaths {
  const root = path.resolve(gardenRoot);
  const runtimeRoot = runtimeRootSetting ? path.resolve(root, runtimeRootSetting) : root;
  const home = homeSetting ? path.resolve(root, homeSetting) : root;
  const eventsDir = path.join(runtimeRoot, 'events');
  return {
    gardenRoot: root,
    runtimeRoot,
    split: runtimeRoot !== root,
    configFile: path.join(root, 'PAK2.toml'),
    goalsDir: path.join(runtimeRoot, 'goals'),
    runsDir: path.join(runtimeRoot, 'runs'),
    eventsDir,
    coordinatorLog: path.join(eventsDir, 'coordinator.jsonl'),
    historyDir: path.join(runtimeRoot, 'history'),
    inboxDir: path.join(runtimeRoot, 'inbox'),
    conversationsDir: path.join(runtimeRoot, 'conversations'),
    dashboardDir: path.join(runtimeRoot, 'dashboard'),
    homeDir: home,
    plantsDir: path.join(home, 'plants'),
    seedsDir: path.join(home, 'seeds'),
    motivationFile: path.join(home, 'MOTIVATION.md'),
  };
}

/** A garden path as an agent or a person in the garden root writes it: relative, with `/` (`.pak2/plants/gardener`); absolute when outside. */
export function gardenRelative(paths: Pick<GardenPaths, 'gardenRoot'>, file: string): string {
  const rel = path.relative(paths.gardenRoot, file);
  if (rel === '') return '.';
  return rel.startsWith('..') || path.isAbsolute(rel) ? file : rel.split(path.sep).join('/');
}

/** `<runtime-root>/runs/<run-id>/`. */
export function runDir(paths: GardenPaths, runId: string): string {
  return path.join(paths.runsDir, runId);
}

/** `<runtime-root>/worktrees/`: the runs' git worktrees, and the pool of parked ones (`.pool/`). */
export function worktreesDir(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'worktrees');
}

/** `<runtime-root>/worktrees/<run-id>/`: a run's git worktree (docs/landing/level2.md, "Worktrees"). */
export function worktreeDir(paths: GardenPaths, runId: string): string {
  return path.join(worktreesDir(paths), runId);
}

/** `pak2/<run-id>`: the branch a run's worktree is on. */
export function runBranch(runId: string): string {
  return `pak2/${runId}`;
}

/** `<runtime-root>/landings/`: one landing record per run whose work goes onto the base branch. */
export function landingsDir(paths: GardenPaths): string {
  return path.join(paths.runtimeRoot, 'landings');
}
