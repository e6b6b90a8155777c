import type { Cost } from '../../contracts/index.js';
import type { LaunchSpec } from '../launch.js';
import type { DriverPlugin, LaunchContext, ParsedStream } from './types.js';

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
  parseEvents(lines): ParsedStream {
    let sessionId: string | undefined;
    let finalText: string | undefined;
    let numTurns: number | undefined;
    let status: 'success' | 'failure' = 'failure';
    let cost: Cost = { source: 'unknown' };
    let errorText: string | undefined;
    let producedOutput = false;
    let sawResult = false;
    for (const raw of lines) {
      const line = asRecord(raw);
      if (!line) continue;
      if (typeof line.session_id === 'string') sessionId = line.session_id;
      if (line.type === 'text' && typeof line.text === 'string' && line.text.trim()) producedOutput = true; // a non-JSON line, wrapped
      if (line.type === 'error' && line.source === 'pak2' && typeof line.message === 'string') errorText = line.message;
      if (line.type === 'assistant') {
        const message = asRecord(line.message);
        const content = Array.isArray(message?.content) ? message.content : [];
        for (const block of content) {
          const b = asRecord(block);
          if (b?.type === 'text' && typeof b.text === 'string' && b.text.trim()) {
            finalText = b.text;
            producedOutput = true;
          } else if (b?.type === 'tool_use') {
            producedOutput = true;
          }
        }
        if (line.error !== undefined && typeof line.error === 'string') errorText = line.error;
      } else if (line.type === 'result') {
        sawResult = true;
        const isError = line.is_error === true || (typeof line.subtype === 'string' && line.subtype !== 'success');
        status = isError ? 'failure' : 'success';
        if (typeof line.result === 'string') {
          if (isError) errorText = line.result;
          else if (line.result.trim()) {
            finalText = line.result;
            producedOutput = true;
          }
        }
        if (isError && !errorText) errorText = typeof line.subtype === 'string' ? line.subtype : 'error';
        numTurns = num(line.num_turns) ?? numTurns;
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
    return { cost, status, sessionId, finalText, numTurns, producedOutput, errorText };
  },
};
