/**
 * What the watchdog knows about a live run beyond the file's mtime: when the
 * last line that shows progress arrived, which tool calls are open, and the
 * last event seen (seed 000, "Watchdog", refined in docs/run/level2.md).
 */

/** How one stream line bears on liveness; a plugin's `classifyLine` returns it. */
export interface LineSignal {
  /** False for lines that are not progress (claude `api_retry`, codex `Reconnecting…` errors). */
  progress: boolean;
  /** A tool call opened (claude `tool_use` id, codex `command_execution` item id). */
  toolStart?: string;
  /** A tool call closed. */
  toolEnd?: string;
  /** The agent's terminal result (claude `result`, codex `turn.completed` / `turn.failed`). */
  terminal?: boolean;
  /** A short name of the line for the kill record, e.g. `assistant tool_use Bash`. */
  label: string;
}

/** Mutable liveness of one launch, fed by the stream follower. Times are epoch ms. */
export class RunLiveness {
  lastLineAt: number;
  lastProgressAt: number;
  /** Open tool calls: id → label. */
  readonly openTools = new Map<string, string>();
  lastEvent = 'none';
  terminalAt: number | undefined;

  constructor(startedAt: number) {
    this.lastLineAt = startedAt;
    this.lastProgressAt = startedAt;
  }

  /** Records one classified line seen at `at`. */
  observe(signal: LineSignal, at: number): void {
    this.lastLineAt = at;
    this.lastEvent = signal.label;
    if (signal.progress) this.lastProgressAt = at;
    if (signal.toolStart) this.openTools.set(signal.toolStart, signal.label);
    if (signal.toolEnd) this.openTools.delete(signal.toolEnd);
    if (signal.terminal && this.terminalAt === undefined) this.terminalAt = at;
  }
}

/** The watchdog's decision for one run. */
export interface WatchdogVerdict {
  kill: boolean;
  /** Milliseconds since the last sign of life. */
  silentMs: number;
  /** The limit that applied, seconds: `watchdog_seconds`, or `tool_silence_seconds` while a tool call is open. */
  limitSeconds: number;
  /** What the limit was, for the kill record. */
  limitName: 'watchdog_seconds' | 'tool_silence_seconds';
}

/**
 * Decides whether a running run is stalled (pure). `lastActivityMs` is the
 * last progress line's time (or events.jsonl's mtime, or started_at, for a run
 * this process does not follow); while `toolOpen`, the longer
 * `toolSilenceSeconds` applies instead of `watchdogSeconds`.
 */
export function decideWatchdog(input: { nowMs: number; lastActivityMs: number; toolOpen: boolean; watchdogSeconds: number; toolSilenceSeconds: number }): WatchdogVerdict {
  const silentMs = input.nowMs - input.lastActivityMs;
  const limitName = input.toolOpen ? 'tool_silence_seconds' : 'watchdog_seconds';
  const limitSeconds = input.toolOpen ? Math.max(input.toolSilenceSeconds, input.watchdogSeconds) : input.watchdogSeconds;
  return { kill: silentMs > limitSeconds * 1000, silentMs, limitSeconds, limitName };
}
