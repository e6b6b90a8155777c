import type { Cost } from '../../contracts/index.js';
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
   * The run's cost from the main turn's and the reflection turn's
   * (default: {@link addCosts}, the sum). Codex reports thread-cumulative
   * usage after a resume, so its reflection cost already includes the main turn.
   */
  combineCosts?(main: Cost, reflection: Cost | undefined): Cost;
  /**
   * How one raw stdout line bears on liveness (docs/run/level2.md,
   * "Watchdog"): progress or not, a tool call opened or closed, the
   * terminal result. Default: every line is progress.
   */
  classifyLine?(line: unknown): LineSignal;
  /**
   * Reads one phase of the stream: the JSON lines the agent wrote in that
   * phase, with the run directory (for sidecar files) and the model (for pricing).
   * `lines` is iterated once (it may be read from the file as it goes).
   */
  parseEvents(lines: Iterable<unknown>, ctx: ParseContext): ParsedStream;
}
