/**
 * The document and document-line kinds of `pak2 store import` / `export`
 * (docs/store/level2.md, "What moves"): one entry of the kinds table per
 * kind of source/store/documents.ts, each with its file in a runtime root
 * both ways (key → file: {@link DOCUMENT_FILES} / {@link LINE_FILES};
 * file → key: {@link DocumentRecordKind.match}) and its form there, so a
 * file garden's conversations, inbox, landings, budget, webhooks, … come
 * back byte for byte:
 *
 * - `json`: pak2's own JSON (two spaces, a newline); `compact`: one compact
 *   line (coordinator.tend-attention.json, coordinator.tend-withheld.json);
 * - `text`: a Markdown note or a secret, kept as {@link StoredNote} (its
 *   text, and its file's mtime, which the export gives back);
 * - `bytes`: an artifact's content, kept as {@link StoredContent} (base64);
 * - `lines`: an append-only JSON-lines file, one line of `document_lines`
 *   per line, in order.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PoolClient } from 'pg';
import {
  ARTIFACT_NAME_PATTERN,
  collectIssues,
  DASHBOARD_INVOCATION_ID_PATTERN,
  GOAL_ID_PATTERN,
  OPERATOR_MESSAGE_ID_PATTERN,
  RUN_ID_PATTERN,
  TokenFileSchema,
  validateArtifact,
  validateAttentionRecord,
  validateBudgetOverrides,
  validateBudgetWarned,
  validateDashboardInvocation,
  validateLanding,
  validateOperatorMessage,
  validateSchedulesState,
  validateTendState,
  type ValidationIssue,
} from '../../contracts/index.js';
import { CONVERSATION_ID_PATTERN } from '../conversations.js';
import { DOCUMENT_FILES, DOCUMENT_GITIGNORES, GARDEN_KEY, LINE_FILES, type DocumentKind, type LineKind, type StoredContent, type StoredNote } from '../documents.js';
import { isErrno } from '../../errors.js';
import { recordLine, recordText, RUNTIME_FILE_MODE } from '../files.js';
import { BATCH, firstIssue, mkdir, pages, parse, readBytes, readText, writeNew, type Reading, type RecordKind } from './transfer-io.js';

/** One step of a document file's path: a fixed name, or a name matching a pattern ({@link named}) whose group 1 is a part of the key. */
type Step = string | RegExp;

/** How a kind's records look in their files. */
type Form = 'json' | 'compact' | 'text' | 'bytes' | 'lines';

/** A record kind that is a store document kind or line kind. */
export interface DocumentRecordKind extends RecordKind {
  document: true;
  /** The store's kind (documents.kind, document_lines.kind). */
  kind: DocumentKind | LineKind;
  form: Form;
  /** The file of the document (or of the lines of the parent) `key`, relative to the runtime root. */
  file(key: string): string;
  /** The document key (or the lines' parent) a file relative to the runtime root stands for; undefined when it is none of this kind's. */
  match(rel: string): string | undefined;
}

/** Rows of record text per bulk insert at most, besides {@link BATCH} rows: an artifact's content can be megabytes. */
const BATCH_CHARS = 32 * 1024 * 1024;

/** A pattern's body without its anchors, to build a file name pattern around it. */
function body(pattern: RegExp): string {
  return pattern.source.replace(/^\^/, '').replace(/\$$/, '');
}

/** A file name of `pattern` (the key part: group 1) and `suffix`. */
function named(pattern: RegExp, suffix = ''): RegExp {
  return new RegExp(`^(${body(pattern)})${suffix.replace(/\./g, '\\.')}$`);
}

/** A directory of the inbox: a garden's reply directory (`[garden].name`; hidden ones are none). */
const GARDEN_DIR = named(/^[^.].*$/);
const RUN_DIR = named(RUN_ID_PATTERN);
const CONVERSATION_DIR = named(CONVERSATION_ID_PATTERN);
/** A webhook subscription id (source/server/webhooks/store.ts). */
const WEBHOOK_ID = named(/^wh-[0-9a-f]{8}$/);

/** Checks a record besides its JSON: the issue, or undefined. */
type Check = (value: unknown, key: string) => string | undefined;

function contract(validate: (value: unknown) => ValidationIssue[]): Check {
  return (value) => firstIssue(validate(value));
}

/** The record's `field` names its file's key (a landing's run, a conversation's id). */
function keyIn(field: string, validate?: (value: unknown) => ValidationIssue[]): Check {
  return (value, key) => {
    const issue = validate ? firstIssue(validate(value)) : typeof value === 'object' && value !== null && !Array.isArray(value) ? undefined : 'not a JSON object';
    if (issue) return issue;
    const named = (value as Record<string, unknown>)[field];
    return named === key ? undefined : `${field} ${JSON.stringify(named)} does not match the file name`;
  };
}

interface Spec {
  name: string;
  kind: DocumentKind | LineKind;
  form: Form;
  layout: string;
  steps: readonly Step[];
  /** The key of a kind with one document per garden (no part of its path varies). */
  key?: string;
  check?: Check;
}

const SPECS: readonly Spec[] = [
  { name: 'conversations', kind: 'conversation', form: 'json', layout: 'conversations/<conversation-id>/meta.json', steps: ['conversations', CONVERSATION_DIR, 'meta.json'], check: keyIn('id') },
  { name: 'conversation messages', kind: 'conversation-message', form: 'lines', layout: 'conversations/<conversation-id>/messages.jsonl', steps: ['conversations', CONVERSATION_DIR, 'messages.jsonl'] },
  { name: 'inbox notes', kind: 'inbox-note', form: 'text', layout: 'inbox/<garden>/<note>.md', steps: ['inbox', GARDEN_DIR, /^(.+\.md)$/] },
  { name: 'inbox read marks', kind: 'inbox-read', form: 'json', layout: 'inbox/<garden>/.read.json', steps: ['inbox', GARDEN_DIR, '.read.json'] },
  { name: 'operator notes', kind: 'operator-note', form: 'text', layout: 'inbox/<garden>/operator/<operator-message-id>.md', steps: ['inbox', GARDEN_DIR, 'operator', named(OPERATOR_MESSAGE_ID_PATTERN, '.md')] },
  {
    name: 'operator messages',
    kind: 'operator-message',
    form: 'lines',
    layout: 'runs/<run-id>/operator-messages.jsonl',
    steps: ['runs', RUN_DIR, 'operator-messages.jsonl'],
    check: keyIn('run', validateOperatorMessage),
  },
  { name: 'supplements', kind: 'supplement', form: 'lines', layout: 'supplements/<goal-id>.jsonl', steps: ['supplements', named(GOAL_ID_PATTERN, '.jsonl')] },
  { name: 'dispatch packets', kind: 'dispatch-packet', form: 'json', layout: 'runs/<run-id>/dispatch-packet.json', steps: ['runs', RUN_DIR, 'dispatch-packet.json'], check: keyIn('run') },
  { name: 'artifacts', kind: 'artifact', form: 'lines', layout: 'runs/<run-id>/artifacts.jsonl', steps: ['runs', RUN_DIR, 'artifacts.jsonl'], check: keyIn('run', validateArtifact) },
  { name: 'artifact contents', kind: 'artifact-content', form: 'bytes', layout: 'runs/<run-id>/artifacts/<name>', steps: ['runs', RUN_DIR, 'artifacts', named(ARTIFACT_NAME_PATTERN)] },
  { name: 'landings', kind: 'landing', form: 'json', layout: 'landings/<run-id>.json', steps: ['landings', named(RUN_ID_PATTERN, '.json')], check: keyIn('run', validateLanding) },
  { name: 'budget.json', kind: 'budget', form: 'json', layout: 'budget.json', steps: ['budget.json'], check: contract(validateBudgetOverrides) },
  { name: 'budget.warned.json', kind: 'budget-warned', form: 'json', layout: 'budget.warned.json', steps: ['budget.warned.json'], check: contract(validateBudgetWarned) },
  { name: 'schedules.json', kind: 'schedules', form: 'json', layout: 'schedules.json', steps: ['schedules.json'], check: contract(validateSchedulesState) },
  { name: 'attention.json', kind: 'attention', form: 'json', layout: 'attention.json', steps: ['attention.json'], check: contract(validateAttentionRecord) },
  { name: 'coordinator.blocked.json', kind: 'coordinator-blocked', form: 'json', layout: 'coordinator.blocked.json', steps: ['coordinator.blocked.json'] },
  { name: 'coordinator.tend-attention.json', kind: 'tend-attention', form: 'compact', layout: 'coordinator.tend-attention.json', steps: ['coordinator.tend-attention.json'] },
  { name: 'coordinator.tend-withheld.json', kind: 'tend-withheld', form: 'compact', layout: 'coordinator.tend-withheld.json', steps: ['coordinator.tend-withheld.json'] },
  { name: 'tend.json', kind: 'tend', form: 'json', layout: 'tend.json', steps: ['tend.json'], check: contract(validateTendState) },
  { name: 'webhook subscriptions', kind: 'webhook-subscriptions', form: 'json', layout: 'webhooks/subscriptions.json', steps: ['webhooks', 'subscriptions.json'] },
  { name: 'webhook secrets', kind: 'webhook-secret', form: 'text', layout: 'webhooks/secrets/<webhook-id>', steps: ['webhooks', 'secrets', WEBHOOK_ID] },
  { name: 'webhook deliveries', kind: 'webhook-delivery', form: 'lines', layout: 'webhooks/deliveries.jsonl', steps: ['webhooks', 'deliveries.jsonl'] },
  { name: 'tokens', kind: 'tokens', form: 'json', layout: 'serve/tokens.json', steps: ['serve', 'tokens.json'], key: 'tokens.json', check: contract((value) => collectIssues(TokenFileSchema, value)) },
  { name: 'dashboard invocations', kind: 'dashboard-invocation', form: 'json', layout: 'dashboard/invocations/<invocation-id>.json', steps: ['dashboard', 'invocations', named(DASHBOARD_INVOCATION_ID_PATTERN, '.json')], check: keyIn('id', validateDashboardInvocation) },
];

// ------------------------------------------------------------------ paths

/** The key part a step's pattern takes from a name: its group 1. */
function partOf(step: RegExp, name: string): string | undefined {
  return step.exec(name)?.[1];
}

/** A directory's entries whose names match `step`, in name order, each with whether it is a file (else a directory, else neither). */
function entries(dir: string, step: RegExp): { name: string; file: boolean; dir: boolean }[] {
  let dirents: fs.Dirent[];
  try {
    dirents = fs.readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) return [];
    throw error;
  }
  return dirents
    .filter((d) => step.test(d.name))
    .map((d) => {
      // A link is what it points to (a stat), as a reader opening it finds.
      const stat = d.isSymbolicLink() ? fs.statSync(path.join(dir, d.name), { throwIfNoEntry: false }) : d;
      return { name: d.name, file: stat?.isFile() ?? false, dir: stat?.isDirectory() ?? false };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The kind's files under `root`, each with its key's parts, in name order (a directory's entries are listed once, with their types). */
function walk(root: string, steps: readonly Step[]): { rel: string; parts: string[] }[] {
  const found: { rel: string; parts: string[] }[] = [];
  const visit = (dir: string, rel: string, parts: string[], index: number): void => {
    const step = steps[index]!;
    const last = index === steps.length - 1;
    let candidates: { name: string; file: boolean; dir: boolean }[];
    if (typeof step === 'string') {
      const stat = fs.statSync(path.join(dir, step), { throwIfNoEntry: false });
      candidates = stat ? [{ name: step, file: stat.isFile(), dir: stat.isDirectory() }] : [];
    } else {
      candidates = entries(dir, step);
    }
    for (const { name, file, dir: isDir } of candidates) {
      const here = rel ? `${rel}/${name}` : name;
      const next = typeof step === 'string' ? parts : [...parts, partOf(step, name)!];
      if (last && file) found.push({ rel: here, parts: next });
      else if (!last && isDir) visit(path.join(dir, name), here, next, index + 1);
    }
  };
  visit(root, '', [], 0);
  return found;
}

/** The key `parts` make: joined with `/`, or the kind's one key. */
function keyOf(spec: Spec, parts: readonly string[]): string {
  return parts.length > 0 ? parts.join('/') : (spec.key ?? GARDEN_KEY);
}

function fileOf(spec: Spec, key: string): string {
  const files: Record<string, (key: string) => string> = { ...DOCUMENT_FILES, ...LINE_FILES };
  return files[spec.kind]!(key);
}

function matchOf(spec: Spec, rel: string): string | undefined {
  const segments = rel.split('/');
  if (segments.length !== spec.steps.length) return undefined;
  const parts: string[] = [];
  for (const [index, step] of spec.steps.entries()) {
    const segment = segments[index]!;
    if (typeof step === 'string') {
      if (segment !== step) return undefined;
    } else {
      const part = partOf(step, segment);
      if (part === undefined) return undefined;
      parts.push(part);
    }
  }
  const key = keyOf(spec, parts);
  // The map and the steps say one path: what does not come back to `rel` is none of this kind's.
  return fileOf(spec, key) === rel ? key : undefined;
}

// ------------------------------------------------------------------ reading

interface DocumentRow {
  key: string;
  record: string;
}

interface LineRow {
  parent: string;
  n: number;
  record: string;
}

/** What an export writes for `value` in this form, to compare a file's text with. */
function jsonForm(form: Form, value: unknown): string {
  return form === 'compact' ? recordLine(value) : recordText(value);
}

function readDocument(spec: Spec, reading: Reading, rel: string, key: string): DocumentRow | undefined {
  if (spec.form === 'bytes') {
    const bytes = readBytes(reading, rel);
    return bytes && { key, record: JSON.stringify({ encoding: 'base64', content: bytes.toString('base64') } satisfies StoredContent) };
  }
  if (spec.form === 'text') {
    const bytes = readBytes(reading, rel);
    if (!bytes) return undefined;
    const text = bytes.toString('utf8');
    if (!Buffer.from(text, 'utf8').equals(bytes)) reading.notes.push({ file: rel, message: 'not UTF-8 text: the store keeps it as text; the export writes U+FFFD for the bytes that are not' });
    const mtime = fs.statSync(path.join(reading.root, rel), { throwIfNoEntry: false })?.mtime ?? new Date(0);
    return { key, record: JSON.stringify({ text, modified_at: mtime.toISOString() } satisfies StoredNote) };
  }
  const text = readText(reading, rel);
  if (text === undefined) return undefined;
  const parsed = parse(text);
  const issue = parsed.ok ? spec.check?.(parsed.value, key) : parsed.message;
  if (!parsed.ok || issue) {
    reading.damaged.push({ file: rel, message: issue! });
    return undefined;
  }
  if (text !== jsonForm(spec.form, parsed.value)) {
    const form = spec.form === 'compact' ? 'compact JSON on one line' : 'JSON, two spaces, a newline';
    reading.notes.push({ file: rel, message: `not in pak2's own form (${form}): the export writes it in that form` });
  }
  return { key, record: JSON.stringify(parsed.value) };
}

/** The lines of one JSON-lines file as store lines 1, 2, …; what is wrong goes to `reading` (as the event log's and the comment threads' do). */
function readLines(spec: Spec, reading: Reading, rel: string, parent: string, rows: LineRow[]): void {
  const text = readText(reading, rel);
  if (text === undefined) return;
  if (text === '') reading.notes.push({ file: rel, message: 'empty: the export writes no file until there is a line' });
  const lines = text.split('\n');
  const last = lines.pop()!;
  if (last !== '') {
    reading.notes.push({ file: rel, message: `its last line has no newline (a write cut short): ${parse(last).ok ? 'imported; the export ends it with one' : 'not imported'}` });
    if (parse(last).ok) lines.push(last);
  }
  let n = 0;
  lines.forEach((line, index) => {
    const where = `${rel}: line ${index + 1}`;
    if (!line.trim()) {
      reading.notes.push({ file: where, message: 'blank: not a record; the export leaves it out' });
      return;
    }
    const parsed = parse(line);
    const issue = parsed.ok ? spec.check?.(parsed.value, parent) : parsed.message;
    if (!parsed.ok || issue) {
      reading.damaged.push({ file: where, message: issue! });
      return;
    }
    const record = JSON.stringify(parsed.value);
    if (record !== line) reading.notes.push({ file: where, message: "not in pak2's own form (one compact JSON object): the export writes it in that form" });
    rows.push({ parent, n: (n += 1), record });
  });
}

/** Inserts documents `BATCH` rows, or {@link BATCH_CHARS} of records, at a time. */
async function insertDocuments(client: PoolClient, kind: string, rows: readonly DocumentRow[]): Promise<void> {
  let batch: DocumentRow[] = [];
  let chars = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    await client.query('INSERT INTO documents (kind, key, record) SELECT $1, * FROM unnest($2::text[], $3::json[])', [kind, batch.map((r) => r.key), batch.map((r) => r.record)]);
    batch = [];
    chars = 0;
  };
  for (const row of rows) {
    if (batch.length >= BATCH || (batch.length > 0 && chars + row.record.length > BATCH_CHARS)) await flush();
    batch.push(row);
    chars += row.record.length;
  }
  await flush();
}

async function insertLines(client: PoolClient, kind: string, rows: readonly LineRow[]): Promise<void> {
  for (let from = 0; from < rows.length; from += BATCH) {
    const batch = rows.slice(from, from + BATCH);
    await client.query('INSERT INTO document_lines (kind, parent, n, record) SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::json[])', [
      kind,
      batch.map((r) => r.parent),
      batch.map((r) => r.n),
      batch.map((r) => r.record),
    ]);
  }
}

// ------------------------------------------------------------------ writing

/** Writes one document's file in its form; false when the record is not of that form (nothing written). */
function writeDocument(spec: Spec, file: string, record: unknown): boolean {
  if (spec.form === 'json' || spec.form === 'compact') {
    mkdir(path.dirname(file));
    writeNew(file, jsonForm(spec.form, record));
    return true;
  }
  if (spec.form === 'bytes') {
    const stored = record as Partial<StoredContent> | null;
    if (stored?.encoding !== 'base64' || typeof stored.content !== 'string') return false;
    mkdir(path.dirname(file));
    writeNew(file, Buffer.from(stored.content, 'base64'));
    return true;
  }
  const note = record as Partial<StoredNote> | null;
  if (typeof note?.text !== 'string') return false;
  mkdir(path.dirname(file));
  writeNew(file, note.text);
  // A note's time is its file's mtime (the inbox lists newest first).
  const at = typeof note.modified_at === 'string' ? new Date(note.modified_at) : undefined;
  if (at && Number.isFinite(at.getTime())) fs.utimesSync(file, at, at);
  return true;
}

/** The `.gitignore` beside a kind's files (secrets, tokens), written with the first of them. */
function writeGitignore(spec: Spec, root: string): void {
  const ignore = (DOCUMENT_GITIGNORES as Partial<Record<string, { file: string; lines: readonly string[] }>>)[spec.kind];
  if (!ignore) return;
  const file = path.join(root, ignore.file);
  mkdir(path.dirname(file));
  if (!fs.existsSync(file)) writeNew(file, `${ignore.lines.join('\n')}\n`);
}

async function writeDocuments(spec: Spec, client: PoolClient, root: string): Promise<number> {
  let count = 0;
  await pages<{ key: string; record: unknown }>(
    client,
    'SELECT key, record FROM documents WHERE kind = $3 AND key > $1 ORDER BY key LIMIT $2',
    'key',
    '',
    (rows) => {
      for (const { key, record } of rows) {
        const file = path.join(root, fileOf(spec, key));
        if (count === 0) writeGitignore(spec, root);
        if (writeDocument(spec, file, record)) count += 1;
      }
    },
    [spec.kind],
  );
  return count;
}

async function writeLines(spec: Spec, client: PoolClient, root: string): Promise<number> {
  let count = 0;
  let after: { parent: string; n: number } = { parent: '', n: 0 };
  for (;;) {
    const { rows } = await client.query<{ parent: string; n: string; record: unknown }>(
      'SELECT parent, n, record FROM document_lines WHERE kind = $1 AND (parent, n) > ($2, $3) ORDER BY parent, n LIMIT $4',
      [spec.kind, after.parent, after.n, BATCH],
    );
    if (rows.length === 0) return count;
    const files = new Map<string, string[]>();
    for (const { parent, record } of rows) {
      const lines = files.get(parent) ?? [];
      lines.push(recordLine(record));
      files.set(parent, lines);
    }
    for (const [parent, lines] of files) {
      const file = path.join(root, fileOf(spec, parent));
      mkdir(path.dirname(file));
      fs.appendFileSync(file, lines.join(''), { mode: RUNTIME_FILE_MODE });
    }
    count += rows.length;
    const last = rows[rows.length - 1]!;
    after = { parent: last.parent, n: Number(last.n) };
    if (rows.length < BATCH) return count;
  }
}

// ------------------------------------------------------------------ kinds

function documentKind(spec: Spec): DocumentRecordKind {
  return {
    name: spec.name,
    document: true,
    kind: spec.kind,
    form: spec.form,
    layout: [spec.layout],
    tables: [spec.form === 'lines' ? 'document_lines' : 'documents'],
    file: (key) => fileOf(spec, key),
    match: (rel) => matchOf(spec, rel),
    read(reading) {
      const files = walk(reading.root, spec.steps).map(({ rel, parts }) => ({ rel, key: keyOf(spec, parts) }));
      if (spec.form === 'lines') {
        const rows: LineRow[] = [];
        for (const { rel, key } of files) readLines(spec, reading, rel, key, rows);
        return { records: rows.length, load: (client) => insertLines(client, spec.kind, rows) };
      }
      const rows = files.map(({ rel, key }) => readDocument(spec, reading, rel, key)).filter((row): row is DocumentRow => row !== undefined);
      return { records: rows.length, load: (client) => insertDocuments(client, spec.kind, rows) };
    },
    write: (client, root) => (spec.form === 'lines' ? writeLines(spec, client, root) : writeDocuments(spec, client, root)),
    list: (root) => walk(root, spec.steps).map(({ rel }) => rel),
  };
}

/** Every document and line kind of source/store/documents.ts, in the order an import loads them and an export writes them. */
export const DOCUMENT_KINDS: readonly DocumentRecordKind[] = SPECS.map(documentKind);

/**
 * The document (or the lines' parent) a record file stands for: its kind
 * and key, from its path relative to the runtime root (`/`-separated);
 * undefined when it is none.
 */
export function documentOfFile(rel: string): { kind: DocumentKind | LineKind; key: string } | undefined {
  for (const kind of DOCUMENT_KINDS) {
    const key = kind.match(rel);
    if (key !== undefined) return { kind: kind.kind, key };
  }
  return undefined;
}
