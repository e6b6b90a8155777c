import { isTerminalLandingState, RUN_ID_PATTERN, type LandingRecord, type RunRecord } from '../contracts/index.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { appendComment, appendEvent, inStoreTransaction, latestRun, listLandings, readGoal, readLanding, readRun, StoreError, transitionGoal, withLandingLock, writeLanding } from '../store/index.js';

/** Who acts, for the record: `operator` unless a name is given. */
export interface ReviewActor {
  by?: string;
  now?: Date;
  env?: NodeJS.ProcessEnv;
}

async function runOf(garden: Garden, runId: string): Promise<RunRecord> {
  if (!RUN_ID_PATTERN.test(runId)) throw new UserError(`RUN ${runId}: not a run id (N-slug-rN)`);
  try {
    return await readRun(garden.paths, runId);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'RUN_NOT_FOUND') throw new UserError(`RUN ${runId}: no such run`);
    throw error;
  }
}

async function landingOf(garden: Garden, runId: string): Promise<{ run: RunRecord; landing: LandingRecord }> {
  const run = await runOf(garden, runId);
  const landing = await readLanding(garden.paths, runId);
  if (!landing) {
    const why = !run.worktree
      ? 'it did not work in a worktree of its own (isolation "tree", a conversation reply, or a remote run without a diff)'
      : run.status !== 'success'
        ? `it ended ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}; only a successful run's work lands`
        : run.status === 'success'
          ? 'it is not queued yet (the coordinator queues it when the goal settles), or it changed nothing'
          : 'it has no landing';
    throw new UserError(`RUN ${runId}: no landing: ${why}`, { exitCode: 1 });
  }
  return { run, landing };
}

/** What accepting a landing did, and who lands it. */
export interface LandResult {
  landing: LandingRecord;
  /** `coordinator`: the running coordinator's queue lands it; `here`: no coordinator runs, so it was landed by this call. */
  by: 'coordinator' | 'here' | 'queued';
  detail: string;
}

/**
 * Accepts a run's landing for the operator (`pak2 land RUN`, `a` in the
 * workbench's review, `POST /runs/:id/land`; docs/landing/level2.md,
 * "Review"): a landing held for review is queued (`review: accepted`,
 * LandingAccepted). The running coordinator is woken to land it; with no
 * coordinator running, it is landed here and its goal settled.
 *
 * @throws UserError for a bad or unknown run, a run with no landing, or
 *   (exit 1) a landing that already ended (landed, conflict, rejected, failed).
 */
export async function landRun(garden: Garden, runId: string, actor: ReviewActor = {}): Promise<LandResult> {
  const now = actor.now ?? new Date();
  const { paths } = garden;
  let { landing } = await landingOf(garden, runId);
  if (isTerminalLandingState(landing.state)) throw new UserError(`RUN ${runId}: its landing is ${landing.state}${landing.message ? ` (${landing.message})` : ''}; nothing to land`, { exitCode: 1 });
  if (landing.state === 'awaiting_review') {
    const accepted = { ...landing, state: 'queued' as const, review: { decision: 'accepted' as const, by: actor.by ?? 'operator', at: now.toISOString() }, updated_at: now.toISOString() };
    landing = await inStoreTransaction(paths, async () => {
      const written = await writeLanding(paths, accepted);
      await appendEvent(paths, { type: 'LandingAccepted', run: runId, goal: written.goal, plant: written.plant, status: written.state, detail: `accepted by ${actor.by ?? 'operator'}` }, now);
      return written;
    });
  }
  const [{ coordinatorSocketName, requestCoordinator }] = await Promise.all([import('../coordinator/lock.js')]);
  const reply = await requestCoordinator(coordinatorSocketName(paths), { op: 'wake' });
  if (reply?.ok) return { landing, by: 'coordinator', detail: `queued; the coordinator lands it (${landing.state === 'waiting' ? `waiting: ${landing.message ?? ''}` : 'next in its merge queue'})` };
  // No coordinator runs this garden: land it here, then settle its goal.
  const env = actor.env ?? process.env;
  const [{ landOne }, { settleGoals }] = await Promise.all([import('../landing/index.js'), import('../coordinator/settle.js')]);
  const ended = await landOne(garden, landing, env, () => new Date());
  const goal = await readGoal(paths, ended.goal);
  await settleGoals(paths, [goal], (g) => latestRun(paths, g.id), () => new Date(), { garden, env });
  return { landing: ended, by: 'here', detail: ended.state === 'landed' ? `landed: ${ended.message ?? ''}` : `${ended.state}${ended.message ? `: ${ended.message}` : ''}` };
}

/** What rejecting did. */
export interface RejectResult {
  landing: LandingRecord;
  /** Where the goal went: back to the queue, or closed failure. */
  goal: 'queued' | 'closed';
}

/**
 * Rejects a run's work for the operator (`pak2 reject RUN [--requeue]
 * [--comment TEXT]`, `r` in the workbench's review, `POST /runs/:id/reject`;
 * docs/landing/level2.md, "Review"): the landing ends `rejected`
 * (`landing_rejected`, LandingRejected, the review recorded), its worktree
 * is removed (the branch kept for `[worktree] keep_days`), and the goal
 * goes back to the queue (`requeue`) or closes `failure`. A comment is
 * posted on the goal's thread, so the next attempt's prompt carries it.
 * Never between the queue's moving the base and its record: under the
 * landing's lock.
 *
 * @throws UserError for a bad or unknown run, a run with no landing, or
 *   (exit 1) a landing that already ended.
 */
export async function rejectRun(garden: Garden, runId: string, options: ReviewActor & { requeue?: boolean; comment?: string } = {}): Promise<RejectResult> {
  const now = options.now ?? new Date();
  const { paths } = garden;
  const { run } = await landingOf(garden, runId);
  const comment = options.comment?.trim();
  const landing = await withLandingLock(paths, runId, async () => {
    const current = (await readLanding(paths, runId))!;
    if (isTerminalLandingState(current.state)) throw new UserError(`RUN ${runId}: its landing is ${current.state}${current.message ? ` (${current.message})` : ''}; nothing to reject`, { exitCode: 1 });
    const written = await writeLanding(paths, {
      ...current,
      state: 'rejected',
      failure_reason: 'landing_rejected',
      message: `rejected by ${options.by ?? 'operator'}${comment ? `: ${comment}` : ''}`,
      review: { decision: 'rejected', by: options.by ?? 'operator', at: now.toISOString(), ...(comment ? { comment } : {}), ...(options.requeue ? { requeue: true } : {}) },
      updated_at: now.toISOString(),
    });
    // Under the lock: on a store, the record and its event commit together.
    await appendEvent(paths, { type: 'LandingRejected', run: runId, goal: written.goal, plant: written.plant, status: 'rejected', detail: `${options.requeue ? 'requeued' : 'goal closed'} by ${options.by ?? 'operator'}${comment ? `: ${comment}` : ''}` }, now);
    return written;
  });
  if (comment) await appendComment(paths, { goal: landing.goal, run: runId, author: options.by ?? 'operator', blocking: false, body: `Review of ${runId}, rejected: ${comment}` }, now);
  let where: 'queued' | 'closed' = options.requeue ? 'queued' : 'closed';
  try {
    if (options.requeue) await transitionGoal(paths, landing.goal, 'queued', { now });
    else await transitionGoal(paths, landing.goal, 'closed', { closedReason: 'failure', now });
  } catch (error) {
    // The coordinator settled it first, the same way: its file says where it is.
    if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) throw error;
    where = (await readGoal(paths, landing.goal)).status === 'queued' ? 'queued' : 'closed';
  }
  const { retireWorktree } = await import('../landing/index.js');
  await retireWorktree(garden, run, options.env ?? process.env, () => now).catch(() => undefined);
  return { landing, goal: where };
}

/** A run's diff for review: its files and the patch, capped. */
export interface RunDiff {
  run: string;
  /**
   * `landing`: the work the landing took, its branch's commit against its base;
   * `worktree`: what the run's worktree holds now, before its landing (committed or not, new files with their content);
   * `branch`: an ended run's branch against its base (no landing: a run that did not succeed, or before it was queued);
   * `none`: the worktree is removed and the branch is gone (a run whose branch held nothing beyond its base).
   */
  source: 'landing' | 'worktree' | 'branch' | 'none';
  base: string;
  head?: string;
  files: { path: string; status: string; insertions: number | null; deletions: number | null }[];
  patch: string;
  /** Bytes of the patch left out past the cap. */
  truncatedBytes: number;
}

/** The most of a patch a diff carries, bytes. */
export const DIFF_PATCH_CAP = 4 * 1024 * 1024;

/**
 * The diff of a run's work (`pak2 diff RUN`, `d` in the workbench,
 * `GET /runs/:id/diff`): a queued or ended landing's branch against its
 * base commit, or a live worktree's changes against its base (untracked
 * files listed). The patch is capped at {@link DIFF_PATCH_CAP} bytes.
 *
 * @throws UserError for a bad or unknown run, or a run that did not work in a worktree.
 */
export async function runDiff(garden: Garden, runId: string, env: NodeJS.ProcessEnv = process.env): Promise<RunDiff> {
  const run = await runOf(garden, runId);
  if (!run.worktree) throw new UserError(`RUN ${runId}: it worked in the garden's tree, not a worktree of its own; see git diff there`, { exitCode: 1 });
  const { git } = await import('../worktree/index.js');
  const repo = garden.paths.gardenRoot;
  const wt = run.worktree;
  const landing = await readLanding(garden.paths, runId);
  const fs = await import('node:fs');
  const live = !landing && fs.existsSync(wt.path);
  const tip = landing ? landing.head_commit : (await git(['rev-parse', '--verify', '--quiet', `refs/heads/${wt.branch}`], repo, env, [1, 128])).stdout.trim();
  if (!live && !tip) return { run: runId, source: 'none', base: wt.base_commit, files: [], patch: '', truncatedBytes: 0 };
  let cwd = repo;
  let range: string[];
  let pin: { GIT_INDEX_FILE?: string } = {};
  let scratch: string | undefined;
  if (live) {
    // What the worktree holds now, new files with their content: a scratch index of it (the worktree's own index is the agent's), against the base.
    const os = await import('node:os');
    const path = await import('node:path');
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-diff-'));
    pin = { GIT_INDEX_FILE: path.join(scratch, 'index') };
    cwd = wt.path;
    await git(['read-tree', 'HEAD'], cwd, env, [], pin);
    await git(['add', '-A'], cwd, env, [], pin);
    range = ['--cached', wt.base_commit];
  } else range = [wt.base_commit, tip];
  try {
    const numstat = (await git(['diff', '--numstat', '-z', '--no-renames', ...range], cwd, env, [], pin)).stdout;
    const status = (await git(['diff', '--name-status', '-z', '--no-renames', ...range], cwd, env, [], pin)).stdout.split('\0').filter(Boolean);
    const statusOf = new Map<string, string>();
    for (let i = 0; i + 1 < status.length; i += 2) statusOf.set(status[i + 1]!, status[i]!);
    const files: RunDiff['files'] = [];
    for (const entry of numstat.split('\0').filter(Boolean)) {
      const [ins, del, ...rest] = entry.split('\t');
      const file = rest.join('\t');
      files.push({ path: file, status: statusOf.get(file) ?? 'M', insertions: ins === '-' ? null : Number(ins), deletions: del === '-' ? null : Number(del) });
    }
    let patch = (await git(['diff', '--no-color', '--no-renames', ...range], cwd, env, [], pin)).stdout;
    let truncatedBytes = 0;
    const bytes = Buffer.byteLength(patch);
    if (bytes > DIFF_PATCH_CAP) {
      truncatedBytes = bytes - DIFF_PATCH_CAP;
      patch = Buffer.from(patch).subarray(0, DIFF_PATCH_CAP).toString('utf8');
    }
    return { run: runId, source: landing ? 'landing' : live ? 'worktree' : 'branch', base: wt.base_commit, ...(tip && !live ? { head: tip } : {}), files, patch, truncatedBytes };
  } finally {
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Every landing of the garden, newest queued first (`pak2 landings`,
 * `GET /landings`), with the problems of records that could not be read.
 */
export async function gardenLandings(garden: Garden): Promise<{ landings: LandingRecord[]; problems: { file: string; message: string }[] }> {
  const { landings, problems } = await listLandings(garden.paths);
  return { landings: [...landings].reverse(), problems };
}
