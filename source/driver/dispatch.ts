import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  isTerminalRunStatus,
  REFLECTION_REQUIRED_TYPES,
  type Cost,
  type FailureReason,
  type GoalRecord,
  type RunRecord,
} from '../contracts/index.js';
import { runDir, type Garden } from '../garden/index.js';
import {
  appendConversationMessage,
  appendEvent,
  clearConversationContinuity,
  appendJsonLine,
  closeRun,
  deliverReplyNote,
  followRun,
  freezeDispatchPacket,
  readConversation,
  readGoal,
  readConversationMessages,
  readComments,
  readPlant,
  readRun,
  renderSupplements,
  replyDir,
  runEventsFile,
  RUN_STREAM_FILES,
  RUNTIME_FILE_MODE,
  withRunStreamFile,
  setConversationContinuity,
  StoreError,
  unfollowRun,
  type ChatMessage,
  type CloseRunInput,
  type RunCloser,
  storeOf,
} from '../store/index.js';
import { acceptancePromptBlock, checkAcceptance, decideAcceptanceCheck, uncheckedAcceptance, type AcceptanceCheckContext } from './acceptance.js';
import { launch, type LaunchResult, type RunHandle } from './launch.js';
import { bubblewrapSpec } from './sandbox.js';
import type { LineSignal } from './liveness.js';
import { sanitize, SanitizeStream } from '../sanitize.js';
import { prepareRunWorktree } from '../worktree/index.js';
import { span } from '../timing.js';
import { addCosts, sumSpends, type LaunchSpend, type TokenUsage } from './pricing.js';
import { getDriverPlugin, type DriverPlugin, type LaunchContext, type ParsedStream, type SpendMeter } from './plugins/index.js';
import { buildPrompt, REFLECTION_PROMPT } from './prompt.js';
import { renderCommentThread, renderCommissionContextOf, renderTendContext } from './context-blocks.js';
import { makeRedactor, runRedaction } from '../redact.js';

/** The line the driver writes into events.jsonl before the reflection continuation's output. */
export const REFLECTION_MARKER_TYPE = 'pak2.reflection';
/** The line the driver writes into events.jsonl before it retries a conversation turn in a fresh session; the main phase is read from after it. */
export const FRESH_SESSION_MARKER_TYPE = 'pak2.fresh-session';

/**
 * True for a resume failure that no retry of the same session can fix:
 * the session is gone ("No conversation found with session ID") or the
 * provider refuses its history (an invalid-request 400, e.g. "tool_use ids
 * were found without tool_result blocks"). Transient failures (429, 5xx,
 * timeouts) are not.
 */
export function isDeadSession(errorText: string | undefined): boolean {
  if (!errorText) return false;
  return /No conversation found|no rollout found|tool_use ids were found without tool_result|invalid_request_error|API Error: 400\b/i.test(errorText);
}

/** The type of the JSON error line the driver writes when it cannot launch the agent. */
export const DRIVER_ERROR_TYPE = 'error';

/** What dispatch needs from its caller (the coordinator, or a test). */
export interface DriverContext {
  garden: Garden;
  /** Told when the agent process starts, with the handle that stops its group (the watchdog uses it). */
  onRunStart?: (runId: string, handle: RunHandle) => void;
  /** Told when the run's processes are gone. */
  onRunEnd?: (runId: string) => void;
  /**
   * Told each time the run's spend so far moves, as its driver's spend meter
   * follows the stream (USD, every launch of the run summed; docs/budget/level2.md).
   * The coordinator's budget decides there whether to stop it. `reported`:
   * the figure came with the agent's result (its turn's work is over: it is
   * counted, and a run that ended is never stopped for it).
   */
  onSpend?: (runId: string, spend: LaunchSpend, reported: boolean) => void;
  /** Agent stderr; default: the coordinator's stderr. */
  onStderr?: (runId: string, chunk: string) => void;
  now?: () => Date;
  /** The agents' base environment; default this process's (users' API keys and base URLs must reach the CLIs). */
  env?: NodeJS.ProcessEnv;
  /** The guard of a guarded goal's run (seed 001), or undefined for an unguarded one. */
  guardFor?: (goal: GoalRecord, run: RunRecord) => Promise<RunGuard | undefined>;
  /**
   * The tend, commission and supplements blocks as another garden rendered
   * them (a runner's claim context, docs/runners/level2.md): when set, the
   * prompt takes these instead of computing them from local files, and no
   * dispatch packet is frozen here (the garden froze it). Absent: local behaviour.
   */
  contextBlocks?: { tend?: string; commission?: string; supplements?: string; comments?: string };
  /**
   * The main phase already ran, under a process that is gone (a runner
   * restarted while its agent worked: docs/runners/level2.md, "Catch-up and
   * resumption"). Dispatch does not launch it again: it judges it from the
   * stream — its exit code was not observed, so it is recorded `null` and not
   * held against the agent's own result; without a result event the run is
   * `driver_error` with `unreported` — then goes on as usual (the reflection
   * turn, the close).
   */
  adoptedMain?: { stoppedBy?: LaunchResult['stoppedBy']; stopDetail?: LaunchResult['stopDetail']; stderrTail?: string; unreported: string };
}

/** What the driver concluded about the agent's main phase, as a guard sees it. */
export interface RunGuardVerdictInput {
  /** False when the agent never started (launch_failed). */
  launched: boolean;
  status: CloseRunInput['status'];
  failureReason?: FailureReason;
  errorText?: string;
  exitCode: number | null;
  /** The agent's own word on its result (`success` / `failure`), when it reported one. */
  agentStatus?: string;
}

/** The verdict a guard hands back: the driver's, or a failure of its own (verify_failed, scope_violation, guard_error). */
export interface GuardVerdict {
  status: CloseRunInput['status'];
  failureReason?: FailureReason;
  errorText?: string;
}

/**
 * Hooks a guarded run (seed 001; source/guard/) plugs into dispatch. The
 * driver calls them in this order: `promptBlock` and `environment` while
 * preparing, `beforeLaunch` (the baseline; a returned close input refuses
 * the run before the agent starts), `afterMain` once the main phase ended
 * on any path (scope check, verify, decision, rollback; before the
 * reflection, which only a kept run gets), and `beforeClose` with the
 * final close input (records written, text redacted).
 */
export interface RunGuard {
  promptBlock(): string;
  environment(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  beforeLaunch(prompt: string): Promise<CloseRunInput | undefined>;
  /**
   * The agent's main phase started (its process is running): `sandboxed`
   * when pak2 started it inside the `[coordinator] sandbox` (bubblewrap),
   * as observed at that launch (seed 001: `executor.sandbox`).
   */
  executorLaunched?(facts: { sandboxed: boolean }): void;
  afterMain(input: RunGuardVerdictInput): Promise<GuardVerdict>;
  beforeClose(input: CloseRunInput): Promise<CloseRunInput>;
}

/** File in the run directory that keeps the agent's stderr. */
export const RUN_STDERR_FILE = RUN_STREAM_FILES.stderr;
/** File in the run directory naming the live agent process, so a later coordinator can reclaim an orphan. */
export const RUN_PROCESS_FILE = 'process.json';

/** `process.json`: the agent process of a running run (pid, its run mark, host). */
export interface RunProcessRecord {
  pid: number;
  mark: string;
  host: string;
  phase: 'main' | 'reflection';
  started_at: string;
  /** The run's driver and model, so a run whose record is lost can still be named. */
  driver?: string;
  model?: string;
  /** Present when pak2 started this process inside its sandbox (`[coordinator] sandbox`, docs/run/isolation.md). */
  sandbox?: 'bubblewrap';
}

/** A run's `process.json`, or undefined when it is missing or unreadable. */
function readProcessRecord(dir: string): RunProcessRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, RUN_PROCESS_FILE), 'utf8')) as RunProcessRecord;
  } catch {
    return undefined;
  }
}

function writeProcessRecord(dir: string, record: RunProcessRecord): void {
  const file = path.join(dir, RUN_PROCESS_FILE);
  // Whole or not at all (temp file, rename): a reclaim or a resuming runner that reads it mid-write finds no empty record.
  const temp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: RUNTIME_FILE_MODE });
    fs.chmodSync(temp, RUNTIME_FILE_MODE);
    fs.renameSync(temp, file);
  } catch {
    fs.rmSync(temp, { force: true });
    // best effort: without it only the watchdog can reclaim the run
  }
}

/** Writes one of the run's files, the owner's alone (docs/run/level2.md, "Secrets"); the prompt stays raw until the close redacts it: it is the agent's stdin. */
async function writePrivate(file: string, text: string): Promise<void> {
  await fsp.writeFile(file, text, { mode: RUNTIME_FILE_MODE });
  await fsp.chmod(file, RUNTIME_FILE_MODE);
}

/** Bytes of a run's stream read at once when it is read through: memory stays bounded whatever its size. */
const STREAM_CHUNK_BYTES = 1024 * 1024;

/**
 * The lines of `file` between byte offsets `from` and `to` (`to` at a line
 * start), each with the offset after its newline, read a chunk at a time.
 * Nothing when the file cannot be opened.
 */
function* streamLines(file: string, from = 0, to = Number.POSITIVE_INFINITY): Generator<{ line: string; end: number }> {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return;
  }
  try {
    const chunk = Buffer.allocUnsafe(STREAM_CHUNK_BYTES);
    let pieces: Buffer[] = []; // the line begun in earlier chunks
    let pos = from;
    for (;;) {
      const n = to > pos ? fs.readSync(fd, chunk, 0, Math.min(chunk.length, to - pos), pos) : 0;
      if (n <= 0) break;
      let start = 0;
      for (let nl = chunk.indexOf(0x0a, 0); nl >= 0 && nl < n; nl = chunk.indexOf(0x0a, start)) {
        const line = pieces.length ? Buffer.concat([...pieces, chunk.subarray(start, nl)]).toString('utf8') : chunk.toString('utf8', start, nl);
        pieces = [];
        start = nl + 1;
        yield { line, end: pos + start };
      }
      if (start < n) pieces.push(Buffer.from(chunk.subarray(start, n))); // a copy: the chunk is read into again
      pos += n;
    }
    if (pieces.length) yield { line: Buffer.concat(pieces).toString('utf8'), end: pos };
  } finally {
    fs.closeSync(fd);
  }
}

/** The `type` of a line pak2 wrote into the stream (a marker), else undefined; agent lines are parsed only when they could be one. */
function markerType(line: string): string | undefined {
  if (!line.includes('"pak2.')) return undefined;
  const type = (parseStreamLine(line) as { type?: unknown }).type;
  return type === FRESH_SESSION_MARKER_TYPE || type === REFLECTION_MARKER_TYPE ? type : undefined;
}

/**
 * Splits events.jsonl into the main phase's and the reflection phase's
 * parsed JSON lines (`freshSession`: the main phase is a retry in a fresh
 * session, after pak2's marker; `reflectionBegan`: pak2's reflection marker is
 * there, so the main turn had finished and was judged a success). One pass finds where the phases begin (only lines that
 * could be pak2's markers are parsed); each phase is then parsed as it is
 * iterated, a line at a time, so a 100 MB stream is never held whole, as
 * text or as values.
 */
export function readPhases(eventsFile: string, options: { mainUntil?: number } = {}): { main: Iterable<unknown>; reflection: Iterable<unknown>; freshSession: boolean; reflectionBegan: boolean } {
  let mainFrom = 0;
  let mainTo = Number.POSITIVE_INFINITY;
  let reflectionFrom: number | undefined;
  let mainEmpty = false;
  let lineStart = 0;
  for (const { line, end } of streamLines(eventsFile)) {
    const type = markerType(line);
    if (type === FRESH_SESSION_MARKER_TYPE) {
      // The turn was retried in a fresh session: the main phase is the retry (one after the reflection leaves none).
      if (reflectionFrom === undefined) mainFrom = end;
      else mainEmpty = true;
    } else if (type === REFLECTION_MARKER_TYPE && reflectionFrom === undefined) {
      mainTo = lineStart;
      reflectionFrom = end;
    }
    lineStart = end;
  }
  const values = function* (from: number, to: number): Generator<unknown> {
    for (const { line } of streamLines(eventsFile, from, to)) {
      if (!line.trim()) continue;
      // The agent's stdout is recorded raw: a line that is not a JSON object reads as text.
      const value = parseStreamLine(line);
      const type = (value as { type?: unknown }).type;
      if (type === FRESH_SESSION_MARKER_TYPE || type === REFLECTION_MARKER_TYPE) continue;
      yield value;
    }
  };
  const reflectionStart = reflectionFrom;
  // Only what the agent said up to pak2's own stop of a lingering agent (its report), when asked.
  if (options.mainUntil !== undefined) mainTo = Math.min(mainTo, options.mainUntil);
  return {
    freshSession: mainFrom > 0,
    reflectionBegan: reflectionStart !== undefined,
    main: mainEmpty ? [] : { [Symbol.iterator]: () => values(mainFrom, mainTo) },
    reflection: reflectionStart === undefined ? [] : { [Symbol.iterator]: () => values(reflectionStart, Number.POSITIVE_INFINITY) },
  };
}

/**
 * How a run pak2 stopped is closed, by what stopped it (docs/run/level2.md,
 * "Terminal paths and the facts they keep"): its status, reason code and
 * who the RunClosed event says closed it (none: the driver). The driver
 * writes the close after the stop in every case.
 */
export function stoppedStatus(stop: NonNullable<LaunchResult['stoppedBy']>): { status: CloseRunInput['status']; reason: FailureReason; by?: RunCloser } {
  if (stop === 'timeout') return { status: 'timeout', reason: 'timeout' };
  if (stop === 'coordinator_stopped') return { status: 'killed', reason: 'coordinator_stopped', by: 'coordinator' };
  if (stop === 'operator') return { status: 'killed', reason: 'operator_stopped', by: 'operator' };
  if (stop === 'budget') return { status: 'killed', reason: 'budget_exceeded', by: 'budget' };
  return { status: 'killed', reason: 'killed', by: 'watchdog' };
}

/** A fresh classifier of the plugin's for one launch, over raw stdout lines (default: every line is progress). */
function lineClassifier(plugin: DriverPlugin, meter?: SpendMeter, onSpend?: (reported: boolean) => void): (line: string) => LineSignal {
  const classify = plugin.classifier?.();
  if (!meter) return classify ? (line) => classify(parseStreamLine(line)) : () => ({ progress: true, label: 'output' });
  return (line) => {
    const value = parseStreamLine(line);
    const signal = classify ? classify(value) : { progress: true, label: 'output' };
    // A result line's figure is what the finished turn cost: told as reported, so it is counted, never stopped.
    if (meter.observe(value) !== undefined) onSpend?.(Boolean(signal.terminal));
    return signal;
  };
}

/**
 * Milliseconds left of the run's wall-time limit (`[coordinator].run_timeout_seconds`),
 * counted from the run record's started_at; at least 1 ms.
 */
function remainingMs(run: RunRecord, timeoutSeconds: number, now: Date): number {
  return Math.max(1, Date.parse(run.started_at) + timeoutSeconds * 1000 - now.getTime());
}

/**
 * Parses one raw stdout line (events.jsonl holds the agent's raw lines): a
 * JSON object as itself, any other line as `{"type":"text","text":…}`.
 */
export function parseStreamLine(line: string): unknown {
  const trimmed = line.trim();
  if (trimmed.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(trimmed);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value;
    } catch {
      // not JSON: text, below
    }
  }
  return { type: 'text', text: line };
}

/** The record fields a stream's facts fill beyond the close input's own: refused tools, background tasks, how the last turn stopped. */
export function streamExtra(parsed: ParsedStream): NonNullable<CloseRunInput['extra']> {
  return {
    ...(parsed.denials?.length ? { permission_denials: parsed.denials } : {}),
    ...(parsed.backgroundTasks?.length ? { background_tasks: parsed.backgroundTasks } : {}),
    ...(parsed.stopReason !== undefined ? { stop_reason: parsed.stopReason } : {}),
    ...(parsed.terminalReason !== undefined ? { terminal_reason: parsed.terminalReason } : {}),
  };
}

/** The facts a stream holds, as close fields: cost, final text, turns, session id, and {@link streamExtra}. */
function streamFacts(parsed: ParsedStream): Pick<CloseRunInput, 'cost' | 'finalText' | 'numTurns' | 'sessionId'> & { extra: NonNullable<CloseRunInput['extra']> } {
  return {
    cost: parsed.cost,
    ...(parsed.finalText !== undefined ? { finalText: parsed.finalText } : {}),
    ...(parsed.numTurns !== undefined ? { numTurns: parsed.numTurns } : {}),
    ...(parsed.sessionId ? { sessionId: parsed.sessionId } : {}),
    extra: streamExtra(parsed),
  };
}

/**
 * The agent session a conversation-route run continues, and the thread's
 * running total before it (for a driver that reports one, codex): from the
 * conversation's continuity, when it is this driver's and plant's. A
 * standard run, or a conversation without a session to resume, starts fresh.
 */
async function resumedSession(paths: Garden['paths'], goal: GoalRecord, run: RunRecord): Promise<{ sessionId?: string; threadBefore?: TokenUsage | 'unknown' }> {
  if (routeOf(goal) === 'standard' || !goal.conversation_id) return {};
  const { continuity } = await readConversation(paths, goal.conversation_id);
  if (continuity?.driver !== run.driver || (continuity.plant ?? run.plant) !== run.plant) return {};
  return { sessionId: continuity.session_id, threadBefore: continuity.thread_usage ?? 'unknown' };
}

/**
 * Closes a running run from what its stream says (cost, session id, final
 * text, turns), with the status and reason its closer observed. The
 * watchdog uses it for runs no process here follows, reclaim for orphans,
 * and the coordinator when the driver itself failed (`driver_error`).
 *
 * @returns the closed record, or undefined when it was already terminal.
 */
export async function closeFromStream(
  garden: Garden,
  run: RunRecord,
  goalType: string,
  input: Omit<CloseRunInput, 'cost'> & { cost?: Cost },
  now: Date = new Date(),
  prepare?: (input: CloseRunInput) => Promise<CloseRunInput>,
): Promise<RunRecord | undefined> {
  // The run directory's stream, or the store's copy when it is not here (a remote run's upload, a run of another machine).
  return withRunStreamFile(garden.paths, run.id, 'events', (eventsFile) => closeFromStreamFile(garden, run, goalType, input, now, eventsFile, prepare));
}

async function closeFromStreamFile(
  garden: Garden,
  run: RunRecord,
  goalType: string,
  input: Omit<CloseRunInput, 'cost'> & { cost?: Cost },
  now: Date,
  eventsFile: string,
  prepare?: (input: CloseRunInput) => Promise<CloseRunInput>,
): Promise<RunRecord | undefined> {
  const { paths, config } = garden;
  const plugin = getDriverPlugin(run.driver, config);
  const phases = readPhases(eventsFile);
  // A fresh-session retry (its marker) left a main phase on a new thread: nothing was resumed.
  const goal = await readGoal(paths, run.goal).catch(() => undefined);
  const resumed: { threadBefore?: TokenUsage | 'unknown' } = plugin && !phases.freshSession && goal ? await resumedSession(paths, goal, run) : {};
  const parsed = plugin?.parseEvents(phases.main, { phase: 'main', runDir: runDir(paths, run.id), model: run.model, ...('threadBefore' in resumed ? { threadBefore: resumed.threadBefore } : {}) });
  const facts = parsed ? streamFacts(parsed) : { cost: { source: 'unknown' } as Cost, extra: {} };
  // Closed from its stream, not by the dispatch that ran it: its criteria were never checked (a runner's finish brings its own).
  const criteria = goal?.acceptance_criteria;
  const unchecked = criteria?.length && !input.extra?.acceptance ? { acceptance: uncheckedAcceptance(criteria, `not checked: the run was closed ${input.status}${input.failureReason ? ` (${input.failureReason})` : ''} from its stream${input.by ? ` by the ${input.by}` : ''}, not by the run that would have checked them`) } : {};
  try {
    const full: CloseRunInput = { ...facts, ...input, cost: input.cost ?? facts.cost, extra: { ...facts.extra, ...input.extra, ...unchecked } };
    return await closeRun(paths, run.id, goalType, prepare ? await prepare(full) : full, now);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') return undefined;
    throw error;
  }
}

/**
 * Closes a run whose process (or coordinator) ended during its reflection
 * turn (docs/run/level2.md, "Reflection"): its main turn had finished and
 * was judged a success (the reflection marker is in its stream), so the run
 * is recorded from it instead of as an interrupted attempt, and the task is
 * not run again. A reflection turn whose result had reached the stream
 * closes `success` with it (and `ReflectionRecorded`); otherwise `failure`
 * / `reflection_failed`, `why` in the error. Costs of both turns count.
 *
 * With `agentEnded` (no process of the run was alive when pak2 looked), a
 * stream with no reflection turn but with the main turn's result is
 * recorded from that result too ({@link closeEndedMainTurn}): a turn that
 * ended is never recorded as killed.
 *
 * @returns the closed record; undefined when the stream shows neither (the
 * caller closes it as it would), or another closer won.
 */
export async function closeAfterMainTurn(garden: Garden, run: RunRecord, goalType: string, why: string, now: Date = new Date(), options: { agentEnded?: boolean } = {}): Promise<RunRecord | undefined> {
  const plugin = getDriverPlugin(run.driver, garden.config);
  if (!plugin) return undefined;
  return withRunStreamFile(garden.paths, run.id, 'events', (eventsFile) => closeAfterMainTurnFrom(garden, run, goalType, why, now, options, plugin, eventsFile));
}

async function closeAfterMainTurnFrom(garden: Garden, run: RunRecord, goalType: string, why: string, now: Date, options: { agentEnded?: boolean }, plugin: DriverPlugin, eventsFile: string): Promise<RunRecord | undefined> {
  const { paths } = garden;
  const phases = readPhases(eventsFile);
  const dir = runDir(paths, run.id);
  if (!phases.reflectionBegan) return options.agentEnded ? closeEndedMainTurn(garden, run, goalType, why, now, plugin, phases.main, eventsFile) : undefined;
  const main = plugin.parseEvents(phases.main, { phase: 'main', runDir: dir, model: run.model });
  const reflected = plugin.parseEvents(phases.reflection, { phase: 'reflection', runDir: dir, model: run.model, ...(main.threadTotal ? { threadBefore: main.threadTotal } : {}) });
  const text = reflected.reported && reflected.status === 'success' ? reflected.finalText?.trim() : undefined;
  if (text && !isTerminalRunStatus((await readRun(paths, run.id)).status)) await appendEvent(paths, { type: 'ReflectionRecorded', run: run.id, goal: run.goal, plant: run.plant }, now);
  const input = text
    ? { status: 'success' as const, reflection: text, by: 'coordinator' as const }
    : { status: 'failure' as const, failureReason: 'reflection_failed' as const, errorText: `${why} during the reflection turn; the main turn had finished (success) and is kept; no reflection was recorded`, by: 'coordinator' as const };
  return closeFromStreamFile(garden, run, goalType, input, now, eventsFile, async (full) => ({ ...full, cost: addCosts(full.cost, reflected.cost) }));
}

/**
 * A run whose agent had ended on its own (no process of it was alive when
 * pak2 looked) and whose stream holds the main turn's result, but that no
 * pak2 closed (the coordinator died between the agent's exit and the close):
 * the turn ended, so it is recorded from what it reported, never as killed.
 * A success of a type that needs a reflection is `failure` /
 * `reflection_failed` (none was asked for), the main turn kept; any other
 * verdict is the stream's own. Undefined when the stream shows no result.
 */
async function closeEndedMainTurn(garden: Garden, run: RunRecord, goalType: string, why: string, now: Date, plugin: DriverPlugin, main: Iterable<unknown>, eventsFile: string): Promise<RunRecord | undefined> {
  const parsed = plugin.parseEvents(main, { phase: 'main', runDir: runDir(garden.paths, run.id), model: run.model });
  if (!parsed.reported) return undefined;
  // Its exit was not observed: what it reported decides, as for an agent pak2 ended after its result.
  const verdict = judge(parsed, { exitCode: 0, lingered: true, stderrTail: '' });
  if (verdict.status === 'success' && (REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goalType)) {
    return closeFromStreamFile(garden, run, goalType, { status: 'failure', failureReason: 'reflection_failed', errorText: `${why} after the agent's main turn had ended (success, kept) and before its reflection was asked for; no reflection was recorded`, by: 'coordinator' }, now, eventsFile);
  }
  return closeFromStreamFile(garden, run, goalType, { ...verdict, by: 'coordinator' }, now, eventsFile);
}

/**
 * The production dispatch function (seed 002, "Driver"): builds the prompt,
 * launches the goal's driver plugin on the opened run, reads cost, status,
 * session id and final text from the stream, solicits reflection by
 * continuing the same session for build / fix / evaluate / tend, and closes
 * the run. Resolves when the run is closed (or was closed by someone else).
 * A missing CLI or unknown driver writes a JSON error line to events.jsonl
 * and closes the run as `failure` / `launch_failed` with cost unknown.
 *
 * The record is pak2's: what the agent writes into the run directory never
 * decides status, cost or reflection (meta.json is checked against its
 * seal at close). Every terminal path keeps every fact the stream holds.
 *
 * Terminal statuses it produces: success, failure (agent_error,
 * nonzero_exit, launch_failed, reflection_failed, driver_error),
 * zero_output, timeout, killed (killed by the watchdog's stop,
 * coordinator_stopped, operator_stopped).
 *
 * @returns the closed run record, or undefined when another closer won.
 */
export async function dispatch(goal: GoalRecord, runId: string, ctx: DriverContext): Promise<RunRecord | undefined> {
  const { paths } = ctx.garden;
  const run = await readRun(paths, runId);
  // While its driver holds it, the run is closed only by pak2: a record forged into meta.json and its seal is not believed.
  followRun(paths, run);
  try {
    return await dispatchFollowed(goal, run, ctx);
  } finally {
    unfollowRun(paths, runId);
  }
}

async function dispatchFollowed(goal: GoalRecord, run: RunRecord, ctx: DriverContext): Promise<RunRecord | undefined> {
  const now = ctx.now ?? (() => new Date());
  const { paths, config } = ctx.garden;
  const runId = run.id;
  const dir = runDir(paths, runId);
  const eventsFile = runEventsFile(paths, runId);
  const guard = await ctx.guardFor?.(goal, run);
  // Every run's secrets: the secret-looking values of the environment its agent starts from (a guarded run's close input carries its own).
  const redaction = runRedaction(ctx.env ?? process.env);
  const redactLive = makeRedactor(redaction);
  // Set once the agent's working directory and environment are known: a run closing success has its criteria checked there.
  let acceptanceContext: AcceptanceCheckContext | undefined;
  const close = async (input: CloseRunInput): Promise<RunRecord | undefined> => {
    try {
      input = await withAcceptance(input);
      if (guard) {
        // Already closed by the watchdog or the operator: the guard still checks and reverts the tree, but writes nothing over the record.
        if (isTerminalRunStatus((await readRun(paths, runId)).status)) await guard.afterMain({ launched: true, status: input.status, failureReason: input.failureReason, errorText: input.errorText, exitCode: input.exitCode ?? null });
        input = await guard.beforeClose(input);
      }
      return await closeRun(paths, runId, goal.type, { by: 'driver', redaction, ...input }, now());
    } catch (error) {
      // The watchdog (or the operator) closed it first: the terminal record stands.
      if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') return undefined;
      throw error;
    }
  };
  /** The goal's acceptance criteria on the close input (docs/goal/level2.md, "Acceptance criteria"): checked when the run closes success, else each unverified with how it ended. */
  const withAcceptance = async (input: CloseRunInput): Promise<CloseRunInput> => {
    const criteria = goal.acceptance_criteria;
    if (!criteria?.length || input.extra?.acceptance) return input;
    const decision = decideAcceptanceCheck(input);
    let acceptance;
    if (decision.run && acceptanceContext) acceptance = await checkAcceptance(criteria, acceptanceContext);
    else acceptance = uncheckedAcceptance(criteria, decision.run ? 'not checked: the agent never started' : decision.why);
    return { ...input, extra: { ...input.extra, acceptance } };
  };
  const failLaunch = async (message: string): Promise<RunRecord | undefined> => {
    await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message });
    await guard?.afterMain({ launched: false, status: 'failure', failureReason: 'launch_failed', errorText: message, exitCode: null });
    return close({ status: 'failure', failureReason: 'launch_failed', cost: { source: 'unknown' }, errorText: message });
  };
  const stderrLog = path.join(dir, RUN_STDERR_FILE);

  const plugin = getDriverPlugin(run.driver, config);
  if (!plugin) return failLaunch(`unknown driver ${JSON.stringify(run.driver)}: use claude, codex, command, or configure [drivers.${run.driver}].command in PAK2.toml`);

  // A run in its own worktree works there (docs/landing/level2.md): made ready before anything of the agent's.
  let workDir = paths.gardenRoot;
  if (run.worktree) {
    const prepared = await prepareRunWorktree(ctx.garden, run, ctx.env ?? process.env, now);
    if (!prepared.ok) {
      await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message: prepared.message });
      await guard?.afterMain({ launched: false, status: 'failure', failureReason: prepared.failureReason, errorText: prepared.message, exitCode: null });
      return close({ status: 'failure', failureReason: prepared.failureReason, cost: { source: 'unknown' }, errorText: prepared.message });
    }
    workDir = prepared.path;
  }

  const route = routeOf(goal);
  let prompt: string;
  let resumeSessionId: string | undefined;
  let threadBefore: TokenUsage | 'unknown' | undefined;
  // What the run's finished launches spent, as their meters followed it (USD).
  const spentBefore: LaunchSpend[] = [];
  const endPrompt = span('prompt assembly');
  try {
    const plant = await readPlant(paths, run.plant);
    const extraBlocks: NonNullable<Parameters<typeof buildPrompt>[0]['extraBlocks']> = {};
    const given = ctx.contextBlocks;
    const tend = given ? given.tend : renderTendContext(goal, paths);
    if (tend) extraBlocks.tend = tend;
    const commission = given ? given.commission : renderCommissionContextOf(goal);
    if (commission) extraBlocks.commission = commission;
    if (guard) extraBlocks.guard = guard.promptBlock();
    const acceptance = acceptancePromptBlock(goal.acceptance_criteria);
    if (acceptance) extraBlocks.acceptance = acceptance;
    if (route === 'standard' && given) {
      if (given.supplements) extraBlocks.supplements = given.supplements;
      if (given.comments) extraBlocks.comments = given.comments;
    } else if (route === 'standard') {
      const packet = await freezeDispatchPacket(paths, goal, runId, now());
      const rendered = packet && renderSupplements(packet);
      if (rendered) extraBlocks.supplements = rendered;
      const thread = renderCommentThread(await readComments(paths, goal.id), goal.id);
      if (thread) extraBlocks.comments = thread;
    } else {
      const conversation = await readConversation(paths, goal.conversation_id!);
      const messages = await readConversationMessages(paths, conversation.id, CONVERSATION_CONTEXT_MESSAGES);
      extraBlocks.conversation = renderConversation(conversation.id, messages, route);
      // One agent session per conversation, driver and plant: another plant starts its own.
      ({ sessionId: resumeSessionId, threadBefore } = await resumedSession(paths, goal, run));
    }
    prompt = buildPrompt({
      paths,
      goal,
      runId,
      plant,
      runDirectory: dir,
      workingDirectory: workDir,
      ...(run.worktree ? { worktree: run.worktree } : {}),
      replyDirectory: replyDir(paths, config),
      extraBlocks,
    });
  } catch (error) {
    return failLaunch(`cannot build the prompt: ${(error as Error).message}`);
  }
  const promptFile = path.join(dir, 'prompt.md');
  await writePrivate(promptFile, prompt);
  endPrompt();
  if (guard) {
    const refused = await guard.beforeLaunch(prompt);
    if (refused) {
      await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message: refused.errorText ?? 'guarded run refused' });
      return close(refused);
    }
  }

  const launchCtx: LaunchContext = {
    prompt,
    model: run.model,
    reasoningEffort: run.reasoning_effort,
    runDir: dir,
    cwd: workDir,
    configCommand: config.drivers[run.driver]?.command,
    resumeSessionId,
  };
  const leftovers: string[] = [];
  const { env: cleanedEnv, removed } = agentEnvironment(ctx.env ?? process.env, { onStore: Boolean(storeOf(paths)) });
  const agentEnv = guard ? guard.environment(cleanedEnv) : cleanedEnv;
  // The criteria's commands run where the agent worked, with what it had ([guard] timeout_seconds each).
  acceptanceContext = { cwd: workDir, env: { ...agentEnv, PAK2_RUN_ID: runId, PAK2_RUN_DIR: dir, PAK2_GARDEN: paths.gardenRoot }, timeoutSeconds: config.guard.timeoutSeconds, runDir: dir };
  if (removed.length > 0 && !cleanedReported.has(removed.join(','))) {
    cleanedReported.add(removed.join(','));
    const git = removed.filter((n) => (GIT_LOCATION_VARIABLES as readonly string[]).includes(n));
    const store = removed.filter((n) => !git.includes(n));
    const why = [
      ...(git.length ? [`removed ${git.join(', ')} from the agents' environment: agents work in the garden's own repository (set by a git hook or a wrapper?)`] : []),
      ...(store.length ? [`removed ${store.join(', ')} from the agents' environment: the store's credentials never reach an agent`] : []),
    ];
    await appendEvent(paths, { type: 'AgentEnvironmentCleaned', run: runId, goal: goal.id, detail: why.join('; ') }, now()).catch(() => undefined);
  }
  const runPhase = async (phase: 'main' | 'reflection', sessionId?: string): Promise<LaunchResult | string> => {
    const printed = new SanitizeStream();
    let spec;
    try {
      spec = phase === 'main' ? plugin.buildLaunchCommand(launchCtx) : plugin.buildReflectionCommand({ ...launchCtx, sessionId });
    } catch (error) {
      return (error as Error).message;
    }
    let stdinFile = promptFile;
    if (phase === 'reflection') {
      stdinFile = path.join(dir, REFLECTION_PROMPT_FILE);
      await writePrivate(stdinFile, REFLECTION_PROMPT);
    }
    const sandboxed = config.coordinator.sandbox === 'bubblewrap';
    if (sandboxed) {
      // The agent cannot write the runtime root: only its run directory, its worktree and the reply directory (docs/run/isolation.md).
      const reply = replyDir(paths, config);
      await fsp.mkdir(reply, { recursive: true });
      // The server's tokens and the webhooks' secrets are hidden, not only read-only: a token would let the agent act over HTTP.
      const hidden = [path.join(paths.runtimeRoot, 'serve'), path.join(paths.runtimeRoot, 'webhooks')];
      for (const d of hidden) await fsp.mkdir(d, { recursive: true, mode: 0o700 });
      const readOnly = fs.existsSync(paths.configFile) ? [paths.configFile] : [];
      spec = bubblewrapSpec(spec, { runtimeRoot: paths.runtimeRoot, writable: [dir, workDir, reply], hidden, readOnly });
    }
    // This launch's spend, added to the launches before it (a fresh-session retry, the main turn before a reflection).
    const meter = plugin.spendMeter?.({ model: run.model, ...(threadBefore !== undefined ? { threadBefore } : {}) });
    // What reaches a terminal or a journal is redacted as the files are, a whole line at a time: a secret
    // the agent wrote across two reads of the file is whole when it is redacted (a line past 64 KiB goes
    // on without its last 4 KiB, so no secret is cut there either).
    let heldLine = '';
    const forward = (text: string) => {
      if (!text) return;
      const chunk = redactLive(text);
      if (ctx.onStderr) ctx.onStderr(runId, chunk);
      else process.stderr.write(printed.push(chunk));
    };
    const forwardStderr = (raw: string) => {
      heldLine += raw;
      const end = heldLine.lastIndexOf('\n') + 1;
      const cut = end > 0 ? end : heldLine.length > 65_536 ? heldLine.length - 4096 : 0;
      if (cut === 0) return;
      forward(heldLine.slice(0, cut));
      heldLine = heldLine.slice(cut);
    };
    const result = await launch(spec, {
      cwd: workDir,
      stdinFile,
      stdoutFile: eventsFile,
      stderrFile: stderrLog,
      timeoutMs: remainingMs(run, config.coordinator.runTimeoutSeconds, now()),
      resultGraceMs: config.coordinator.resultGraceSeconds * 1000,
      resultGraceCapMs: config.coordinator.resultGraceCapSeconds * 1000,
      classifyLine: lineClassifier(plugin, meter, (reported) => ctx.onSpend?.(runId, sumSpends([...spentBefore, meter!.spend]), reported)),
      // stderr lands in stderr.log itself; this forwards it (seed 002: to the coordinator's stderr), never a control sequence raw.
      onStderr: (raw: string) => forwardStderr(raw),
      onStart: (handle) => {
        if (handle.pid) writeProcessRecord(dir, { pid: handle.pid, mark: handle.mark, host: os.hostname(), phase, started_at: run.started_at, driver: run.driver, model: run.model, ...(sandboxed ? { sandbox: 'bubblewrap' as const } : {}) });
        // What the executor really ran in, as started (a config reloaded later does not rewrite it).
        if (phase === 'main' && handle.pid) guard?.executorLaunched?.({ sandboxed });
        ctx.onRunStart?.(runId, handle);
      },
      // The agent knows its goal, run and garden: `pak2 comment "$PAK2_GOAL_ID" --blocking`, `pak2 operator-message` and friends read these.
      env: { ...agentEnv, PAK2_GOAL_ID: goal.id, PAK2_RUN_ID: runId, PAK2_RUN_DIR: dir, PAK2_GARDEN: paths.gardenRoot, ...(run.worktree ? { PAK2_WORKTREE: workDir } : {}) },
    });
    forward(heldLine);
    heldLine = '';
    if (meter) spentBefore.push(meter.spend);
    ctx.onRunEnd?.(runId);
    if (!ctx.onStderr && printed.holding) process.stderr.write(printed.end());
    if (result.survivors.length > 0) {
      const named = result.survivors.map((p) => `${p.pid} ${p.command}`);
      leftovers.push(...named);
      const line = `pak2: run ${runId}: ${named.length} process(es) outlived the sweep and were left: ${named.join('; ')}\n`;
      if (ctx.onStderr) ctx.onStderr(runId, line);
      else process.stderr.write(sanitize(line));
      await appendEvent(paths, { type: 'RunLeftovers', run: runId, goal: goal.id, plant: run.plant, detail: named.join('; ') }, now()).catch(() => undefined);
    }
    if (result.spawnError) {
      const hint = sandboxed ? ' ([coordinator] sandbox = "bubblewrap": install Debian\'s bubblewrap package, or set sandbox = "none")' : plugin.installHint ? ` (install: ${plugin.installHint})` : '';
      return `cannot start ${spec.command}: ${result.spawnError}${hint}`;
    }
    return result;
  };

  const adopted = ctx.adoptedMain;
  // An adopted main phase was started by a process that is gone: its process record says how.
  if (adopted) guard?.executorLaunched?.({ sandboxed: readProcessRecord(dir)?.sandbox === 'bubblewrap' });
  let main = adopted
    ? ({ exitCode: null, signal: null, stoppedBy: adopted.stoppedBy, stopDetail: adopted.stopDetail, lingered: false, spawnError: undefined, outputBytes: 0, durationMs: 0, stderrTail: adopted.stderrTail ?? '', survivors: [] } satisfies LaunchResult)
    : await runPhase('main');
  if (typeof main === 'string') return failLaunch(main);
  let priorCost: Cost | undefined;
  if (!adopted && route !== 'standard' && resumeSessionId && !main.stoppedBy) {
    // A conversation's session that can never be resumed again: start a fresh one once, and say so.
    const first = plugin.parseEvents(readPhases(eventsFile).main, { phase: 'main', runDir: dir, model: run.model, threadBefore });
    if (first.status === 'failure' && isDeadSession(first.errorText)) {
      priorCost = first.cost;
      const conversationId = goal.conversation_id!;
      await clearConversationContinuity(paths, conversationId);
      await appendConversationMessage(paths, conversationId, { sender: 'system', text: `The agent session ${resumeSessionId} cannot be resumed (${(first.errorText ?? '').slice(0, 300)}); starting a fresh session with the recent messages and trying once more.`, run: runId, fact: `fresh-session:${runId}` }, now());
      await appendJsonLine(eventsFile, { type: FRESH_SESSION_MARKER_TYPE, dropped_session: resumeSessionId, reason: first.errorText ?? null });
      launchCtx.resumeSessionId = undefined;
      threadBefore = undefined; // a fresh thread: its totals are its own
      main = await runPhase('main');
      if (typeof main === 'string') return failLaunch(main);
    }
  }
  // From here the agent has run: whatever fails now is pak2's own fault, and the stream is kept.
  try {
    return await finish(main);
  } catch (error) {
    const message = `pak2 failed while finishing the run: ${(error as Error)?.message ?? String(error)}`;
    await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message }).catch(() => undefined);
    return closeFromStream(ctx.garden, run, goal.type, { status: 'failure', failureReason: 'driver_error', errorText: message, by: 'driver', redaction }, now(), guard ? (input) => guard.beforeClose(input) : undefined);
  }

  async function finish(main: LaunchResult): Promise<RunRecord | undefined> {
    if (isTerminalRunStatus((await readRun(paths, runId)).status)) return undefined;
    const whole = plugin!.parseEvents(readPhases(eventsFile).main, { phase: 'main', runDir: dir, model: run.model, threadBefore });
    // An agent pak2 ended after it reported is judged by what it reported before pak2's SIGINT; what it spent after, and how its tasks ended, still count.
    const reported = main.lingerAt !== undefined ? plugin!.parseEvents(readPhases(eventsFile, { mainUntil: main.lingerAt }).main, { phase: 'main', runDir: dir, model: run.model, threadBefore }) : undefined;
    const parsed: ParsedStream = reported ? { ...reported, cost: whole.cost, ...(whole.threadTotal ? { threadTotal: whole.threadTotal } : {}), ...(whole.backgroundTasks ? { backgroundTasks: whole.backgroundTasks } : {}) } : whole;
    const facts = streamFacts(parsed);
    // The resumed thread's running total moved on whatever the verdict (a turn that completed, then failed or was stopped, is charged
    // its tokens): the conversation keeps it, so the next turn is charged from here and this one's tokens never twice.
    if (route !== 'standard' && parsed.threadTotal && parsed.sessionId && parsed.sessionId === launchCtx.resumeSessionId) {
      await setConversationContinuity(paths, goal.conversation_id!, run.driver, parsed.sessionId, now(), run.plant, parsed.threadTotal);
    }
    const extra: CloseRunInput['extra'] = {
      ...facts.extra,
      ...(main.lingered ? { lingered: true, linger: { ended_by: main.lingerEnd ?? 'grace', ...(main.openWork?.length ? { open_work: main.openWork } : {}) } } : {}),
      ...(leftovers.length ? { leftovers: [...leftovers] } : {}),
    };
    // A failed first attempt before a fresh session cost something too.
    const base = { ...facts, ...(priorCost ? { cost: addCosts(facts.cost, priorCost) } : {}), exitCode: main.exitCode, extra };
    if (main.stoppedBy) {
      const { status, reason, by } = stoppedStatus(main.stoppedBy);
      const watchdog = main.stopDetail?.watchdog;
      const message = main.stopDetail?.message ?? stopMessage(main.stoppedBy, config.coordinator.runTimeoutSeconds);
      const operatorStop = main.stoppedBy === 'operator' ? { operator_stop: { requeue: Boolean(main.stopDetail?.requeue) } } : {};
      const budget = main.stopDetail?.budget;
      await guard?.afterMain({ launched: true, status, failureReason: reason, errorText: message, exitCode: main.exitCode });
      // A stop with no cost in the stream keeps what the meter followed (estimated), never unknown when the stream carried usage.
      const followed = sumSpends(spentBefore);
      const cost = base.cost.source === 'unknown' && followed.source !== 'unknown' ? { ...base.cost, source: followed.source, usd: followed.usd, ...(followed.pricing ? { pricing: followed.pricing } : {}) } : base.cost;
      return close({ ...base, cost, extra: { ...extra, ...(watchdog ? { watchdog } : {}), ...(budget ? { budget } : {}), ...operatorStop }, status, failureReason: reason, errorText: message, ...(by ? { by } : {}) });
    }
    if (adopted && !parsed.reported) {
      await guard?.afterMain({ launched: true, status: 'failure', failureReason: 'driver_error', errorText: adopted.unreported, exitCode: null });
      return close({ ...base, status: 'failure', failureReason: 'driver_error', errorText: adopted.unreported });
    }
    // An adopted main phase's exit was not observed: its own report decides.
    let verdict = judge(parsed, adopted ? { ...main, exitCode: 0 } : main);
    if (guard) {
      const judged = await guard.afterMain({ launched: true, ...verdict, exitCode: main.exitCode, ...(parsed.reported ? { agentStatus: parsed.status } : {}) });
      verdict = { status: judged.status, ...(judged.failureReason ? { failureReason: judged.failureReason } : {}), ...(judged.errorText ? { errorText: judged.errorText } : {}) };
    }
    // A turn that stopped before finishing has no answer: what it last said is in the error, not the final text.
    if (verdict.failureReason === 'turn_unfinished') delete (base as Partial<typeof base>).finalText;
    if (verdict.status !== 'success') return close({ ...base, ...verdict });

    if (route !== 'standard') {
      // The conversation route records the reply, delivers it, and keeps the session for the next turn.
      // The reply is kept in the inbox and the conversation: without the run's secrets, as its record.
      const reply = makeRedactor(redaction)((parsed.finalText ?? '').trim());
      // Titled by what it answers, so the inbox does not list a column of "Reply".
      const note = await deliverReplyNote(paths, config, `reply-${runId}`, `# ${replyTitle(goal)}\n\n${reply}\n`, now());
      await appendConversationMessage(paths, goal.conversation_id!, { sender: 'garden', text: reply, run: runId, note, ...(route === 'hop' ? { fact: `hop:${goal.id}` } : {}) }, now());
      if (parsed.sessionId) await setConversationContinuity(paths, goal.conversation_id!, run.driver, parsed.sessionId, now(), run.plant, parsed.threadTotal);
    }
    if (!(REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goal.type)) return close({ ...base, status: 'success' });

    const reflection = await solicitReflection(ctx, plugin!, runId, goal, parsed, runPhase, eventsFile, dir, run.model);
    let cost = reflection.ran ? addCosts(base.cost, reflection.cost) : base.cost;
    // A reflection turn that ran but reported no cost leaves the total a lower bound.
    if (reflection.ran && (!reflection.cost || reflection.cost.source === 'unknown') && cost.source !== 'unknown') cost = { ...cost, partial: true };
    const reflectionExtra = { ...extra, ...(leftovers.length ? { leftovers: [...leftovers] } : {}) };
    if (reflection.stoppedBy === 'coordinator_stopped') {
      // The task is done: a quit during its reflection records it from its main turn, it does not put it back in the queue to be done again.
      return close({ ...base, extra: reflectionExtra, cost, status: 'failure', failureReason: 'reflection_failed', errorText: 'the coordinator stopped during the reflection turn; the main turn had finished (success) and is kept; no reflection was recorded', by: 'coordinator' });
    }
    if (reflection.stoppedBy) {
      const { status, reason, by } = stoppedStatus(reflection.stoppedBy);
      return close({ ...base, extra: { ...reflectionExtra, ...(reflection.stoppedBy === 'operator' ? { operator_stop: { requeue: Boolean(reflection.stopDetail?.requeue) } } : {}) }, cost, status, failureReason: reason, errorText: `during the reflection turn: ${stopMessage(reflection.stoppedBy, config.coordinator.runTimeoutSeconds)}`, ...(by ? { by } : {}) });
    }
    if (!reflection.text) return close({ ...base, extra: reflectionExtra, cost, status: 'failure', failureReason: 'reflection_failed', errorText: reflection.error ?? 'the reflection turn returned no text' });
    await appendEvent(paths, { type: 'ReflectionRecorded', run: runId, goal: goal.id, plant: run.plant }, now());
    return close({ ...base, extra: reflectionExtra, cost, status: 'success', reflection: reflection.text });
  }
}

/**
 * Git variables that point git at another repository. A coordinator started
 * from a git hook inherits them; an agent that kept them would commit into
 * that repository instead of the garden's.
 */
export const GIT_LOCATION_VARIABLES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_COMMON_DIR', 'GIT_PREFIX', 'GIT_ALTERNATE_OBJECT_DIRECTORIES'] as const;
const cleanedReported = new Set<string>();

/**
 * The store's credentials (docs/store/level2.md): an agent that had them
 * could write the garden's records itself, past every rule of pak2's. The
 * store's URL always goes; the PostgreSQL client's password variables go
 * when the garden is on a store (they are then the store's).
 */
export const STORE_CREDENTIAL_VARIABLES = ['PAK2_STORE_URL'] as const;
export const STORE_PASSWORD_VARIABLES = ['PGPASSWORD', 'PGPASSFILE'] as const;

/**
 * The agents' environment: the coordinator's, less {@link GIT_LOCATION_VARIABLES}
 * and the store's credentials ({@link STORE_CREDENTIAL_VARIABLES}; with
 * `onStore`, {@link STORE_PASSWORD_VARIABLES} too); `removed` names those that were set.
 */
export function agentEnvironment(base: NodeJS.ProcessEnv, options: { onStore?: boolean } = {}): { env: NodeJS.ProcessEnv; removed: string[] } {
  const env = { ...base };
  const removed: string[] = [];
  const credentials = [...STORE_CREDENTIAL_VARIABLES, ...(options.onStore || base.PAK2_STORE_URL ? STORE_PASSWORD_VARIABLES : [])];
  for (const name of credentials) {
    if (env[name] !== undefined) {
      removed.push(name);
      delete env[name];
    }
  }
  for (const name of GIT_LOCATION_VARIABLES) {
    if (env[name] !== undefined) {
      removed.push(name);
      delete env[name];
    }
  }
  return { env, removed };
}

/** The file in the run directory that holds the reflection prompt given to the continuation as stdin. */
export const REFLECTION_PROMPT_FILE = 'reflection-prompt.md';

function stopMessage(stop: NonNullable<LaunchResult['stoppedBy']>, timeoutSeconds: number): string {
  if (stop === 'timeout') return `ran past run_timeout_seconds (${timeoutSeconds} s)`;
  if (stop === 'coordinator_stopped') return 'the coordinator shut down while the run was live';
  if (stop === 'operator') return 'stopped by the operator';
  if (stop === 'budget') return 'stopped: its spend crossed a budget cap';
  return 'killed by the watchdog';
}

/** The heading of a reply note: `Re: ` and the start of the operator's message (the goal body), one line, at most 60 characters. */
export function replyTitle(goal: GoalRecord): string {
  const first = goal.body.trim().split('\n')[0]!.trim();
  const cut = first.length > 60 ? `${first.slice(0, 59)}…` : first;
  return cut ? `Re: ${cut}` : 'Reply';
}

/** How many recent messages of a conversation go into a conversation-route prompt. */
export const CONVERSATION_CONTEXT_MESSAGES = 20;

/**
 * The driver route of a goal (seed 002, "What the driver does" step 1):
 * `conversation` for a conversational reply (`converse` with a
 * conversation_id), `hop` for a post-reply hop, else `standard`.
 */
export function routeOf(goal: GoalRecord): 'standard' | 'conversation' | 'hop' {
  if (goal.post_reply_hop && goal.conversation_id) return 'hop';
  if (goal.conversation_id && goal.type === 'converse') return 'conversation';
  return 'standard';
}

function renderConversation(conversationId: string, messages: ChatMessage[], route: 'conversation' | 'hop'): string {
  const lines = messages.map((m) => `[${m.ts}] ${m.sender}: ${m.text.replace(/\n/g, '\n    ')}`);
  const instruction =
    route === 'conversation'
      ? 'Reply to the operator\'s message in # Task below; the conversation so far is here for context. Your final answer is delivered to them as your reply, so write it for them: plain, short, concrete. If the message asks for real work, do small things now; for larger work, queue a goal with `pak2 submit --conversation <this conversation id>` and say so.'
      : 'This is a follow-up hop after your last reply: do what the task says, then end with a short note for the operator saying what you did. It is posted to the conversation.';
  return [instruction, '', `Conversation id: ${conversationId}`, '', ...(lines.length ? lines : ['(no messages yet)'])].join('\n');
}

/** The last non-empty line of a stderr tail, for messages. */
function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines.at(-1) ?? '';
}

/**
 * How a process ended, in words: `exit 2`, `killed by SIGTERM` (no exit
 * code, a signal), `exit 143 (killed by SIGTERM)` (a shell or runtime that
 * turns a signal into 128 + its number).
 */
export function exitWords(exitCode: number | null, signal?: string | null): string {
  if (exitCode === null) return signal ? `killed by ${signal}` : 'exit by signal';
  const byNumber = exitCode > 128 && exitCode <= 128 + 64 ? Object.entries(os.constants.signals).find(([, n]) => n === exitCode - 128)?.[0] : undefined;
  return byNumber ? `exit ${exitCode} (killed by ${byNumber})` : `exit ${exitCode}`;
}

/** Background tasks as a sentence's list: `local_agent "review" (stopped); local_bash "npm test" (never finished)`. */
function namedTasks(tasks: NonNullable<ParsedStream['backgroundTasks']>): string {
  return tasks.map((t) => `${t.type}${t.description ? ` ${JSON.stringify(t.description)}` : ` ${t.id}`} (${t.status === 'running' ? 'never finished' : t.status})`).join('; ');
}

/**
 * The run's verdict from the agent's own report and its exit (docs/run/level2.md,
 * "Terminal paths" and "When a run has ended"), with the message of its
 * real cause. An agent that reported its result and lingered is judged by
 * its result. A success is plain only when the turn finished (its
 * `stop_reason` / `terminal_reason`), no background task of it was left
 * unfinished, and no tool call was refused.
 */
export function judge(parsed: ParsedStream, result: Pick<LaunchResult, 'exitCode' | 'lingered' | 'stderrTail'> & { signal?: string | null }): { status: CloseRunInput['status']; failureReason?: FailureReason; errorText?: string } {
  if (parsed.reported && parsed.status === 'failure') return { status: 'failure', failureReason: 'agent_error', errorText: parsed.errorText ?? 'the agent reported a failed result' };
  const exitCode = result.lingered ? 0 : result.exitCode;
  if (exitCode !== 0) {
    const stderr = lastLine(result.stderrTail);
    if (parsed.errorText) return { status: 'failure', failureReason: 'agent_error', errorText: parsed.errorText };
    return { status: 'failure', failureReason: 'nonzero_exit', errorText: `${exitWords(exitCode, result.signal)}${parsed.reported ? '' : ', no result event'}${stderr ? `: ${stderr}` : ''}` };
  }
  if (!parsed.producedOutput) return { status: 'zero_output', failureReason: 'zero_output', errorText: 'the agent exited 0 without any output' };
  if (parsed.status === 'failure') return { status: 'failure', failureReason: 'agent_error', errorText: parsed.errorText ?? 'no result event: the agent exited 0 without reporting a result' };
  if (parsed.unfinishedTurn) {
    const said = parsed.finalText?.trim();
    const words = said ? `; its last words: ${JSON.stringify(said.length > 300 ? `${said.slice(0, 299)}…` : said)}` : '';
    return { status: 'failure', failureReason: 'turn_unfinished', errorText: `the agent reported success, but its turn stopped before finishing (${parsed.unfinishedTurn})${words}` };
  }
  const unfinished = parsed.backgroundTasks?.filter((t) => t.unfinished) ?? [];
  if (unfinished.length) {
    return { status: 'failure', failureReason: 'background_unfinished', errorText: `the agent reported success, but ${unfinished.length} background task(s) did not finish: ${namedTasks(unfinished)}` };
  }
  if (parsed.denials?.length) {
    const named = parsed.denials.map((d) => `${d.tool}${d.path ? ` ${d.path}` : ''}`).join('; ');
    return { status: 'failure', failureReason: 'permission_denied', errorText: `the agent reported success, but ${parsed.denials.length} tool call(s) were denied: ${named}` };
  }
  return { status: 'success' };
}

async function solicitReflection(
  ctx: DriverContext,
  plugin: DriverPlugin,
  runId: string,
  goal: GoalRecord,
  parsed: ParsedStream,
  runPhase: (phase: 'main' | 'reflection', sessionId?: string) => Promise<LaunchResult | string>,
  eventsFile: string,
  dir: string,
  model: string,
): Promise<{ ran: boolean; text?: string; cost?: Cost; stoppedBy?: LaunchResult['stoppedBy']; stopDetail?: LaunchResult['stopDetail']; error?: string }> {
  const { paths } = ctx.garden;
  await appendJsonLine(eventsFile, { type: REFLECTION_MARKER_TYPE, session_id: parsed.sessionId ?? null });
  await appendEvent(paths, { type: 'ReflectionRequested', run: runId, goal: goal.id }, (ctx.now ?? (() => new Date()))());
  const result = await runPhase('reflection', parsed.sessionId);
  if (typeof result === 'string') {
    await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message: result });
    return { ran: false, error: `the reflection turn could not start: ${result}` };
  }
  // The reflection continues the thread the main turn left: a driver that reports running totals (codex) is charged from there.
  const reflected = plugin.parseEvents(readPhases(eventsFile).reflection, { phase: 'reflection', runDir: dir, model, ...(parsed.threadTotal ? { threadBefore: parsed.threadTotal } : {}) });
  if (result.stoppedBy) return { ran: true, stoppedBy: result.stoppedBy, stopDetail: result.stopDetail, cost: reflected.cost };
  const exitCode = result.lingered ? 0 : result.exitCode;
  const text = exitCode === 0 && reflected.status === 'success' ? reflected.finalText?.trim() : undefined;
  if (text) return { ran: true, text, cost: reflected.cost };
  const stderr = lastLine(result.stderrTail);
  let error: string;
  if (exitCode !== 0) error = `the reflection turn ${exitCode === null ? (result.signal ? `was killed by ${result.signal}` : 'exited by signal') : exitWords(exitCode).replace(/^exit/, 'exited')}${reflected.errorText ? `: ${reflected.errorText}` : stderr ? `: ${stderr}` : ''}`;
  else if (reflected.reported && reflected.status === 'failure') error = `the reflection turn reported an error: ${reflected.errorText ?? 'failed result'}`;
  else if (!reflected.reported && reflected.producedOutput) error = 'the reflection turn printed text but no result event';
  else error = 'the reflection turn returned no text';
  return { ran: true, cost: reflected.cost, error };
}
