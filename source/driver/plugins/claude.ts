import type { Cost } from '../../contracts/index.js';
import type { LaunchSpec } from '../launch.js';
import type { LineSignal } from '../liveness.js';
import type { DriverPlugin, LaunchContext, ParsedStream } from './types.js';

/** One entry of claude's `permission_denials`: the tool and the path it would have touched. */
function denialOf(raw: unknown): { tool: string; path?: string } {
  const d = asRecord(raw) ?? {};
  const input = asRecord(d.tool_input) ?? {};
  const p = [input.file_path, input.path, input.notebook_path, input.command].find((v) => typeof v === 'string') as string | undefined;
  return { tool: typeof d.tool_name === 'string' ? d.tool_name : '?', ...(p ? { path: p } : {}) };
}

/**
 * The words of an error `result`: its subtype, its `result` prose and every
 * entry of `errors[]`, e.g. `error_max_turns: stopped at the turn limit (30
 * turns)` or `error_during_execution: No conversation found with session ID: …`.
 */
export function resultError(line: Record<string, unknown>, numTurns: number | undefined): string | undefined {
  const subtype = typeof line.subtype === 'string' && line.subtype !== 'success' ? line.subtype : undefined;
  const parts: string[] = [];
  if (subtype === 'error_max_turns') parts.push(`stopped at the turn limit${numTurns !== undefined ? ` (${numTurns} turns)` : ''}`);
  if (typeof line.result === 'string' && line.result.trim()) parts.push(line.result.trim());
  if (Array.isArray(line.errors)) for (const e of line.errors) if (typeof e === 'string' && e.trim()) parts.push(e.trim());
  const api = typeof line.api_error_status === 'number' ? `HTTP ${line.api_error_status}` : undefined;
  if (api && !parts.some((p) => p.includes(String(line.api_error_status)))) parts.push(api);
  if (parts.length === 0) return subtype ?? 'error';
  return subtype ? `${subtype}: ${parts.join('; ')}` : parts.join('; ');
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function claudeArgs(ctx: LaunchContext, resume?: string): LaunchSpec {
  const [command, ...lead] = ctx.configCommand ?? ['claude'];
  return {
    command: command!,
    args: [
      ...lead,
      '-p',
      '--model',
      ctx.model,
      '--output-format',
      'stream-json',
      '--verbose',
      // Unattended: the agent may edit and run commands in the garden without asking.
      '--dangerously-skip-permissions',
      ...(resume ? ['--resume', resume] : []),
    ],
    // Claude Code refuses --dangerously-skip-permissions as root unless told it is sandboxed.
    env: process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {},
  };
}

/**
 * The `claude` driver (Claude Code): `claude -p --model <model>
 * --output-format stream-json --verbose --dangerously-skip-permissions
 * [--resume <session_id>]`, prompt on stdin. Reads the stream's `result`
 * event for `total_cost_usd` (cost source `provider`), `usage`, `subtype` /
 * `is_error`, `session_id`, `num_turns` and `result` (the final text).
 * Default model `claude-opus-4-6`; no reasoning-effort default (seed 002).
 */
export const claudePlugin: DriverPlugin = {
  name: 'claude',
  defaultModel: 'claude-opus-4-6',
  defaultReasoningEffort: undefined,
  executable: 'claude',
  installHint: 'npm install -g @anthropic-ai/claude-code',
  buildLaunchCommand(ctx) {
    return claudeArgs(ctx, ctx.resumeSessionId);
  },
  buildReflectionCommand(ctx) {
    if (!ctx.sessionId) throw new Error('claude reported no session_id to resume for reflection');
    return claudeArgs(ctx, ctx.sessionId);
  },
  classifyLine(raw): LineSignal {
    const line = asRecord(raw);
    if (!line) return { progress: true, label: 'text' };
    const type = typeof line.type === 'string' ? line.type : '?';
    if (type === 'system' && line.subtype === 'api_retry') return { progress: false, label: 'system api_retry' };
    if (type === 'result') return { progress: true, terminal: true, label: `result ${String(line.subtype ?? '')}`.trim() };
    const content = Array.isArray(asRecord(line.message)?.content) ? (asRecord(line.message)!.content as unknown[]) : [];
    for (const block of content) {
      const b = asRecord(block);
      if (type === 'assistant' && b?.type === 'tool_use' && typeof b.id === 'string') return { progress: true, toolStart: b.id, label: `assistant tool_use ${String(b.name ?? '')}`.trim() };
      if (type === 'user' && b?.type === 'tool_result' && typeof b.tool_use_id === 'string') return { progress: true, toolEnd: b.tool_use_id, label: 'user tool_result' };
    }
    return { progress: true, label: typeof line.subtype === 'string' ? `${type} ${line.subtype}` : type };
  },
  parseEvents(lines): ParsedStream {
    let sessionId: string | undefined;
    let finalText: string | undefined;
    let numTurns: number | undefined;
    let status: 'success' | 'failure' = 'failure';
    let cost: Cost = { source: 'unknown' };
    let errorText: string | undefined;
    let producedOutput = false;
    let sawResult = false;
    let denials: { tool: string; path?: string }[] = [];
    for (const raw of lines) {
      const line = asRecord(raw);
      if (!line) continue;
      if (typeof line.session_id === 'string') sessionId = line.session_id;
      if (line.type === 'text' && typeof line.text === 'string' && line.text.trim()) producedOutput = true; // a line that is not JSON
      if (line.type === 'error' && line.source === 'pak2' && typeof line.message === 'string') errorText = line.message;
      if (line.type === 'assistant') {
        const message = asRecord(line.message);
        const content = Array.isArray(message?.content) ? message.content : [];
        // claude writes an API failure as a synthetic assistant message with `error` set: its text is the error, not an answer.
        const synthetic = line.error !== undefined && line.error !== null;
        for (const block of content) {
          const b = asRecord(block);
          if (b?.type === 'text' && typeof b.text === 'string' && b.text.trim()) {
            if (synthetic) errorText = b.text;
            else {
              finalText = b.text;
              producedOutput = true;
            }
          } else if (b?.type === 'tool_use') {
            producedOutput = true;
          }
        }
        if (synthetic && !errorText) errorText = String(line.error);
      } else if (line.type === 'result') {
        sawResult = true;
        const isError = line.is_error === true || (typeof line.subtype === 'string' && line.subtype !== 'success');
        status = isError ? 'failure' : 'success';
        numTurns = num(line.num_turns) ?? numTurns;
        if (isError) errorText = resultError(line, numTurns) ?? errorText;
        else if (typeof line.result === 'string' && line.result.trim()) {
          finalText = line.result;
          producedOutput = true;
        }
        denials = Array.isArray(line.permission_denials) ? line.permission_denials.map(denialOf) : [];
        const usage = asRecord(line.usage);
        const usd = num(line.total_cost_usd);
        const tokens = {
          ...(num(usage?.input_tokens) !== undefined ? { input_tokens: num(usage?.input_tokens) } : {}),
          ...(num(usage?.output_tokens) !== undefined ? { output_tokens: num(usage?.output_tokens) } : {}),
          ...(num(usage?.cache_read_input_tokens) !== undefined ? { cached_input_tokens: num(usage?.cache_read_input_tokens) } : {}),
          ...(num(usage?.cache_creation_input_tokens) !== undefined ? { cache_creation_input_tokens: num(usage?.cache_creation_input_tokens) } : {}),
        };
        cost = usd !== undefined ? { source: 'provider', usd, ...tokens } : { source: 'unknown', ...tokens };
      }
    }
    if (!sawResult) status = 'failure';
    return { cost, status, sessionId, finalText: status === 'success' ? finalText : finalText && finalText !== errorText ? finalText : undefined, numTurns, producedOutput, errorText, reported: sawResult, ...(denials.length ? { denials } : {}) };
  },
};
