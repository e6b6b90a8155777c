import { Command, CommanderError } from 'commander';
import { UserError } from '../errors.js';
import { PACKAGE_VERSION } from '../package-root.js';
import { StoreError } from '../store/index.js';
import { registerCycle, runCycle } from './commands/cycle.js';
import { registerGardenCommands } from './commands/garden.js';
import { registerReadCommands } from './commands/read.js';
import { registerHistory } from './commands/history.js';
import { registerChat } from './commands/chat.js';
import { registerCancel, registerStop, registerSubmit } from './commands/submit.js';
import { registerOperatorMessage } from './commands/operator-message.js';
import { registerPlantCommands } from './commands/plants.js';
import { registerRetrospective } from './commands/retrospective.js';
import { registerDoctor } from './commands/doctor.js';
import { registerEvents } from './commands/events.js';
import { registerServe } from './commands/serve.js';
import { registerWebhook } from './commands/webhook.js';

/** Where a command writes; tests pass their own. */
export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** True when stdin and stdout are terminals (the workbench may open). */
  isTTY: boolean;
  /** The exit code a command sets when it ends without throwing (default 0). */
  exitCode?: number;
}

/**
 * The process's own streams. A closed stdout (`pak2 goals | head -1`) ends
 * output quietly instead of throwing EPIPE.
 */
export function processIO(): CliIO {
  let stdoutOpen = true;
  let stderrOpen = true;
  let hungUp = false;
  // A terminal that is gone (a closed tmux window, a dropped ssh) answers writes with EIO: that is a
  // hangup, not a crash. It takes the SIGHUP path once (stop the coordinator, release the lock).
  const gone = (error: NodeJS.ErrnoException) => ['EPIPE', 'EIO', 'ENXIO', 'ECONNRESET'].includes(error.code ?? '');
  const hangUp = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || hungUp) return;
    hungUp = true;
    process.emit('SIGHUP');
  };
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!gone(error)) throw error;
    stdoutOpen = false;
    hangUp(error);
  });
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (!gone(error)) throw error;
    stderrOpen = false;
    hangUp(error);
  });
  process.stdin.on('error', (error: NodeJS.ErrnoException) => {
    if (!gone(error)) throw error;
    hangUp(error);
  });
  return {
    out: (text) => {
      if (stdoutOpen) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    },
    err: (text) => {
      if (stderrOpen) process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
    },
    env: process.env,
    cwd: process.cwd(),
    isTTY: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  };
}

/** File-system errors that are the machine's state, not a bug: said in one line, exit 1. */
const SYSTEM_ERRORS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  ENOTDIR: 'a path component is not a directory',
  EISDIR: 'is a directory',
  EEXIST: 'already exists',
  ENOENT: 'no such file or directory',
  EMFILE: 'too many open files',
};

/** Exit codes: 0 ok, 1 refused or failed operation, 2 bad arguments or files, 70 internal error. */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 70 } as const;

/** Builds the commander program; every action reports through `io`. */
export function buildProgram(io: CliIO): Command {
  const program = new Command('pak2')
    .description('A terminal workbench for running coding agents against a queue of goals.')
    .option('--garden <dir>', 'the garden (default: the nearest directory above holding PAK2.toml)')
    .version(PACKAGE_VERSION, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s), outputError: (s, write) => write(s) })
    .showSuggestionAfterError(true);
  // Bare `pak2` opens the workbench, like `pak2 cycle` in a terminal.
  program
    .usage('[options] [command]')
    .argument('[command]')
    .action(async (name: string | undefined) => {
      if (name !== undefined) throw new UserError(`unknown command '${name}'`, { hint: 'pak2 --help lists the commands' });
      await runCycle(program, { ui: true }, io);
    });
  registerGardenCommands(program, io);
  registerSubmit(program, io);
  registerCancel(program, io);
  registerStop(program, io);
  registerChat(program, io);
  registerCycle(program, io);
  registerReadCommands(program, io);
  registerHistory(program, io);
  registerOperatorMessage(program, io);
  registerPlantCommands(program, io);
  registerRetrospective(program, io);
  registerDoctor(program, io);
  registerEvents(program, io);
  registerServe(program, io);
  registerWebhook(program, io);
  return program;
}

/**
 * Runs the CLI. The one place errors become exit codes: UserError and
 * StoreError print `pak2: <message>` (plus a `hint:` line) and return their
 * code; commander usage errors return 2; anything else is a bug and says so.
 *
 * @returns the process exit code.
 */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv);
    return io.exitCode ?? EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0) return EXIT.ok;
      return EXIT.usage;
    }
    if (error instanceof UserError) {
      io.err(`pak2: ${error.message}`);
      if (error.hint) io.err(`hint: ${error.hint}`);
      return error.exitCode;
    }
    if (error instanceof StoreError) {
      io.err(`pak2: ${error.message}`);
      return ['GOAL_NOT_FOUND', 'RUN_NOT_FOUND', 'PLANT_NOT_FOUND', 'INVALID_RECORD', 'INVALID_PLANT_NAME', 'SEED_NOT_FOUND'].includes(error.code) ? EXIT.usage : EXIT.failed;
    }
    const sys = error as NodeJS.ErrnoException;
    if (sys && typeof sys.code === 'string' && SYSTEM_ERRORS[sys.code]) {
      io.err(`pak2: ${sys.path ?? sys.syscall ?? 'file system'}: ${SYSTEM_ERRORS[sys.code]} (${sys.code})`);
      return EXIT.failed;
    }
    io.err(`pak2: internal error (a bug; please report it): ${(error as Error)?.stack ?? String(error)}`);
    return EXIT.internal;
  }
}
