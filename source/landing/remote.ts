import type { RunRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { appendEvent, inStoreTransaction, localArtifactContent, readArtifacts, readLanding, writeLanding } from '../store/index.js';
import { createWorktree, gardenIsolationNow, git, plantsRelative, runtimeRelative, prepareRepository, type Isolation } from '../worktree/index.js';

const decided = new Map<string, { at: number; isolation: Isolation }>();
/** How long a garden's isolation, once probed, stands for a runner's claim (ms). */
const ISOLATION_TTL_MS = 10_000;

/**
 * How a garden isolates runs, for a remote runner's claim (the server need
 * not run a coordinator): decided as the coordinator decides it
 * (`decideIsolation`), probed at most every 10 s.
 */
export async function gardenIsolation(garden: Garden, env: NodeJS.ProcessEnv): Promise<Isolation> {
  const known = decided.get(garden.paths.gardenRoot);
  if (known && Date.now() - known.at < ISOLATION_TTL_MS) return known.isolation;
  const isolation = await gardenIsolationNow(garden, env);
  decided.set(garden.paths.gardenRoot, { at: Date.now(), isolation });
  return isolation;
}

/**
 * A remote run's work enters the same merge queue as a local run's
 * (docs/landing/level2.md, "Remote runners"): its `diff.patch` artifact is
 * applied (`git apply --3way --index`) in the run's worktree in the garden,
 * made from the base commit the claim recorded; the plant's directory is
 * left out (its documents come through `documents_upsert`). The settle then
 * commits it and queues its landing as for a local run. A patch that does
 * not apply to its base is a `conflict` landing (`landing_conflict`, the
 * paths git named). No `diff.patch`: nothing to land.
 *
 * @returns what was done, in words, or undefined when there was nothing to do.
 */
export async function materializeRemoteWork(garden: Garden, run: RunRecord, env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): Promise<string | undefined> {
  const wt = run.worktree;
  if (!wt || run.status !== 'success' || (await readLanding(garden.paths, run.id))) return undefined;
  const artifact = (await readArtifacts(garden.paths, run.id)).filter((a) => a.name === 'diff.patch').at(-1);
  const patch = artifact ? await localArtifactContent(garden.paths, run.id, 'diff.patch') : undefined;
  if (!patch) return undefined;
  const repo = garden.paths.gardenRoot;
  await prepareRepository(repo, runtimeRelative(garden), env, plantsRelative(garden));
  await createWorktree(repo, wt, env);
  const applied = await git(['apply', '--3way', '--index', '--whitespace=nowarn', `--exclude=${plantsRelative(garden)}/*`, patch], wt.path, env, [1, 128]);
  if (applied.ok) return `applied diff.patch in ${wt.path}`;
  // It does not apply to the base it was claimed on: a conflict, said with the paths git named, and nothing moves.
  const paths = [...new Set([...`${applied.stdout}\n${applied.stderr}`.matchAll(/(?:patch failed|conflicts?|does not apply)[^\n]*?:\s*([^\s:]+)/gi)].map((m) => m[1]!))].sort();
  const message = `the runner's diff.patch does not apply to ${wt.base_branch} at ${wt.base_commit.slice(0, 12)}: ${(applied.stderr.trim().split('\n')[0] ?? 'git apply failed').slice(0, 300)}`;
  await git(['reset', '--hard', '--quiet'], wt.path, env).catch(() => undefined);
  const at = now().toISOString();
  await inStoreTransaction(garden.paths, async () => {
    await writeLanding(garden.paths, {
      run: run.id,
      goal: run.goal,
      plant: run.plant,
      state: 'conflict',
      failure_reason: 'landing_conflict',
      branch: wt.branch,
      head_commit: wt.base_commit,
      base_branch: wt.base_branch,
      base_commit: wt.base_commit,
      queued_at: at,
      updated_at: at,
      conflict: { paths },
      message,
      attempts: 0,
    });
    await appendEvent(garden.paths, { type: 'LandingConflict', run: run.id, goal: run.goal, plant: run.plant, status: 'conflict', detail: message }, now());
  });
  return message;
}
