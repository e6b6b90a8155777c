import fs from 'node:fs';
import type { Command } from 'commander';
import { GOAL_ID_PATTERN, RUN_ID_PATTERN, type GoalRecord } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { sanitize } from '../../format.js';
import { routingAttemptsMax, traceText } from '../../guard/describe.js';
import { GUARD_RECORD_FILES, readGuardRecord } from '../../guard/read.js';
import { readGoal, readRun, runIdsForGoal, runMetaFile, storeOf } from '../../store/index.js';
import type { Garden } from '../../garden/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 trace RUN [--json]`: what a guarded run did (seed 001,
 * docs/guarded-runs/level2.md "pak2 trace"): the phase timeline with
 * durations, the decision and diagnostic, violations, verify, mutations,
 * rollback and the routing attempts with their costs. A malformed guard
 * file is named (file and field) and makes the command exit 1; the rest is
 * still printed.
 */
/** How many of a goal's runs the goal-id error suggests, the latest ones. */
const RUNS_SUGGESTED = 5;

/**
 * The error for a goal id given where a run id is wanted: it says so and
 * suggests `pak2 trace <goal>-rK` for the goal's runs (the latest
 * {@link RUNS_SUGGESTED}). With `onlyIfGoal`, undefined when there is no
 * such goal and no run of it (the caller says "no run").
 */
async function goalIdError(garden: Garden, goalId: string, onlyIfGoal: true): Promise<UserError | undefined>;
async function goalIdError(garden: Garden, goalId: string): Promise<UserError>;
async function goalIdError(garden: Garden, goalId: string, onlyIfGoal = false): Promise<UserError | undefined> {
  const runs = await runIdsForGoal(garden.paths, goalId).catch(() => [] as string[]);
  const exists = runs.length > 0 || (await readGoal(garden.paths, goalId).then(() => true, () => false));
  if (onlyIfGoal && !exists) return undefined;
  const shown = runs.slice(-RUNS_SUGGESTED).reverse();
  const hint = runs.length
    ? `its run${runs.length > 1 ? 's' : ''}, latest first: ${shown.map((r) => `pak2 trace ${r}`).join(', ')}${runs.length > shown.length ? ` (and ${runs.length - shown.length} earlier)` : ''}`
    : exists
      ? `goal ${goalId} has no run yet`
      : `there is no goal ${goalId} either in ${garden.paths.runtimeRoot}`;
  return new UserError(`RUN ${goalId}: a goal id, not a run id (N-slug-rN)`, { hint });
}

/**
 * `pak2 trace RUN [--json]` (docs/guarded-runs/level2.md): what a guarded run
 * did, from its files. A goal id is refused with its runs named (exit 2); a
 * run that is not guarded, or a malformed guard file (named), exits 1.
 */
export function registerTrace(program: Command, io: CliIO): void {
  program
    .command('trace')
    .description('what a guarded run did: phases with durations, decision, violations, verify, mutations, rollback, routing attempts and costs')
    .argument('<run>', 'the run id (N-slug-rN)')
    .option('--json', 'print {envelope, outcome, phases, problems} as JSON')
    .action(async (runId: string, opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      if (!RUN_ID_PATTERN.test(runId)) {
        if (GOAL_ID_PATTERN.test(runId)) throw await goalIdError(garden, runId);
        throw new UserError(`RUN ${runId}: not a run id (N-slug-rN)`);
      }
      const exists = storeOf(garden.paths) ? await readRun(garden.paths, runId).then(() => true, () => false) : fs.existsSync(runMetaFile(garden.paths, runId));
      if (!exists) {
        // `3-fix-r2` may be a goal whose slug ends in r2.
        const asGoal = await goalIdError(garden, runId, true);
        throw asGoal ?? new UserError(`no run ${runId} in ${garden.paths.runtimeRoot}`);
      }
      const record = await readGuardRecord(garden.paths, runId);
      if (!record.guarded) throw new UserError(`run ${runId} is not a guarded run (no ${GUARD_RECORD_FILES.envelope})`, { exitCode: 1 });
      const problems = [...record.problems];
      // The run record gives the header its status; the goal, the routing class's bounds. Neither is needed for the trace.
      let status: string | undefined;
      let maxAttempts: number | undefined;
      let goal: GoalRecord | undefined;
      try {
        const run = await readRun(garden.paths, runId);
        status = `${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`;
        goal = await readGoal(garden.paths, run.goal).catch(() => undefined);
        maxAttempts = routingAttemptsMax(garden.config.routing, record.envelope?.routing?.task_class ?? goal?.task_class);
      } catch (error) {
        problems.push((error as Error).message);
      }
      if (opts.json) {
        printJson(io, { envelope: record.envelope ?? null, outcome: record.outcome ?? null, phases: record.phases, problems });
      } else {
        // The goal as it is now says what to do next (retry it, look at it): never this trace again.
        io.out(sanitize(traceText({ ...record, problems }, runId, { ...(status ? { status } : {}), ...(maxAttempts !== undefined ? { maxAttempts } : {}), ...(goal ? { goal } : {}) })));
      }
      if (problems.length) {
        if (!opts.json) io.err(`pak2: ${problems.length} problem(s) in ${runId}'s guard files; the trace is incomplete`);
        io.exitCode = 1;
      }
    });
}
