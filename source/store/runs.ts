import fs from 'node:fs';
import fsp from 'node:fs/promises';
import pLimit from 'p-limit';
import path from 'node:path';
import {
  formatIssue,
  isTerminalRunStatus,
  RUN_ID_PATTERN,
  validateRun,
  validateRunClose,
  type Cost,
  type FailureReason,
  type GoalRecord,
  type RunRecord,
  type RunStatus,
  type WorktreeBaseline,
  type RunRunner,
} from '../contracts/index.js';
import { runBranch, runDir, worktreeDir, type GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { span, timed } from '../timing.js';
import { appendEvent, type EventInput } from './events.js';
import { crashPoint, ensureRuntimeRoot, readJsonFile, RUNTIME_FILE_MODE, StoreError, writeJsonAtomic } from './files.js';
import { makeRedactor, redactJsonValue, redactRunDir, runRedaction, type RedactionOptions } from '../redact.js';
import { goalNumber } from './closed-index.js';
import { storeOf, type GardenStore } from './backend.js';
import { RUN_STREAM_FILES, sealRunStreams } from './streams.js';

/** File names inside a run directory (seed 000, "Run directory"). */
export const RUN_FILES = {
  meta: 'meta.json',
  events: RUN_STREAM_FILES.events,
} as const;

/** `<runtime-root>/runs/<run-id>/meta.json`. Refuses ids that are not `N-slug-rN`. */
export function runMetaFile(paths: GardenPaths, runId: string): string {
  if (!RUN_ID_PATTERN.test(runId)) throw new StoreError('RUN_NOT_FOUND', `run id ${JSON.stringify(runId)} is not of the form N-slug-rN`);
  return path.join(runDir(paths, runId), RUN_FILES.meta);
}

/**
 * `<runtime-root>/runs/.seals/<run-id>.json`: pak2's own copy of the run
 * record as it last wrote it, outside the run directory the agent works
 * beside. meta.json is the published record; when the two differ, the seal
 * is the truth and the difference is tampering (docs/run/level2.md).
 */
export function runSealFile(paths: GardenPaths, runId: string): string {
  if (!RUN_ID_PATTERN.test(runId)) throw new StoreError('RUN_NOT_FOUND', `run id ${JSON.stringify(runId)} is not of the form N-slug-rN`);
  return path.join(paths.runsDir, '.seals', `${runId}.json`);
}

/**
 * Runs this process follows (its driver holds the agent's process), by
 * meta.json path: the record pak2 last wrote for each. While a run is
 * followed, the record in memory is the truth: a terminal record that
 * appears in meta.json and in the seal without this process's close is
 * tampering, whatever the seal says (docs/run/level2.md, "Tampering").
 */
const followed = new Map<string, RunRecord>();

/**
 * Marks `record` (a `running` run this process is about to drive) as
 * followed: until {@link unfollowRun}, {@link readRunChecked} takes the
 * record pak2 wrote as the truth over both files on disk, and reports any
 * difference as damage. Closes made in this process update it.
 */
export function followRun(paths: GardenPaths, record: RunRecord): void {
  followed.set(runMetaFile(paths, record.id), record);
}

/** Ends {@link followRun} for `runId` (its driver is done with it). */
export function unfollowRun(paths: GardenPaths, runId: string): void {
  followed.delete(runMetaFile(paths, runId));
}

/** Writes a run record: the seal first, then meta.json, both atomically. */
async function writeRunRecord(paths: GardenPaths, record: RunRecord): Promise<void> {
  const store = storeOf(paths);
  if (store) return store.updateRun(record);
  await writeJsonAtomic(runSealFile(paths, record.id), record, RUNTIME_FILE_MODE);
  // Held once the seal has it: a close that failed to write (a full disk) leaves the run open, to be closed again.
  const key = runMetaFile(paths, record.id);
  if (followed.has(key)) followed.set(key, record);
  crashPoint(`run:${record.status}:after-seal`);
  await writeJsonAtomic(runMetaFile(paths, record.id), record, RUNTIME_FILE_MODE);
  crashPoint(`run:${record.status}:after-meta`);
}

/** `<runtime-root>/runs/<run-id>/events.jsonl`. */
export function runEventsFile(paths: GardenPaths, runId: string): string {
  return path.join(runDir(paths, runId), RUN_FILES.events);
}

/** What opening a run needs beyond the goal. */
export interface OpenRunInput {
  plant: string;
  driver: string;
  model: string;
  reasoningEffort?: string;
  worktreeBaseline?: WorktreeBaseline;
  /** A remote run (docs/runners/level2.md): the runner that holds it and its lease id. */
  runner?: RunRunner;
  /** A run in its own worktree (docs/landing/level2.md): the base branch and commit it starts from; the path and branch follow from the run id. */
  worktree?: { base_branch: string; base_commit: string };
}

/**
 * Opens the next attempt of `goal`: creates `runs/<goal>-rN/` (N = first free
 * attempt number, claimed with an exclusive mkdir), writes a validated
 * `running` meta.json with started_at, and appends RunStarted.
 *
 * @throws StoreError INVALID_RECORD when the record would not validate, IO_ERROR.
 */
export function openRun(paths: GardenPaths, goal: GoalRecord, input: OpenRunInput, now: Date = new Date()): Promise<RunRecord> {
  return timed('openRun', () => openRunNow(paths, goal, input, now));
}

async function openRunNow(paths: GardenPaths, goal: GoalRecord, input: OpenRunInput, now: Date): Promise<RunRecord> {
  const store = storeOf(paths);
  if (store) return openStoredRun(store, paths, goal, input, now);
  await ensureRuntimeRoot(paths);
  await fsp.mkdir(paths.runsDir, { recursive: true });
  let attempt = (await runIdsForGoal(paths, goal.id)).length + 1;
  for (;;) {
    const id = `${goal.id}-r${attempt}`;
    const record = runRecordOf(paths, goal, input, id, now);
    const issues = validateRun(record);
    if (issues.length > 0) throw new StoreError('INVALID_RECORD', `run ${id}: ${formatIssue(issues[0]!)}`);
    try {
      await fsp.mkdir(runDir(paths, id));
    } catch (error) {
      if (isErrno(error, 'EEXIST')) {
        attempt += 1;
        continue;
      }
      throw new StoreError('IO_ERROR', `${runDir(paths, id)}: cannot create run directory (${(error as Error).message})`);
    }
    await writeRunRecord(paths, record);
    await appendEvent(paths, runStartedEvent(goal, input, id), now);
    return record;
  }
}

/** The record of a new run `id` of `goal`: `running`, started now. Validated by the caller. */
function runRecordOf(paths: GardenPaths, goal: GoalRecord, input: OpenRunInput, id: string, now: Date): RunRecord {
    return {
      id,
      goal: goal.id,
      plant: input.plant,
      status: 'running',
      started_at: now.toISOString(),
      driver: input.driver,
      model: input.model,
      ...(input.reasoningEffort ? { reasoning_effort: input.reasoningEffort } : {}),
      ...(input.worktreeBaseline ? { worktree_baseline: input.worktreeBaseline } : {}),
      ...(input.runner ? { runner: input.runner } : {}),
      ...(input.worktree ? { worktree: { path: worktreeDir(paths, id), branch: runBranch(id), ...input.worktree } } : {}),
    };
}

function runStartedEvent(goal: GoalRecord, input: OpenRunInput, id: string): EventInput {
  return { type: 'RunStarted', run: id, goal: goal.id, plant: input.plant, detail: `${input.driver}/${input.model}${input.runner ? ` on runner ${input.runner.name}@${input.runner.host}` : ''}` };
}

/**
 * {@link openRun} on a store: the first free attempt number is the row the
 * insert wins (two openers of one goal never share an N); the run
 * directory is made here for the run's own files (its agent stream, its
 * prompt), the record and RunStarted commit together.
 */
async function openStoredRun(store: GardenStore, paths: GardenPaths, goal: GoalRecord, input: OpenRunInput, now: Date): Promise<RunRecord> {
  return store.transaction(async () => {
    let attempt = (await store.runIdsOfGoal(goal.id)).length + 1;
    for (;;) {
      const id = `${goal.id}-r${attempt}`;
      const record = runRecordOf(paths, goal, input, id, now);
      const issues = validateRun(record);
      if (issues.length > 0) throw new StoreError('INVALID_RECORD', `run ${id}: ${formatIssue(issues[0]!)}`);
      if (!(await store.insertRun(record, attempt))) {
        attempt += 1;
        continue;
      }
      await fsp.mkdir(runDir(paths, id), { recursive: true, mode: 0o700 }).catch((error: Error) => {
        throw new StoreError('IO_ERROR', `${runDir(paths, id)}: cannot create run directory (${error.message})`);
      });
      await appendEvent(paths, runStartedEvent(goal, input, id), now);
      return record;
    }
  });
}

/**
 * Writes a `running` run record that was opened elsewhere — a runner's
 * scratch copy of the garden's run (docs/runners/level2.md) — under its own
 * id, sealed as {@link openRun} seals: creates `runs/<run-id>/`, validates
 * the record, writes the seal then meta.json. Appends no event (the garden's
 * RunStarted is the one). An existing directory is reused (a runner resuming).
 *
 * @throws StoreError INVALID_RECORD (not valid, or not `running`), IO_ERROR.
 */
export async function adoptRun(paths: GardenPaths, record: RunRecord): Promise<RunRecord> {
  const issues = validateRun(record);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `run ${record.id}: ${formatIssue(issues[0]!)}`);
  if (record.status !== 'running') throw new StoreError('INVALID_RECORD', `run ${record.id}: is ${record.status}; only a running record is adopted`);
  await fsp.mkdir(runDir(paths, record.id), { recursive: true });
  await writeRunRecord(paths, record);
  return record;
}

/** A run record read with its seal: the truth, and what was wrong with meta.json if anything. */
export interface CheckedRun {
  run: RunRecord;
  /** Set when meta.json differs from pak2's seal: the differing top-level fields (`(unreadable)` for a torn or missing file), and how. */
  damage?: { fields: string[]; detail: string };
}

function validRecord(value: unknown, runId: string): value is RunRecord {
  return validateRun(value).length === 0 && (value as RunRecord).id === runId;
}

function differingFields(truth: Record<string, unknown>, seen: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(truth), ...Object.keys(seen)]);
  return [...keys].filter((key) => JSON.stringify(truth[key]) !== JSON.stringify(seen[key])).sort();
}

/** A followed run's record against both files: the one pak2 holds stands; either file that differs is damage. */
function checkedAgainst(held: RunRecord, file: string, read: Awaited<ReturnType<typeof readJsonFile>>, sealRead: Awaited<ReturnType<typeof readJsonFile>>): CheckedRun {
  const fields = new Set<string>();
  const where: string[] = [];
  for (const [name, got] of [['meta.json', read], ['its seal', sealRead]] as const) {
    const differing = got.ok ? differingFields(held as Record<string, unknown>, (got.value ?? {}) as Record<string, unknown>) : ['(unreadable)'];
    if (differing.length === 0) continue;
    for (const field of differing) fields.add(field);
    where.push(name);
  }
  if (fields.size === 0) return { run: held };
  const list = [...fields].sort();
  return { run: held, damage: { fields: list, detail: `${file}: ${where.join(' and ')} differ from the record pak2 holds for this live run in ${list.join(', ')}` } };
}

/**
 * Reads one run record and checks it against pak2's seal
 * ({@link runSealFile}). Without a seal (a record from before seals),
 * meta.json is the record. With one, the seal is the truth: a meta.json that
 * differs, is torn or is gone is reported in `damage`, never believed. A run
 * this process follows ({@link followRun}) has a truth stronger than both:
 * the record pak2 last wrote, held in memory.
 *
 * @throws StoreError RUN_NOT_FOUND, INVALID_RECORD (malformed JSON or failing field, named).
 */
export async function readRunChecked(paths: GardenPaths, runId: string): Promise<CheckedRun> {
  const file = runMetaFile(paths, runId);
  const store = storeOf(paths);
  // A store's row is the sealed record: the database refuses to rewrite a terminal one (store/postgres/migrations.ts).
  if (store) return { run: runOfStored(`${store.where} run ${runId}`, runId, await store.runRecord(runId)) };
  const [read, sealRead] = await Promise.all([readJsonFile(file), readJsonFile(runSealFile(paths, runId))]);
  const held = followed.get(file);
  if (held) return checkedAgainst(held, file, read, sealRead);
  const seal = sealRead.ok && validRecord(sealRead.value, runId) ? sealRead.value : undefined;
  if (seal) {
    if (!read.ok) return { run: seal, damage: { fields: ['(unreadable)'], detail: read.message } };
    const fields = differingFields(seal as Record<string, unknown>, (read.value ?? {}) as Record<string, unknown>);
    if (fields.length === 0) return { run: seal };
    return { run: seal, damage: { fields, detail: `${file}: differs from the record pak2 wrote in ${fields.join(', ')}` } };
  }
  if (!read.ok) {
    if (read.missing) throw new StoreError('RUN_NOT_FOUND', `no run ${runId} (looked for ${file})`, file);
    throw new StoreError('INVALID_RECORD', read.message, file);
  }
  const issues = validateRun(read.value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${file}: ${formatIssue(issues[0]!)}`, file);
  const run = read.value as RunRecord;
  if (run.id !== runId) throw new StoreError('INVALID_RECORD', `${file}: id ${JSON.stringify(run.id)} does not match the run directory`, file);
  return { run };
}

function runOfStored(where: string, runId: string, value: unknown): RunRecord {
  if (value === undefined) throw new StoreError('RUN_NOT_FOUND', `no run ${runId} (looked in ${where})`);
  const issues = validateRun(value);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `${where}: ${formatIssue(issues[0]!)}`);
  const run = value as RunRecord;
  if (run.id !== runId) throw new StoreError('INVALID_RECORD', `${where}: id ${JSON.stringify(run.id)} does not match`);
  return run;
}

/**
 * Reads one run record: pak2's sealed truth when meta.json was rewritten or
 * damaged (see {@link readRunChecked}).
 *
 * @throws StoreError RUN_NOT_FOUND, INVALID_RECORD (malformed JSON or failing field, named).
 */
export async function readRun(paths: GardenPaths, runId: string): Promise<RunRecord> {
  return (await readRunChecked(paths, runId)).run;
}

/**
 * Run ids of a goal's attempts, r1 first, found by probing `<goal>-r1`,
 * `-r2`, … (no listing of the runs directory, which can be large). Each
 * probe is one synchronous existence check (a few µs, no error object, no
 * trip through the thread pool): a start that asks this of 10,000 open
 * goals, most with no run, takes milliseconds, not a second of waiting.
 */
export async function runIdsForGoal(paths: GardenPaths, goalId: string): Promise<string[]> {
  const store = storeOf(paths);
  if (store) return store.runIdsOfGoal(goalId);
  const ids: string[] = [];
  for (let attempt = 1; ; attempt += 1) {
    const id = `${goalId}-r${attempt}`;
    if (!fs.existsSync(runDir(paths, id))) return ids;
    ids.push(id);
  }
}

/** The goal's latest run record, or undefined when it has none. */
export async function latestRun(paths: GardenPaths, goalId: string): Promise<RunRecord | undefined> {
  const ids = await runIdsForGoal(paths, goalId);
  const last = ids.at(-1);
  return last ? readRun(paths, last) : undefined;
}

/** Every run record (a listing of the runs directory); unreadable ones are reported. */
export async function listRuns(paths: GardenPaths): Promise<{ runs: RunRecord[]; problems: { file: string; message: string }[] }> {
  const store = storeOf(paths);
  if (store) {
    const runs: RunRecord[] = [];
    const problems: { file: string; message: string }[] = [];
    for (const { id, record } of await store.runRecords()) {
      try {
        runs.push(runOfStored(`${store.where} run ${id}`, id, record));
      } catch (error) {
        problems.push({ file: `${store.where} run ${id}`, message: (error as Error).message });
      }
    }
    return { runs, problems };
  }
  let names: string[];
  try {
    names = await fsp.readdir(paths.runsDir);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { runs: [], problems: [] };
    throw error;
  }
  const runs: RunRecord[] = [];
  const problems: { file: string; message: string }[] = [];
  // Bounded: thousands of runs must not open thousands of files at once (EMFILE under a low ulimit).
  const limit = pLimit(32);
  await Promise.all(
    names
      .filter((name) => RUN_ID_PATTERN.test(name))
      .map((name) =>
        limit(async () => {
          try {
            runs.push(await readRun(paths, name));
          } catch (error) {
            problems.push({ file: runMetaFile(paths, name), message: (error as Error).message });
          }
        }),
      ),
  );
  runs.sort((a, b) => (a.started_at < b.started_at ? -1 : a.started_at > b.started_at ? 1 : compareRunIds(a.id, b.id)));
  return { runs, problems };
}

/**
 * Writes meta.json again from `record` (pak2's sealed record), for a close
 * that was killed between writing the seal and meta.json. Only crash
 * recovery calls it.
 *
 * @throws StoreError IO_ERROR.
 */
export async function republishRun(paths: GardenPaths, record: RunRecord): Promise<void> {
  if (storeOf(paths)) return; // a store has no meta.json to put back
  await writeJsonAtomic(runMetaFile(paths, record.id), record);
}

/**
 * Rewrites the record of a run whose meta.json is unreadable and has no
 * seal, from what can still be known (its goal, plant, start and driver), as
 * `running`, so it can be closed. Only reclaim calls it.
 *
 * @throws StoreError INVALID_RECORD when even that would not validate, IO_ERROR.
 */
export async function recoverRunRecord(paths: GardenPaths, runId: string, known: Pick<RunRecord, 'goal' | 'plant' | 'started_at' | 'driver' | 'model'>): Promise<RunRecord> {
  const record: RunRecord = { id: runId, status: 'running', ...known };
  const issues = validateRun(record);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `run ${runId}: cannot rebuild its record: ${formatIssue(issues[0]!)}`, runMetaFile(paths, runId));
  await writeRunRecord(paths, record);
  return record;
}

/**
 * Who closes a run, as its RunClosed event says (`detail: "closed by
 * watchdog"`; docs/run/level2.md, "Terminal paths and the facts they
 * keep"): the `driver` that ran the agent (its own result, exit, timeout,
 * a failure of pak2 after launch), the `watchdog` (a silent run, whether the
 * driver writes the close after its stop or the watchdog closes an orphan),
 * the `coordinator` (its stop, reclaim at start, a close after the main turn),
 * the `operator` (`pak2 stop`), the `budget` (a cap crossed), a remote
 * run's `runner` (`runs_finish`) or its `lease` (expired).
 */
export const RUN_CLOSERS = ['driver', 'watchdog', 'coordinator', 'operator', 'budget', 'runner', 'lease'] as const;
export type RunCloser = (typeof RUN_CLOSERS)[number];

/** The terminal facts a close writes. `completed_at` defaults to now. */
export interface CloseRunInput {
  status: Exclude<RunStatus, 'running'>;
  cost: Cost;
  failureReason?: FailureReason;
  reflection?: string;
  finalText?: string;
  numTurns?: number;
  sessionId?: string;
  exitCode?: number | null;
  /** The agent's or the launcher's error message, kept as `outputs.error`. */
  errorText?: string;
  /** Who closed it, for the RunClosed event ({@link RUN_CLOSERS}). */
  by?: RunCloser;
  /** Extra terminal fields pak2 observed (watchdog, lingered, leftovers, damage found by reclaim). */
  extra?: Pick<RunRecord, 'watchdog' | 'lingered' | 'linger' | 'background_tasks' | 'stop_reason' | 'terminal_reason' | 'leftovers' | 'record_tampering' | 'permission_denials' | 'operator_stop' | 'acceptance' | 'budget'>;
  /**
   * The run's secrets (docs/run/level2.md, "Secrets"): what closeRun redacts
   * from the run directory and the text fields before the terminal record is
   * written. Default: {@link runRedaction} of this process's environment
   * (the environment the coordinator's agents inherit). A guarded run passes
   * its own (`enabled: false` with `--no-redact`).
   */
  redaction?: RedactionOptions;
}

const closing = new Map<string, Promise<unknown>>();

/**
 * Closes a run (seed 000 `close_run`): validates the terminal record with
 * validateRunClose(run, goalType), writes meta.json once and appends
 * RunClosed. A terminal record is never rewritten: closing it again throws.
 * Closes of one run within this process are serialised, so the watchdog and
 * the driver cannot both win.
 *
 * Then, in a split-runtime-root garden, it captures the runtime history of
 * the closed run (docs/runtime-history/level2.md): the provenance record and
 * a commit of the runtime tree. That capture never fails the close and never
 * touches meta.json again; an attempted capture that did not commit is
 * reported in one stderr line (see setRuntimeHistoryListener).
 *
 * @throws StoreError RUN_NOT_FOUND, INVALID_TRANSITION (already terminal),
 *   INVALID_RECORD (with the first validation issue, e.g. MISSING_REFLECTION), IO_ERROR.
 */
export async function closeRun(paths: GardenPaths, runId: string, goalType: string, input: CloseRunInput, now: Date = new Date()): Promise<RunRecord> {
  const previous = closing.get(runId) ?? Promise.resolve();
  const task = previous.catch(() => undefined).then(() => closeRunNow(paths, runId, goalType, input, now));
  closing.set(runId, task);
  try {
    return await task;
  } finally {
    if (closing.get(runId) === task) closing.delete(runId);
  }
}

async function closeRunNow(paths: GardenPaths, runId: string, goalType: string, raw: CloseRunInput, now: Date): Promise<RunRecord> {
  const endClose = span('closeRun (record, RunClosed)');
  // No secret at rest: the run's files and the record's text are redacted before the record turns terminal, so the
  // runtime history (which commits only closed runs) never holds them. A run already closed is redacted again: idempotent.
  const input = await redactRun(paths, runId, raw);
  const { run, damage } = await readRunChecked(paths, runId);
  if (isTerminalRunStatus(run.status)) {
    throw new StoreError('INVALID_TRANSITION', `run ${runId} is already ${run.status}; a terminal run record is never rewritten`, runMetaFile(paths, runId));
  }
  const closed: RunRecord = {
    ...run,
    status: input.status,
    completed_at: now.toISOString(),
    cost: input.cost,
    ...(input.failureReason ? { failure_reason: input.failureReason } : {}),
    ...(input.reflection ? { reflection: input.reflection } : {}),
    ...(input.finalText !== undefined || input.errorText !== undefined
      ? {
          outputs: {
            ...(run.outputs ?? {}),
            ...(input.finalText !== undefined ? { final_text: input.finalText } : {}),
            ...(input.errorText !== undefined ? { error: input.errorText } : {}),
          },
        }
      : {}),
    ...(input.numTurns !== undefined ? { num_turns: input.numTurns } : {}),
    ...(input.sessionId ? { session_id: input.sessionId } : {}),
    ...(input.exitCode !== undefined ? { exit_code: input.exitCode } : {}),
    ...(input.extra ?? {}),
    ...(damage ? { record_tampering: { detected_at: now.toISOString(), fields: damage.fields } } : {}),
  };
  const issues = validateRunClose(closed, goalType);
  if (issues.length > 0) throw new StoreError('INVALID_RECORD', `run ${runId}: ${formatIssue(issues[0]!)}`, runMetaFile(paths, runId));
  const commit = async (): Promise<void> => {
    if (damage) await appendEvent(paths, { type: 'RunRecordTampered', run: runId, goal: run.goal, plant: run.plant, detail: damage.detail }, now);
    await writeRunRecord(paths, closed);
    await appendEvent(
      paths,
      {
        type: 'RunClosed',
        run: runId,
        goal: run.goal,
        plant: run.plant,
        status: input.status,
        ...(input.failureReason ? { reason: input.failureReason } : {}),
        cost_source: input.cost.source,
        ...(input.cost.usd !== undefined ? { cost_usd: input.cost.usd } : {}),
        ...(input.by ? { detail: `closed by ${input.by}` } : {}),
      },
      now,
    );
  };
  const store = storeOf(paths);
  // On a store the terminal record and RunClosed commit together (seed 004).
  if (store) await store.transaction(commit);
  else await commit();
  crashPoint('run:closed:after-event');
  endClose();
  // A store's records are versioned by the database, not by the runtime history's git commits.
  if (store) return closed;
  // The run is closed from here on: the capture reports, it never throws or rewrites.
  // Imported here: runtime history is for closing runs, not for every command that reads the store.
  const { captureRuntimeHistory, reportRuntimeHistory } = await import('../history/runtime-history.js');
  reportRuntimeHistory(runId, await timed('runtime history (queue + capture)', () => captureRuntimeHistory(paths, closed)));
  return closed;
}

/**
 * Redacts the run directory (every file but meta.json, {@link redactRunDir})
 * and the close input's text (final text, reflection, error, the strings of
 * `extra`) with the input's {@link CloseRunInput.redaction}. On a garden with
 * a store, the run's streams there are completed from the local files and
 * redacted alike first ({@link sealRunStreams}).
 */
async function redactRun(paths: GardenPaths, runId: string, input: CloseRunInput): Promise<CloseRunInput> {
  const { redaction, ...rest } = input;
  const options = redaction ?? runRedaction(process.env);
  const redact = makeRedactor(options);
  const redactDir = () => timed('closeRun: redact the run directory', () => redactRunDir(runDir(paths, runId), redact, new Set([RUN_FILES.meta])));
  await sealRunStreams(paths, runId, { redactDir, ...(options.enabled ? { redact } : {}) });
  return {
    ...rest,
    ...(rest.finalText !== undefined ? { finalText: redact(rest.finalText) } : {}),
    ...(rest.reflection !== undefined ? { reflection: redact(rest.reflection) } : {}),
    ...(rest.errorText !== undefined ? { errorText: redact(rest.errorText) } : {}),
    ...(rest.extra !== undefined ? { extra: redactJsonValue(redact)(rest.extra) as CloseRunInput['extra'] } : {}),
  };
}

/** The attempt number K of a run id `<goal-id>-r<K>` (0 when it has none). */
function attemptOf(runId: string): number {
  const m = /-r(\d+)$/.exec(runId);
  return m ? Number(m[1]) : 0;
}

/** Orders run ids by their goal's number N, then their attempt K (never as strings: goal 9 before goal 10, r2 before r10). */
export function compareRunIds(a: string, b: string): number {
  return goalNumber(a) - goalNumber(b) || attemptOf(a) - attemptOf(b) || (a < b ? -1 : a > b ? 1 : 0);
}
