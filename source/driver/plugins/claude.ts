import type { Cost } from '../../contracts/index.js';
import type { LaunchSpec } from '../launch.js';
import type { LineSignal, TaskSignal } from '../liveness.js';
import { BackgroundTaskLog } from './background.js';
import { priceClaudeUsage } from '../pricing.js';
import type { DriverPlugin, LaunchContext, ParsedStream, SpendMeter } from './types.js';

/** One entry of claude's `permission_denials`: the tool and the path it would have touched. */
function denialOf(raw: unknown): { tool: string; path?: string } {
  const d = asRecord(raw) ?? {};
  const input = asRecord(d.tool_input) ?? {};
  const p = [input.file_path, input.path, input.notebook_path, input.command].find((v) => typeof v === 'string') as string | undefined;
  return { tool: typeof d.tool_name === 'string' ? d.tool_name : '?', ...(p ? { path: p } : {}) };
}

/** CLI telemetry claude may put in `errors[]` before the real error: `[ede_diagnostic] result_type=user last_content_type=tool_result stop_reason=tool_use`. */
const DIAGNOSTIC = /^\[ede_diagnostic\]/;

/** A diagnostic entry in words, when it is all an error result says. */
function diagnosticWords(entry: string): string {
  const field = (name: string) => new RegExp(`${name}=(\\S+)`).exec(entry)?.[1];
  const stop = field('stop_reason');
  const last = field('last_content_type');
  if (stop === 'tool_use' || last === 'tool_use' || last === 'tool_result' || field('result_type') === 'user') return 'the turn was interrupted after a tool call';
  return `the turn ended without a final answer${stop && stop !== 'undefined' ? ` (stop_reason ${stop})` : ''}`;
}

/**
 * The words of an error `result`: its subtype, its `result` prose and every
 * entry of `errors[]`, e.g. `error_max_turns: stopped at the turn limit (30
 * turns)` or `error_during_execution: No conversation found with session ID: …`.
 * CLI telemetry entries (`[ede_diagnostic] …`) are left out; when they are
 * all there is, they become a sentence ("the turn was interrupted after a tool call").
 */
export function resultError(line: Record<string, unknown>, numTurns: number | undefined): string | undefined {
  const subtype = typeof line.subtype === 'string' && line.subtype !== 'success' ? line.subtype : undefined;
  const parts: string[] = [];
  const diagnostics: string[] = [];
  if (subtype === 'error_max_turns') parts.push(`stopped at the turn limit${numTurns !== undefined ? ` (${numTurns} turns)` : ''}`);
  if (typeof line.result === 'string' && line.result.trim()) parts.push(line.result.trim());
  if (Array.isArray(line.errors)) {
    for (const e of line.errors) {
      if (typeof e !== 'string' || !e.trim()) continue;
      if (DIAGNOSTIC.test(e.trim())) diagnostics.push(e.trim());
      else parts.push(e.trim());
    }
  }
  const api = typeof line.api_error_status === 'number' ? `HTTP ${line.api_error_status}` : undefined;
  if (api && !parts.some((p) => p.includes(String(line.api_error_status)))) parts.push(api);
  if (parts.length === 0 && diagnostics.length > 0) parts.push(diagnosticWords(diagnostics[0]!));
  if (parts.length === 0) return subtype ?? 'error';
  return subtype ? `${subtype}: ${parts.join('; ')}` : parts.join('; ');
}

/** `stop_reason` values that end a turn with the model's answer; any other means the turn stopped before finishing. */
const FINAL_STOP_REASONS = new Set(['end_turn', 'stop_sequence']);
/** The one `terminal_reason` of a turn that ran to its end. */
const FINAL_TERMINAL_REASON = 'completed';

/**
 * Why a success result is not a finish, or undefined when it is (claude
 * 2.1.x writes `stop_reason` and `terminal_reason` on every result; older
 * CLIs write neither, and their success stands).
 */
export function unfinishedTurnOf(stopReason: string | undefined, terminalReason: string | undefined): string | undefined {
  const reasons: string[] = [];
  if (stopReason !== undefined && !FINAL_STOP_REASONS.has(stopReason)) reasons.push(`stop_reason ${stopReason}`);
  if (terminalReason !== undefined && terminalReason !== FINAL_TERMINAL_REASON) reasons.push(`terminal_reason ${terminalReason}`);
  return reasons.length ? reasons.join(', ') : undefined;
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
 * [--resume <session_id>]`, prompt on stdin. A process may write several
 * `result` lines (an interim one while background tasks run, a zero-turn
 * one draining task notifications on a resume): the last one that is not a
 * drain stands for `subtype` / `is_error`, `result` (the final text),
 * `num_turns`, `stop_reason` and `terminal_reason`; the cost is every
 * result's share summed (cost source `provider`, see SpendOfResults).
 * `system` task lines give the background tasks and their ends; a
 * subagent's lines (`parent_tool_use_id`) are never the final text.
 * Default model `claude-opus-4-6`; no reasoning-effort default (seed 002;
 * docs/run/level2.md, "When a run has ended").
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
  classifier() {
    // Whether a main-thread assistant line came yet in this launch: a zero-turn result before one only drains notifications.
    let sawAssistant = false;
    return (raw: unknown): LineSignal => {
      const line = asRecord(raw);
      if (!line) return { progress: true, label: 'text' };
      const type = typeof line.type === 'string' ? line.type : '?';
      const subtype = typeof line.subtype === 'string' ? line.subtype : undefined;
      const label = subtype ? `${type} ${subtype}` : type;
      if (type === 'system') {
        if (subtype === 'api_retry') return { progress: false, label };
        if (subtype === 'task_started' && typeof line.task_id === 'string') return { progress: true, taskStart: taskOf(line), label: `${label} ${taskOf(line).type}` };
        // The agent is told of the task's end and takes a turn on it: a result before no longer stands.
        if (subtype === 'task_notification' && typeof line.task_id === 'string') return { progress: true, taskEnd: { id: line.task_id, status: String(line.status ?? 'ended') }, resumes: true, label };
        const ended = taskUpdateEnd(line);
        if (ended) return { progress: true, taskEnd: ended, label };
        return { progress: true, label };
      }
      if (type === 'result') {
        if (isDrain(line, sawAssistant)) return { progress: true, label: `${label} (task notifications drained)` };
        return { progress: true, terminal: true, label };
      }
      const content = Array.isArray(asRecord(line.message)?.content) ? (asRecord(line.message)!.content as unknown[]) : [];
      const mainThread = line.parent_tool_use_id === undefined || line.parent_tool_use_id === null;
      if (type === 'assistant' && mainThread) sawAssistant = true;
      // A subagent's lines are its own: they neither end nor resume the main turn.
      const resumes = mainThread && (type === 'assistant' || type === 'user');
      for (const block of content) {
        const b = asRecord(block);
        if (type === 'assistant' && b?.type === 'tool_use' && typeof b.id === 'string') return { progress: true, toolStart: b.id, resumes, label: `assistant tool_use ${String(b.name ?? '')}`.trim() };
        if (type === 'user' && b?.type === 'tool_result' && typeof b.tool_use_id === 'string') return { progress: true, toolEnd: b.tool_use_id, resumes, label: 'user tool_result' };
      }
      return { progress: true, resumes, label };
    };
  },
  spendMeter({ model }) {
    return new ClaudeSpendMeter(model);
  },
  parseEvents(lines): ParsedStream {
    let sessionId: string | undefined;
    let lastText: string | undefined;
    let lastStop: string | undefined;
    let errorText: string | undefined;
    let producedOutput = false;
    let sawAssistant = false;
    /** The result that stands: the last one that is not a drain of task notifications. */
    let standing: Record<string, unknown> | undefined;
    let standingText: string | undefined;
    let numTurns: number | undefined;
    const denials = new Map<string, { tool: string; path?: string }>();
    const spend = new SpendOfResults();
    const tasks = new BackgroundTaskLog();
    for (const raw of lines) {
      tasks.line();
      const line = asRecord(raw);
      if (!line) continue;
      if (typeof line.session_id === 'string') sessionId = line.session_id;
      if (line.type === 'text' && typeof line.text === 'string' && line.text.trim()) producedOutput = true; // a line that is not JSON
      if (line.type === 'error' && line.source === 'pak2' && typeof line.message === 'string') errorText = line.message;
      if (line.type === 'system') {
        if (line.subtype === 'task_started' && typeof line.task_id === 'string') tasks.started(taskOf(line));
        else if (line.subtype === 'task_notification' && typeof line.task_id === 'string') tasks.ended(line.task_id, String(line.status ?? 'ended'), true);
        else {
          const ended = taskUpdateEnd(line);
          if (ended) tasks.ended(ended.id, ended.status, false);
        }
      } else if (line.type === 'assistant') {
        const message = asRecord(line.message);
        const content = Array.isArray(message?.content) ? message.content : [];
        // claude writes an API failure as a synthetic assistant message with `error` set: its text is the error, not an answer.
        const synthetic = line.error !== undefined && line.error !== null;
        // A subagent's words (parent_tool_use_id set) are output, never the agent's own answer.
        const mainThread = line.parent_tool_use_id === undefined || line.parent_tool_use_id === null;
        if (mainThread && !synthetic) {
          sawAssistant = true;
          tasks.turn();
          // Where the message says how it stopped (a whole message, not a streamed part): the result's own stop_reason, when it has none, is this.
          if (typeof message?.stop_reason === 'string') lastStop = message.stop_reason;
        }
        for (const block of content) {
          const b = asRecord(block);
          if (b?.type === 'text' && typeof b.text === 'string' && b.text.trim()) {
            if (synthetic) errorText = b.text;
            else {
              if (mainThread) lastText = b.text;
              producedOutput = true;
            }
          } else if (b?.type === 'tool_use') {
            producedOutput = true;
          }
        }
        if (synthetic && !errorText) errorText = String(line.error);
      } else if (line.type === 'result') {
        spend.add(line);
        if (isDrain(line, sawAssistant)) continue;
        standing = line;
        // Each result counts the turns since the one before (claude 2.1.x): the process's turns are their sum.
        const turns = num(line.num_turns);
        if (turns !== undefined) numTurns = (numTurns ?? 0) + turns;
        standingText = typeof line.result === 'string' && line.result.trim() ? line.result : undefined;
        if (standingText) producedOutput = true;
        if (Array.isArray(line.permission_denials)) for (const d of line.permission_denials.map(denialOf)) denials.set(`${d.tool}\u0000${d.path ?? ''}`, d);
      }
    }
    const isError = standing !== undefined && (standing.is_error === true || (typeof standing.subtype === 'string' && standing.subtype !== 'success'));
    const status: 'success' | 'failure' = standing !== undefined && !isError ? 'success' : 'failure';
    if (standing && isError) errorText = resultError(standing, numTurns) ?? errorText;
    // stop_reason is read wherever claude writes it: an empty result that says none stopped where its last message did.
    const stopReason = typeof standing?.stop_reason === 'string' ? standing.stop_reason : standing && !standingText ? lastStop : undefined;
    const terminalReason = typeof standing?.terminal_reason === 'string' ? standing.terminal_reason : undefined;
    const unfinishedTurn = status === 'success' ? unfinishedTurnOf(stopReason, terminalReason) : undefined;
    const finalText = status === 'success' ? (standingText ?? lastText) : lastText && lastText !== errorText ? lastText : undefined;
    const backgroundTasks = tasks.facts();
    return {
      cost: spend.cost(),
      status,
      sessionId,
      finalText,
      numTurns,
      producedOutput,
      errorText,
      reported: standing !== undefined,
      ...(denials.size ? { denials: [...denials.values()] } : {}),
      ...(backgroundTasks.length ? { backgroundTasks } : {}),
      ...(stopReason !== undefined ? { stopReason } : {}),
      ...(terminalReason !== undefined ? { terminalReason } : {}),
      ...(unfinishedTurn ? { unfinishedTurn } : {}),
    };
  },
};

/** A task_started line's task: id, type, description. */
function taskOf(line: Record<string, unknown>): TaskSignal {
  return {
    id: String(line.task_id),
    type: typeof line.task_type === 'string' ? line.task_type : typeof line.subagent_type === 'string' ? 'local_agent' : 'task',
    description: typeof line.description === 'string' ? line.description : '',
  };
}

/** A `task_updated` line that ends its task (patch.status completed, failed or killed): the task and how it ended. */
function taskUpdateEnd(line: Record<string, unknown>): { id: string; status: string } | undefined {
  if (line.subtype !== 'task_updated' || typeof line.task_id !== 'string') return undefined;
  const status = asRecord(line.patch)?.status;
  if (status === 'completed' || status === 'failed') return { id: line.task_id, status };
  if (status === 'killed') return { id: line.task_id, status: 'stopped' };
  return undefined;
}

/**
 * A result that only drains task notifications on a resume, not the end of
 * a turn: zero turns, no error, and either claude says it came from a task
 * notification (`origin.kind`) or no assistant line came before it.
 */
function isDrain(line: Record<string, unknown>, sawAssistant: boolean): boolean {
  if (line.is_error === true || (typeof line.subtype === 'string' && line.subtype !== 'success')) return false;
  if (line.num_turns !== 0) return false;
  return asRecord(line.origin)?.kind === 'task-notification' || !sawAssistant;
}

const TOKEN_FIELDS = [
  ['input_tokens', 'input_tokens'],
  ['output_tokens', 'output_tokens'],
  ['cache_read_input_tokens', 'cached_input_tokens'],
  ['cache_creation_input_tokens', 'cache_creation_input_tokens'],
] as const;

/**
 * What one claude process spent, over all its results. Each result's own
 * share is its `model_usage_since_last_result` (claude 2.1.2xx+), else the
 * growth of `total_cost_usd` since the result before (older CLIs: that total
 * grows within a process). Summing shares, never taking a total as is,
 * matters on `--resume`: claude 2.1.332 reports `total_cost_usd` for the
 * whole session, the turns of earlier processes included. Tokens are each
 * result's `usage` (counted since the result before), summed.
 */
class SpendOfResults {
  private usd: number | undefined;
  private previousTotal = 0;
  private readonly tokens: Partial<Record<(typeof TOKEN_FIELDS)[number][1], number>> = {};

  add(line: Record<string, unknown>): void {
    const total = num(line.total_cost_usd);
    const since = asRecord(line.model_usage_since_last_result);
    let share: number | undefined;
    if (since) {
      share = 0;
      for (const model of Object.values(since)) share += num(asRecord(model)?.costUSD) ?? 0;
    } else if (total !== undefined) share = Math.max(0, total - this.previousTotal);
    if (total !== undefined) this.previousTotal = total;
    if (share !== undefined) this.usd = (this.usd ?? 0) + share;
    const usage = asRecord(line.usage);
    for (const [from, to] of TOKEN_FIELDS) {
      const n = num(usage?.[from]);
      if (n !== undefined) this.tokens[to] = (this.tokens[to] ?? 0) + n;
    }
  }

  cost(): Cost {
    return this.usd !== undefined ? { source: 'provider', usd: Math.round(this.usd * 1e8) / 1e8, ...this.tokens } : { source: 'unknown', ...this.tokens };
  }
}

/**
 * A claude launch's spend as it runs (docs/budget/level2.md, "Following
 * spend"): each result's own share as claude reports it (provider), plus
 * every assistant message since the last result priced from its `usage` at
 * its model's rates (estimated). A message streamed over several lines
 * (one per content block, same `message.id`) counts once, at its largest usage.
 */
class ClaudeSpendMeter implements SpendMeter {
  private readonly results = new SpendOfResults();
  private readonly sinceResult = new Map<string, number>();
  private unpriced = false;
  private sawResult = false;
  private sawAssistant = false;

  constructor(private readonly model: string) {}

  observe(raw: unknown): number | undefined {
    const line = asRecord(raw);
    if (!line) return undefined;
    const before = this.spend.usd;
    if (line.type === 'result') {
      if (isDrain(line, this.sawAssistant)) return undefined;
      this.results.add(line);
      this.sawResult = true;
      this.sinceResult.clear();
    } else if (line.type === 'assistant') {
      const message = asRecord(line.message);
      const usage = asRecord(message?.usage);
      if (line.parent_tool_use_id === undefined || line.parent_tool_use_id === null) this.sawAssistant = true;
      if (!message || !usage) return undefined;
      const usd = priceClaudeUsage(typeof message.model === 'string' && message.model ? message.model : this.model, usage as Record<string, number>);
      if (usd === undefined) {
        this.unpriced = true;
        return undefined;
      }
      const id = typeof message.id === 'string' ? message.id : `line-${this.sinceResult.size}`;
      this.sinceResult.set(id, Math.max(this.sinceResult.get(id) ?? 0, usd));
    } else return undefined;
    const after = this.spend.usd;
    return after !== before ? after : undefined;
  }

  get spend(): SpendMeter['spend'] {
    const provider = this.results.cost().usd;
    let pending = 0;
    for (const usd of this.sinceResult.values()) pending += usd;
    const usd = Math.round(((provider ?? 0) + pending) * 1e8) / 1e8;
    if (provider === undefined && this.sinceResult.size === 0) return { usd: 0, source: 'unknown' };
    if (pending === 0 && provider !== undefined) return { usd, source: 'provider' };
    return { usd, source: 'estimated', pricing: `claude per-message usage at ${this.model} rates${this.unpriced ? ' (some messages of an unlisted model not counted)' : ''}` };
  }

  /** Whether a result came (its provider figure is in the spend). */
  get reported(): boolean {
    return this.sawResult;
  }
}