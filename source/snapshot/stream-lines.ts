/**
 * Turns one line of a run's events.jsonl (claude stream-json, codex --json,
 * the command driver's lines, pak2's own markers) into lines for a person.
 * Pure: no I/O, never throws.
 */
import type { RunRecord } from '../contracts/index.js';
import { duration, formatCost, graphemes } from '../format.js';

/** How a tail line is shown: text from the agent, a tool call, a tool's result, an error, or a quiet note. */
export type TailKind = 'text' | 'tool' | 'result' | 'error' | 'info' | 'usage';

/** One rendered line of the run tail. */
export interface TailLine {
  kind: TailKind;
  text: string;
}

/** Running totals the tail shows as they arrive: tokens, and cost in USD when reported. */
export interface TailUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number | undefined;
  /** The cost counted before this phase (main, then reflection): a command agent's `cost_usd` is its phase's so far. */
  phaseBaseUsd?: number;
  /** The last claude `total_cost_usd` of this phase: a result's own share is what it adds (claude writes a running total). */
  lastTotalUsd?: number;
  /** Background tasks' descriptions by id, from their start lines: a later line naming only the id is shown by its description. */
  taskNames?: Record<string, string>;
}

/** A background task's name for a line that carries only its id. */
function taskName(usage: TailUsage, id: string | undefined, description: string | undefined): string {
  if (id && description) (usage.taskNames ??= {})[id] = description;
  return description ?? (id ? usage.taskNames?.[id] : undefined) ?? id ?? '';
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Collapses whitespace and cuts to `max` characters with an ellipsis. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  // Cut between characters as a person sees them: never inside a surrogate pair (it would show as U+FFFD), an emoji sequence or a combining mark.
  let end = 0;
  for (const cluster of graphemes(flat)) {
    if (end + cluster.length > max - 1) break;
    end += cluster.length;
  }
  return `${flat.slice(0, end)}…`;
}

/** `key=value` pairs of a tool's arguments, each value clipped; long text shown as its size. */
export function summarizeArgs(input: unknown, max = 100): string {
  if (!isObj(input)) return clip(String(input ?? ''), max);
  const parts = Object.entries(input).map(([key, value]) => {
    if (typeof value === 'string') return value.length > 60 ? `${key}=(${value.length} chars)` : `${key}=${clip(value, 60)}`;
    return `${key}=${clip(JSON.stringify(value) ?? '', 40)}`;
  });
  return clip(parts.join(' '), max);
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (isObj(c) && typeof c.text === 'string' ? c.text : '')).join(' ');
  return '';
}

function claudeLine(line: Json, usage: TailUsage): TailLine[] {
  switch (line.type) {
    case 'system':
      if (line.subtype === 'init') return [{ kind: 'info', text: `session ${str(line.session_id) ?? '?'} · model ${str(line.model) ?? '?'}` }];
      if (line.subtype === 'api_retry') return [{ kind: 'error', text: `API retry ${num(line.attempt) ?? '?'}/${num(line.max_retries) ?? '?'}: ${str(line.error) ?? ''} ${num(line.error_status) ?? ''}`.trim() }];
      if (line.subtype === 'task_started') return [{ kind: 'info', text: `⧗ background ${str(line.task_type) ?? 'task'} ${JSON.stringify(clip(taskName(usage, str(line.task_id), str(line.description)), 80))} started` }];
      if (line.subtype === 'task_notification') {
        const status = str(line.status) ?? 'ended';
        return [{ kind: status === 'completed' ? 'result' : 'error', text: `◂ background task ${status}: ${clip(str(line.summary) ?? taskName(usage, str(line.task_id), undefined), 140)}` }];
      }
      return [];
    case 'assistant': {
      const message = isObj(line.message) ? line.message : {};
      const out: TailLine[] = [];
      const isError = typeof line.error === 'string';
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (!isObj(block)) continue;
        if (block.type === 'text' && typeof block.text === 'string' && block.text.trim()) out.push({ kind: isError ? 'error' : 'text', text: block.text.trim() });
        else if (block.type === 'tool_use') out.push({ kind: 'tool', text: `▸ ${str(block.name) ?? 'tool'} ${summarizeArgs(block.input)}`.trimEnd() });
      }
      // Per-message usage in stream-json is partial (streamed); totals come with the result event.
      return out;
    }
    case 'user': {
      const message = isObj(line.message) ? line.message : {};
      const out: TailLine[] = [];
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (isObj(block) && block.type === 'tool_result') {
          out.push({ kind: block.is_error === true ? 'error' : 'result', text: `◂ ${clip(toolResultText(block.content), 160)}` });
        }
      }
      return out;
    }
    case 'result': {
      const cost = resultShare(line, usage);
      if (cost !== undefined) usage.costUsd = (usage.costUsd ?? 0) + cost;
      const u = isObj(line.usage) ? line.usage : {};
      usage.inputTokens += num(u.input_tokens) ?? 0;
      usage.outputTokens += num(u.output_tokens) ?? 0;
      const tokens = `${num(u.input_tokens) ?? 0} in / ${num(u.output_tokens) ?? 0} out`;
      const turns = num(line.num_turns);
      const tail = [cost !== undefined ? `$${cost.toFixed(4)}` : 'cost unknown', tokens, turns !== undefined ? `${turns} turns` : ''].filter(Boolean).join(' · ');
      if (line.is_error === true) return [{ kind: 'error', text: `✗ ${clip(str(line.result) ?? str(line.subtype) ?? 'error', 200)} · ${tail}` }];
      if (turns === 0 && isObj(line.origin) && line.origin.kind === 'task-notification') return [{ kind: 'info', text: `task notifications drained (not the end of a turn) · ${tail}` }];
      const stop = str(line.stop_reason);
      const terminal = str(line.terminal_reason);
      if ((stop && stop !== 'end_turn' && stop !== 'stop_sequence') || (terminal && terminal !== 'completed')) {
        return [{ kind: 'error', text: `✗ ${str(line.subtype) ?? 'result'}, but the turn stopped before finishing (${[stop ? `stop_reason ${stop}` : '', terminal && terminal !== 'completed' ? `terminal_reason ${terminal}` : ''].filter(Boolean).join(', ')}) · ${tail}` }];
      }
      // A "success" with refused tool calls did not do all it tried: shown as such.
      const denied = Array.isArray(line.permission_denials) ? line.permission_denials.length : 0;
      if (denied > 0) return [{ kind: 'error', text: `✗ ${denied} tool call(s) denied · ${str(line.subtype) ?? 'done'} · ${tail}` }];
      return [{ kind: 'usage', text: `✓ ${str(line.subtype) ?? 'done'} · ${tail}` }];
    }
    default:
      return [];
  }
}

/** A claude result's own share of the cost: its `model_usage_since_last_result`, else what its running `total_cost_usd` adds. */
function resultShare(line: Json, usage: TailUsage): number | undefined {
  const total = num(line.total_cost_usd);
  let share: number | undefined;
  if (isObj(line.model_usage_since_last_result)) {
    share = 0;
    for (const model of Object.values(line.model_usage_since_last_result)) share += (isObj(model) ? num(model.costUSD) : undefined) ?? 0;
  } else if (total !== undefined) share = Math.max(0, total - (usage.lastTotalUsd ?? 0));
  if (total !== undefined) usage.lastTotalUsd = total;
  return share;
}

function codexLine(line: Json, usage: TailUsage): TailLine[] {
  const item = isObj(line.item) ? line.item : undefined;
  switch (line.type) {
    case 'thread.started':
      return [{ kind: 'info', text: `thread ${str(line.thread_id) ?? '?'}` }];
    case 'turn.started':
      return [];
    case 'turn.completed': {
      const u = isObj(line.usage) ? line.usage : {};
      usage.inputTokens = num(u.input_tokens) ?? usage.inputTokens;
      usage.outputTokens = num(u.output_tokens) ?? usage.outputTokens;
      return [{ kind: 'usage', text: `✓ turn completed · ${num(u.input_tokens) ?? 0} in / ${num(u.output_tokens) ?? 0} out` }];
    }
    case 'turn.failed':
      return [{ kind: 'error', text: `✗ ${clip(str(isObj(line.error) ? line.error.message : undefined) ?? 'turn failed', 200)}` }];
    case 'error':
      return [{ kind: 'error', text: clip(str(line.message) ?? 'error', 200) }];
    case 'item.started':
      if (item?.type === 'command_execution') return [{ kind: 'tool', text: `▸ $ ${clip(str(item.command) ?? '', 120)}` }];
      return [];
    case 'item.completed':
      if (!item) return [];
      if (item.type === 'agent_message') return [{ kind: 'text', text: (str(item.text) ?? '').trim() }];
      if (item.type === 'command_execution') {
        const code = num(item.exit_code);
        return [{ kind: code === 0 ? 'result' : 'error', text: `◂ exit ${code ?? '?'}: ${clip(str(item.aggregated_output) ?? '', 140)}` }];
      }
      if (item.type === 'file_change') {
        const changes = Array.isArray(item.changes) ? item.changes : [];
        return changes.filter(isObj).map((c) => ({ kind: 'tool' as const, text: `▸ ${str(c.kind) ?? 'change'} ${str(c.path) ?? ''}` }));
      }
      if (item.type === 'error') return [{ kind: 'error', text: clip(str(item.message) ?? 'error', 200) }];
      if (item.type === 'reasoning') return [{ kind: 'info', text: clip(str(item.text) ?? 'thinking…', 120) }];
      return [];
    default:
      return [];
  }
}

/**
 * The longest text a tail line keeps, in characters: more than the largest
 * pane shows of one line, so a 150 KB line of agent output costs the tail
 * (and every snapshot holding it) 16 KB.
 */
export const TAIL_LINE_MAX_CHARS = 16 * 1024;

/** `text` cut to {@link TAIL_LINE_MAX_CHARS}, saying how much was left out. */
export function capTailText(text: string): string {
  if (text.length <= TAIL_LINE_MAX_CHARS) return text;
  let end = TAIL_LINE_MAX_CHARS;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1; // keep a surrogate pair whole
  return `${text.slice(0, end)}… (${(text.length - end).toLocaleString('en-US')} more characters)`;
}

/**
 * Renders one parsed events.jsonl line for a person, updating `usage` with
 * any tokens or cost it reports. Unknown shapes render as nothing; a line
 * that was not JSON renders as itself. Each line's text is capped ({@link capTailText}).
 */
export function renderStreamLine(value: unknown, usage: TailUsage): TailLine[] {
  const lines = renderValue(value, usage);
  return lines.some((line) => line.text.length > TAIL_LINE_MAX_CHARS) ? lines.map((line) => ({ ...line, text: capTailText(line.text) })) : lines;
}

function renderValue(value: unknown, usage: TailUsage): TailLine[] {
  if (!isObj(value)) return typeof value === 'string' && value.trim() ? [{ kind: 'text', text: value }] : [];
  const type = str(value.type) ?? '';
  if (type === 'pak2.reflection') {
    // A new phase: its running totals start over.
    usage.phaseBaseUsd = usage.costUsd;
    usage.lastTotalUsd = undefined;
    return [{ kind: 'info', text: '— reflection —' }];
  }
  if (type === 'task' && str(value.id) && str(value.status)) {
    const status = str(value.status)!;
    const name = taskName(usage, str(value.id), str(value.description));
    if (status === 'started') return [{ kind: 'info', text: `⧗ background ${str(value.task_type) ?? 'task'} ${JSON.stringify(clip(name, 80))} started` }];
    // Only these end a task (docs/run/level2.md); any other status is its progress.
    if (status === 'completed' || status === 'failed' || status === 'stopped') return [{ kind: status === 'completed' ? 'result' : 'error', text: `◂ background task ${status}: ${clip(name, 140)}` }];
    return [{ kind: 'info', text: `· background task ${JSON.stringify(clip(name, 80))} ${clip(status, 40)}` }];
  }
  if (type === 'error') return [{ kind: 'error', text: clip(str(value.message) ?? JSON.stringify(value), 200) }];
  if (type === 'text') return str(value.text)?.trim() ? [{ kind: 'text', text: str(value.text)!.trim() }] : [];
  if (type === 'result' && ('status' in value || 'cost_usd' in value)) {
    // A command agent's cost_usd is its phase's so far: a later result line replaces an earlier one.
    const cost = num(value.cost_usd);
    if (cost !== undefined) usage.costUsd = (usage.phaseBaseUsd ?? 0) + cost;
    const ok = value.status !== 'failure';
    const text = str(value.text) ?? str(value.error) ?? '';
    return [{ kind: ok ? 'usage' : 'error', text: `${ok ? '✓' : '✗'} ${clip(text, 160)}${cost !== undefined ? ` · $${cost.toFixed(4)}` : ''}`.trim() }];
  }
  if (type.includes('.')) return codexLine(value, usage);
  return claudeLine(value, usage);
}

/** Parses one raw line and renders it; a line that is not JSON is shown as text. */
export function renderRawLine(raw: string, usage: TailUsage): TailLine[] {
  if (!raw.trim()) return [];
  try {
    return renderStreamLine(JSON.parse(raw), usage);
  } catch {
    // As the command driver reads it (docs/run/level2.md): a line that is not JSON is `{"type":"text"}`, shown whole up to the cap.
    return renderStreamLine({ type: 'text', text: raw }, usage);
  }
}

/**
 * The words of the run pane's header (docs/workbench/level2.md, "Run"): its
 * status (`running`, or the terminal status with its failure reason), how
 * long it ran, driver/model, tokens and cost as the stream reported them
 * (`usage`) unless the record has its cost. `now` is epoch ms.
 */
export function runHeaderParts(run: RunRecord, usage: TailUsage, now: number, runningWord = 'running'): string[] {
  const live = run.status === 'running';
  const end = run.completed_at ? Date.parse(run.completed_at) : now;
  const elapsed = duration(Math.max(0, end - Date.parse(run.started_at)) / 1000);
  const tokens = usage.inputTokens || usage.outputTokens ? `${usage.inputTokens} in/${usage.outputTokens} out` : '';
  const cost = run.cost ? formatCost(run.cost) : usage.costUsd !== undefined ? `$${usage.costUsd.toFixed(4)}` : '';
  return [live ? runningWord : `${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`, elapsed, `${run.driver}/${run.model}`, tokens, cost].filter(Boolean);
}
