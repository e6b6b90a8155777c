import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { strandRun } from './reconcile.js';
import type { IoFaults } from './io-faults.js';
import { closeAfterMainTurn, closeFromStream, RUN_PROCESS_FILE, RUN_STDERR_FILE, type RunProcessRecord } from '../driver/dispatch.js';
import { sweepRun } from '../driver/process-tree.js';
import { runDir, type Garden } from '../garden/index.js';
import type { RunRecord } from '../contracts/index.js';
import { finishInterruptedGuard, isGuarded } from '../guard/index.js';
import { processAlive } from '../proc.js';
import { markedProcesses } from '../driver/process-tree.js';
import { OpenGoalScanner, readRun, recoverRunRecord, runIdsForGoal, storeOf, StoreError } from '../store/index.js';

/**
 * Ends the processes of a run no coordinator holds (an orphan): its process
 * group, its run mark, and whatever still holds its output files, found from
 * its `process.json` on this host.
 */
export async function sweepOrphanRun(garden: Garden, run: { id: string }, record = readProcessRecord(garden, run.id)): Promise<void> {
  if (!record || record.host !== os.hostname()) return;
  const dir = runDir(garden.paths, run.id);
  await sweepRun(record.pid, record.mark, [path.join(dir, 'events.jsonl'), path.join(dir, RUN_STDERR_FILE)]);
}

/**
 * True when a run's agent had ended on its own: its `process.json` names a
 * process on this host, and neither that pid nor any process with its run
 * mark is alive. False when one lives, or nothing says (no record, another
 * host).
 */
export function orphanAgentEnded(garden: Garden, runId: string, record = readProcessRecord(garden, runId)): boolean {
  return record !== undefined && record.host === os.hostname() && !processAlive(record.pid) && markedProcesses(record.mark).length === 0;
}

/** A run's `process.json` (its agent process: pid, mark, host, start, driver, model), or undefined when it is missing or unreadable. */
function readProcessRecord(garden: Garden, runId: string): RunProcessRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(runDir(garden.paths, runId), RUN_PROCESS_FILE), 'utf8')) as RunProcessRecord;
  } catch {
    return undefined;
  }
}

/**
 * Runs a coordinator finds `running` when it starts belong to no live
 * process of its own: the coordinator that launched them died (kill -9, a
 * closed terminal, a crash). Under the single-coordinator lock they are
 * orphans. Each one's agent processes (found by the run mark in
 * `process.json`, on this host) are killed, and the run is closed `killed`
 * with failure_reason `coordinator_stopped`, so the next pass puts its goal
 * back in the queue instead of waiting out the watchdog. A run whose
 * meta.json is torn is read from its seal; one with no seal either is
 * rebuilt from its goal and process record, and the damage is named in the
 * close (`record_tampering`, `outputs.error`). A run killed during its
 * reflection turn (its main turn had finished) is recorded from its main
 * turn instead (`closeAfterMainTurn`: `failure` / `reflection_failed`, or
 * `success` when the reflection's result had reached the stream), so its
 * goal closes and the task is not run again. A guarded run's guard is
 * finished first (`finishInterruptedGuard`): its verify process ended, and
 * work a verify never passed undone to the run's baseline.
 * A close that fails on I/O (a full disk) leaves the run for recovery in
 * `faults`: said once, not in flight, closed again by a pass once its
 * backoff ends.
 *
 * @returns the run ids reclaimed.
 */
export async function reclaimOrphans(garden: Garden, now: () => Date = () => new Date(), scanner: OpenGoalScanner = new OpenGoalScanner(garden.paths), faults?: IoFaults): Promise<string[]> {
  const { paths } = garden;
  const reclaimed: string[] = [];
  const { goals } = await scanner.scan();
  for (const goal of goals) {
    if (goal.status !== 'running' && goal.status !== 'dispatched') continue;
    const ids = await runIdsForGoal(paths, goal.id);
    const runId = ids.at(-1);
    if (!runId) continue;
    const record = readProcessRecord(garden, runId);
    // On a garden shared through a store, a run launched from another checkout (no process.json here) is its coordinator's; if that one died, its lease expires.
    if (storeOf(paths) && !record) continue;
    let run: RunRecord;
    let rebuilt: string | undefined;
    try {
      run = await readRun(paths, runId);
    } catch (error) {
      if (!(error instanceof StoreError) || error.code !== 'INVALID_RECORD') continue;
      // A torn record with no seal (written before seals): rebuild what can still be known, and say so.
      rebuilt = error.message;
      run = await recoverRunRecord(paths, runId, {
        goal: goal.id,
        plant: goal.assigned_to ?? 'unknown',
        started_at: record?.started_at ?? new Date(fs.statSync(runDir(paths, runId)).mtimeMs).toISOString(),
        driver: record?.driver ?? goal.driver ?? 'unknown',
        model: record?.model ?? goal.model ?? 'unknown',
      });
    }
    // A remote run is its runner's; its lease, not a local process, says whether it lives (docs/runners/level2.md).
    if (run.status !== 'running' || run.runner) continue;
    // Whether its agent had ended on its own before this sweep: a turn that ended is recorded from its result, never as killed.
    const agentEnded = orphanAgentEnded(garden, runId, record);
    await sweepOrphanRun(garden, run, record);
    // A guarded run's guard is finished too: its verify ended, and work it never accepted undone (never adopted as the operator's next baseline).
    const guarded = isGuarded(goal) ? await finishInterruptedGuard(garden, run, process.env, now()) : undefined;
    const input = {
      status: 'killed',
      failureReason: 'coordinator_stopped',
      errorText: `the coordinator that ran it stopped without closing it${guarded ? `; ${guarded}` : ''}${rebuilt ? `; its record was damaged (${rebuilt}) and was rebuilt from the goal and process record` : ''}`,
      by: 'coordinator',
      ...(rebuilt ? { extra: { record_tampering: { detected_at: now().toISOString(), fields: ['(unreadable)'] } } } : {}),
    } as const;
    try {
      // Its main turn had finished (its reflection had begun): recorded from it, so the task is not done again.
      // (A guarded run's ended turn was never verified: it is not recorded from its own report.)
      const kept = rebuilt ? undefined : await closeAfterMainTurn(garden, run, goal.type, 'the coordinator that ran it stopped', now(), { agentEnded: agentEnded && !isGuarded(goal) });
      if (kept) {
        reclaimed.push(run.id);
        continue;
      }
      // Closed from its stream: the session id and any cost it reported are kept.
      const closed = await closeFromStream(garden, run, goal.type, input, now());
      if (closed) reclaimed.push(run.id);
    } catch (error) {
      if (strandRun({ faults, now }, run.id, error, input)) continue;
      if (!(error instanceof StoreError)) throw error;
    }
  }
  return reclaimed;
}
