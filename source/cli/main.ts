import { Command, CommanderError } from 'commander';
import { UserError } from '../errors.js';
import { StoreError } from '../store/index.js';
import { registerCycle, runCycle } from './commands/cycle.js';
import { registerGardenCommands } from './commands/garden.js';
import { registerReadCommands } from './commands/read.js';
import { registerSubmit } from './commands/submit.js';

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

/** The process's own streams. */
export function processIO(): CliIO {
  return {
    out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
    env: process.env,
    cwd: process.cwd(),
    isTTY: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  };
}

/** Exit codes: 0 ok, 1 refused or failed operation, 2 bad arguments or files, 70 internal error. */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 70 } as const;

/** Builds the commander program; every action reports through `io`. */
export function buildProgram(io: CliIO): Command {
  const program = new Command('pak2')
    .description('A terminal workbench for running coding agents against a queue of goals.')
    .option('--garden <dir>', 'the garden (default: the nearest directory above holding PAK2.toml)')
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
  registerCycle(program, io);
  registerReadCommands(program, io);
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
    io.err(`pak2: internal error (a bug; please report it): ${(error as Error)?.stack ?? String(error)}`);
    return EXIT.internal;
  }
}
