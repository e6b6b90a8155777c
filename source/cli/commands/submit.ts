import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { GOAL_TYPES, PRIORITY_MAX, PRIORITY_MIN, type GoalType } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { cancelGoal, parseUsd, stopRun, submitGoal, VERIFY_TIMEOUT_MAX, type GuardInput } from '../../submit/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

function parsePriority(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < PRIORITY_MIN || n > PRIORITY_MAX) {
    throw new InvalidArgumentError(`must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`);
  }
  return n;
}

function parseType(value: string): GoalType {
  if (!(GOAL_TYPES as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${GOAL_TYPES.join(', ')}`);
  return value as GoalType;
}

/**
 * `--verify-timeout`'s value, checked in the action (not by commander), so
 * a bad one reads as pak2's other refusals: `pak2: --verify-timeout X: …`,
 * exit 2.
 */
function parseSeconds(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > VERIFY_TIMEOUT_MAX) throw new UserError(`--verify-timeout ${value.slice(0, 40)}: must be a whole number of seconds from 1 to ${VERIFY_TIMEOUT_MAX}`);
  return n;
}

/** A repeatable option's values, in order. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The largest body accepted, in bytes. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Reads `--body-file` (`-`: stdin): a text file of at most 1 MiB. @throws UserError naming the file. */
function readBodyFile(name: string, cwd: string): string {
  let buffer: Buffer;
  try {
    if (name !== '-') {
      const stat = fs.statSync(path.resolve(cwd, name));
      if (!stat.isFile()) throw new UserError(`--body-file ${name}: not a regular file`);
      if (stat.size > MAX_BODY_BYTES) throw new UserError(`--body-file ${name}: ${stat.size} bytes; a body is at most ${MAX_BODY_BYTES} bytes`);
    }
    buffer = fs.readFileSync(name === '-' ? 0 : path.resolve(cwd, name));
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new UserError(`--body-file ${name}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
  if (buffer.length > MAX_BODY_BYTES) throw new UserError(`--body-file ${name}: more than ${MAX_BODY_BYTES} bytes`);
  if (buffer.includes(0)) throw new UserError(`--body-file ${name}: a binary file (it holds NUL bytes); the body must be text`);
  return buffer.toString('utf8');
}

interface SubmitOptions {
  plant: string;
  type: GoalType;
  priority?: number;
  driver?: string;
  model?: string;
  effort?: string;
  body?: string;
  bodyFile?: string;
  title?: string;
  conversation?: string;
  json?: boolean;
  verify?: string;
  allow?: string[];
  forbid?: string[];
  /** As given; checked by {@link parseSeconds}. */
  verifyTimeout?: string;
  passEnv?: string[];
  contract?: string;
  /** false with --no-redact. */
  redact?: boolean;
  guard?: boolean;
  taskClass?: string;
  budget?: number;
  after?: string[];
}

/** The guard the flags ask for; undefined when no guard flag is given. */
function guardInput(opts: SubmitOptions): GuardInput | undefined {
  const guard: GuardInput = {
    ...(opts.verify !== undefined ? { verify: opts.verify } : {}),
    ...(opts.allow ? { allowedFiles: opts.allow } : {}),
    ...(opts.forbid ? { forbiddenPaths: opts.forbid } : {}),
    ...(opts.verifyTimeout !== undefined ? { timeoutSeconds: parseSeconds(opts.verifyTimeout) } : {}),
    ...(opts.passEnv ? { envPassthrough: opts.passEnv } : {}),
    ...(opts.contract !== undefined ? { contractId: opts.contract } : {}),
    ...(opts.redact === false ? { redact: false } : {}),
  };
  return opts.guard || Object.keys(guard).length ? guard : undefined;
}

/** The words a submit refusal starts with that are flags of `pak2 submit`: the CLI prefixes them with `--`. */

/** `--budget USD`: a positive amount, or one line naming the flag. */
function parseBudget(value: string): number {
  const usd = parseUsd(value);
  if (usd === undefined) throw new UserError(`--budget ${JSON.stringify(value)}: an amount in USD greater than 0 and at most 1000000 (e.g. 2.50)`);
  return usd;
}
const FLAG_WORDS = /^(type|plant|priority|driver|body|conversation|budget|after) |^(verify-timeout|verify|allow|forbid|pass-env|contract|no-redact|guard|task-class|accept-verify|accept)[ :]/;

/**
 * `--accept TEXT` and `--accept-verify CMD` in the order given: each
 * `--accept-verify` is the command of the `--accept` just before it. A
 * misplaced one is kept as the problem, said when the command runs.
 */
function acceptanceFlags(): { accept: (value: string) => string; verify: (value: string) => string; criteria: { text: string; verify?: string }[]; problem: () => string | undefined } {
  const criteria: { text: string; verify?: string }[] = [];
  let problem: string | undefined;
  return {
    criteria,
    problem: () => problem,
    accept: (value) => {
      criteria.push({ text: value });
      return value;
    },
    verify: (value) => {
      const last = criteria.at(-1);
      if (!last) problem ??= `--accept-verify ${JSON.stringify(value.slice(0, 40))}: give --accept TEXT before it (the command checks the criterion just before it)`;
      else if (last.verify !== undefined) problem ??= `--accept-verify ${JSON.stringify(value.slice(0, 40))}: criterion ${criteria.length} (${JSON.stringify(last.text.slice(0, 40))}) has a command already; one --accept-verify per --accept`;
      else last.verify = value;
      return value;
    },
  };
}

/** `pak2 submit`: queues one goal and prints its id. */
export function registerSubmit(program: Command, io: CliIO): void {
  const acceptance = acceptanceFlags();
  program
    .command('submit')
    .description('queue a goal for a plant; prints the goal id')
    .requiredOption('--plant <plant>', 'the plant the goal is assigned to')
    .requiredOption('--type <type>', `goal type: ${GOAL_TYPES.join(', ')}`, parseType)
    .option('--priority <n>', `${PRIORITY_MIN}-${PRIORITY_MAX}, higher first (default 50)`, parsePriority)
    .option('--driver <driver>', 'claude, codex, command or a [drivers.<name>] entry (default: the override chain)')
    .option('--model <model>', 'model for this goal')
    .option('--effort <effort>', 'reasoning effort for this goal')
    .option('--title <words>', 'words for the goal id (default: the body\'s first line)')
    .option('--conversation <id>', 'queue it from a conversation (it then takes supplements: pak2 supplement)')
    .option('--body <text>', 'the task')
    .option('--body-file <file>', 'read the task from a file (- for stdin)')
    .option('--verify <cmd>', 'guarded run: a shell command run after the agent; the run succeeds only when it exits 0')
    .option('--allow <glob>', 'guarded run: a path the agent may change (repeatable; relative to the garden root)', collect)
    .option('--forbid <glob>', 'guarded run: a path the agent must not change (repeatable)', collect)
    .option('--verify-timeout <seconds>', `guarded run: the verify command's time limit, whole seconds from 1 to ${VERIFY_TIMEOUT_MAX}`)
    .option('--pass-env <name>', 'guarded run: an environment variable passed through to the agent and verify, redacted in artifacts (repeatable)', collect)
    .option('--contract <id>', 'guarded run: the contract id the run answers to')
    .option('--no-redact', 'guarded run: keep secrets in the run\'s artifacts (redacted by default)')
    .option('--guard', 'guarded run with only the [guard] defaults of PAK2.toml')
    .option('--task-class <name>', 'route the goal through the tiers of [routing.<name>] in PAK2.toml')
    .option('--budget <usd>', "the goal's own cap in USD across all its attempts (docs/budget/level2.md)", parseBudget)
    .option('--after <goal...>', 'wait until these goals closed success (repeatable): the goal is not dispatched or claimed before')
    .option('--accept <text>', 'an acceptance criterion, one line (repeatable): given to the agent, reported verified or not after the run', acceptance.accept)
    .option('--accept-verify <cmd>', 'a shell command that checks the --accept just before it (exit 0: verified); a criterion without one is reported not verified', acceptance.verify)
    .option('--json', 'print the goal record as JSON')
    .action(async (opts: SubmitOptions, command: Command) => {
      const garden = gardenOf(command, io);
      if ((opts.body === undefined) === (opts.bodyFile === undefined)) {
        throw new UserError('give exactly one of --body TEXT or --body-file F');
      }
      let body = opts.body ?? '';
      if (opts.bodyFile !== undefined) body = readBodyFile(opts.bodyFile, io.cwd);
      if (!body.trim()) throw new UserError(opts.bodyFile !== undefined ? `--body-file ${opts.bodyFile}: the file is empty` : '--body: the task is empty');
      const misplaced = acceptance.problem();
      if (misplaced) throw new UserError(misplaced);
      const guard = guardInput(opts);
      let goal;
      try {
        goal = await submitGoal(
          garden,
          {
          type: opts.type,
          plant: opts.plant,
          body,
          ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
          ...(opts.driver ? { driver: opts.driver } : {}),
          ...(opts.model ? { model: opts.model } : {}),
          ...(opts.effort ? { reasoningEffort: opts.effort } : {}),
          ...(opts.title ? { title: opts.title } : {}),
            ...(opts.conversation ? { conversationId: opts.conversation } : {}),
            ...(guard ? { guard } : {}),
            ...(opts.taskClass !== undefined ? { taskClass: opts.taskClass } : {}),
            ...(opts.budget !== undefined ? { budgetUsd: opts.budget } : {}),
            ...(opts.after?.length ? { dependsOn: opts.after.flatMap((a) => a.split(',')) } : {}),
            ...(acceptance.criteria.length ? { acceptanceCriteria: acceptance.criteria } : {}),
          },
          new Date(),
          io.env,
        );
      } catch (error) {
        // Name the flag, not the field.
        if (error instanceof UserError) throw new UserError(FLAG_WORDS.test(error.message) ? `--${error.message}` : error.message, { exitCode: error.exitCode });
        throw error;
      }
      if (opts.json) printJson(io, goal);
      else io.out(goal.id);
    });
}

/** `pak2 cancel ID`: closes a queued goal as cancelled, or stops a running goal's run (it then closes cancelled). */
export function registerCancel(program: Command, io: CliIO): void {
  program
    .command('cancel')
    .description('cancel a goal: a queued one closes cancelled; a running one has its run stopped, then closes cancelled')
    .argument('<id>', 'the goal id (N-slug)')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const result = await cancelGoal(garden, id);
      if (result.settled) io.out(`${result.goal.id}: ${result.settled}`);
      else if (!result.stopped) io.out(`cancelled ${result.goal.id}`);
      else io.out(`cancelling ${result.goal.id}: stopping run ${result.stopped.run} (${result.stopped.detail}); the goal closes cancelled when it has ended`);
    });
}

/** `pak2 stop RUN [--requeue]`: ends one live run as killed / operator_stopped. */
export function registerStop(program: Command, io: CliIO): void {
  program
    .command('stop')
    .description('stop one live run: it ends killed (operator_stopped) and its goal closes cancelled, or goes back to the queue with --requeue')
    .argument('<run>', 'the run id (N-slug-rN)')
    .option('--requeue', 'put the goal back in the queue for another attempt instead of closing it')
    .action(async (runId: string, opts: { requeue?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const result = await stopRun(garden, runId, { requeue: Boolean(opts.requeue) });
      io.out(`stopping ${result.run}: ${result.detail}${opts.requeue ? '; its goal goes back to the queue' : '; its goal closes cancelled'}`);
    });
}
