import fs from 'node:fs';
import path from 'node:path';
import type { Cost } from '../../contracts/index.js';
import type { LaunchSpec } from '../launch.js';
import { estimateCodexCost, type TokenUsage } from '../pricing.js';
import type { LineSignal } from '../liveness.js';
import type { DriverPlugin, LaunchContext, ParsedStream, SpendMeter } from './types.js';

/** Sidecar files codex writes its last message to (`--output-last-message`). */
export const CODEX_SIDECARS = { main: 'last-message.md', reflection: 'reflection.md' } as const;

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function usageOf(usage: Record<string, unknown>): TokenUsage {
  return {
    input_tokens: num(usage.input_tokens),
    cached_input_tokens: num(usage.cached_input_tokens),
    output_tokens: num(usage.output_tokens),
    ...(usage.reasoning_output_tokens !== undefined ? { reasoning_output_tokens: num(usage.reasoning_output_tokens) } : {}),
  };
}

/**
 * What one phase cost: codex's `turn.completed.usage` is the thread's
 * running total (after `exec resume` too), so a phase is charged the total
 * less the thread's total before it (`threadBefore`; none for a fresh
 * thread). A total before that is unknown, or larger than the total now
 * (another thread's), is never guessed: the cost is `unknown` with
 * `partial: true`, and the history is not charged again.
 */
export function turnCost(model: string, total: TokenUsage, threadBefore: TokenUsage | 'unknown' | undefined): Cost {
  if (threadBefore === undefined) return estimateCodexCost(model, total);
  if (threadBefore === 'unknown') return { source: 'unknown', partial: true };
  const keys = ['input_tokens', 'cached_input_tokens', 'output_tokens', 'reasoning_output_tokens'] as const;
  if (keys.some((k) => (total[k] ?? 0) < (threadBefore[k] ?? 0))) return { source: 'unknown', partial: true };
  const delta: TokenUsage = {
    input_tokens: total.input_tokens - threadBefore.input_tokens,
    cached_input_tokens: total.cached_input_tokens - threadBefore.cached_input_tokens,
    output_tokens: total.output_tokens - threadBefore.output_tokens,
    ...(total.reasoning_output_tokens !== undefined ? { reasoning_output_tokens: total.reasoning_output_tokens - (threadBefore.reasoning_output_tokens ?? 0) } : {}),
  };
  return estimateCodexCost(model, delta);
}

function codexArgs(ctx: LaunchContext, phase: 'main' | 'reflection', resume?: string): LaunchSpec {
  const [command, ...lead] = ctx.configCommand ?? ['codex'];
  const effort = ctx.reasoningEffort ? ['-c', `model_reasoning_effort="${ctx.reasoningEffort}"`] : [];
  const common = ['--json', '--model', ctx.model, '--output-last-message', path.join(ctx.runDir, CODEX_SIDECARS[phase]), '--skip-git-repo-check', ...effort];
  const args = resume
    ? // Options follow `resume <id>`; it takes no --sandbox flag, so the sandbox is set through config.
      [...lead, 'exec', 'resume', resume, ...common, '-c', 'sandbox_mode="workspace-write"', '-']
    : [...lead, 'exec', ...common, '--sandbox', 'workspace-write', '-'];
  return { command: command!, args };
}

/**
 * The `codex` driver (Codex CLI): `codex exec [resume <thread_id>] --json
 * --model <model> --output-last-message <path> --skip-git-repo-check …
 * --sandbox workspace-write -`, prompt on stdin (`-`). Continuity is
 * `thread.started.thread_id`; usage is the latest `turn.completed`, the
 * thread's running total, so a phase is charged its own turns only (see
 * {@link turnCost}); codex reports tokens only, so cost is estimated from
 * the price table, else unknown. The final text is the CLI-written `last-message.md` (main) or
 * `reflection.md` (reflection) sidecar. Defaults: model `gpt-5.4`, reasoning
 * effort `xhigh` (seed 002).
 */
export const codexPlugin: DriverPlugin = {
  name: 'codex',
  defaultModel: 'gpt-5.4',
  defaultReasoningEffort: 'xhigh',
  executable: 'codex',
  installHint: 'npm install -g @openai/codex',
  buildLaunchCommand(ctx) {
    return codexArgs(ctx, 'main', ctx.resumeSessionId);
  },
  buildReflectionCommand(ctx) {
    if (!ctx.sessionId) throw new Error('codex reported no thread_id to resume for reflection');
    return codexArgs(ctx, 'reflection', ctx.sessionId);
  },
  spendMeter({ model, threadBefore }) {
    return codexSpendMeter(model, threadBefore);
  },
  classifier() {
    return (raw: unknown): LineSignal => {
      const line = asRecord(raw);
      if (!line) return { progress: true, label: 'text' };
      const type = typeof line.type === 'string' ? line.type : '?';
      if (type === 'turn.completed' || type === 'turn.failed') return { progress: true, terminal: true, label: type };
      if (type === 'turn.started') return { progress: true, resumes: true, label: type };
      // Retries of an unreachable server are not progress (codex: "Reconnecting... 2/5").
      if (type === 'error' && typeof line.message === 'string' && /^Reconnecting/i.test(line.message)) return { progress: false, label: 'error Reconnecting' };
      const item = asRecord(line.item);
      if (item && typeof item.id === 'string' && item.type === 'command_execution') {
        if (type === 'item.started') return { progress: true, toolStart: item.id, label: 'item.started command_execution' };
        if (type === 'item.completed') return { progress: true, toolEnd: item.id, label: 'item.completed command_execution' };
      }
      return { progress: true, label: item && typeof item.type === 'string' ? `${type} ${item.type}` : type };
    };
  },
  parseEvents(lines, { phase, runDir, model, threadBefore }): ParsedStream {
    let sessionId: string | undefined;
    let usage: Record<string, unknown> | undefined;
    let completed = false;
    let failed = false;
    let errorText: string | undefined;
    let lastAgentText: string | undefined;
    let producedOutput = false;
    let turns = 0;
    for (const raw of lines) {
      const line = asRecord(raw);
      if (!line) continue;
      switch (line.type) {
        case 'thread.started':
          if (typeof line.thread_id === 'string') sessionId = line.thread_id;
          break;
        case 'turn.completed':
          completed = true;
          turns += 1;
          usage = asRecord(line.usage);
          break;
        case 'turn.failed': {
          failed = true;
          const error = asRecord(line.error);
          errorText = typeof error?.message === 'string' ? error.message : 'turn failed';
          break;
        }
        case 'error':
          if (line.source !== 'pak2') errorText = typeof line.message === 'string' ? line.message : 'error';
          else errorText = typeof line.message === 'string' ? line.message : errorText;
          break;
        case 'item.completed': {
          const item = asRecord(line.item);
          if (item?.type === 'agent_message' && typeof item.text === 'string' && item.text.trim()) lastAgentText = item.text;
          if (item && item.type !== 'error' && item.type !== 'reasoning') producedOutput = true;
          break;
        }
        default:
          break;
      }
    }
    let finalText = lastAgentText;
    try {
      const sidecar = fs.readFileSync(path.join(runDir, CODEX_SIDECARS[phase]), 'utf8');
      if (sidecar.trim()) finalText = sidecar.trim();
    } catch {
      // no sidecar: the agent message stands
    }
    const total = usage ? usageOf(usage) : undefined;
    const cost = total ? turnCost(model, total, threadBefore) : ({ source: 'unknown' } as Cost);
    return {
      cost,
      status: completed && !failed ? 'success' : 'failure',
      sessionId,
      finalText,
      numTurns: turns || undefined,
      producedOutput: producedOutput || Boolean(finalText),
      errorText,
      reported: completed || failed,
      ...(total ? { threadTotal: total } : {}),
    };
  },
};

/**
 * A codex launch's spend as it runs (docs/budget/level2.md, "Following
 * spend"): codex reports tokens at each `turn.completed` only, the thread's
 * running total, so the spend moves once per turn (estimated, the launch's
 * share less the thread's total before it, as {@link turnCost} charges it).
 */
export function codexSpendMeter(model: string, threadBefore: TokenUsage | 'unknown' | undefined): SpendMeter {
  let spend: SpendMeter['spend'] = { usd: 0, source: 'unknown' };
  return {
    observe(raw) {
      const line = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : undefined;
      if (line?.type !== 'turn.completed' || !line.usage || typeof line.usage !== 'object') return undefined;
      const cost = turnCost(model, usageOf(line.usage as Record<string, unknown>), threadBefore);
      if (cost.usd === undefined) return undefined;
      spend = { usd: cost.usd, source: 'estimated', ...(cost.pricing ? { pricing: cost.pricing } : {}) };
      return cost.usd;
    },
    get spend() {
      return spend;
    },
  };
}