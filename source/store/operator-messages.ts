import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  OPERATOR_MESSAGE_ID_PATTERN,
  OPERATOR_MESSAGE_OWNER,
  operatorMessageId,
  parseOperatorMessageId,
  RUN_ID_PATTERN,
  validateOperatorMessage,
  formatIssue,
  type OperatorMessage,
  type OperatorMessageKind,
  type ValidationIssue,
} from '../contracts/index.js';
import { runDir, type Garden, type GardenConfig, type GardenPaths } from '../garden/index.js';
import { isErrno } from '../errors.js';
import { appendJsonLine, loadWriteFileAtomic, StoreError, withLock } from './files.js';
import { ensureReplyDir, replyDir } from './inbox.js';
import { readRun } from './runs.js';
import { storeOf, type GardenStore } from './backend.js';
import { LINE_FILES, storedWhere, type StoredNote } from './documents.js';

/**
 * The Operator Messages surface (seed 002, operator_messages.py;
 * docs/operator-message/level2.md): the gardener's validated way to send a
 * tend survey or a recently-concluded digest to the operator, with a durable
 * run-local record and a delivery kept apart from the reply surface.
 */

/** The run-local record file: `<runtime-root>/runs/<run-id>/operator-messages.jsonl`. */
export const OPERATOR_MESSAGES_FILE = 'operator-messages.jsonl';
/** The delivery directory's name inside the reply directory. */
export const OPERATOR_NOTES_DIR = 'operator';

/** `<runtime-root>/runs/<run-id>/operator-messages.jsonl`. @throws StoreError RUN_NOT_FOUND for an id that is not `N-slug-rN`. */
export function operatorMessagesFile(paths: GardenPaths, runId: string): string {
  refuseMalformedRunId(runId);
  return path.join(runDir(paths, runId), OPERATOR_MESSAGES_FILE);
}

/** @throws StoreError RUN_NOT_FOUND for an id that is not `N-slug-rN`. */
function refuseMalformedRunId(runId: string): void {
  if (!RUN_ID_PATTERN.test(runId)) throw new StoreError('RUN_NOT_FOUND', `run id ${JSON.stringify(runId)} is not of the form N-slug-rN`);
}

/** `<runtime-root>/inbox/<[garden].name>/operator/`: where operator messages are delivered. */
export function operatorNotesDir(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>): string {
  return path.join(replyDir(paths, config), OPERATOR_NOTES_DIR);
}

/** What an emitter gives; the store adds `id`, `plant` (the run's) and `emitted_at`. */
export interface OperatorMessageInput {
  /** The emitting run; it must exist, be `running`, and belong to the gardener. */
  run: string;
  kind: OperatorMessageKind | string;
  title: string;
  body: string;
  /** tend_survey: short findings. */
  findings?: unknown;
  /** tend_survey: `{type, body}` goals the operator might queue. */
  suggested_goals?: unknown;
  /** recently_concluded: ids (`N-slug`) of goals that concluded. */
  goals?: unknown;
}

/**
 * Why an emission was refused. `code` (the StoreError code) sets the CLI's
 * exit: INVALID_RECORD and RUN_NOT_FOUND are bad input (2), INVALID_TRANSITION
 * is a refused operation (1). `reason` is the precise cause.
 */
export type OperatorMessageRefusal = 'INVALID_RECORD' | 'RUN_NOT_FOUND' | 'RUN_NOT_RUNNING' | 'NOT_GARDENER_RUN';

/** An emission the surface refused; nothing was written. `issues` lists every validation issue for INVALID_RECORD. */
export class OperatorMessageError extends StoreError {
  readonly reason: OperatorMessageRefusal;
  readonly issues: ValidationIssue[];

  constructor(reason: OperatorMessageRefusal, message: string, options: { file?: string; issues?: ValidationIssue[] } = {}) {
    super(reason === 'RUN_NOT_RUNNING' || reason === 'NOT_GARDENER_RUN' ? 'INVALID_TRANSITION' : reason, message, options.file);
    this.name = 'OperatorMessageError';
    this.reason = reason;
    this.issues = options.issues ?? [];
  }
}

/** The result of an emission: the record, where it was recorded, and the delivered note. */
export interface EmittedOperatorMessage {
  message: OperatorMessage;
  recordFile: string;
  notePath: string;
}

function candidate(input: OperatorMessageInput, id: string, plant: string, now: Date): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id,
    run: input.run,
    plant,
    kind: input.kind,
    title: input.title,
    body: input.body,
    emitted_at: now.toISOString(),
  };
  for (const key of ['findings', 'suggested_goals', 'goals'] as const) {
    if (input[key] !== undefined) record[key] = input[key];
  }
  return record;
}

function invalid(issues: ValidationIssue[]): OperatorMessageError {
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more: ${issues.slice(1).map((i) => `${i.field || '(document)'} ${i.code}`).join(', ')})` : '';
  return new OperatorMessageError('INVALID_RECORD', `operator message: ${formatIssue(issues[0]!)}${more}`, { issues });
}

/** Lines of a JSONL file (without empty ones); [] when it does not exist. */
async function readLines(file: string): Promise<string[]> {
  try {
    return (await fsp.readFile(file, 'utf8')).split('\n').filter((l) => l.trim() !== '');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw new StoreError('IO_ERROR', `${file}: read failed (${(error as Error).message})`, file);
  }
}

/** The next sequence number: past every line and every id already recorded, so ids never repeat. */
function nextNumber(lines: string[]): number {
  return nextNumberOf(
    lines.map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return undefined; // a malformed line still took a number
      }
    }),
  );
}

/** {@link nextNumber} of parsed lines (undefined: one that did not parse). */
function nextNumberOf(values: unknown[]): number {
  let highest = values.length;
  for (const value of values) {
    const id = (value as { id?: unknown } | null | undefined)?.id;
    const parsed = typeof id === 'string' ? parseOperatorMessageId(id) : undefined;
    if (parsed) highest = Math.max(highest, parsed.n);
  }
  return highest + 1;
}

/** Where a store keeps a run's operator messages, as a message names it. */
function storedMessagesWhere(store: GardenStore, runId: string): string {
  refuseMalformedRunId(runId);
  return storedWhere(store.where, LINE_FILES['operator-message'](runId));
}

function withRunLock<T>(paths: GardenPaths, runId: string, fn: () => Promise<T>): Promise<T> {
  const dir = runDir(paths, runId);
  return withLock(dir, fn, path.join(dir, `${OPERATOR_MESSAGES_FILE}.lock`));
}

/**
 * Emits one operator message (docs/operator-message/level2.md):
 * 1. validates the message (every issue; INVALID_RECORD names the first);
 * 2. refuses unless the emitting run exists (RUN_NOT_FOUND), is `running`
 *    (RUN_NOT_RUNNING: a closed run's record set is final) and belongs to the
 *    gardener (NOT_GARDENER_RUN);
 * 3. under the run's lock, assigns `om-<run>-<n>` and appends the record to
 *    `runs/<run>/operator-messages.jsonl` (append-only, the durable record);
 * 4. delivers it as `inbox/<garden name>/operator/<id>.md`, never into the
 *    reply directory's top level.
 * A refusal writes nothing. A delivery that fails after step 3 throws
 * IO_ERROR; the record stands and {@link deliverOperatorMessage} can redeliver.
 *
 * @throws OperatorMessageError (a StoreError) for a refusal; StoreError IO_ERROR.
 */
export async function emitOperatorMessage(garden: Garden, input: OperatorMessageInput, now: Date = new Date()): Promise<EmittedOperatorMessage> {
  const { paths } = garden;
  const runOk = typeof input.run === 'string' && RUN_ID_PATTERN.test(input.run);
  // The id and plant are the store's to fill: check what the emitter gave first.
  const provisional = candidate(input, runOk ? operatorMessageId(input.run, 1) : 'om-unknown', OPERATOR_MESSAGE_OWNER, now);
  const given = validateOperatorMessage(provisional).filter((i) => i.field !== 'id' && i.field !== 'plant' && i.field !== 'emitted_at');
  if (given.length > 0) throw invalid(given);

  let run;
  try {
    run = await readRun(paths, input.run);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'RUN_NOT_FOUND') {
      throw new OperatorMessageError('RUN_NOT_FOUND', `run ${input.run}: no such run in this garden`, { ...(error.file ? { file: error.file } : {}) });
    }
    throw error;
  }
  const refuseUnlessLive = (status: string) => {
    if (status !== 'running') {
      throw new OperatorMessageError('RUN_NOT_RUNNING', `run ${input.run}: the run is ${status}; only a running run may emit an operator message`);
    }
  };
  refuseUnlessLive(run.status);
  if (run.plant !== OPERATOR_MESSAGE_OWNER) {
    throw new OperatorMessageError('NOT_GARDENER_RUN', `run ${input.run}: the run belongs to plant ${run.plant}; operator messages are ${OPERATOR_MESSAGE_OWNER}-owned`);
  }

  const store = storeOf(paths);
  const recordFile = store ? storedMessagesWhere(store, input.run) : operatorMessagesFile(paths, input.run);
  const append = async (numbered: () => Promise<number>, write: (record: Record<string, unknown>) => Promise<unknown>): Promise<OperatorMessage> => {
    refuseUnlessLive((await readRun(paths, input.run)).status);
    const record = candidate(input, operatorMessageId(input.run, await numbered()), run.plant, now);
    const issues = validateOperatorMessage(record);
    if (issues.length > 0) throw invalid(issues);
    await write(record);
    return record as OperatorMessage;
  };
  const message = store
    ? await store.withDocumentLock('operator-message', input.run, () =>
        append(
          async () => nextNumberOf((await store.documentLines('operator-message', input.run)).map((line) => line.record)),
          (record) => store.appendDocumentLine('operator-message', input.run, record),
        ),
      )
    : await withRunLock(paths, input.run, () =>
        append(
          async () => nextNumber(await readLines(recordFile)),
          (record) => appendJsonLine(recordFile, record),
        ),
      );
  const notePath = await deliverOperatorMessage(garden, message);
  return { message, recordFile, notePath };
}

/**
 * Writes the operator note for a recorded message, atomically, at
 * `inbox/<garden name>/operator/<id>.md` (overwriting an earlier delivery of
 * the same id). The reply directory is made ready first the same way a reply
 * delivery does (the legacy `inbox/garden/` rename).
 *
 * @returns the note's path. @throws StoreError IO_ERROR naming the note.
 */
export async function deliverOperatorMessage(garden: Garden, message: OperatorMessage): Promise<string> {
  if (!OPERATOR_MESSAGE_ID_PATTERN.test(message.id)) throw new StoreError('INVALID_RECORD', `operator message id ${JSON.stringify(message.id)} is not om-<run-id>-<n>`);
  const dir = operatorNotesDir(garden.paths, garden.config);
  const file = path.join(dir, `${message.id}.md`);
  const store = storeOf(garden.paths);
  if (store) {
    // Where the note's file would be: the note is the store's, written when this runs (as a file's mtime).
    await store.putDocument('operator-note', `${garden.config.gardenName}/${message.id}`, { text: renderOperatorNote(message), modified_at: new Date().toISOString() } satisfies StoredNote);
    return file;
  }
  try {
    await ensureReplyDir(garden.paths, garden.config);
    await fsp.mkdir(dir, { recursive: true });
    const writeFileAtomic = await loadWriteFileAtomic();
    await writeFileAtomic(file, renderOperatorNote(message), { fsync: true });
  } catch (error) {
    throw new StoreError(
      'IO_ERROR',
      `${file}: operator note not delivered (${(error as Error).message}); the record stands in ${operatorMessagesFile(garden.paths, message.run)}`,
      file,
    );
  }
  return file;
}

const KIND_LABELS: Record<OperatorMessageKind, string> = {
  tend_survey: 'Tend survey',
  recently_concluded: 'Recently concluded',
};

/** Indents the continuation lines of a list item. */
function item(text: string): string {
  return text.trim().split('\n').join('\n  ');
}

/** The markdown note an operator reads for one message. */
export function renderOperatorNote(message: OperatorMessage): string {
  const label = KIND_LABELS[message.kind] ?? message.kind;
  const lines = [
    `# ${message.title.trim()}`,
    '',
    `_${label} from ${message.plant}, run ${message.run}, ${message.emitted_at} (operator message ${message.id})._`,
    '',
    message.body.trim(),
  ];
  if (message.kind === 'tend_survey') {
    lines.push('', '## Findings', '');
    if ((message.findings ?? []).length === 0) lines.push('Nothing needs attention.');
    for (const finding of message.findings ?? []) lines.push(`- ${item(finding)}`);
    if (message.suggested_goals && message.suggested_goals.length > 0) {
      lines.push('', '## Suggested goals', '');
      for (const goal of message.suggested_goals) lines.push(`- **${goal.type}**: ${item(goal.body)}`);
    }
  } else if (message.kind === 'recently_concluded') {
    lines.push('', '## Concluded goals', '');
    for (const goal of message.goals ?? []) lines.push(`- \`${goal}\``);
  }
  return `${lines.join('\n')}\n`;
}

/** A line of `operator-messages.jsonl` that could not be read as a valid message. */
export interface OperatorMessageProblem {
  file: string;
  line: number;
  message: string;
}

/**
 * The operator messages a run emitted, in emission order. A malformed line is
 * reported (file, line, field) and skipped; nothing is repaired. A run that
 * emitted none (or does not exist) has [].
 *
 * @throws StoreError RUN_NOT_FOUND for an id that is not `N-slug-rN`; IO_ERROR.
 */
export async function listOperatorMessages(paths: GardenPaths, runId: string): Promise<{ messages: OperatorMessage[]; problems: OperatorMessageProblem[] }> {
  const store = storeOf(paths);
  if (store) {
    const where = storedMessagesWhere(store, runId);
    const messages: OperatorMessage[] = [];
    const problems: OperatorMessageProblem[] = [];
    for (const { n, record } of await store.documentLines('operator-message', runId)) {
      const issues = validateOperatorMessage(record);
      if (issues.length > 0) problems.push({ file: where, line: n, message: `${where}:${n}: ${formatIssue(issues[0]!)}` });
      else messages.push(record as OperatorMessage);
    }
    return { messages, problems };
  }
  const file = operatorMessagesFile(paths, runId);
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { messages: [], problems: [] };
    throw new StoreError('IO_ERROR', `${file}: read failed (${(error as Error).message})`, file);
  }
  const messages: OperatorMessage[] = [];
  const problems: OperatorMessageProblem[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      problems.push({ file, line: index + 1, message: `${file}:${index + 1}: malformed JSON (${(error as Error).message})` });
      return;
    }
    const issues = validateOperatorMessage(value);
    if (issues.length > 0) {
      problems.push({ file, line: index + 1, message: `${file}:${index + 1}: ${formatIssue(issues[0]!)}` });
      return;
    }
    messages.push(value as OperatorMessage);
  });
  return { messages, problems };
}

/** A delivered operator note in `inbox/<garden name>/operator/`. */
export interface OperatorNote {
  /** The operator-message id (the file name without `.md`). */
  id: string;
  name: string;
  path: string;
  /** The note's first heading or first line. */
  title: string;
  body: string;
  modifiedAt: string;
}

/**
 * Every delivered operator note, newest first; bodies cut to `maxBody`
 * characters. Files that are not `<om-id>.md` are ignored.
 */
export async function listOperatorNotes(paths: GardenPaths, config: Pick<GardenConfig, 'gardenName'>, maxBody = 4000): Promise<OperatorNote[]> {
  const dir = operatorNotesDir(paths, config);
  const store = storeOf(paths);
  if (store) {
    const notes: OperatorNote[] = [];
    for (const { key, record } of await store.documentRecords('operator-note', `${config.gardenName}/`)) {
      const id = key.slice(config.gardenName.length + 1);
      const note = record as Partial<StoredNote> | null;
      if (!OPERATOR_MESSAGE_ID_PATTERN.test(id) || typeof note?.text !== 'string' || typeof note.modified_at !== 'string') continue;
      const first = note.text.split('\n').find((l) => l.trim()) ?? `${id}.md`;
      notes.push({ id, name: `${id}.md`, path: path.join(dir, `${id}.md`), title: first.replace(/^#+\s*/, '').trim(), body: note.text.slice(0, maxBody), modifiedAt: note.modified_at });
    }
    return notes.sort((a, b) => (a.modifiedAt === b.modifiedAt ? b.name.localeCompare(a.name) : b.modifiedAt.localeCompare(a.modifiedAt)));
  }
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.md') && OPERATOR_MESSAGE_ID_PATTERN.test(n.slice(0, -3)));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw error;
  }
  const notes = await Promise.all(
    names.map(async (name): Promise<OperatorNote | undefined> => {
      const file = path.join(dir, name);
      try {
        const [text, stat] = await Promise.all([fsp.readFile(file, 'utf8'), fsp.stat(file)]);
        const first = text.split('\n').find((l) => l.trim()) ?? name;
        return { id: name.slice(0, -3), name, path: file, title: first.replace(/^#+\s*/, '').trim(), body: text.slice(0, maxBody), modifiedAt: stat.mtime.toISOString() };
      } catch {
        return undefined;
      }
    }),
  );
  return notes
    .filter((n): n is OperatorNote => !!n)
    .sort((a, b) => (a.modifiedAt === b.modifiedAt ? b.name.localeCompare(a.name) : b.modifiedAt.localeCompare(a.modifiedAt)));
}
