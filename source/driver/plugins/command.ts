import type { Cost } from '../../contracts/index.js';
import type { LineSignal } from '../liveness.js';
import type { DriverPlugin, LaunchContext, ParsedStream } from './types.js';

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
 * cost (provider); without `cost_usd` the cost is unknown.
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
    classifyLine(raw): LineSignal {
      const line = asRecord(raw);
      if (line?.type === 'result') return { progress: true, terminal: true, label: 'result' };
      return { progress: true, label: typeof line?.type === 'string' ? line.type : 'text' };
    },
    parseEvents(lines): ParsedStream {
      let finalText: string | undefined;
      let sessionId: string | undefined;
      let numTurns: number | undefined;
      let status: 'success' | 'failure' = 'success';
      let cost: Cost = { source: 'unknown' };
      let errorText: string | undefined;
      let producedOutput = false;
      let reported = false;
      for (const raw of lines) {
        const line = asRecord(raw);
        if (!line) continue;
        if (line.type === 'text' && typeof line.text === 'string') {
          if (line.text.trim()) {
            producedOutput = true;
            finalText = line.text;
          }
        } else if (line.type === 'session' && typeof line.id === 'string') {
          sessionId = line.id;
        } else if (line.type === 'error') {
          errorText = typeof line.message === 'string' ? line.message : JSON.stringify(line);
          if (line.source !== 'pak2') producedOutput = true;
        } else if (line.type === 'result') {
          producedOutput = true;
          reported = true;
          if (line.status !== undefined && line.status !== 'success') {
            status = 'failure';
            if (line.status !== 'failure') errorText = `result line has status ${JSON.stringify(line.status)}; expected "success" or "failure"`;
          }
          if (typeof line.text === 'string') finalText = line.text;
          if (typeof line.session_id === 'string') sessionId = line.session_id;
          if (typeof line.num_turns === 'number') numTurns = line.num_turns;
          if (typeof line.cost_usd === 'number' && line.cost_usd >= 0) cost = { source: 'provider', usd: line.cost_usd };
          if (typeof line.error === 'string') errorText = line.error;
        } else {
          producedOutput = true;
        }
      }
      return { cost, status, sessionId, finalText, numTurns, producedOutput, errorText, reported };
    },
  };
}
