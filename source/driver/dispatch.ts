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
  appendJsonLine,
  closeRun,
  deliverReplyNote,
  freezeDispatchPacket,
  readConversation,
  readConversationMessages,
  readPlant,
  readRun,
  renderSupplements,
  replyDir,
  runEventsFile,
  setConversationContinuity,
  StoreError,
  type ChatMessage,
  type CloseRunInput,
} from '../store/index.js';
import { launch, type LaunchResult, type RunHandle } from './launch.js';
import { addCosts } from './pricing.js';
import { getDriverPlugin, type DriverPlugin, type LaunchContext, type ParsedStream } from './plugins/index.js';
import { buildPrompt, REFLECTION_PROMPT } from './prompt.js';
import { renderTendContext } from '../coordinator/tend-policy.js';
import { renderCommissionContextOf } from '../submit/plant-commission.js';

/** The line the driver writes into events.jsonl before the reflection continuation's output. */
export const REFLECTION_MARKER_TYPE = 'pak2.reflection';
/** The type of the JSON error line the driver writes when it cannot launch the agent. */
export const DRIVER_ERROR_TYPE = 'error';

/** What dispatch needs from its caller (the coordinator, or a test). */
export interface DriverContext {
  garden: Garden;
  /** Told when the agent process starts, with the handle that stops its group (the watchdog uses it). */
  onRunStart?: (runId: string, handle: RunHandle) => void;
  /** Told when the run's processes are gone. */
  onRunEnd?: (runId: string) => void;
  /** Agent stderr; default: the coordinator's stderr. */
  onStderr?: (runId: string, chunk: string) => void;
  now?: () => Date;
  /** The agents' base environment; default this process's (users' API keys and base URLs must reach the CLIs). */
  env?: NodeJS.ProcessEnv;
}

/** File in the run directory that keeps the agent's stderr. */
export const RUN_STDERR_FILE = 'stderr.log';
/** File in the run directory naming the live agent process, so a later coordinator can reclaim an orphan. */
export const RUN_PROCESS_FILE = 'process.json';

/** `process.json`: the agent process of a running run (pid, its run mark, host). */
export interface RunProcessRecord {
  pid: number;
  mark: string;
  host: string;
  phase: 'main' | 'reflection';
  started_at: string;
}

function writeProcessRecord(dir: string, record: RunProcessRecord): void {
  try {
    fs.writeFileSync(path.join(dir, RUN_PROCESS_FILE), `${JSON.stringify(record, null, 2)}\n`);
  } catch {
    // best effort: without it only the watchdog can reclaim the run
  }
}

/** Records a stdout line that is not a JSON object as `{"type":"text","text":…}`, so events.jsonl stays JSON lines. */
export function wrapNonJsonLine(line: string): string {
  const trimmed = line.trim();
  if (trimmed.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(trimmed);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) return trimmed;
    } catch {
      // not JSON: wrapped below
    }
  }
  return JSON.stringify({ type: 'text', text: line });
}

/** Splits events.jsonl into the main phase's and the reflection phase's parsed JSON lines. */
export function readPhases(eventsFile: string): { main: unknown[]; reflection: unknown[] } {
  let text = '';
  try {
    text = fs.readFileSync(eventsFile, 'utf8');
  } catch {
    return { main: [], reflection: [] };
  }
  const main: unknown[] = [];
  const reflection: unknown[] = [];
  let target = main;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    if ((value as { type?: unknown })?.type === REFLECTION_MARKER_TYPE) {
      target = reflection;
      continue;
    }
    target.push(value);
  }
  return { main, reflection };
}

function stoppedStatus(stop: LaunchResult['stoppedBy']): { status: CloseRunInput['status']; reason: FailureReason } {
  if (stop === 'timeout') return { status: 'timeout', reason: 'timeout' };
  if (stop === 'coordinator_stopped') return { status: 'killed', reason: 'coordinator_stopped' };
  return { status: 'killed', reason: 'killed' };
}

/**
 * Seconds left of the run's wall-time limit (`[coordinator].run_timeout_seconds`),
 * counted from the run record's started_at; at least 1 ms.
 */
function remainingMs(run: RunRecord, timeoutSeconds: number, now: Date): number {
  return Math.max(1, Date.parse(run.started_at) + timeoutSeconds * 1000 - now.getTime());
}

/**
 * The production dispatch function (seed 002, "Driver"): builds the prompt,
 * launches the goal's driver plugin on the opened run, reads cost, status,
 * session id and final text from the stream, solicits reflection by
 * continuing the same session for build / fix / evaluate / tend, and closes
 * the run. Resolves when the run is closed (or was closed by someone else,
 * e.g. the watchdog). A missing CLI or unknown driver writes a JSON error line
 * to events.jsonl and closes the run as `failure` / `launch_failed` with cost
 * unknown.
 *
 * Terminal statuses it produces: success, failure (agent_error, nonzero_exit,
 * launch_failed, reflection_failed), zero_output, timeout, killed
 * (coordinator_stopped; `killed` by the watchdog is closed by the coordinator).
 *
 * @returns the closed run record, or undefined when another closer won.
 */
export async function dispatch(goal: GoalRecord, runId: string, ctx: DriverContext): Promise<RunRecord | undefined> {
  const now = ctx.now ?? (() => new Date());
  const { paths, config } = ctx.garden;
  const run = await readRun(paths, runId);
  const dir = runDir(paths, runId);
  const eventsFile = runEventsFile(paths, runId);
  const close = async (input: CloseRunInput): Promise<RunRecord | undefined> => {
    try {
      return await closeRun(paths, runId, goal.type, { by: 'driver', ...input }, now());
    } catch (error) {
      // The watchdog (or the operator) closed it first: the terminal record stands.
      if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') return undefined;
      throw error;
    }
  };
  const failLaunch = async (message: string): Promise<RunRecord | undefined> => {
    await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message });
    return close({ status: 'failure', failureReason: 'launch_failed', cost: { source: 'unknown' }, errorText: message });
  };
  const stderrLog = path.join(dir, RUN_STDERR_FILE);

  const plugin = getDriverPlugin(run.driver, config);
  if (!plugin) return failLaunch(`unknown driver ${JSON.stringify(run.driver)}: use claude, codex, command, or configure [drivers.${run.driver}].command in PAK2.toml`);

  const route = routeOf(goal);
  let prompt: string;
  let resumeSessionId: string | undefined;
  try {
    const plant = await readPlant(paths, run.plant);
    const extraBlocks: NonNullable<Parameters<typeof buildPrompt>[0]['extraBlocks']> = {};
    const tend = renderTendContext(goal, paths);
    if (tend) extraBlocks.tend = tend;
    const commission = renderCommissionContextOf(goal);
    if (commission) extraBlocks.commission = commission;
    if (route === 'standard') {
      const packet = await freezeDispatchPacket(paths, goal, runId, now());
      const rendered = packet && renderSupplements(packet);
      if (rendered) extraBlocks.supplements = rendered;
    } else {
      const conversation = await readConversation(paths, goal.conversation_id!);
      const messages = await readConversationMessages(paths, conversation.id, CONVERSATION_CONTEXT_MESSAGES);
      extraBlocks.conversation = renderConversation(conversation.id, messages, route);
      // One agent session per conversation, driver and plant: another plant starts its own.
      if (conversation.continuity?.driver === run.driver && (conversation.continuity.plant ?? run.plant) === run.plant) resumeSessionId = conversation.continuity.session_id;
    }
    prompt = buildPrompt({
      paths,
      goal,
      runId,
      plant,
      runDirectory: dir,
      workingDirectory: paths.gardenRoot,
      replyDirectory: replyDir(paths, config),
      extraBlocks,
    });
  } catch (error) {
    return failLaunch(`cannot build the prompt: ${(error as Error).message}`);
  }
  await fsp.writeFile(path.join(dir, 'prompt.md'), prompt);

  const launchCtx: LaunchContext = {
    prompt,
    model: run.model,
    reasoningEffort: run.reasoning_effort,
    runDir: dir,
    cwd: paths.gardenRoot,
    configCommand: config.drivers[run.driver]?.command,
    resumeSessionId,
  };
  const runPhase = async (phase: 'main' | 'reflection', sessionId?: string): Promise<LaunchResult | string> => {
    let spec;
    try {
      spec = phase === 'main' ? plugin.buildLaunchCommand(launchCtx) : plugin.buildReflectionCommand({ ...launchCtx, sessionId });
    } catch (error) {
      return (error as Error).message;
    }
    const result = await launch(spec, {
      cwd: paths.gardenRoot,
      stdin: phase === 'main' ? prompt : REFLECTION_PROMPT,
      stdoutFile: eventsFile,
      timeoutMs: remainingMs(run, config.coordinator.runTimeoutSeconds, now()),
      mapLine: plugin.mapLine ? (line: string) => plugin.mapLine!(line) : wrapNonJsonLine,
      onStderr: (chunk: string) => {
        // Kept with the run, and forwarded (seed 002: to the coordinator's stderr).
        fs.appendFileSync(stderrLog, chunk);
        if (ctx.onStderr) ctx.onStderr(runId, chunk);
        else process.stderr.write(chunk);
      },
      onStart: (handle) => {
        if (handle.pid) writeProcessRecord(dir, { pid: handle.pid, mark: handle.mark, host: os.hostname(), phase, started_at: now().toISOString() });
        ctx.onRunStart?.(runId, handle);
      },
      // The agent knows its run and garden: `pak2 operator-message` and friends read these.
      env: { ...(ctx.env ?? process.env), PAK2_RUN_ID: runId, PAK2_GARDEN: paths.gardenRoot },
    });
    ctx.onRunEnd?.(runId);
    if (result.spawnError) {
      const hint = plugin.installHint ? ` (install: ${plugin.installHint})` : '';
      return `cannot start ${spec.command}: ${result.spawnError}${hint}`;
    }
    return result;
  };

  const main = await runPhase('main');
  if (typeof main === 'string') return failLaunch(main);
  if (isTerminalRunStatus((await readRun(paths, runId)).status)) return undefined;
  const parsed = plugin.parseEvents(readPhases(eventsFile).main, { phase: 'main', runDir: dir, model: run.model });
  const base = {
    cost: parsed.cost,
    ...(parsed.finalText !== undefined ? { finalText: parsed.finalText } : {}),
    ...(parsed.numTurns !== undefined ? { numTurns: parsed.numTurns } : {}),
    ...(parsed.sessionId ? { sessionId: parsed.sessionId } : {}),
    exitCode: main.exitCode,
  };
  if (main.stoppedBy) {
    const { status, reason } = stoppedStatus(main.stoppedBy);
    return close({ ...base, status, failureReason: reason, ...(reason === 'coordinator_stopped' ? { by: 'coordinator' } : {}) });
  }
  const verdict = judge(parsed, main);
  if (verdict.status !== 'success') return close({ ...base, ...verdict, ...(parsed.errorText ? { errorText: parsed.errorText } : {}) });

  if (route !== 'standard') {
    // The conversation route records the reply, delivers it, and keeps the session for the next turn.
    const reply = (parsed.finalText ?? '').trim();
    const note = await deliverReplyNote(paths, config, `reply-${runId}`, `# Reply\n\n${reply}\n`, now());
    await appendConversationMessage(paths, goal.conversation_id!, { sender: 'garden', text: reply, run: runId, note, ...(route === 'hop' ? { fact: `hop:${goal.id}` } : {}) }, now());
    if (parsed.sessionId) await setConversationContinuity(paths, goal.conversation_id!, run.driver, parsed.sessionId, now(), run.plant);
  }
  if (!(REFLECTION_REQUIRED_TYPES as readonly string[]).includes(goal.type)) return close({ ...base, status: 'success' });

  const reflection = await solicitReflection(ctx, plugin, runId, goal, parsed, runPhase, eventsFile, dir, run.model);
  const cost = plugin.combineCosts ? plugin.combineCosts(parsed.cost, reflection.cost) : addCosts(parsed.cost, reflection.cost);
  if (reflection.stoppedBy) {
    const { status, reason } = stoppedStatus(reflection.stoppedBy);
    return close({ ...base, cost, status, failureReason: reason, ...(reason === 'coordinator_stopped' ? { by: 'coordinator' } : {}) });
  }
  if (!reflection.text) return close({ ...base, cost, status: 'failure', failureReason: 'reflection_failed', errorText: reflection.error ?? 'the reflection turn returned no text' });
  await appendEvent(paths, { type: 'ReflectionRecorded', run: runId, goal: goal.id, plant: run.plant }, now());
  return close({ ...base, cost, status: 'success', reflection: reflection.text });
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

/** The run's verdict from the agent's own report and its exit. */
function judge(parsed: ParsedStream, result: LaunchResult): { status: CloseRunInput['status']; failureReason?: FailureReason } {
  if (parsed.status === 'failure' && parsed.errorText) return { status: 'failure', failureReason: 'agent_error' };
  if (result.exitCode !== 0) return { status: 'failure', failureReason: parsed.errorText ? 'agent_error' : 'nonzero_exit' };
  if (!parsed.producedOutput) return { status: 'zero_output', failureReason: 'zero_output' };
  if (parsed.status === 'failure') return { status: 'failure', failureReason: 'agent_error' };
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
): Promise<{ text?: string; cost?: Cost; stoppedBy?: LaunchResult['stoppedBy']; error?: string }> {
  const { paths } = ctx.garden;
  await appendJsonLine(eventsFile, { type: REFLECTION_MARKER_TYPE, session_id: parsed.sessionId ?? null });
  await appendEvent(paths, { type: 'ReflectionRequested', run: runId, goal: goal.id }, (ctx.now ?? (() => new Date()))());
  const result = await runPhase('reflection', parsed.sessionId);
  if (typeof result === 'string') {
    await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message: result });
    return { error: result };
  }
  if (result.stoppedBy) return { stoppedBy: result.stoppedBy };
  const reflected = plugin.parseEvents(readPhases(eventsFile).reflection, { phase: 'reflection', runDir: dir, model });
  const text = result.exitCode === 0 && reflected.status === 'success' ? reflected.finalText?.trim() : undefined;
  return { ...(text ? { text } : {}), cost: reflected.cost, ...(reflected.errorText ? { error: reflected.errorText } : {}) };
}
