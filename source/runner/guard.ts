import fs from 'node:fs';
import path from 'node:path';
import type { GoalRecord, RunRecord } from '../contracts/index.js';
import type { DriverContext } from '../driver/dispatch.js';
import { runDir, type Garden } from '../garden/index.js';
import { createRunGuard, guardFromContext, GUARD_RECORD_FILES, MAX_GUARD_RECORD_BYTES, type GuardContext, type GuardRecordsWire } from '../guard/index.js';
import { workdirPlantDir } from './scratch.js';

/**
 * A guarded or routed goal on a runner (docs/runners/level2.md, "Guarded
 * and routed goals"): the guard the garden decided runs in the runner's
 * checkout (baseline, scope check, verify, rollback; seed 001), and its
 * records go back with the finish.
 */

/** Work-tree-relative paths a runner's guard leaves out: its checkout's plant directory (the agent keeps its memory there) and the state directory when it is inside the checkout. */
export function runnerGuardExcludes(workdir: string, stateDir: string, garden: Garden, plant: string): string[] {
  return [workdirPlantDir(workdir, garden.config, plant), stateDir]
    .map((p) => path.relative(workdir, p).split(path.sep).join('/'))
    .filter((rel) => rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The driver's `guardFor` hook of a claim whose context carries a guard:
 * the garden's guard and routing plan over the scratch garden, whose garden
 * root is the checkout. `env` is the agent's base environment (the
 * runner's, with its PAK2_* hand-over). Undefined for an unguarded claim.
 */
export function runnerGuardFor(context: GuardContext | undefined, input: { garden: Garden; workdir: string; stateDir: string; env: NodeJS.ProcessEnv }): DriverContext['guardFor'] | undefined {
  if (!context) return undefined;
  const { guard, plan } = guardFromContext(context);
  return async (goal: GoalRecord, run: RunRecord) =>
    createRunGuard({
      garden: input.garden,
      goal,
      run,
      env: input.env,
      now: () => new Date(),
      guard,
      ...(plan ? { plan } : {}),
      excluded: runnerGuardExcludes(input.workdir, input.stateDir, input.garden, run.plant),
    });
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The guard records a closed local run left in the scratch run directory,
 * for the finish; undefined when the guard wrote no envelope or outcome (an
 * unguarded run, or one that ended before its guard could close). A record
 * that does not parse is left to the garden to refuse. A rejected patch
 * over {@link MAX_GUARD_RECORD_BYTES} is not sent (`log` says so); the
 * phase log still says the rollback was done.
 */
export function localGuardRecords(garden: Garden, runId: string, log: (line: string) => void): GuardRecordsWire | undefined {
  const dir = runDir(garden.paths, runId);
  const envelope = readText(path.join(dir, GUARD_RECORD_FILES.envelope));
  const outcome = readText(path.join(dir, GUARD_RECORD_FILES.outcome));
  if (envelope === undefined || outcome === undefined) return undefined;
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  };
  const patch = readText(path.join(dir, GUARD_RECORD_FILES.patch));
  const bundle = readText(path.join(dir, GUARD_RECORD_FILES.promptBundle));
  const fits = (text: string | undefined, name: string): string | null => {
    if (text === undefined) return null;
    if (Buffer.byteLength(text, 'utf8') <= MAX_GUARD_RECORD_BYTES) return text;
    log(`run ${runId}: ${name} is over ${MAX_GUARD_RECORD_BYTES} bytes; not sent (it stays in the runner's run directory)`);
    return null;
  };
  return {
    envelope: parse(envelope),
    outcome: parse(outcome),
    phases: readText(path.join(dir, GUARD_RECORD_FILES.phases)) ?? '',
    rejected_patch: fits(patch, GUARD_RECORD_FILES.patch),
    prompt_bundle: fits(bundle, GUARD_RECORD_FILES.promptBundle),
  };
}
