import fs from 'node:fs';
import type { Command } from 'commander';
import { GOAL_ID_PATTERN, RUN_ID_PATTERN, ULID_PATTERN, type CommentRecord, type GoalRecord } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { sanitize } from '../../format.js';
import type { Garden } from '../../garden/index.js';
import { readComments, readGoal } from '../../store/index.js';
import { answerQuestion, goalComments, postComment } from '../../submit/index.js';
import { pollFor, readInbox, writeOutbox } from '../comment-outbox.js';
import { gardenOf, printJson } from '../context.js';
import { describeThread } from '../describe-thread.js';
import type { CliIO } from '../main.js';

/** How long `--wait` without a number waits for the answer, in seconds. */
export const DEFAULT_WAIT_SECONDS = 600;
/** The largest comment posted, in bytes (the core's limit, checked here too in runner mode). */
const MAX_COMMENT_BYTES = 64 * 1024;

interface CommentOptions {
  blocking?: boolean;
  author?: string;
  answer?: string | true;
  wait?: string | true;
  json?: boolean;
}

/** What the arguments ask for, checked before anything is read or written. */
interface Request {
  goal: string;
  text: string | undefined;
  blocking: boolean;
  answer: boolean;
  questionId: string | undefined;
  waitMs: number | undefined;
  waitSeconds: number;
  author: string | undefined;
  json: boolean;
}

/** A word after `--answer` that is meant as an id (many letters and digits, no space), not as the answer's text. */
const ID_LIKE = /^(?=.*\d)[0-9A-Za-z]{16,40}$/;

/**
 * Sorts the arguments out. `--answer [ID]` and `--wait [SECONDS]` take an
 * optional value, so commander hands them the next word: a word that is not
 * an id (for --answer) or a number (for --wait) is the first word of the text.
 */
function parseRequest(goal: string, words: string[], opts: CommentOptions, io: CliIO): Request {
  if (!GOAL_ID_PATTERN.test(goal)) throw new UserError(`GOAL ${goal}: not a goal id (N-slug)`);
  const rest = [...words];
  let questionId: string | undefined;
  if (typeof opts.answer === 'string') {
    const value = opts.answer;
    if (ULID_PATTERN.test(value.toUpperCase())) questionId = value.toUpperCase();
    else if (ID_LIKE.test(value) && rest.length > 0) throw new UserError(`ID ${value}: not a comment id (26 letters and digits, as pak2 comment ${goal} prints them)`);
    else rest.unshift(value);
  }
  let waitSeconds = DEFAULT_WAIT_SECONDS;
  if (typeof opts.wait === 'string') {
    const value = opts.wait;
    if (/^\d+(\.\d+)?$/.test(value) && Number(value) > 0) waitSeconds = Number(value);
    else if (/^[-+]?\d/.test(value)) throw new UserError(`--wait ${value}: a positive number of seconds`);
    else rest.unshift(value);
  }
  const answer = opts.answer !== undefined;
  const waiting = opts.wait !== undefined;
  if (answer && opts.blocking) throw new UserError('--blocking: an answer is not a question (leave out one of --answer, --blocking)');
  if (waiting && !opts.blocking) throw new UserError('--wait goes with --blocking: it waits for the answer to the question posted');
  let text: string | undefined;
  if (rest.length === 1 && rest[0] === '-') text = readStdin();
  else if (rest.length > 0) text = rest.join(' ');
  if (text === undefined && (answer || opts.blocking)) throw new UserError(`TEXT: give the text of the ${answer ? 'answer' : 'question'} (or - to read it from stdin)`);
  if (text !== undefined) {
    text = text.replace(/\s+$/, '');
    if (!text.trim()) throw new UserError('TEXT: the comment is empty');
    if (Buffer.byteLength(text) > MAX_COMMENT_BYTES) throw new UserError(`TEXT: the comment is ${Buffer.byteLength(text)} bytes; at most ${MAX_COMMENT_BYTES}`);
  }
  if (opts.author !== undefined && (!opts.author.trim() || opts.author.length > 200 || /[\r\n]/.test(opts.author))) throw new UserError(`--author ${JSON.stringify(opts.author)}: one line of 1 to 200 characters`);
  const runId = io.env.PAK2_RUN_ID;
  // `agent:` names an agent's own comment: only that agent's run (PAK2_RUN_ID) writes as it.
  if (opts.author?.startsWith('agent:') && opts.author !== `agent:${runId ?? ''}`) throw new UserError(`--author ${opts.author}: agent:<run> is an agent's own comment, written from its run (PAK2_RUN_ID); pick a person's name`);
  const author = opts.author ?? (runId ? `agent:${runId}` : undefined);
  return { goal, text, blocking: Boolean(opts.blocking), answer, questionId, waitMs: waiting ? waitSeconds * 1000 : undefined, waitSeconds, author, json: Boolean(opts.json) };
}

function readStdin(): string {
  try {
    return fs.readFileSync(0, 'utf8');
  } catch (error) {
    throw new UserError(`TEXT -: cannot read stdin (${(error as Error).message})`);
  }
}

/** The thread of a goal: one block per comment, or --json `{goal, comments, open}` (open: ids of unanswered questions). */
async function printThread(garden: Garden, req: Request, io: CliIO): Promise<void> {
  const { comments, open } = await goalComments(garden, req.goal);
  if (req.json) return printJson(io, { goal: req.goal, comments, open: open.map((c) => c.id) });
  io.out(comments.length === 0 ? `no comments on ${req.goal} yet` : describeThread(comments, open));
}

/** Waits for the comment answering `questionId` on the goal; `{closed}` when the goal closes first. */
async function awaitAnswer(garden: Garden, goalId: string, questionId: string, timeoutMs: number): Promise<{ answer: CommentRecord } | { closed: GoalRecord } | undefined> {
  return pollFor<{ answer: CommentRecord } | { closed: GoalRecord }>(async () => {
    const answer = (await readComments(garden.paths, goalId)).find((c) => c.answers === questionId);
    if (answer) return { answer };
    const goal = await readGoal(garden.paths, goalId).catch(() => undefined);
    return goal?.status === 'closed' ? { closed: goal } : undefined;
  }, timeoutMs, 500);
}

/** Posts (or with --wait, posts and waits for the answer) in the garden. */
async function post(garden: Garden, req: Request, io: CliIO): Promise<void> {
  const runId = io.env.PAK2_RUN_ID;
  const ownRun = runId && RUN_ID_PATTERN.test(runId) && RUN_ID_PATTERN.exec(runId)![1] === req.goal ? runId : undefined;
  const result = await postComment(garden, req.goal, { body: req.text!, blocking: req.blocking, ...(req.author ? { author: req.author } : {}), ...(ownRun ? { run: ownRun } : {}) });
  const blocked = req.blocking && result.goal.status === 'blocked';
  if (req.waitMs === undefined) {
    if (req.json) return printJson(io, result);
    io.out(result.comment.id);
    if (blocked) io.out(`goal ${req.goal} is blocked`);
    return;
  }
  io.err(`pak2: posted ${result.comment.id}${blocked ? `; goal ${req.goal} is blocked` : ''}; waiting up to ${req.waitSeconds} s for the answer`);
  const waited = await awaitAnswer(garden, req.goal, result.comment.id, req.waitMs);
  if (!waited) throw new UserError(`no answer to ${result.comment.id} within ${req.waitSeconds} s; goal ${req.goal} waits for it (pak2 comment ${req.goal} --answer TEXT)`, { exitCode: 1 });
  if ('closed' in waited) throw new UserError(`goal ${req.goal} closed (${waited.closed.closed_reason ?? '?'}) before ${result.comment.id} was answered`, { exitCode: 1 });
  if (req.json) return printJson(io, waited.answer);
  io.out(sanitize(waited.answer.body));
}

/** Answers the open question and says where the goal went. */
async function answer(garden: Garden, req: Request, io: CliIO): Promise<void> {
  const result = await answerQuestion(garden, req.goal, req.text!, { ...(req.questionId ? { questionId: req.questionId } : {}), ...(req.author ? { author: req.author } : {}) });
  if (req.json) return printJson(io, result);
  const status = result.goal.status;
  const where = status === 'blocked' ? `is still blocked: ${(await goalComments(garden, req.goal)).open.length} more open question(s)` : `is ${status} again`;
  io.out(`answered ${result.comment.answers} with ${result.comment.id}: goal ${req.goal} ${where}`);
}

/**
 * Runner mode (`PAK2_OUTBOX` set: the agent runs under `pak2 runner`): no
 * garden is read or written. The comment goes to `$PAK2_OUTBOX/<key>.json`
 * for the runner to post with its lease; with --wait the answer is read from
 * `$PAK2_INBOX/<key>.json`.
 */
async function viaRunner(req: Request, opts: CommentOptions, io: CliIO): Promise<void> {
  const own = io.env.PAK2_GOAL_ID;
  if (req.goal !== own) throw new UserError(own ? `GOAL ${req.goal}: under pak2 runner an agent comments on its own goal only (PAK2_GOAL_ID is ${own})` : `GOAL ${req.goal}: under pak2 runner PAK2_GOAL_ID names the agent's goal, and it is not set`);
  if (req.answer) throw new UserError('--answer: under pak2 runner an agent posts comments and questions; the operator answers them in the garden');
  if (opts.author !== undefined) throw new UserError('--author: under pak2 runner the comment is the agent\'s own (the runner posts it with its lease)');
  if (req.text === undefined) throw new UserError('TEXT: give the text of the comment (under pak2 runner the thread came with the task)');
  const inbox = io.env.PAK2_INBOX;
  if (req.waitMs !== undefined && !inbox) throw new UserError('--wait: PAK2_INBOX is not set, so the answer cannot arrive here');
  const key = await writeOutbox(io.env.PAK2_OUTBOX!, { body: req.text, blocking: req.blocking });
  if (req.waitMs === undefined) return io.out(key);
  io.err(`pak2: handed ${key} to the runner; waiting up to ${req.waitSeconds} s for the answer`);
  const answered = await pollFor(() => readInbox(inbox!, key), req.waitMs);
  if (!answered) throw new UserError(`no answer to ${key} within ${req.waitSeconds} s`, { exitCode: 1 });
  if (req.json) return printJson(io, answered);
  io.out(sanitize(answered.body));
}

/**
 * `pak2 comment` (docs/runners/level2.md, "Comments and blocking
 * questions"): post a comment (`--blocking`: a question the goal waits
 * on), answer the open question (`--answer [ID]`), print the thread (no
 * TEXT), or wait for the answer (`--wait [SECONDS]`, stdout: the answer's
 * body). The author is `--author`, else `agent:$PAK2_RUN_ID` for an agent,
 * else `operator`. Under `pak2 runner` (PAK2_OUTBOX set) the comment goes
 * to the runner's outbox instead of a garden.
 */
export function registerComment(program: Command, io: CliIO): void {
  program
    .command('comment')
    .description("a goal's comment thread: post a comment (--blocking: a question the goal waits on), answer the open question (--answer), or print the thread")
    .argument('<goal>', 'the goal id (N-slug); under pak2 runner, $PAK2_GOAL_ID')
    .argument('[text...]', 'the comment (- reads it from stdin); none: print the thread')
    .option('--blocking', 'a question the goal cannot go on without: the goal waits blocked until it is answered')
    .option('--answer [id]', 'answer the open question ID (default: the oldest); the last answer sends the goal back to running or queued')
    .option('--wait [seconds]', `with --blocking: wait for the answer and print it (default ${DEFAULT_WAIT_SECONDS} s; exit 1 without one)`)
    .option('--author <name>', 'who writes (default: agent:$PAK2_RUN_ID in an agent run, else operator)')
    .option('--json', 'print records as JSON')
    .action(async (goal: string, words: string[], opts: CommentOptions, command: Command) => {
      const req = parseRequest(goal, words, opts, io);
      if (io.env.PAK2_OUTBOX) return viaRunner(req, opts, io);
      const garden = gardenOf(command, io);
      if (req.text === undefined) return printThread(garden, req, io);
      if (req.answer) return answer(garden, req, io);
      return post(garden, req, io);
    });
}
