import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  PhaseEventSchema,
  RUN_ID_PATTERN,
  validateExecutionEnvelope,
  validateTaskOutcome,
  type ExecutionEnvelope,
  type PhaseEvent,
  type TaskOutcome,
  type ValidationIssue,
} from '../contracts/index.js';
import { runDir, type GardenPaths } from '../garden/index.js';

/**
 * The files a guarded run writes beside meta.json in
 * `<runtime-root>/runs/<run-id>/` (seed 001, "Files in a run directory");
 * the engine writes them, this reader and the snapshot read them.
 */
export const GUARD_RECORD_FILES = {
  envelope: 'execution_envelope.json',
  outcome: 'task_outcome.json',
  phases: 'phase_events.jsonl',
  patch: 'rejected.patch',
  promptBundle: 'prompt_bundle.md',
} as const;

/** The most of a JSON record or of the phase log the reader reads (bytes): past it, the file is a problem. */
export const GUARD_READ_MAX_BYTES = 8 * 1024 * 1024;
/** How many validation issues of one file are reported, the first ones. */
const ISSUES_SHOWN = 5;

/**
 * What a guarded run left in its run directory, read and validated. A run
 * is `guarded` when any of the envelope, the outcome or the phase log is
 * there (the phase log is written as the run goes; the envelope and the
 * outcome at its close). A file that is malformed is left out and named in
 * `problems` with its field; a missing one is simply absent.
 */
export interface GuardRecord {
  guarded: boolean;
  envelope?: ExecutionEnvelope;
  outcome?: TaskOutcome;
  /** The phase log's valid lines, in file order. */
  phases: PhaseEvent[];
  /** `rejected.patch` when a rollback wrote one: its path and size. */
  patch?: { file: string; bytes: number };
  /** One line per malformed file, line or field: `<file>: <field>: <what>`. */
  problems: string[];
}

type Read = { absent: true } | { absent: false; text: string } | { absent: false; problem: string };

async function readCapped(file: string): Promise<Read> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { absent: true };
    return { absent: false, problem: `${file}: cannot be read (${code ?? (error as Error).message})` };
  }
  try {
    const { size } = await handle.stat();
    if (size > GUARD_READ_MAX_BYTES) return { absent: false, problem: `${file}: ${size} bytes, more than the ${GUARD_READ_MAX_BYTES} a reader reads` };
    const buffer = Buffer.alloc(size);
    const { bytesRead } = await handle.read(buffer, 0, size, 0);
    return { absent: false, text: buffer.subarray(0, bytesRead).toString('utf8') };
  } catch (error) {
    return { absent: false, problem: `${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  } finally {
    await handle.close();
  }
}

function issueLines(file: string, issues: ValidationIssue[]): string[] {
  const lines = issues.slice(0, ISSUES_SHOWN).map((i) => `${file}: ${i.field || '(document)'}: ${i.code} (${i.message})`);
  if (issues.length > ISSUES_SHOWN) lines.push(`${file}: … ${issues.length - ISSUES_SHOWN} more issue(s)`);
  return lines;
}

/** Reads one JSON record and validates it; undefined (and problem lines) when it is malformed. */
async function readRecord<T>(file: string, validate: (data: unknown) => ValidationIssue[], problems: string[]): Promise<{ present: boolean; value?: T }> {
  const read = await readCapped(file);
  if (read.absent) return { present: false };
  if ('problem' in read) {
    problems.push(read.problem);
    return { present: true };
  }
  let data: unknown;
  try {
    data = JSON.parse(read.text);
  } catch (error) {
    problems.push(`${file}: (document): not valid JSON (${(error as Error).message})`);
    return { present: true };
  }
  const issues = validate(data);
  if (issues.length) {
    problems.push(...issueLines(file, issues));
    return { present: true };
  }
  return { present: true, value: data as T };
}

/**
 * Reads the phase log: each valid line kept, each bad one a problem naming
 * its line number and field. A line of another run (its `run_id` is not
 * `runId`) is a problem too, and left out of the phases.
 */
async function readPhases(file: string, runId: string, problems: string[]): Promise<{ present: boolean; phases: PhaseEvent[] }> {
  const read = await readCapped(file);
  if (read.absent) return { present: false, phases: [] };
  if ('problem' in read) {
    problems.push(read.problem);
    return { present: true, phases: [] };
  }
  const phases: PhaseEvent[] = [];
  const lines = read.text.split('\n');
  // A last line without its newline may be a write in progress: it is read if whole, never reported.
  const partial = lines.at(-1) !== '' ? lines.length : -1;
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let data: unknown;
    try {
      data = JSON.parse(line);
    } catch {
      if (i + 1 !== partial) problems.push(`${file}: line ${i + 1}: not valid JSON`);
      return;
    }
    const parsed = PhaseEventSchema.safeParse(data);
    if (parsed.success) {
      if (parsed.data.run_id === runId) phases.push(parsed.data);
      else problems.push(`${file}: line ${i + 1}: run_id: ${JSON.stringify(parsed.data.run_id)} is another run's (this is ${runId}); the line is left out`);
    } else {
      const first = parsed.error.issues[0];
      problems.push(`${file}: line ${i + 1}: ${first?.path.join('.') || '(line)'}: ${first?.message ?? 'invalid'}`);
    }
  });
  return { present: true, phases };
}

/**
 * Reads what a guarded run wrote in its run directory (seed 001):
 * `execution_envelope.json` and `task_outcome.json` through their
 * validators, `phase_events.jsonl` line by line (a line of another run is
 * a problem), and the size of `rejected.patch`. Never throws: a malformed file is a problem line
 * naming the file and field. A run that wrote none of them is
 * `guarded: false`; so is an id that is not `N-slug-rN` (with a problem
 * line; no path outside `runs/` is ever read).
 */
export async function readGuardRecord(paths: GardenPaths, runId: string): Promise<GuardRecord> {
  if (!RUN_ID_PATTERN.test(runId)) return { guarded: false, phases: [], problems: [`run id ${JSON.stringify(runId)} is not of the form N-slug-rN`] };
  const dir = runDir(paths, runId);
  // One list per file, joined in file order: the problems read the same whichever file answers first.
  const found: [string[], string[], string[]] = [[], [], []];
  const [envelope, outcome, phases, patch] = await Promise.all([
    readRecord<ExecutionEnvelope>(path.join(dir, GUARD_RECORD_FILES.envelope), validateExecutionEnvelope, found[0]),
    readRecord<TaskOutcome>(path.join(dir, GUARD_RECORD_FILES.outcome), validateTaskOutcome, found[1]),
    readPhases(path.join(dir, GUARD_RECORD_FILES.phases), runId, found[2]),
    fsp.stat(path.join(dir, GUARD_RECORD_FILES.patch)).then(
      (s) => (s.isFile() ? { file: path.join(dir, GUARD_RECORD_FILES.patch), bytes: s.size } : undefined),
      () => undefined,
    ),
  ]);
  return {
    guarded: envelope.present || outcome.present || phases.present,
    ...(envelope.value ? { envelope: envelope.value } : {}),
    ...(outcome.value ? { outcome: outcome.value } : {}),
    phases: phases.phases,
    ...(patch ? { patch } : {}),
    problems: found.flat(),
  };
}
