import fs from 'node:fs';
import path from 'node:path';
import { REFLECTION_REQUIRED_TYPES, type RunRecord } from '../contracts/index.js';
import { readPhases } from '../driver/dispatch.js';
import { getDriverPlugin } from '../driver/plugins/index.js';
import { runDir, type Garden } from '../garden/index.js';
import { plantDir, readPlantDocuments, runEventsFile } from '../store/index.js';
import { RunnerApiError, type AcceptanceItem, type FinishBody, type RunnerClient } from './client.js';
import { workdirPlantDir } from './scratch.js';
import { localGuardRecords } from './guard.js';
import type { GuardRecordsWire } from '../guard/index.js';
import { changedDocuments, type ClaimState } from './state.js';
import type { LogUploader } from './uploader.js';
import { workdirDiff } from './workdir-diff.js';

/**
 * The end of a run a runner holds (docs/runners/level2.md, "runs_finish";
 * seed 004, "The write-back contract" 4–6): the rest of the stream, the
 * artifacts (`diff.patch`, `prompt.md`), the plant documents that changed,
 * then `runs_finish` with the facts of the local record pak2's driver code
 * closed. The outcome is the local record's, never edited here.
 */

/** How the agent's end was seen: by the driver that started it, (after a restart) only as a process that went away, or not at all: it was never started (the runner was stopped first). */
export type ExitObservation = 'observed' | 'unobserved' | 'not_started';

/**
 * The acceptance items of `runs_finish`: first the goal's acceptance
 * criteria as the local close checked them (docs/goal/level2.md,
 * "Acceptance criteria": each verified, failed or unverified, with its
 * evidence), then what the runner itself verified from the closed local
 * record and its stream: the agent process's exit (and code), the agent's
 * result event, and the reflection when the goal type needs one.
 */
export function acceptanceOf(garden: Garden, run: RunRecord, goalType: string, exit: ExitObservation): AcceptanceItem[] {
  const items: AcceptanceItem[] = (run.acceptance ?? []).filter((a) => a.criterion).map((a) => ({ ...a, evidence: a.evidence ?? '' }));
  const code = run.exit_code;
  if (exit === 'not_started') {
    items.push({ item: 'agent process exited 0', verified: false, evidence: 'the agent was not started: the runner was stopped before it could start it' });
  } else if (exit === 'unobserved') {
    // What was seen: the process with the run's mark went away. Its code was never visible to this runner process.
    items.push({ item: 'agent process ended', verified: true, evidence: 'the agent process (found by its run mark after the runner restarted) is gone; its exit code was not observable' });
  } else if (run.failure_reason === 'launch_failed') {
    items.push({ item: 'agent process exited 0', verified: false, evidence: `the agent never started: ${run.outputs?.error ?? 'launch failed'}` });
  } else if (run.lingered) {
    const when = run.linger?.ended_by === 'cap' ? `within result_grace_cap_seconds${run.linger.open_work?.length ? ` (still open: ${run.linger.open_work.join('; ')})` : ''}` : 'once its work had ended (result_grace_seconds with nothing open)';
    items.push({ item: 'agent process exited 0', verified: true, evidence: `the agent reported its result and did not exit ${when}; pak2 ended its process group (exit ${code ?? 'by signal'})` });
  } else if (code === 0) {
    items.push({ item: 'agent process exited 0', verified: true, evidence: 'exit code 0' });
  } else {
    const how = run.failure_reason && ['killed', 'operator_stopped', 'coordinator_stopped', 'timeout'].includes(run.failure_reason) ? `stopped (${run.failure_reason}); ` : '';
    items.push({ item: 'agent process exited 0', verified: false, evidence: `${how}exit ${code === null || code === undefined ? 'by signal or not observed' : `code ${code}`}` });
  }
  const plugin = getDriverPlugin(run.driver, garden.config);
  if (plugin) {
    const parsed = plugin.parseEvents(readPhases(runEventsFile(garden.paths, run.id)).main, { phase: 'main', runDir: runDir(garden.paths, run.id), model: run.model });
    items.push({
      item: 'result event in the stream',
      verified: parsed.reported,
      evidence: parsed.reported ? `the agent reported ${parsed.status}${parsed.errorText ? `: ${parsed.errorText.slice(0, 200)}` : ''}` : 'events.jsonl holds no result event',
    });
  }
  if ((REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goalType)) {
    items.push({ item: 'reflection recorded', verified: Boolean(run.reflection?.trim()), evidence: run.reflection?.trim() ? `${run.reflection.trim().length} characters` : 'no reflection' });
  }
  return items;
}

/** The `runs_finish` body from a closed local record: its facts as they are, `null` where it has none. */
export function finishBody(run: RunRecord, lease: string, streamBytes: FinishBody['stream_bytes'], acceptance: AcceptanceItem[], guard?: GuardRecordsWire): FinishBody {
  return {
    ...(guard ? { guard } : {}),
    lease,
    status: run.status,
    failure_reason: run.failure_reason ?? null,
    exit_code: run.exit_code ?? null,
    cost: run.cost ?? { source: 'unknown' },
    session_id: run.session_id ?? null,
    final_text: run.outputs?.final_text ?? null,
    error: run.outputs?.error ?? null,
    num_turns: run.num_turns ?? null,
    reflection: run.reflection ?? null,
    stream_bytes: streamBytes,
    acceptance,
    lingered: Boolean(run.lingered),
    leftovers: run.leftovers ?? [],
    watchdog: run.watchdog ?? null,
    permission_denials: run.permission_denials ?? [],
    operator_stop: run.operator_stop ?? null,
    linger: run.linger ?? null,
    background_tasks: run.background_tasks ?? [],
    stop_reason: run.stop_reason ?? null,
    terminal_reason: run.terminal_reason ?? null,
  };
}

/** What finishing did. */
export type FinishOutcome = { kind: 'finished'; run: RunRecord } | { kind: 'lease-ended'; error: RunnerApiError } | { kind: 'refused'; error: RunnerApiError };

/** What {@link finishRun} needs. */
export interface FinishInput {
  client: RunnerClient;
  garden: Garden;
  /** The closed local record. */
  run: RunRecord;
  goalType: string;
  lease: string;
  uploader: LogUploader;
  claim: ClaimState | undefined;
  workdir: string;
  /** Paths left out of the diff (the state directory when it is inside the workdir). */
  exclude: string[];
  exit: ExitObservation;
  log: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Called just before `runs_finish` is sent (the lease keeper's heartbeats stop there, so none follows the finish). */
  beforeFinish?: () => Promise<void>;
}

/** Tries `fn`; an ended lease is thrown on, anything else is said in one line and skipped. */
async function optional(log: (line: string) => void, what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof RunnerApiError && error.leaseEnded) throw error;
    log(`${what}: ${(error as Error).message}`);
  }
}

/**
 * Uploads the rest of the stream, attaches the artifacts, upserts the
 * changed plant documents and finishes the run. A `409 {size}` on the
 * finish (the garden holds less of the stream) uploads again and retries;
 * an ended lease or a refusal (`400`, `422`) is returned, never retried.
 *
 * @throws RunnerApiError when the server cannot be reached (the caller retries or gives up).
 */
export async function finishRun(input: FinishInput): Promise<FinishOutcome> {
  const { client, run, lease, log } = input;
  try {
    await input.uploader.flush(true);
    const prefix = `run ${run.id}`;
    if (input.claim) {
      const diff = await workdirDiff(input.workdir, input.claim.baselineTree, input.exclude, input.env);
      if (diff.length > 0) await optional(log, `${prefix}: diff.patch not attached`, () => client.attachArtifact(run.id, { lease, name: 'diff.patch', kind: 'diff', content: diff.toString('base64'), encoding: 'base64' }));
    }
    const promptFile = path.join(runDir(input.garden.paths, run.id), 'prompt.md');
    if (fs.existsSync(promptFile)) {
      await optional(log, `${prefix}: prompt.md not attached`, () => client.attachArtifact(run.id, { lease, name: 'prompt.md', kind: 'file', content: fs.readFileSync(promptFile, 'utf8'), encoding: 'utf8' }));
    }
    if (input.claim) {
      const plant = run.plant;
      const scratch = changedDocuments(input.claim.documents, readPlantDocuments(plantDir(input.garden.paths, plant)));
      const checkout = changedDocuments(input.claim.workdirDocuments, readPlantDocuments(workdirPlantDir(input.workdir, input.garden.config, plant)));
      const byPath = new Map([...checkout, ...scratch].map((d) => [d.path, d]));
      for (const doc of byPath.values()) {
        await optional(log, `${prefix}: document ${doc.path} not upserted`, () => client.upsertDocument(plant, { lease, run: run.id, path: doc.path, content: doc.content }));
      }
    }
    const acceptance = acceptanceOf(input.garden, run, input.goalType, input.exit);
    // A guarded run's records go with its finish: the garden keeps them in its run directory (seed 001).
    const guard = localGuardRecords(input.garden, run.id, log);
    await input.beforeFinish?.();
    for (let attempt = 0; ; attempt += 1) {
      try {
        const body = finishBody(run, lease, input.uploader.localSizes(), acceptance, guard);
        const answer = await client.finish(run.id, body);
        return { kind: 'finished', run: answer.run };
      } catch (error) {
        if (!(error instanceof RunnerApiError)) throw error;
        if (error.status === 409 && !error.leaseEnded && attempt < 3) {
          // The garden holds less of the stream than the runner says: its sizes reset the offsets, upload the rest.
          const held = (error.body as { size?: { events?: number; stderr?: number } } | undefined)?.size;
          if (held && typeof held === 'object') {
            input.uploader.offsets.events = held.events ?? input.uploader.offsets.events;
            input.uploader.offsets.stderr = held.stderr ?? input.uploader.offsets.stderr;
          }
          await input.uploader.flush(true);
          continue;
        }
        throw error;
      }
    }
  } catch (error) {
    if (!(error instanceof RunnerApiError)) throw error;
    if (error.leaseEnded) return { kind: 'lease-ended', error };
    if (error.status >= 400 && error.status < 500) return { kind: 'refused', error };
    throw error;
  }
}
