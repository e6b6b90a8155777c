import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { formatIssue, OPERATOR_MESSAGE_KINDS, type OperatorMessageKind, type ValidationIssue } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { emitOperatorMessage, OperatorMessageError } from '../../store/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/** The environment variable naming the emitting run when `--run` is absent; the driver sets it for every agent process. */
export const ENV_RUN_ID = 'PAK2_RUN_ID';

/** The kind-specific fields `--json-file` may carry. */
const KIND_FIELD_NAMES = ['findings', 'suggested_goals', 'goals'] as const;

/** The largest file `--body-file` or `--json-file` reads; the record's own bounds are checked after. */
const MAX_FILE_BYTES = 1024 * 1024;

function parseKind(value: string): OperatorMessageKind {
  if (!(OPERATOR_MESSAGE_KINDS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${OPERATOR_MESSAGE_KINDS.join(', ')}`);
  return value as OperatorMessageKind;
}

/** Reads a text file (`-`: stdin) of at most 1 MiB. @throws UserError naming the flag and file. */
function readTextFile(flag: string, name: string, cwd: string): string {
  let buffer: Buffer;
  try {
    if (name !== '-') {
      const stat = fs.statSync(path.resolve(cwd, name));
      if (!stat.isFile()) throw new UserError(`${flag} ${name}: not a regular file`);
      if (stat.size > MAX_FILE_BYTES) throw new UserError(`${flag} ${name}: ${stat.size} bytes; at most ${MAX_FILE_BYTES} bytes are read`);
    }
    buffer = fs.readFileSync(name === '-' ? 0 : path.resolve(cwd, name));
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new UserError(`${flag} ${name}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
  if (buffer.length > MAX_FILE_BYTES) throw new UserError(`${flag} ${name}: more than ${MAX_FILE_BYTES} bytes`);
  if (buffer.includes(0)) throw new UserError(`${flag} ${name}: a binary file (it holds NUL bytes); it must be text`);
  return buffer.toString('utf8');
}

/** Reads `--json-file`: a JSON object holding only kind-specific fields. @throws UserError naming the file and key. */
function readKindFields(name: string, cwd: string): Record<string, unknown> {
  const text = readTextFile('--json-file', name, cwd);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UserError(`--json-file ${name}: malformed JSON (${(error as Error).message.replace(/\s+/g, ' ')})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UserError(`--json-file ${name}: must hold a JSON object`);
  for (const key of Object.keys(value)) {
    if (!(KIND_FIELD_NAMES as readonly string[]).includes(key)) {
      throw new UserError(`--json-file ${name}: key ${JSON.stringify(key)} is not a kind-specific field (${KIND_FIELD_NAMES.join(', ')})`);
    }
  }
  return value as Record<string, unknown>;
}

interface OperatorMessageOptions {
  run?: string;
  kind: OperatorMessageKind;
  title: string;
  body?: string;
  bodyFile?: string;
  jsonFile?: string;
  json?: boolean;
}

/**
 * One issue in words that name the flag it came from: `--title: INVALID_TITLE (…)`,
 * or for a kind-specific field `--json-file F: findings.2: MESSAGE_TOO_LARGE (…)`.
 */
function describeIssue(issue: ValidationIssue, opts: OperatorMessageOptions, runFlag: string): string {
  const own = `${issue.code} (${issue.message})`;
  if (issue.field === 'run') return `${runFlag}: ${own}`;
  if (issue.field === 'kind') return `--kind: ${own}`;
  if (issue.field === 'title') return `--title: ${own}`;
  if (issue.field === 'body') return `${opts.bodyFile !== undefined ? `--body-file ${opts.bodyFile}` : '--body'}: ${own}`;
  return opts.jsonFile !== undefined ? `--json-file ${opts.jsonFile}: ${formatIssue(issue)}` : `${formatIssue(issue)}; give it in --json-file F`;
}

/**
 * `pak2 operator-message`: the gardener's way, from inside a running run, to
 * send the operator a tend survey or a recently-concluded digest
 * (docs/operator-message/level2.md). Prints the message id.
 */
export function registerOperatorMessage(program: Command, io: CliIO): void {
  program
    .command('operator-message')
    .description('from a running gardener run: record and deliver a tend_survey or recently_concluded note to the operator; prints its id')
    .option('--run <run-id>', `the emitting run, which must be running (default: $${ENV_RUN_ID})`)
    .requiredOption('--kind <kind>', `message kind: ${OPERATOR_MESSAGE_KINDS.join(', ')}`, parseKind)
    .requiredOption('--title <text>', 'one line, at most 120 characters')
    .option('--body <text>', 'the note, markdown (at most 16 KiB)')
    .option('--body-file <file>', 'read the note from a file (- for stdin)')
    .option('--json-file <file>', 'a JSON object with the kind-specific fields: findings and suggested_goals (tend_survey), goals (recently_concluded)')
    .option('--json', 'print the record as JSON')
    .action(async (opts: OperatorMessageOptions, command: Command) => {
      const fromEnv = opts.run === undefined && !!io.env[ENV_RUN_ID];
      const run = opts.run ?? io.env[ENV_RUN_ID];
      const runFlag = fromEnv ? `${ENV_RUN_ID} ${run}` : `--run ${run}`;
      if (!run) throw new UserError(`--run: required (or set ${ENV_RUN_ID})`, { hint: 'the run id is in your prompt, under "# Your Current Run"' });
      if ((opts.body === undefined) === (opts.bodyFile === undefined)) throw new UserError('give exactly one of --body TEXT or --body-file F');
      if (opts.bodyFile === '-' && opts.jsonFile === '-') throw new UserError('--body-file and --json-file cannot both read stdin');
      const garden = gardenOf(command, io);
      const body = opts.bodyFile !== undefined ? readTextFile('--body-file', opts.bodyFile, io.cwd) : (opts.body ?? '');
      const fields = opts.jsonFile !== undefined ? readKindFields(opts.jsonFile, io.cwd) : {};
      let emitted;
      try {
        emitted = await emitOperatorMessage(garden, { run, kind: opts.kind, title: opts.title, body, ...fields });
      } catch (error) {
        if (!(error instanceof OperatorMessageError)) throw error;
        if (error.reason === 'INVALID_RECORD') {
          const [first, ...rest] = error.issues;
          const more = rest.length > 0 ? ` (and ${rest.length} more: ${rest.map((i) => `${i.field} ${i.code}`).join(', ')})` : '';
          throw new UserError(first ? `${describeIssue(first, opts, runFlag)}${more}` : error.message, { code: error.reason });
        }
        const why = error.message.replace(/^run \S+: /, '');
        throw new UserError(`${runFlag}: ${why}`, { exitCode: error.reason === 'RUN_NOT_FOUND' ? 2 : 1, code: error.reason });
      }
      if (opts.json) printJson(io, emitted.message);
      else io.out(emitted.message.id);
    });
}
