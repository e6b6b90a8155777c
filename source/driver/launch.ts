import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { execa } from 'execa';
import { killRunProcesses, RUN_MARK_ENV, signalGroup } from './process-tree.js';

/** An executable and its arguments, plus environment additions for one launch. */
export interface LaunchSpec {
  command: string;
  args: string[];
  /** Merged over the inherited environment (users' API keys and base URLs must reach the CLI). */
  env?: Record<string, string>;
}

/** Ways a launched agent can be stopped from outside. */
export type StopReason = 'killed' | 'timeout' | 'coordinator_stopped';

/** How a launch ended. */
export interface LaunchResult {
  exitCode: number | null;
  signal: string | null;
  /** Set when pak2 stopped the process group itself, and why. */
  stoppedBy: StopReason | undefined;
  /** Set when the process could not be started at all (ENOENT, EACCES, …). */
  spawnError: string | undefined;
  /** Bytes of stdout the agent wrote. */
  outputBytes: number;
  durationMs: number;
}

/** A process group pak2 can stop; the coordinator's live-run registry holds these. */
export interface RunHandle {
  pid: number | undefined;
  /** The launch's {@link RUN_MARK_ENV} value, inherited by every process it starts. */
  mark: string;
  stop(reason: StopReason): void;
}

/** Options of {@link launch}. */
export interface LaunchOptions {
  cwd: string;
  /** Written to stdin, which is then closed (codex reads stdin to EOF; claude waits on an open pipe). */
  stdin: string;
  /** stdout is appended here line by line. */
  stdoutFile: string;
  /** Turns one stdout line into the line recorded (the `command` plugin wraps plain text); default: as is. */
  mapLine?: (line: string) => string;
  /** Where stderr goes; default: the coordinator's own stderr (seed 002, "Driver" step 3). */
  onStderr?: (chunk: string) => void;
  /** Wall-time limit in ms; past it the group is stopped with reason `timeout`. */
  timeoutMs?: number;
  /** Called once the process exists, with the handle that stops its whole group. */
  onStart?: (handle: RunHandle) => void;
  /** Grace between SIGINT and SIGKILL, ms. Default 3000. */
  killGraceMs?: number;
  /** The environment to start from; default this process's. `spec.env` is merged over it. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Launches an agent CLI in its own process group, prompt on stdin, stdout
 * appended to `stdoutFile` as it arrives (the watchdog reads that file's
 * mtime), stderr forwarded. Never throws for the agent's own failures: a
 * missing executable is `spawnError`; a stop is `stoppedBy`.
 *
 * A stop sends SIGINT to the group (claude then reports its cost so far and
 * ends its tools), and after `killGraceMs` SIGKILL to the group and to every
 * process marked with this launch's {@link RUN_MARK_ENV}. When the agent
 * exits, the same SIGKILL sweep runs, so no child survives its run.
 */
export async function launch(spec: LaunchSpec, options: LaunchOptions): Promise<LaunchResult> {
  const started = Date.now();
  const out = fs.createWriteStream(options.stdoutFile, { flags: 'a' });
  const mapLine = options.mapLine ?? ((line: string) => line);
  const onStderr = options.onStderr ?? ((chunk: string) => process.stderr.write(chunk));
  let stoppedBy: StopReason | undefined;
  let outputBytes = 0;
  let pending = '';
  let killTimer: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  const mark = randomUUID();

  const child = execa(spec.command, spec.args, {
    cwd: options.cwd,
    env: { ...(options.env ?? process.env), ...spec.env, [RUN_MARK_ENV]: mark },
    extendEnv: false,
    input: options.stdin,
    stdout: 'pipe',
    stderr: 'pipe',
    detached: true,
    reject: false,
    stripFinalNewline: false,
    encoding: 'utf8',
    buffer: false,
  });
  const pid = child.pid;

  const stop = (reason: StopReason) => {
    if (stoppedBy) return;
    stoppedBy = reason;
    signalGroup(pid, 'SIGINT');
    killTimer = setTimeout(() => killRunProcesses(pid, mark), options.killGraceMs ?? 3000);
    killTimer.unref();
  };
  options.onStart?.({ pid, mark, stop });
  if (options.timeoutMs !== undefined) {
    deadline = setTimeout(() => stop('timeout'), options.timeoutMs);
    deadline.unref();
  }

  child.stdout?.on('data', (chunk: Buffer | string) => {
    const text = chunk.toString();
    outputBytes += Buffer.byteLength(text);
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    if (lines.length > 0) out.write(lines.map((l) => `${mapLine(l)}\n`).join(''));
  });
  child.stderr?.on('data', (chunk: Buffer | string) => onStderr(chunk.toString()));

  const result = await child;
  if (deadline) clearTimeout(deadline);
  if (pending) out.write(`${mapLine(pending)}\n`);
  await new Promise<void>((resolve) => out.end(resolve));
  // Reap what the agent left behind, in its group or in sessions of their own.
  killRunProcesses(pid, mark);
  if (killTimer) clearTimeout(killTimer);

  const spawnError =
    result.failed && result.exitCode === undefined && !result.signal && !stoppedBy
      ? (result.originalMessage ?? result.shortMessage ?? 'could not start')
      : undefined;
  return {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    stoppedBy,
    spawnError,
    outputBytes,
    durationMs: Date.now() - started,
  };
}
