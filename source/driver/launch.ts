import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { execa } from 'execa';
import { RUN_MARK_ENV, secondsSinceBoot, signalGroup, sweepRun, type Survivor } from './process-tree.js';
import { SanitizeStream } from '../sanitize.js';
import { RUNTIME_FILE_MODE } from '../store/files.js';
import { span } from '../timing.js';
import { decideLinger, describeOpenWork, RunLiveness, type LineSignal, type LingerEnd } from './liveness.js';

/** An executable and its arguments, plus environment additions for one launch. */
export interface LaunchSpec {
  command: string;
  args: string[];
  /** Merged over the inherited environment (users' API keys and base URLs must reach the CLI). */
  env?: Record<string, string>;
}

/**
 * Ways a launched agent can be stopped from outside: the watchdog
 * (`killed`), the wall-time limit (`timeout`), a coordinator shutdown
 * (`coordinator_stopped`), the operator (`operator`), a budget cap crossed
 * (`budget`, docs/budget/level2.md).
 */
export type StopReason = 'killed' | 'timeout' | 'coordinator_stopped' | 'operator' | 'budget';

/** What the stopper knew, kept with the run: the watchdog's limit and the last event seen, or a message. */
export interface StopDetail {
  watchdog?: { limit: string; limit_seconds: number; silent_seconds: number; last_event: string };
  message?: string;
  /** An operator stop: whether the goal goes back to the queue (else it closes cancelled). */
  requeue?: boolean;
  /** A budget stop: the cap crossed, its amount and what had been spent against it (USD). */
  budget?: { cap: string; cap_usd: number; spent_usd: number };
}

/** How a launch ended. */
export interface LaunchResult {
  exitCode: number | null;
  signal: string | null;
  /** Set when pak2 stopped the process group itself, and why. */
  stoppedBy: StopReason | undefined;
  /** What the stopper said about the stop. */
  stopDetail: StopDetail | undefined;
  /**
   * True when the agent reported its result but did not exit, so pak2 ended
   * its group: after the grace with no work open (`lingerEnd: 'grace'`), or
   * at the cap whatever was open (`'cap'`; `openWork` names what was).
   */
  lingered: boolean;
  /** Why a lingering agent was ended; set with `lingered`. */
  lingerEnd?: LingerEnd;
  /** The tool calls and background tasks still open when pak2 ended a lingering agent at the cap. */
  openWork?: string[];
  /**
   * Where in the stdout file the agent's stream stood when pak2 decided to
   * end it (byte offset past the last whole line read): what the agent
   * says after pak2's own SIGINT is a reaction to pak2, not its report, and
   * is not judged (its cost still counts).
   */
  lingerAt?: number;
  /** Set when the process could not be started at all (ENOENT, EACCES, …). */
  spawnError: string | undefined;
  /** Bytes of stdout the agent wrote in this launch. */
  outputBytes: number;
  durationMs: number;
  /** The last lines of this launch's stderr (at most ~2 KB), for failure messages. */
  stderrTail: string;
  /** Processes of the run the sweep could not end (never waited for). */
  survivors: Survivor[];
}

/** A process group pak2 can stop; the coordinator's live-run registry holds these. */
export interface RunHandle {
  pid: number | undefined;
  /** The launch's {@link RUN_MARK_ENV} value, inherited by every process it starts. */
  mark: string;
  /** What the stream follower has seen, for the watchdog. */
  liveness: RunLiveness;
  /** The reason of the first stop asked for, if any. */
  readonly stopping: StopReason | undefined;
  /** Stops the group (first call wins; later calls do nothing). */
  stop(reason: StopReason, detail?: StopDetail): void;
}

/** Options of {@link launch}. */
export interface LaunchOptions {
  cwd: string;
  /** The file given to the agent as stdin (the prompt); it reads it to end of file. */
  stdinFile: string;
  /** The agent's stdout is this file itself (opened for append), never a pipe. */
  stdoutFile: string;
  /** The agent's stderr is this file itself (opened for append). */
  stderrFile: string;
  /** Told each new stderr chunk as it lands in `stderrFile`, raw (default: this process's stderr, sanitized). */
  onStderr?: (chunk: string) => void;
  /** Classifies one stdout line for liveness and the terminal result; default: every line is progress. */
  classifyLine?: (line: string) => LineSignal;
  /** After a result, with no work open, ms since the last progress before a lingering agent's group is ended. Default 10000. */
  resultGraceMs?: number;
  /** After a result, ms before a lingering agent's group is ended whatever is open. Default 1800000. */
  resultGraceCapMs?: number;
  /** Wall-time limit in ms; past it the group is stopped with reason `timeout`. */
  timeoutMs?: number;
  /** Called once the process exists, with the handle that stops its whole group. */
  onStart?: (handle: RunHandle) => void;
  /** Grace between SIGINT and SIGKILL, ms. Default 3000. */
  killGraceMs?: number;
  /** How often the output files are read while the agent runs, ms. Default 200. */
  pollMs?: number;
  /** The environment to start from; default this process's. `spec.env` is merged over it. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Bytes a follower reads at once. The piece stays a Buffer: lines are found
 * by their newline byte and each is decoded alone, so no string of the
 * whole piece is made (a piece of text with one non-ASCII character is a
 * two-byte string twice its size, and one over ~128 KB lands in V8's
 * large-object space, freed only by a full collection): a 100 MB burst of
 * output leaves young garbage of its lines' size, not pieces in the old
 * generation.
 */
const FOLLOW_CHUNK_BYTES = 64 * 1024;
/** Most a follower reads per poll (a burst of output is caught up over a few polls, the event loop free between them). */
const FOLLOW_POLL_BYTES = 8 * 1024 * 1024;

/** Reads what a file gained since `offset`. */
class FileFollower {
  /** Bytes of a line whose newline has not come yet (whole UTF-8 characters or not). */
  private partial: Buffer[] = [];
  // Text mode (stderr): a multi-byte character split across two reads is decoded whole.
  private readonly decoder = new StringDecoder('utf8');
  private readonly buffer = Buffer.allocUnsafe(FOLLOW_CHUNK_BYTES);
  constructor(
    private readonly file: string,
    private offset: number,
  ) {}

  /** The file offset just past the last complete line handed out (lines mode). */
  get lineEnd(): number {
    return this.offset - this.partial.reduce((sum, piece) => sum + piece.length, 0);
  }

  /**
   * Reads what is new, at most `budget` bytes, a piece at a time, and hands
   * each complete line to `line` (without its newline) before the next piece
   * is read. Returns true when the file holds more than was read.
   */
  readLines(line: (text: string) => void, budget = FOLLOW_POLL_BYTES): boolean {
    return this.pieces((piece) => {
      let start = 0;
      for (let nl = piece.indexOf(0x0a); nl !== -1; nl = piece.indexOf(0x0a, start)) {
        if (this.partial.length > 0) {
          this.partial.push(piece.subarray(start, nl));
          const whole = Buffer.concat(this.partial);
          this.partial = [];
          line(whole.toString('utf8'));
        } else line(piece.toString('utf8', start, nl));
        start = nl + 1;
      }
      // The piece's buffer is read into again: an unterminated rest is copied out.
      if (start < piece.length) this.partial.push(Buffer.from(piece.subarray(start)));
    }, budget);
  }

  /** Reads what is new, at most `budget` bytes, as text, a piece at a time. Returns true when the file holds more than was read. */
  readText(take: (text: string) => void, budget = FOLLOW_POLL_BYTES): boolean {
    return this.pieces((piece) => take(this.decoder.write(piece)), budget);
  }

  private pieces(take: (piece: Buffer) => void, budget: number): boolean {
    let fd: number;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch {
      return false;
    }
    try {
      const size = fs.fstatSync(fd).size;
      for (let read = 0; this.offset < size && read < budget; ) {
        const n = fs.readSync(fd, this.buffer, 0, Math.min(this.buffer.length, size - this.offset), this.offset);
        if (n <= 0) break;
        this.offset += n;
        read += n;
        take(this.buffer.subarray(0, n));
      }
      return this.offset < size;
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The unterminated rest of a line (lines mode) or of a character (text mode), once the writer is gone. */
  rest(): string {
    const rest = Buffer.concat(this.partial).toString('utf8') + this.decoder.end();
    this.partial = [];
    return rest;
  }
}

/** execa's types accept descriptor numbers only as literals (they rule out the standard 0-2 per stream); these are fresh ones. */
const asFd = (fd: number) => fd as 3;

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** Makes sure a file that a writer died in mid-line ends with a newline before the next launch appends. */
function endWithNewline(file: string): void {
  const size = sizeOf(file);
  if (size === 0) return;
  const fd = fs.openSync(file, 'r+');
  try {
    const last = Buffer.alloc(1);
    fs.readSync(fd, last, 0, 1, size - 1);
    if (last[0] !== 0x0a) fs.writeSync(fd, '\n', size);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Launches an agent CLI in its own process group with the prompt file as
 * stdin and its stdout and stderr going straight into the run's files (no
 * pipe: a CLI that does not flush at exit loses nothing, and a descendant
 * that keeps a descriptor open cannot hold the run). A follower reads the
 * files as they grow, for the watchdog's liveness and the live stderr
 * forward. Never throws for the agent's own failures: a missing executable
 * is `spawnError`; a stop is `stoppedBy`.
 *
 * The run ends when the agent process exits. An agent that reported its
 * result and stays is ended (`lingered`) once its work has ended: no tool
 * call or background task open and no progress for `resultGraceMs`; or, at
 * the latest, `resultGraceCapMs` after the result that stands
 * ({@link decideLinger}; docs/run/level2.md, "When a run has ended"). A stop
 * sends SIGINT to the group (claude then reports its cost so far), and after
 * `killGraceMs` SIGKILL. Whenever the agent is gone, the sweep SIGKILLs its
 * group, every process with its {@link RUN_MARK_ENV} and every process still
 * holding its output files; any it cannot end is returned in `survivors`.
 */
export async function launch(spec: LaunchSpec, options: LaunchOptions): Promise<LaunchResult> {
  const started = Date.now();
  const classify = options.classifyLine ?? ((): LineSignal => ({ progress: true, label: 'output' }));
  const printed = new SanitizeStream();
  const onStderr = options.onStderr ?? ((chunk: string) => process.stderr.write(printed.push(chunk)));
  for (const file of [options.stdoutFile, options.stderrFile]) {
    const fd = fs.openSync(file, 'a', RUNTIME_FILE_MODE);
    try {
      // The agent's output is the owner's alone whatever the umask (docs/run/level2.md, "Secrets").
      fs.fchmodSync(fd, RUNTIME_FILE_MODE);
    } finally {
      fs.closeSync(fd);
    }
    endWithNewline(file);
  }
  const outStart = sizeOf(options.stdoutFile);
  const errStart = sizeOf(options.stderrFile);
  const stdout = new FileFollower(options.stdoutFile, outStart);
  const stderr = new FileFollower(options.stderrFile, errStart);
  const liveness = new RunLiveness(started);
  let stoppedBy: StopReason | undefined;
  let stopDetail: StopDetail | undefined;
  let lingered = false;
  let lingerEnd: LingerEnd | undefined;
  let lingerAt: number | undefined;
  let openWork: string[] | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  const mark = randomUUID();

  const fds = {
    stdin: fs.openSync(options.stdinFile, 'r'),
    stdout: fs.openSync(options.stdoutFile, 'a'),
    stderr: fs.openSync(options.stderrFile, 'a'),
  };
  const start = () =>
    execa(spec.command, spec.args, {
      cwd: options.cwd,
      env: { ...(options.env ?? process.env), ...spec.env, [RUN_MARK_ENV]: mark },
      extendEnv: false,
      stdin: asFd(fds.stdin),
      stdout: asFd(fds.stdout),
      stderr: asFd(fds.stderr),
      detached: true,
      reject: false,
    });
  let child: ReturnType<typeof start>;
  // Every process of the run starts after this: the sweep reads no older process's descriptors.
  const bornAfter = secondsSinceBoot();
  const endSpawn = span('launch: spawn');
  try {
    child = start();
  } finally {
    // The child has its own copies; pak2 keeps no descriptor of the run's files open.
    for (const fd of Object.values(fds)) fs.closeSync(fd);
    endSpawn();
  }
  const endAgent = span('launch: agent alive (spawn → exit seen)');
  const pid = child.pid;

  const kill = () => signalGroup(pid, 'SIGKILL');
  const handle: RunHandle = {
    pid,
    mark,
    liveness,
    get stopping() {
      return stoppedBy;
    },
    stop(reason: StopReason, detail?: StopDetail) {
      if (stoppedBy || lingered) return;
      stoppedBy = reason;
      stopDetail = detail;
      signalGroup(pid, 'SIGINT');
      killTimer = setTimeout(kill, options.killGraceMs ?? 3000);
      killTimer.unref();
    },
  };
  options.onStart?.(handle);
  if (options.timeoutMs !== undefined) {
    deadline = setTimeout(() => handle.stop('timeout'), options.timeoutMs);
    deadline.unref();
  }

  // Whether what was forwarded of stderr ends a line: the agent's last line gets its newline where it is shown, as stderr.log gets it.
  let stderrOpenLine = false;
  const forwardStderr = (text: string) => {
    if (!text) return;
    stderrOpenLine = !text.endsWith('\n');
    onStderr(text);
  };
  const observe = (line: string, now: number) => {
    if (!line.trim()) return;
    liveness.observe(classify(line), now);
  };
  // At most FOLLOW_POLL_BYTES of each file a poll (`all`: to the end, the agent is gone), a piece at a time.
  const follow = (all = false) => {
    const now = Date.now();
    const budget = all ? Number.POSITIVE_INFINITY : FOLLOW_POLL_BYTES;
    const behind = stdout.readLines((line) => observe(line, now), budget);
    stderr.readText(forwardStderr, budget);
    return behind;
  };
  const poll = () => {
    const end = span('launch: follower poll');
    try {
      pollNow();
    } finally {
      end();
    }
  };
  const pollNow = () => {
    const behind = follow();
    if (stoppedBy || lingered) return;
    const now = Date.now();
    const end = decideLinger({
      nowMs: now,
      reportedAtMs: liveness.reportedAt,
      lastProgressAtMs: liveness.lastProgressAt,
      openWork: liveness.openWork,
      // A follower still catching up on a burst has not seen the latest lines: no grace judged on a stale view; the cap holds whatever the agent floods.
      graceMs: behind ? Number.POSITIVE_INFINITY : (options.resultGraceMs ?? 10_000),
      capMs: options.resultGraceCapMs ?? 1_800_000,
    });
    if (!end) return;
    // The agent reported and its work has ended (or the cap came): its result stands; end the group.
    lingered = true;
    lingerEnd = end;
    lingerAt = stdout.lineEnd;
    if (liveness.openWork > 0) openWork = describeOpenWork(liveness);
    signalGroup(pid, 'SIGINT');
    killTimer = setTimeout(kill, options.killGraceMs ?? 3000);
    killTimer.unref();
  };
  const poller = setInterval(poll, options.pollMs ?? 200);
  // A line is read as soon as it is written, not at the next tick: a budget stops a run within one message (docs/budget/level2.md).
  let soon: NodeJS.Immediate | undefined;
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(options.stdoutFile, () => {
      soon ??= setImmediate(() => {
        soon = undefined;
        poll();
      });
    });
    watcher.on('error', () => watcher?.close());
  } catch {
    // No watch (inotify limits): the timer alone follows.
  }

  const result = await child;
  endAgent();
  clearInterval(poller);
  watcher?.close();
  if (soon) clearImmediate(soon);
  if (deadline) clearTimeout(deadline);
  if (killTimer) clearTimeout(killTimer);
  follow(true);
  const rest = stdout.rest();
  if (rest.trim()) liveness.observe(classify(rest), Date.now());
  forwardStderr(stderr.rest());
  if (stderrOpenLine) onStderr('\n');
  if (!options.onStderr && printed.holding) process.stderr.write(printed.end());
  // Reap what the agent left behind, in its group, in sessions of their own, or holding its files.
  const endSweep = span('launch: sweep');
  const survivors = await sweepRun(pid, mark, [options.stdoutFile, options.stderrFile], undefined, bornAfter);
  endSweep();

  const spawnError =
    result.failed && result.exitCode === undefined && !result.signal && !stoppedBy
      ? (result.originalMessage ?? result.shortMessage ?? 'could not start')
      : undefined;
  return {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    stoppedBy,
    stopDetail,
    lingered,
    ...(lingerEnd ? { lingerEnd } : {}),
    ...(lingerAt !== undefined ? { lingerAt } : {}),
    ...(openWork ? { openWork } : {}),
    spawnError,
    outputBytes: sizeOf(options.stdoutFile) - outStart,
    durationMs: Date.now() - started,
    stderrTail: tailOf(options.stderrFile, errStart),
    survivors,
  };
}

/** The last ~2 KB of what a file gained after `from`, trimmed. */
function tailOf(file: string, from: number): string {
  const size = sizeOf(file);
  const start = Math.max(from, size - 2048);
  if (size <= start) return '';
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(size - start);
    fs.readSync(fd, buffer, 0, buffer.length, start);
    return buffer.toString('utf8').trim();
  } finally {
    fs.closeSync(fd);
  }
}
