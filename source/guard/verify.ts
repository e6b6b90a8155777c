import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { randomUUID } from 'node:crypto';
import { groupHasMembers, RUN_MARK_ENV, sweepRun } from '../driver/process-tree.js';

/** What the verify command did (seed 001: verify_ok, verify_exit_code, verify_stdout, verify_stderr). Output is capped. */
export interface VerifyResult {
  ok: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The command could not start or its shell could not run it (exit 126 / 127, spawn error). */
  unavailable: boolean;
  durationMs: number;
  /** Processes of the verify that outlived it and could not be ended (pid and command). */
  leftovers: string[];
}

/** Verify output kept per stream in the outcome: the first and last halves of this many bytes. */
export const VERIFY_OUTPUT_CAP = 64 * 1024;

/** Files in the run directory that take verify's stdout and stderr whole. */
export const VERIFY_FILES = { stdout: 'verify.stdout.log', stderr: 'verify.stderr.log' } as const;

/** The first and last `cap / 2` bytes of a file, as text. */
function readCapped(file: string, cap = VERIFY_OUTPUT_CAP): string {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const size = fs.fstatSync(fd).size;
    if (size <= cap) {
      const buf = Buffer.alloc(size);
      fs.readSync(fd, buf, 0, size, 0);
      return buf.toString('utf8');
    }
    const half = Math.floor(cap / 2);
    const head = Buffer.alloc(half);
    const tail = Buffer.alloc(half);
    fs.readSync(fd, head, 0, half, 0);
    fs.readSync(fd, tail, 0, half, size - half);
    return `${head.toString('utf8')}\n… [${size - 2 * half} bytes left out by pak2; whole in ${path.basename(file)}] …\n${tail.toString('utf8')}`;
  } catch {
    return '';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Runs the verify command with `sh -c` in `cwd` (seed 001, "verify"), in
 * its own process group, with `env` only, stdin closed. Its stdout and
 * stderr go to files in `outDir` ({@link VERIFY_FILES}), never pipes, so a
 * background job it leaves cannot hold verify open: verify ends when its
 * shell exits. Past `timeoutSeconds` the group gets SIGTERM, then SIGKILL
 * 5 s later. When it ends, what is left of it is killed (the driver's
 * sweep: its group while a member holds the group id, every process that
 * inherited its mark, every process holding its output files). `onStart`
 * learns its pid and mark as it starts (the guard records them, so a
 * restart can end a verify its dead coordinator left). Never throws.
 */
export async function runVerify(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutSeconds: number, outDir: string, onStart?: (process: { pid: number; mark: string }) => void): Promise<VerifyResult> {
  const started = Date.now();
  const files = { stdout: path.join(outDir, VERIFY_FILES.stdout), stderr: path.join(outDir, VERIFY_FILES.stderr) };
  // Every process of the verify inherits the mark, so what it leaves is found without trusting a group id after its leader exits.
  const mark = `verify-${randomUUID()}`;
  let pid: number | undefined;
  let timedOut = false;
  let hard: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  let result: { exitCode?: number; failed?: boolean; isTerminated?: boolean; shortMessage?: string } | undefined;
  // The files themselves are the child's stdout and stderr (execa's `{file}` would pipe through this process).
  const out = fs.openSync(files.stdout, 'w');
  const err = fs.openSync(files.stderr, 'w');
  try {
    const subprocess = execa('sh', ['-c', command], { cwd, env: { ...env, [RUN_MARK_ENV]: mark }, extendEnv: false, reject: false, stdin: 'ignore', stdout: out as 3, stderr: err as 3, detached: true, cleanup: true });
    pid = subprocess.pid;
    if (pid) onStart?.({ pid, mark });
    timer = setTimeout(() => {
      timedOut = true;
      if (pid) kill(-pid, 'SIGTERM');
      hard = setTimeout(() => pid && groupHasMembers(pid) && kill(-pid, 'SIGKILL'), 5000);
    }, timeoutSeconds * 1000);
    result = await subprocess;
  } finally {
    if (timer) clearTimeout(timer);
    if (hard) clearTimeout(hard);
    fs.closeSync(out);
    fs.closeSync(err);
  }
  // Nothing of the verify outlives it: its group, every process with its mark, whatever still holds its output.
  const leftovers = (await sweepRun(pid, mark, [files.stdout, files.stderr], 1000)).map((p) => `${p.pid} ${p.command}`);

  const exitCode = typeof result?.exitCode === 'number' ? result.exitCode : null;
  const spawnFailed = Boolean(result?.failed && exitCode === null && !timedOut && !result.isTerminated);
  const stderr = readCapped(files.stderr);
  return {
    ok: exitCode === 0 && !timedOut,
    exitCode,
    stdout: readCapped(files.stdout),
    stderr: spawnFailed && !stderr ? (result?.shortMessage ?? 'verify could not start') : stderr,
    timedOut,
    unavailable: spawnFailed || exitCode === 126 || exitCode === 127,
    durationMs: Date.now() - started,
    leftovers,
  };
}
