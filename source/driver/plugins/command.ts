import type { Cost } from '../../contracts/index.js';
import type { LineSignal } from '../liveness.js';
import { BackgroundTaskLog } from './background.js';
import type { DriverPlugin, LaunchContext, ParsedStream, SpendMeter } from './types.js';

function commandOf(ctx: LaunchContext, name: string): string[] {
  if (!ctx.configCommand || ctx.configCommand.length === 0) {
    throw new Error(`driver ${name} has no command: set [drivers.${name}].command in PAK2.toml`);
  }
  return ctx.configCommand;
}

function envOf(ctx: LaunchContext, phase: 'main' | 'reflection', sessionId?: string): Record<string, string> {
  return {
    PAK2_PHASE: phase,
    PAK2_MODEL: ctx.model,
    PAK2_RUN_DIR: ctx.runDir,
    ...(ctx.reasoningEffort ? { PAK2_REASONING_EFFORT: ctx.reasoningEffort } : {}),
    ...(sessionId ? { PAK2_SESSION_ID: sessionId } : {}),
  };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * The `command` driver: runs any executable (docs/run/level2.md, "The command
 * driver"). The prompt arrives on stdin; `PAK2_PHASE`, `PAK2_MODEL`,
 * `PAK2_RUN_DIR`, `PAK2_REASONING_EFFORT` and, for reflection,
 * `PAK2_SESSION_ID` in the environment. Each stdout line that is a JSON
 * object is recorded as is; any other line as `{"type":"text","text":…}`.
 * An optional `{"type":"result","status":"success"|"failure","text":…,
 * "cost_usd":…,"session_id":…,"num_turns":…}` line reports the outcome and
 * cost (provider); without `cost_usd` the cost is unknown. A later result
 * line replaces an earlier one (its `cost_usd` is the run's so far).
 * `{"type":"task","id":…,"status":"started"|"completed"|"failed"|"stopped",
 * "task_type":…,"description":…}` lines report background work: open work
 * for the watchdog and the linger until it ends, and a fact of the run.
 * `{"type":"usage","cost_usd":…}` lines report the run's spend so far as it
 * goes (provider; a budget follows it, docs/budget/level2.md); the last one
 * is the cost when no result line reports one.
 */
export function commandPlugin(name = 'command'): DriverPlugin {
  return {
    name,
    defaultModel: 'default',
    defaultReasoningEffort: undefined,
    executable: '',
    installHint: `set [drivers.${name}].command in PAK2.toml to the executable and its arguments`,
    buildLaunchCommand(ctx) {
      const [command, ...args] = commandOf(ctx, name);
      return { command: command!, args, env: envOf(ctx, 'main', ctx.resumeSessionId) };
    },
    buildReflectionCommand(ctx) {
      const [command, ...args] = commandOf(ctx, name);
      return { command: command!, args, env: envOf(ctx, 'reflection', ctx.sessionId) };
    },
    spendMeter() {
      return commandSpendMeter();
    },
    classifier() {
      return (raw: unknown): LineSignal => {
        const line = asRecord(raw);
        const type = typeof line?.type === 'string' ? line.type : 'text';
        if (type === 'result') return { progress: true, terminal: true, label: 'result' };
        const task = line && type === 'task' ? taskLine(line) : undefined;
        if (task?.status === 'started') return { progress: true, taskStart: { id: task.id, type: task.type, description: task.description }, label: `task ${task.type}` };
        // Only an ending status ends the task; any other (`running`, `progress`, …) is progress on work still open.
        if (task && TASK_END_STATUSES.has(task.status)) return { progress: true, taskEnd: { id: task.id, status: task.status }, label: `task ${task.status}` };
        if (task) return { progress: true, label: `task ${task.status}` };
        // A line after a result is progress (the grace counts from it); the result still stands as the agent's word until a later one.
        return { progress: true, label: type };
      };
    },
    parseEvents(lines): ParsedStream {
      let finalText: string | undefined;
      /** The last result line's text: it stands as the final text over any text printed after it (docs/run/level2.md, "The last result decides"). */
      let resultText: string | undefined;
      let sessionId: string | undefined;
      let numTurns: number | undefined;
      let status: 'success' | 'failure' = 'success';
      let cost: Cost = { source: 'unknown' };
      let errorText: string | undefined;
      let producedOutput = false;
      let reported = false;
      const tasks = new BackgroundTaskLog();
      for (const raw of lines) {
        tasks.line();
        const line = asRecord(raw);
        if (!line) continue;
        if (line.type === 'text' && typeof line.text === 'string') {
          if (line.text.trim()) {
            producedOutput = true;
            finalText = line.text;
            tasks.turn();
          }
        } else if (line.type === 'session' && typeof line.id === 'string') {
          sessionId = line.id;
        } else if (line.type === 'task') {
          const task = taskLine(line);
          if (task?.status === 'started') tasks.started({ id: task.id, type: task.type, description: task.description });
          else if (task && TASK_END_STATUSES.has(task.status)) tasks.ended(task.id, task.status, true);
        } else if (line.type === 'error') {
          errorText = typeof line.message === 'string' ? line.message : JSON.stringify(line);
          if (line.source !== 'pak2') producedOutput = true;
        } else if (line.type === 'usage') {
          // The run's spend so far: the cost until a result line says otherwise.
          if (typeof line.cost_usd === 'number' && line.cost_usd >= 0 && !reported) cost = { source: 'provider', usd: line.cost_usd };
        } else if (line.type === 'result') {
          // A later result line replaces an earlier one: status, text, cost (the run's so far), turns.
          producedOutput = true;
          reported = true;
          status = 'success';
          if (line.status !== undefined && line.status !== 'success') {
            status = 'failure';
            if (line.status !== 'failure') errorText = `result line has status ${JSON.stringify(line.status)}; expected "success" or "failure"`;
          }
          resultText = typeof line.text === 'string' ? line.text : undefined;
          if (resultText !== undefined) finalText = resultText;
          if (typeof line.session_id === 'string') sessionId = line.session_id;
          if (typeof line.num_turns === 'number') numTurns = line.num_turns;
          if (typeof line.cost_usd === 'number' && line.cost_usd >= 0) cost = { source: 'provider', usd: line.cost_usd };
          if (typeof line.error === 'string') errorText = line.error;
        } else {
          producedOutput = true;
          tasks.turn();
        }
      }
      const backgroundTasks = tasks.facts();
      // Text printed after the last result is progress, not the answer: the result's own text stands.
      if (resultText !== undefined) finalText = resultText;
      return { cost, status, sessionId, finalText, numTurns, producedOutput, errorText, reported, ...(backgroundTasks.length ? { backgroundTasks } : {}) };
    },
  };
}

/** The statuses of a `task` line that end its task (docs/run/level2.md, "The command driver"); any other is progress on an open task. */
const TASK_END_STATUSES = new Set(['completed', 'failed', 'stopped']);

/** A command agent's `{"type":"task","id":…,"status":…,"task_type"?:…,"description"?:…}` line, or undefined when it is not one. */
function taskLine(line: Record<string, unknown>): { id: string; status: string; type: string; description: string } | undefined {
  if (typeof line.id !== 'string' || !line.id || typeof line.status !== 'string' || !line.status) return undefined;
  return { id: line.id, status: line.status, type: typeof line.task_type === 'string' ? line.task_type : 'task', description: typeof line.description === 'string' ? line.description : '' };
}

/** A command launch's spend as it runs: the latest `usage` or `result` line's `cost_usd` (the run's so far; docs/budget/level2.md). */
function commandSpendMeter(): SpendMeter {
  let spend: SpendMeter['spend'] = { usd: 0, source: 'unknown' };
  return {
    observe(raw) {
      const line = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : undefined;
      if ((line?.type !== 'usage' && line?.type !== 'result') || typeof line.cost_usd !== 'number' || !(line.cost_usd >= 0)) return undefined;
      if (line.cost_usd === spend.usd && spend.source === 'provider') return undefined;
      spend = { usd: line.cost_usd, source: 'provider' };
      return line.cost_usd;
    },
    get spend() {
      return spend;
    },
  };
}