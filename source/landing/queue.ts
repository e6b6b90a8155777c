import fs from 'node:fs';
import type { GoalRecord, LandingRecord, RunRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { appendEvent, crashPoint, inStoreTransaction, readLanding, writeLanding } from '../store/index.js';
import { branchTip, commitRunWork, git, WorkOffBranchError } from '../worktree/index.js';

/** What queueing a run's work did: a landing record, or nothing to land (the run changed nothing). */
export type QueuedLanding = { kind: 'queued'; landing: LandingRecord } | { kind: 'empty' };

/** The commit message of a run's work: the goal and run, then the goal body's first line. */
export function workMessage(goal: Pick<GoalRecord, 'id' | 'body'>, runId: string): string {
  const first = goal.body.trim().split('\n')[0]!.trim();
  return `pak2: ${goal.id} (${runId})\n\n${first.length > 200 ? `${first.slice(0, 199)}…` : first}\n`;
}

/** The files between two commits, each with its git status letter (`A`, `M`, `D`, …). */
export async function changedFiles(repo: string, from: string, to: string, env: NodeJS.ProcessEnv): Promise<{ path: string; status: string }[]> {
  const out = (await git(['diff', '--name-status', '-z', '--no-renames', from, to], repo, env)).stdout.split('\0').filter(Boolean);
  const files: { path: string; status: string }[] = [];
  for (let i = 0; i + 1 < out.length; i += 2) files.push({ status: out[i]!, path: out[i + 1]! });
  return files;
}

/**
 * Queues a successful worktree run's work for landing (docs/landing/level2.md,
 * "Landing"): commits what the agent changed in its worktree onto its
 * branch (the agent's own commits kept; `[worktree] copy` files never), and
 * writes the landing record — `queued`, or `awaiting_review` under `[merge]
 * mode = "review"` — with `LandingQueued`. Safe to run again: a run that
 * has its record already gets it back unchanged.
 *
 * @returns the record, or `empty` when the branch holds nothing beyond its base.
 * @throws WorktreeGitError when git cannot commit or read the branch.
 */
export async function queueLanding(garden: Garden, goal: GoalRecord, run: RunRecord, env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): Promise<QueuedLanding> {
  const { paths, config } = garden;
  const existing = await readLanding(paths, run.id);
  if (existing) return { kind: 'queued', landing: existing };
  const wt = run.worktree!;
  let head: string | undefined;
  try {
    head = fs.existsSync(wt.path) ? await commitRunWork(wt, workMessage(goal, run.id), run.plant, config.worktree.copy, env) : await branchTip(paths.gardenRoot, wt.branch, env);
  } catch (error) {
    if (!(error instanceof WorkOffBranchError)) throw error;
    // Work the branch does not hold is never landed as nothing: the landing fails, saying where the work is.
    const at = now().toISOString();
    const landing = await inStoreTransaction(paths, async () => {
      const written = await writeLanding(paths, { run: run.id, goal: goal.id, plant: run.plant, state: 'failed', failure_reason: 'landing_error', message: error.message, branch: wt.branch, head_commit: error.tip, base_branch: wt.base_branch, base_commit: wt.base_commit, queued_at: at, updated_at: at, attempts: 0 });
      await appendEvent(paths, { type: 'LandingFailed', run: run.id, goal: goal.id, plant: run.plant, status: 'failed', detail: `landing_error: ${error.message}` }, now());
      return written;
    });
    return { kind: 'queued', landing };
  }
  if (!head || head === wt.base_commit) return { kind: 'empty' };
  const files = await changedFiles(paths.gardenRoot, wt.base_commit, head, env);
  if (files.length === 0) return { kind: 'empty' };
  const at = now().toISOString();
  const review = config.merge.mode === 'review';
  // On a store, the record and LandingQueued commit together (a crash between them leaves neither).
  const landing = await inStoreTransaction(paths, async () => {
    const written = await writeLanding(paths, {
      run: run.id,
      goal: goal.id,
      plant: run.plant,
      state: review ? 'awaiting_review' : 'queued',
      branch: wt.branch,
      head_commit: head,
      base_branch: wt.base_branch,
      base_commit: wt.base_commit,
      queued_at: at,
      updated_at: at,
      files,
      attempts: 0,
    });
    crashPoint('landing:after-queued');
    await appendEvent(paths, { type: 'LandingQueued', run: run.id, goal: goal.id, plant: run.plant, status: written.state, detail: `${files.length} file(s) on ${wt.branch} at ${head.slice(0, 12)}${review ? '; awaiting review' : ''}` }, now());
    return written;
  });
  return { kind: 'queued', landing };
}
