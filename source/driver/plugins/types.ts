import type { BackgroundTask, Cost } from '../../contracts/index.js';
import type { LaunchSpend, TokenUsage } from '../pricing.js';
import type { LaunchSpec } from '../launch.js';
import type { LineSignal } from '../liveness.js';

/** What a plugin needs to build a launch command. */
export interface LaunchContext {
  prompt: string;
  model: string;
  reasoningEffort: string | undefined;
  /** Absolute run directory (`<runtime-root>/runs/<run-id>/`), for sidecar files. */
  runDir: string;
  /** The agent's working directory (the garden root). */
  cwd: string;
  /** `[drivers.<name>].command` from PAK2.toml, when set: replaces the executable (and may add leading args). */
  configCommand: string[] | undefined;
  /** Continue this agent session instead of starting one (a conversation's next turn). */
  resumeSessionId?: string | undefined;
}

/** Context of {@link DriverPlugin.parseEvents}. */
export interface ParseContext {
  phase: 'main' | 'reflection';
  runDir: string;
  model: string;
  /**
   * For a driver whose usage after a resume is the thread's running total
   * (codex): the thread's total before this phase, so the phase is charged
   * its own turn only. `unknown` when the phase resumed a thread whose
   * earlier total pak2 does not know; absent for a fresh thread.
   */
  threadBefore?: TokenUsage | 'unknown';
}

/** What a plugin read from an agent's stream. */
export interface ParsedStream {
  /** Always present; `{source: "unknown"}` when nothing reported a cost. */
  cost: Cost;
  /** The agent's own verdict: `success` only when it reported a clean finish. */
  status: 'success' | 'failure';
  /** Continuity id: claude's session_id, codex's thread_id. */
  sessionId: string | undefined;
  /** The last assistant text. */
  finalText: string | undefined;
  numTurns: number | undefined;
  /** True when the stream holds any agent output at all (text, tool call, result). */
  producedOutput: boolean;
  /** The agent's error message, when it reported one (never pak2's guess). */
  errorText: string | undefined;
  /** Tool calls the agent reported as refused (claude `result.permission_denials`). */
  denials?: { tool: string; path?: string }[];
  /** True when the stream holds the agent's terminal result (claude `result`, codex `turn.completed` / `turn.failed`, a command `result` line). */
  reported: boolean;
  /** The background tasks the stream started, each with its final status and whether it counts as unfinished. */
  backgroundTasks?: BackgroundTask[];
  /** The last result's own words on how the turn stopped (claude `stop_reason` / `terminal_reason`), when it wrote them. */
  stopReason?: string;
  terminalReason?: string;
  /**
   * Set when the agent reported success but its turn stopped before
   * finishing: why, in words (`stop_reason tool_use`). Never set on an
   * error result (that is an error, said in `errorText`).
   */
  unfinishedTurn?: string;
  /** Codex: the thread's running token total after this phase (kept with a conversation's continuity). */
  threadTotal?: TokenUsage;
}

/**
 * A driver backend (seed 002, driver_plugins.py): how to launch one agent CLI,
 * continue its session for reflection, and read its stream.
 */
export interface DriverPlugin {
  name: string;
  defaultModel: string | undefined;
  defaultReasoningEffort: string | undefined;
  /** The executable looked up when checking prerequisites (`pak2 genesis`) and its install hint. */
  executable: string;
  installHint: string;
  buildLaunchCommand(ctx: LaunchContext): LaunchSpec;
  /** The continuation that asks the same session (`sessionId`) for its reflection. */
  buildReflectionCommand(ctx: LaunchContext & { sessionId: string | undefined }): LaunchSpec;
  /**
   * A classifier for one launch: how each raw stdout line, in order, bears
   * on liveness (docs/run/level2.md, "Watchdog" and "When a run has
   * ended"): progress or not, a tool call or background task opened or
   * closed, a result that may be the last word, a new turn after one. It
   * may keep state across the launch's lines. Default: every line is progress.
   */
  classifier?(): (line: unknown) => LineSignal;
  /**
   * A spend meter for one launch (docs/budget/level2.md, "Following spend"):
   * fed each stdout line in order, it returns the launch's spend so far in
   * USD when the line changed it (else undefined), and `priced` says how
   * (`provider`: the agent's own figure; `estimated`: tokens priced at the
   * model's rates). Absent: the driver's spend is known only at the end.
   */
  spendMeter?(ctx: { model: string; threadBefore?: TokenUsage | 'unknown' }): SpendMeter;
  /**
   * Reads one phase of the stream: the JSON lines the agent wrote in that
   * phase, with the run directory (for sidecar files) and the model (for pricing).
   * `lines` is iterated once (it may be read from the file as it goes).
   */
  parseEvents(lines: Iterable<unknown>, ctx: ParseContext): ParsedStream;
}

/** A launch's spend meter (see {@link DriverPlugin.spendMeter}). */
export interface SpendMeter {
  /** Feeds one parsed stdout line; returns the launch's spend so far (USD) when this line changed it. */
  observe(line: unknown): number | undefined;
  /** The spend so far (USD) and how it is known; `unknown` before any figure. */
  readonly spend: LaunchSpend;
}
