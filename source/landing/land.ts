import fsp from 'node:fs/promises';
import path from 'node:path';
import type { EventType, GoalRecord, LandingRecord, LandingVerify } from '../contracts/index.js';
import { agentEnvironment } from '../driver/index.js';
import { landingsDir, worktreesDir, type Garden } from '../garden/index.js';
import { runVerify } from '../guard/index.js';
import { appendEvent, crashPoint, inStoreTransaction, readGoal, readLanding, StoreError, withLandingLock, writeLanding } from '../store/index.js';
import { branchTip, copyIntoWorktree, git, parkWorktree, plantsRelative, POOL_DIR, removeWorktree, runSetup, takeFromPool, WorktreeGitError } from '../worktree/index.js';
import { moveBase } from './checkout.js';
import { mergeOnto } from './merge.js';

/** How often one landing merges again in one go when the base moves under it. */
const MAX_REMERGES = 3;

/** `<runtime-root>/landings/<run-id>/`: a landing's verify logs and its scratch worktree. */
export function landingWorkDir(garden: Garden, runId: string): string {
  return path.join(landingsDir(garden.paths), runId);
}

/** The verify command of a landing: the goal's guarded verify, else `[merge] verify`, else none. */
export function landingVerifyCommand(garden: Garden, goal: GoalRecord | undefined): string | undefined {
  return goal?.guard?.verify ?? garden.config.merge.verify;
}

/** A landing's verify, in its record's words. */
function verifyRecord(command: string, result: Awaited<ReturnType<typeof runVerify>>): LandingVerify {
  const tail = `${result.stdout}\n${result.stderr}`.trim().slice(-2000);
  return { command, ok: result.ok, exit_code: result.exitCode, timed_out: result.timedOut, duration_ms: result.durationMs, output_tail: tail };
}

/**
 * Lands one landing (docs/landing/level2.md, "The merge queue"), to its
 * end or to `waiting`: merges the run's branch onto the base branch's tip
 * without a work tree ({@link mergeOnto}); on a conflict ends `conflict`
 * with the paths; runs the verify command (the goal's guarded verify, else
 * `[merge] verify`) on the merged result in a scratch worktree, after
 * `[worktree] copy` and `setup`; on a failure ends `failed` /
 * `landing_verify_failed`; then moves the base branch ({@link moveBase}),
 * merging again (up to 3 times) when the base moved meanwhile. Each step
 * is written to the record before the next, with its event (LandingVerified,
 * Landed, LandingConflict, LandingFailed, LandingWaiting); the base branch
 * is either before or after the landing, never between. A landing the
 * operator rejected meanwhile is left as they left it.
 *
 * @returns the record as it ends this call.
 */
export async function landOne(garden: Garden, start: LandingRecord, env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): Promise<LandingRecord> {
  const { paths, config } = garden;
  const repo = paths.gardenRoot;
  let record = start;
  const save = async (patch: Partial<LandingRecord>, event?: { type: EventType; detail: string }): Promise<LandingRecord | undefined> => {
    // On a store, the record and its event commit together.
    return inStoreTransaction(paths, async () => {
      try {
        record = await writeLanding(paths, { ...record, ...patch, updated_at: now().toISOString() });
      } catch (error) {
        // Rejected (or ended) by the operator while this step ran: theirs stands.
        if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') return undefined;
        throw error;
      }
      if (event) await appendEvent(paths, { type: event.type, run: record.run, goal: record.goal, plant: record.plant, status: record.state, detail: event.detail }, now());
      return record;
    });
  };
  const fail = (reason: 'landing_error', message: string) => save({ state: 'failed', failure_reason: reason, message }, { type: 'LandingFailed', detail: `${reason}: ${message}` });

  try {
    const goal = await readGoal(paths, record.goal).catch(() => undefined);
    const verifyCommand = landingVerifyCommand(garden, goal);
    for (let round = 0; round < MAX_REMERGES; round += 1) {
      const onto = await branchTip(repo, record.base_branch, env);
      if (!onto) return (await fail('landing_error', `the base branch ${record.base_branch} does not exist; the work stays on ${record.branch}`)) ?? record;
      const head = await branchTip(repo, record.branch, env);
      if (!head) return (await fail('landing_error', `the run's branch ${record.branch} is gone; nothing to land`)) ?? record;
      // A landing whose merge and verify were done on this very tip (a restart, a waiting checkout) only moves the base.
      const ready = record.onto_commit === onto && record.result_commit && record.head_commit === head && (!verifyCommand || record.verify?.ok);
      if (!ready) {
        if (!(await save({ state: 'verifying', attempts: record.attempts + 1, head_commit: head }))) return record;
        const merged = await mergeOnto(repo, onto, head, `pak2: land ${record.run} (${record.goal})`, env, plantsRelative(garden));
        if (merged.kind === 'conflict') {
          const message = `merging ${record.branch} onto ${record.base_branch} at ${onto.slice(0, 12)} conflicts in ${merged.paths.join(', ')}`;
          return (await save({ state: 'conflict', failure_reason: 'landing_conflict', onto_commit: onto, conflict: { paths: merged.paths }, message }, { type: 'LandingConflict', detail: message })) ?? record;
        }
        let verify: LandingVerify | undefined;
        if (verifyCommand && !merged.upToDate) {
          verify = await verifyMerged(garden, record, merged.result, verifyCommand, env);
          if (!verify.ok) {
            const message = `verify ${verify.timed_out ? `ran past ${config.merge.verifyTimeoutSeconds} s` : `failed (exit ${verify.exit_code ?? 'by signal'})`} on the merged result ${merged.result.slice(0, 12)}: ${verifyCommand}`;
            return (
              (await save({ state: 'failed', failure_reason: 'landing_verify_failed', onto_commit: onto, result_commit: merged.result, verify, message }, { type: 'LandingFailed', detail: `landing_verify_failed: ${message}` })) ?? record
            );
          }
        }
        const saved = await save(
          { state: 'verifying', onto_commit: onto, result_commit: merged.result, ...(verify ? { verify } : {}) },
          { type: 'LandingVerified', detail: `${merged.upToDate ? 'already on' : merged.fastForward ? 'fast-forward of' : 'merged onto'} ${record.base_branch} at ${onto.slice(0, 12)} → ${merged.result.slice(0, 12)}; ${verify ? `verify passed: ${verifyCommand}` : merged.upToDate ? 'nothing new to verify' : 'no verify command'}` },
        );
        if (!saved) return record;
        crashPoint('landing:after-verified');
      }
      // The base moves and the record says so under the landing's lock: an operator's reject never falls between.
      const step = await withLandingLock(paths, record.run, async () => {
        const current = await readLanding(paths, record.run);
        if (!current || current.state === 'rejected' || current.state === 'landed') return { done: current ?? record };
        const moved = await moveBase(repo, record.base_branch, record.onto_commit!, record.result_commit!, `pak2: land ${record.run}`, env);
        if (moved.kind === 'moved') crashPoint('landing:after-move');
        if (moved.kind === 'base_moved') return { again: true };
        if (moved.kind === 'waiting') {
          if (record.state === 'waiting' && record.message === moved.message) return { done: record };
          return { done: (await save({ state: 'waiting', message: moved.message }, { type: 'LandingWaiting', detail: moved.message })) ?? record };
        }
        const landed = await save(
          { state: 'landed', landed_at: now().toISOString(), message: `${record.base_branch} moved to ${record.result_commit!.slice(0, 12)}${moved.checkout ? ` (and ${moved.checkout} fast-forwarded)` : ''}` },
          { type: 'Landed', detail: `${record.branch} → ${record.base_branch} at ${record.result_commit!.slice(0, 12)}` },
        );
        crashPoint('landing:after-landed');
        return { done: landed ?? record };
      });
      if ('again' in step) continue; // someone moved the base meanwhile: merge again on its new tip
      return step.done;
    }
    return record; // the base kept moving: the next pass takes it up again
  } catch (error) {
    const message = error instanceof WorktreeGitError ? error.message : `${(error as Error).message}`;
    return (await fail('landing_error', message)) ?? record;
  } finally {
    // The scratch worktree of a verify is never left behind: parked for the next one.
    await parkWorktree(repo, scratchPath(garden, record.run), env, { poolMax: poolSize(garden), pool: path.join(worktreesDir(paths), POOL_DIR) }).catch(() => undefined);
  }
}

function scratchPath(garden: Garden, runId: string): string {
  return path.join(landingWorkDir(garden, runId), 'scratch');
}

/** How many clean worktrees are kept parked for later runs and verifies: a slot's worth for each live run, and one more. */
export function poolSize(garden: Garden): number {
  return Math.max(2, garden.config.coordinator.maxConcurrentRuns + 1);
}

/** Checks out the merged result in a scratch worktree (a parked one when there is one), makes it ready as a run's worktree is, and runs verify there. */
async function verifyMerged(garden: Garden, record: LandingRecord, result: string, command: string, env: NodeJS.ProcessEnv): Promise<LandingVerify> {
  const { paths, config } = garden;
  const dir = landingWorkDir(garden, record.run);
  const scratch = scratchPath(garden, record.run);
  await fsp.mkdir(dir, { recursive: true });
  await removeWorktree(paths.gardenRoot, scratch, env);
  if (!(await takeFromPool(paths.gardenRoot, path.join(worktreesDir(paths), POOL_DIR), scratch, ['--detach', result], env))) await git(['worktree', 'add', '--quiet', '--detach', scratch, result], paths.gardenRoot, env);
  await copyIntoWorktree(paths.gardenRoot, scratch, config.worktree.copy, env);
  const { env: verifyEnv } = agentEnvironment(env);
  if (config.worktree.setup) {
    const setup = await runSetup(config.worktree.setup, scratch, config.worktree.setupTimeoutSeconds, path.join(dir, 'setup.log'), verifyEnv);
    if (!setup.ok) return { command, ok: false, exit_code: setup.exitCode, timed_out: setup.timedOut, duration_ms: setup.durationMs, output_tail: setup.message ?? '[worktree] setup failed' };
  }
  const verified = await runVerify(command, scratch, verifyEnv, config.merge.verifyTimeoutSeconds, dir);
  return verifyRecord(command, verified);
}

/**
 * The run's worktree after its landing ended (landed, conflict, rejected,
 * failed): anything left in it committed onto its branch, then parked in
 * the pool for a later run (or removed past the pool's size); its branch is
 * kept for `[worktree] keep_days` (pruned later). Safe to run twice.
 */
export async function retireWorktree(garden: Garden, run: { id: string; goal: string; plant: string; worktree?: { path: string; branch: string } }, env: NodeJS.ProcessEnv, now: () => Date = () => new Date()): Promise<void> {
  if (!run.worktree) return;
  const existed = (await fsp.stat(run.worktree.path).catch(() => undefined)) !== undefined;
  // Parked for the next run (clean, detached), not deleted: the next worktree then costs the files that differ.
  await parkWorktree(garden.paths.gardenRoot, run.worktree.path, env, { branch: run.worktree.branch, plant: run.plant, poolMax: poolSize(garden) });
  if (existed) crashPoint('worktree:after-remove');
  if (existed) await appendEvent(garden.paths, { type: 'WorktreeRemoved', run: run.id, goal: run.goal, plant: run.plant, detail: `${run.worktree.path} (branch ${run.worktree.branch} kept for ${garden.config.worktree.keepDays} day(s))` }, now());
}
