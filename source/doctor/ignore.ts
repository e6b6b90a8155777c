import { appendIgnore, gardenRepo, ignoreWayOf, planIgnore, runtimeIgnored } from '../lifecycle/runtime-ignore.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/**
 * The runtime root must be ignored by git in a git garden: otherwise `git
 * status` lists every goal, run and agent worktree (`.runtime/worktrees/`)
 * as untracked, and a careless `git add -A` commits them. Fix: ignore it as
 * `pak2 init` does: `/.runtime/` in the repository's `.git/info/exclude` for
 * an adopted repository (`[garden].home` set), `.runtime/` in the garden's
 * `.gitignore` for a garden of its own. Nothing to say in the legacy layout,
 * outside a git work tree, without git, or for a runtime root outside the
 * work tree.
 */
export async function checkIgnore(ctx: DoctorContext): Promise<Problem[]> {
  const { paths } = ctx.garden;
  if (!paths.split) return [];
  const repo = await gardenRepo(paths.gardenRoot, ctx.env);
  if (!repo) return [];
  try {
    if ((await runtimeIgnored(paths, repo, ctx.env)).ignored) return [];
  } catch {
    return []; // git could not say: not a finding about the garden
  }
  const plan = planIgnore(paths, repo, ignoreWayOf(paths));
  if (!plan) return [];
  return [
    {
      check: 'ignore',
      file: paths.runtimeRoot,
      message: "not ignored by git: git status lists the runtime's goals, runs and agent worktrees as untracked files",
      fix: `add ${plan.pattern} to ${plan.file}`,
      repair: async () => {
        const now = await runtimeIgnored(paths, repo, ctx.env).catch((error: Error) => {
          throw new NotFixed(error.message);
        });
        if (now.ignored) return `it is ignored now${now.by ? ` (${now.by})` : ''}`;
        await appendIgnore(plan);
        return `added ${plan.pattern} to ${plan.file}`;
      },
    },
  ];
}
