import { execa } from 'execa';

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
}

/** Verify output kept per stream: the first and last halves of this many characters. */
export const VERIFY_OUTPUT_CAP = 64 * 1024;

/** Keeps the head and the tail of a long output, saying how much was left out. */
export function capOutput(text: string, cap = VERIFY_OUTPUT_CAP): string {
  if (text.length <= cap) return text;
  const half = Math.floor(cap / 2);
  return `${text.slice(0, half)}\n… [${text.length - 2 * half} characters left out by pak2] …\n${text.slice(-half)}`;
}

/**
 * Runs the verify command with `sh -c` in `cwd` (seed 001, "verify"), in
 * its own process group, with `env` only. Past `timeoutSeconds` the group
 * gets SIGTERM, then SIGKILL 5 s later; when it ends, whatever is left of
 * the group is killed. Never throws.
 */
export async function runVerify(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutSeconds: number): Promise<VerifyResult> {
  const started = Date.now();
  const subprocess = execa('sh', ['-c', command], {
    cwd,
    env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    detached: true,
    cleanup: true,
    maxBuffer: 64 * 1024 * 1024,
    stripFinalNewline: false,
  });
  const pid = subprocess.pid;
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (pid) process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  // The limit is the group's: a verify's children (a test runner's workers, a `sleep`) hold its pipes, so killing sh alone would wait on them.
  let timedOut = false;
  let hard: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    hard = setTimeout(() => killGroup('SIGKILL'), 5000);
  }, timeoutSeconds * 1000);
  const result = await subprocess;
  clearTimeout(timer);
  if (hard) clearTimeout(hard);
  killGroup('SIGKILL'); // nothing of the verify outlives it
  const exitCode = typeof result.exitCode === 'number' ? result.exitCode : null;
  const spawnFailed = Boolean(result.failed && exitCode === null && !timedOut && !result.isTerminated);
  return {
    ok: exitCode === 0 && !timedOut,
    exitCode,
    stdout: capOutput(String(result.stdout ?? '')),
    stderr: capOutput(spawnFailed ? String(result.stderr ?? '') || (result.shortMessage ?? '') : String(result.stderr ?? '')),
    timedOut,
    unavailable: spawnFailed || exitCode === 126 || exitCode === 127,
    durationMs: Date.now() - started,
  };
}
