import { Command, CommanderError, Help } from 'commander';
import { UserError } from '../errors.js';
import { applyCommandDocs, commandUsage, helpText } from './command-table.js';
import { PACKAGE_VERSION } from '../package-root.js';
import { sanitize } from '../sanitize.js';

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
  /**
   * One line of stdout in one of pak2's own colours (a diff's added,
   * removed, hunk and header lines): the text is sanitized like any other,
   * then pak2's colour wraps it. Absent (a test's IO): the plain text goes
   * to `out`.
   */
  outStyled?: (text: string, style: OutputStyle) => void;
}

/** pak2's own colours on the terminal: a diff's lines, and a run's stream as the run pane colours it (`pak2 logs`). */
export type OutputStyle = 'add' | 'del' | 'hunk' | 'head' | 'tool' | 'error' | 'ok' | 'dim';
const STYLE_CODES: Record<OutputStyle, string> = { add: '\x1b[32m', del: '\x1b[31m', hunk: '\x1b[36m', head: '\x1b[1m', tool: '\x1b[36m', error: '\x1b[31m', ok: '\x1b[32m', dim: '\x1b[2m' };

/**
 * The process's own streams. A closed stdout (`pak2 goals | head -1`) ends
 * output quietly instead of throwing EPIPE. Everything written is
 * {@link sanitize}d (issue 23): whatever a command prints, no control
 * sequence an agent wrote reaches the terminal; JSON stays JSON of the same
 * value. The commands sanitize what they print themselves too (a test's own
 * `CliIO` gets the same text); this is the one exit that makes it certain.
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
      if (!stdoutOpen) return;
      const printed = sanitize(text);
      process.stdout.write(printed.endsWith('\n') ? printed : `${printed}\n`);
    },
    err: (text) => {
      if (!stderrOpen) return;
      const printed = sanitize(text);
      process.stderr.write(printed.endsWith('\n') ? printed : `${printed}\n`);
    },
    outStyled: (text, style) => {
      if (!stdoutOpen) return;
      process.stdout.write(`${STYLE_CODES[style]}${sanitize(text).replace(/\n$/, '')}\x1b[0m\n`);
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

/** A store error (source/store/files.ts), told by its name: the CLI entry does not load the store to check. */
function isStoreError(error: unknown): error is Error & { code: string } {
  return error instanceof Error && error.name === 'StoreError' && typeof (error as { code?: unknown }).code === 'string';
}

/** Exit codes: 0 ok, 1 refused or failed operation, 2 bad arguments or files, 70 internal error. */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 70 } as const;

type Register = (program: Command, io: CliIO) => void;

/**
 * Every command, as `pak2 --help` lists it, and the module that registers
 * it (its options and action), imported only when the command runs: `pak2
 * --version` and `--help` load no command module, `pak2 goals` only the
 * read commands. test/scale/lazy-cli.test.ts checks this list against the
 * modules' own registrations.
 */
const COMMANDS: { name: string; term: string; description: string; module: () => Promise<Register> }[] = [
  { name: 'init', term: 'init [options] [dir]', description: 'create a garden in DIR (default .): a new or empty directory gets the whole template; your own git repository is adopted (PAK2.toml, .pak2/, .runtime/ ignored)', module: async () => (await import('./commands/garden.js')).registerGardenCommands },
  { name: 'genesis', term: 'genesis [options]', description: 'set up the garden: runtime directories, the gardener plant, its first goal (no dispatch)', module: async () => (await import('./commands/garden.js')).registerGardenCommands },
  { name: 'publish', term: 'publish [options] <dir>', description: 'write the clean authored export of pak2 (code, tests, docs, template) into DIR: new, empty, or a git checkout whose worktree it replaces; runs no git command', module: async () => (await import('./commands/garden.js')).registerGardenCommands },
  { name: 'submit', term: 'submit [options]', description: 'queue a goal for a plant; prints the goal id', module: async () => (await import('./commands/submit.js')).registerSubmit },
  { name: 'cancel', term: 'cancel <id>', description: 'cancel a goal: a queued one closes cancelled; a running one has its run stopped, then closes cancelled', module: async () => (await import('./commands/submit.js')).registerCancel },
  { name: 'depends', term: 'depends [options] <goal>', description: "change what a queued goal waits for: --drop an edge (a goal a failed dependency blocked is released), --add one (a cycle is refused)", module: async () => (await import('./commands/depends.js')).registerDependencyCommands },
  { name: 'retry', term: 'retry [options] <goal>', description: 'queue a goal that closed failure or cancelled again, as a new goal; the goals that waited for it wait for the new one', module: async () => (await import('./commands/depends.js')).registerDependencyCommands },
  { name: 'stop', term: 'stop [options] <run>', description: 'stop one live run: it ends killed (operator_stopped) and its goal closes cancelled, or goes back to the queue with --requeue', module: async () => (await import('./commands/submit.js')).registerStop },
  { name: 'chat', term: 'chat [options]', description: 'talk with the garden: each line queues a reply goal; the coordinator (pak2 cycle) answers', module: async () => (await import('./commands/chat.js')).registerChat },
  { name: 'supplement', term: 'supplement [options] <goal>', description: 'add context to a queued goal that came from a conversation (frozen into its dispatch packet)', module: async () => (await import('./commands/chat.js')).registerChat },
  { name: 'inbox', term: 'inbox [options]', description: "the workbench's inbox: open questions a goal waits on, then reply notes (replies, startup notes, retrospective reports), newest first, unread ones marked ●; inbox read prints a note and marks it read", module: async () => (await import('./commands/inbox.js')).registerInbox },
  { name: 'cycle', term: 'cycle [options]', description: 'run the coordinator: the workbench in a terminal, else headless lines', module: async () => (await import('./commands/cycle.js')).registerCycle },
  { name: 'dashboard', term: 'dashboard', description: 'the workbench panes, read-only: no coordinator, no writes (one frame when not a terminal)', module: async () => (await import('./commands/cycle.js')).registerCycle },
  { name: 'goals', term: 'goals [options]', description: 'list goals: open ones, then the most recently closed', module: async () => (await import('./commands/read.js')).registerReadCommands },
  { name: 'runs', term: 'runs [options]', description: 'list runs, oldest first', module: async () => (await import('./commands/read.js')).registerReadCommands },
  { name: 'show', term: 'show [options] <id>', description: 'show one goal (with its runs) or one run', module: async () => (await import('./commands/read.js')).registerReadCommands },
  { name: 'logs', term: 'logs [options] <id>', description: "print a run's stream as the run pane shows it (assistant text, tool calls, results, errors, cost), or its raw events.jsonl lines (--raw); -f follows a live run until it closes", module: async () => (await import('./commands/logs.js')).registerLogs },
  { name: 'trace', term: 'trace [options] <run>', description: 'what a guarded run did: phases with durations, decision, violations, verify, mutations, rollback, routing attempts and costs', module: async () => (await import('./commands/trace.js')).registerTrace },
  { name: 'history', term: 'history [options] [run]', description: 'runtime provenance of closed runs: authored HEAD, authored tree clean/dirty, runtime commit', module: async () => (await import('./commands/history.js')).registerHistory },
  { name: 'operator-message', term: 'operator-message [options]', description: 'from a running gardener run: record and deliver a tend_survey or recently_concluded note to the operator; prints its id', module: async () => (await import('./commands/operator-message.js')).registerOperatorMessage },
  { name: 'plants', term: 'plants [options]', description: 'list plants: name, seed, status, when commissioned, active threads', module: async () => (await import('./commands/plants.js')).registerPlantCommands },
  { name: 'plant', term: 'plant', description: 'commission or archive a plant', module: async () => (await import('./commands/plants.js')).registerPlantCommands },
  { name: 'threads', term: 'threads [options] <plant>', description: "print a plant's active threads (plants/<plant>/memory/active-threads.json)", module: async () => (await import('./commands/plants.js')).registerPlantCommands },
  { name: 'retrospective', term: 'retrospective [options]', description: 'queue a retrospective of the goals closed recently; prints the goal id', module: async () => (await import('./commands/retrospective.js')).registerRetrospective },
  { name: 'doctor', term: 'doctor [options]', description: 'check the garden (config, goals, ledger, runs, leases, plants, events, lock, orphan processes, runtime git); --fix makes the safe fixes', module: async () => (await import('./commands/doctor.js')).registerDoctor },
  { name: 'events', term: 'events [options]', description: 'print the event log: everything after --since ID, then (--follow) new events as they come', module: async () => (await import('./commands/events.js')).registerEvents },
  { name: 'serve', term: 'serve [options]', description: 'serve the garden over HTTP: REST, server-sent events, webhooks (127.0.0.1:7717, bearer token in <runtime-root>/serve/token)', module: async () => (await import('./commands/serve.js')).registerServe },
  { name: 'comment', term: 'comment [options] <goal> [text...]', description: "a goal's comment thread: post a comment (--blocking: a question the goal waits on), answer the open question (--answer), or print the thread", module: async () => (await import('./commands/comment.js')).registerComment },
  { name: 'runner', term: 'runner [options]', description: "run goals from a garden's server on this machine: claim under a lease, run the agent, heartbeat, finish with the observed outcome", module: async () => (await import('./commands/runner.js')).registerRunner },
  { name: 'diff', term: 'diff [options] <run>', description: "a run's work for review: its files and the patch against its base (its landing's commit, what its worktree holds now, or its kept branch)", module: async () => (await import('./commands/landing.js')).registerLandingCommands },
  { name: 'land', term: 'land <run>', description: "accept a run's work for landing (a landing held for review); the coordinator lands it, or this command does when none runs", module: async () => (await import('./commands/landing.js')).registerLandingCommands },
  { name: 'reject', term: 'reject [options] <run>', description: "discard a run's work: its landing ends rejected; its goal closes failure, or goes back to the queue with --requeue", module: async () => (await import('./commands/landing.js')).registerLandingCommands },
  { name: 'landings', term: 'landings [options]', description: 'the merge queue and what became of each landing: run, goal, state, files, base, age', module: async () => (await import('./commands/landing.js')).registerLandingCommands },
  { name: 'attention', term: 'attention [options]', description: 'what needs you: open questions, landings awaiting review, budget stops, failed runs not yet acknowledged, blocked goals', module: async () => (await import('./commands/attention.js')).registerAttention },
  { name: 'ack', term: 'ack [options] [ids...]', description: 'acknowledge needs-you items: they leave the list (pak2 attention lists the ids)', module: async () => (await import('./commands/attention.js')).registerAttention },
  { name: 'token', term: 'token', description: 'server tokens with a role (operator, runner, read): create, list, revoke', module: async () => (await import('./commands/token.js')).registerToken },
  { name: 'budget', term: 'budget [options]', description: 'budget caps in USD: what each allows, what is spent and reserved, what is left; set raises or lowers one', module: async () => (await import('./commands/budget.js')).registerBudget },
  { name: 'tend', term: 'tend [options]', description: 'automatic tends (a gardener goal after a failed run or for stuck goals): status; pause or resume them', module: async () => (await import('./commands/tend.js')).registerTend },
  { name: 'schedule', term: 'schedule', description: 'goals submitted on a cron line ([[schedule]] in PAK2.toml): list, add, remove', module: async () => (await import('./commands/schedule.js')).registerSchedule },
  { name: 'store', term: 'store', description: "move a garden's records between its files and a PostgreSQL store: import, export DIR, status", module: async () => (await import('./commands/store.js')).registerStore },
  { name: 'webhook', term: 'webhook', description: 'webhook subscriptions: signed POSTs of events to a URL, delivered while a coordinator (pak2 cycle, the workbench) or pak2 serve runs', module: async () => (await import('./commands/webhook.js')).registerWebhook },
];

/** The command an argument vector names (`pak2 [--garden DIR] NAME …`, `pak2 help NAME`), if any. */
export function commandNamed(args: string[]): string | undefined {
  const words: string[] = [];
  for (let i = 0; i < args.length && words.length < 2; i += 1) {
    const arg = args[i]!;
    if (arg === '--') break;
    if (arg === '--garden') i += 1;
    else if (!arg.startsWith('-')) words.push(arg);
  }
  return words[0] === 'help' ? words[1] : words[0];
}

/** The `pak2 --help` term of each stand-in command (its real one lists options and arguments). */
const STAND_IN_TERMS = new WeakMap<Command, string>();

/**
 * Builds the commander program; every action reports through `io`. Only
 * the module of the command `argv` names is imported (every module with
 * `all`); the other commands stand in by name and description, and one
 * that runs after all imports its module and parses again.
 */
export async function buildProgram(io: CliIO, argv: string[] = [], options: { all?: boolean } = {}): Promise<Command> {
  const program = new Command('pak2')
    .description('A terminal workbench for running coding agents against a queue of goals.')
    .option('--garden <dir>', 'the garden (default: the nearest directory above holding PAK2.toml)')
    .version(PACKAGE_VERSION, '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s), outputError: (s, write) => write(s.replace(/^error: /, 'pak2: ')) })
    .configureHelp({
      subcommandTerm(cmd: Command): string {
        return STAND_IN_TERMS.get(cmd) ?? Help.prototype.subcommandTerm.call(this, cmd);
      },
      // A command's usage and description as the README's command table says them (command-table.ts).
      commandUsage(cmd: Command): string {
        return cmd.parent ? commandUsage(cmd) : Help.prototype.commandUsage.call(this, cmd);
      },
      commandDescription(cmd: Command): string {
        return helpText(Help.prototype.commandDescription.call(this, cmd));
      },
      subcommandDescription(cmd: Command): string {
        return helpText(Help.prototype.subcommandDescription.call(this, cmd));
      },
    })
    .showSuggestionAfterError(true);
  // Bare `pak2` opens the workbench, like `pak2 cycle` in a terminal.
  program
    .usage('[options] [command]')
    .argument('[command]')
    .action(async (name: string | undefined) => {
      if (name !== undefined) throw new UserError(`unknown command '${name}'`, { hint: 'pak2 --help lists the commands' });
      const { runCycle } = await import('./commands/cycle.js');
      await runCycle(program, { ui: true }, io);
    });
  const wanted = options.all ? undefined : commandNamed(argv.slice(2));
  const registered = new Set<Register>();
  for (const entry of COMMANDS) {
    if (!options.all && entry.name !== wanted) continue;
    const register = await entry.module();
    if (registered.has(register)) continue; // one module registers several commands
    registered.add(register);
    register(program, io);
  }
  const real = new Set(program.commands.map((c) => c.name()));
  for (const entry of COMMANDS) {
    if (real.has(entry.name)) continue;
    const standIn = program
      .command(entry.name)
      .description(entry.description)
      .helpOption(false)
      .allowUnknownOption(true)
      .allowExcessArguments(true)
      .action(async () => {
        // commander keeps the argument vector it parsed as `rawArgs`.
        const raw = (program as Command & { rawArgs: string[] }).rawArgs;
        const full = await buildProgram(io, raw, { all: true });
        await full.parseAsync(raw);
      });
    STAND_IN_TERMS.set(standIn, entry.term);
  }
  applyCommandDocs(program);
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
  const program = await buildProgram(io, argv);
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
    if (isStoreError(error)) {
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
