/**
 * What the watchdog knows about a live run beyond the file's mtime: when the
 * last line that shows progress arrived, which tool calls and background
 * tasks are open, whether the agent has reported, and the last event seen
 * (seed 000, "Watchdog", refined in docs/run/level2.md, "When a run has ended").
 */

/** A background task the agent started (claude `system`/`task_started`, a command agent's `task` line). */
export interface TaskSignal {
  id: string;
  /** `local_agent`, `local_bash`, … as the agent names it. */
  type: string;
  description: string;
}

/** How one stream line bears on liveness; a plugin's classifier returns it. */
export interface LineSignal {
  /** False for lines that are not progress (claude `api_retry`, codex `Reconnecting…` errors). */
  progress: boolean;
  /** A tool call opened (claude `tool_use` id, codex `command_execution` item id). */
  toolStart?: string;
  /** A tool call closed. */
  toolEnd?: string;
  /** A background task began: open work until it ends. */
  taskStart?: TaskSignal;
  /** A background task ended (`completed`, `failed`, `stopped`, …). */
  taskEnd?: { id: string; status: string };
  /**
   * The agent reported a result that may be its last word (claude `result`,
   * codex `turn.completed` / `turn.failed`, a command `result` line). Not
   * set for a result that only drains task notifications on a resume.
   */
  terminal?: boolean;
  /** The agent took up work again after a result (a new turn): the result before no longer stands as its last word. */
  resumes?: boolean;
  /** A short name of the line for the kill record, e.g. `assistant tool_use Bash`. */
  label: string;
}

/** An open piece of work, as a kill or a linger names it: `tool call assistant tool_use Bash`, `background task local_bash "npm test"`. */
export function describeOpenWork(liveness: Pick<RunLiveness, 'openTools' | 'openTasks'>): string[] {
  return [
    ...[...liveness.openTools.values()].map((label) => `tool call ${label}`),
    ...[...liveness.openTasks.values()].map((task) => `background task ${task.type} ${JSON.stringify(task.description)}`),
  ];
}

/** Mutable liveness of one launch, fed by the stream follower. Times are epoch ms. */
export class RunLiveness {
  lastLineAt: number;
  lastProgressAt: number;
  /** Open tool calls: id → label. */
  readonly openTools = new Map<string, string>();
  /** Open background tasks: id → what started it. */
  readonly openTasks = new Map<string, TaskSignal>();
  lastEvent = 'none';
  /** The first result of this launch. */
  terminalAt: number | undefined;
  /** The latest result that still stands as the agent's last word (cleared when the agent takes up work again). */
  reportedAt: number | undefined;

  constructor(startedAt: number) {
    this.lastLineAt = startedAt;
    this.lastProgressAt = startedAt;
  }

  /** Open tool calls and background tasks together: what the watchdog and the linger treat as work under way. */
  get openWork(): number {
    return this.openTools.size + this.openTasks.size;
  }

  /** Records one classified line seen at `at`. */
  observe(signal: LineSignal, at: number): void {
    this.lastLineAt = at;
    this.lastEvent = signal.label;
    if (signal.progress) this.lastProgressAt = at;
    if (signal.toolStart) this.openTools.set(signal.toolStart, signal.label);
    if (signal.toolEnd) this.openTools.delete(signal.toolEnd);
    if (signal.taskStart) this.openTasks.set(signal.taskStart.id, signal.taskStart);
    if (signal.taskEnd) this.openTasks.delete(signal.taskEnd.id);
    if (signal.resumes) this.reportedAt = undefined;
    if (signal.terminal) {
      this.terminalAt ??= at;
      this.reportedAt = at;
    }
  }
}

/** The watchdog's decision for one run. */
export interface WatchdogVerdict {
  kill: boolean;
  /** Milliseconds since the last sign of life. */
  silentMs: number;
  /** The limit that applied, seconds: `watchdog_seconds`, or `tool_silence_seconds` while a tool call or background task is open. */
  limitSeconds: number;
  /** What the limit was, for the kill record. */
  limitName: 'watchdog_seconds' | 'tool_silence_seconds';
}

/**
 * Decides whether a running run is stalled (pure). `lastActivityMs` is the
 * last progress line's time (or events.jsonl's mtime, or started_at, for a run
 * this process does not follow); while `toolOpen` (a tool call or a
 * background task is open), the longer `toolSilenceSeconds` applies instead
 * of `watchdogSeconds`.
 */
export function decideWatchdog(input: { nowMs: number; lastActivityMs: number; toolOpen: boolean; watchdogSeconds: number; toolSilenceSeconds: number }): WatchdogVerdict {
  const silentMs = input.nowMs - input.lastActivityMs;
  const limitName = input.toolOpen ? 'tool_silence_seconds' : 'watchdog_seconds';
  const limitSeconds = input.toolOpen ? Math.max(input.toolSilenceSeconds, input.watchdogSeconds) : input.watchdogSeconds;
  return { kill: silentMs > limitSeconds * 1000, silentMs, limitSeconds, limitName };
}

/** Why pak2 ended an agent that had reported but not exited. */
export type LingerEnd = 'grace' | 'cap';

/**
 * Decides whether an agent that reported its result but has not exited is
 * done (pure; docs/run/level2.md, "When a run has ended"). Nothing is ended
 * while no result stands (`reportedAtMs` undefined: none yet, or the agent
 * took up work again after it). With no open work, the agent is ended
 * `graceMs` after its last progress (the result itself, or anything after
 * it) — `grace`. Whatever is open, it is ended `capMs` after the result
 * that stands — `cap`, so an agent that never exits still ends (times in ms).
 *
 * @returns `undefined` to keep reading, else why to end it.
 */
export function decideLinger(input: { nowMs: number; reportedAtMs: number | undefined; lastProgressAtMs: number; openWork: number; graceMs: number; capMs: number }): LingerEnd | undefined {
  if (input.reportedAtMs === undefined) return undefined;
  if (input.nowMs - input.reportedAtMs > input.capMs) return 'cap';
  if (input.openWork > 0) return undefined;
  return input.nowMs - Math.max(input.reportedAtMs, input.lastProgressAtMs) > input.graceMs ? 'grace' : undefined;
}

/** A watchdog kill as the run record keeps it (`watchdog`) and as the event and `outputs.error` say it. */
export interface WatchdogKill {
  watchdog: { limit: WatchdogVerdict['limitName']; limit_seconds: number; silent_seconds: number; last_event: string; open_work?: string[] };
  message: string;
}

/**
 * The record and the words of a kill (pure): the limit, the silence
 * (seconds, one decimal), the last event, and the tool calls and background
 * tasks open then (`openWork`, from {@link describeOpenWork}).
 */
export function watchdogKill(verdict: WatchdogVerdict, lastEvent: string, openWork: string[] = []): WatchdogKill {
  const watchdog = {
    limit: verdict.limitName,
    limit_seconds: verdict.limitSeconds,
    silent_seconds: Math.round(verdict.silentMs / 100) / 10,
    last_event: lastEvent,
    ...(openWork.length ? { open_work: openWork } : {}),
  };
  const open = openWork.length ? `; open: ${openWork.join('; ')}` : '';
  return { watchdog, message: `killed by the watchdog: silent for ${watchdog.silent_seconds} s (${watchdog.limit} ${watchdog.limit_seconds} s); last event: ${lastEvent}${open}` };
}
