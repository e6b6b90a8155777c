import path from 'node:path';
import type { Command } from 'commander';
import { loadGarden, redactStoreUrl, storeUrlOf, storeUrlProblem, type Garden } from '../../garden/index.js';
import { UserError } from '../../errors.js';
import { printJson } from '../context.js';
import type { CliIO } from '../main.js';

/** How many notes (or damaged records) a text report prints before it sums up the rest. */
const SHOWN = 20;

/** The garden a store command acts on, loaded without attaching its store (these commands open the store themselves). */
function gardenHere(command: Command, io: CliIO): Garden {
  const dir = command.optsWithGlobals<{ garden?: string }>().garden;
  return dir ? loadGarden(path.resolve(io.cwd, dir)) : loadGarden(io.cwd, { search: true });
}

/**
 * The store a command works on: `--url`, else `PAK2_STORE_URL`, else the
 * garden's `[store].url` (loading the garden only then).
 *
 * @throws UserError naming `--url` or `PAK2_STORE_URL` when it is no usable URL, or saying there is none.
 */
function storeUrl(command: Command, io: CliIO, flag: string | undefined, garden: () => Garden): { url: string; from: string } {
  if (flag !== undefined) {
    const problem = storeUrlProblem(flag);
    if (problem) throw new UserError(`--url: ${problem}`);
    return { url: flag, from: '--url' };
  }
  const chosen = storeUrlOf(garden().config.storeUrl, io.env);
  if (!chosen) throw new UserError(`no PostgreSQL store named: ${garden().paths.configFile} has no [store].url and PAK2_STORE_URL is not set`, { hint: 'give --url postgres://user@host:port/database' });
  const problem = storeUrlProblem(chosen.url);
  if (problem) throw new UserError(`${chosen.from === 'PAK2_STORE_URL' ? 'PAK2_STORE_URL' : `${garden().paths.configFile}: store.url`}: ${problem}`);
  return { url: chosen.url, from: chosen.from === 'PAK2_STORE_URL' ? 'PAK2_STORE_URL' : '[store].url' };
}

/** Memoises the garden: loaded once, only when something needs it. */
function lazyGarden(command: Command, io: CliIO): () => Garden {
  let garden: Garden | undefined;
  return () => (garden ??= gardenHere(command, io));
}

/** The garden here when `root` is its runtime root; undefined otherwise, or when there is no garden here (`--from` needs none). */
function gardenOfRoot(garden: () => Garden, root: string): Garden | undefined {
  try {
    const here = garden();
    return here.paths.runtimeRoot === root ? here : undefined;
  } catch (error) {
    if (error instanceof UserError) return undefined;
    throw error;
  }
}

function printNotes(io: CliIO, label: string, notes: { file: string; message: string }[]): void {
  for (const note of notes.slice(0, SHOWN)) io.err(`${label}: ${note.file}: ${note.message}`);
  if (notes.length > SHOWN) io.err(`${label}: … and ${notes.length - SHOWN} more (--json lists them all)`);
}

function figures(kinds: { kind: string; records: number }[]): string {
  return kinds.map((k) => `${k.records} ${k.kind}`).join(', ');
}

/**
 * `pak2 store import|export|status` (docs/store/level2.md, "Moving between
 * stores"): a file garden's records into an empty PostgreSQL store, a
 * store's records out into the seeds' exact layout, and where a store
 * stands. The store is `--url`, else `PAK2_STORE_URL`, else `[store].url`;
 * it is only ever shown with its password hidden.
 */
export function registerStore(program: Command, io: CliIO): void {
  const store = program.command('store').description("move a garden's records between its files and a PostgreSQL store: import, export DIR, status");

  store
    .command('import')
    .description("load a file garden's records (goals, runs, events, leases, comments) into an empty PostgreSQL store, in one transaction")
    .option('--url <url>', 'the store: postgres://user@host:port/database (default: PAK2_STORE_URL, else [store].url)')
    .option('--from <dir>', "the runtime root to read (default: the garden's)")
    .option('--skip-damaged', 'import the rest when some records cannot be imported (each is named and left out)')
    .option('--json', 'print {imported, where, from, kinds, damaged, notes, readMs, loadMs} as JSON')
    .action(async (opts: { url?: string; from?: string; skipDamaged?: boolean; json?: boolean }, command: Command) => {
      const garden = lazyGarden(command, io);
      const { url } = storeUrl(command, io, opts.url, garden);
      const from = opts.from !== undefined ? path.resolve(io.cwd, opts.from) : garden().paths.runtimeRoot;
      const own = opts.from === undefined ? garden() : gardenOfRoot(garden, from);
      if (own) {
        // Records that change while they are read would be imported half old, half new.
        const { coordinatorPresence } = await import('../../doctor/presence.js');
        const presence = await coordinatorPresence(own.paths);
        if (presence.held) throw new UserError(`a coordinator holds the garden (${presence.heldBy}): its records would change while they are read`, { hint: 'stop it (and pak2 serve) first, then import', exitCode: 1 });
      }
      const { importGarden } = await import('../../store/postgres/transfer.js');
      const result = await importGarden(from, url, { ...(opts.skipDamaged ? { skipDamaged: true } : {}), by: 'pak2 store import' });
      if (opts.json) printJson(io, result);
      if (!result.imported) {
        if (!opts.json) printNotes(io, 'damaged', result.damaged);
        throw new UserError(`nothing imported into ${result.where}: ${result.damaged.length} record(s) under ${result.from} cannot be imported`, {
          hint: '--skip-damaged imports the rest and leaves those out; pak2 doctor names them and makes the safe fixes',
          exitCode: 1,
        });
      }
      if (opts.json) return;
      printNotes(io, 'left out', result.damaged);
      printNotes(io, 'note', result.notes);
      io.out(`imported ${figures(result.kinds)} from ${result.from} into ${result.where} (read ${result.readMs} ms, loaded ${result.loadMs} ms)`);
      // The files imported are a stale copy from now on: a process that names no store refuses them.
      const { markMovedToStore } = await import('../../store/attach.js');
      const marker = markMovedToStore(result.from, result.where);
      io.err(`pak2: the garden uses the store where [store] url names it in PAK2.toml (or PAK2_STORE_URL); without either, pak2 now refuses the files under ${result.from} (${path.basename(marker)}); pak2 store export DIR writes the records back as files`);
    });

  store
    .command('export')
    .description("write a PostgreSQL store's records into DIR (new or empty) in the seeds' exact runtime layout")
    .argument('<dir>', 'the directory to write: new, or empty')
    .option('--url <url>', 'the store: postgres://user@host:port/database (default: PAK2_STORE_URL, else [store].url)')
    .option('--json', 'print {where, to, kinds, ms} as JSON')
    .action(async (dir: string, opts: { url?: string; json?: boolean }, command: Command) => {
      const { url } = storeUrl(command, io, opts.url, lazyGarden(command, io));
      const { exportGarden } = await import('../../store/postgres/transfer.js');
      const result = await exportGarden(url, path.resolve(io.cwd, dir));
      if (opts.json) return printJson(io, result);
      io.out(`exported ${figures(result.kinds)} from ${result.where} into ${result.to} (${result.ms} ms)`);
    });

  store
    .command('status')
    .description('where the store is, its schema version against this pak2, its record counts and its problems')
    .option('--url <url>', 'the store: postgres://user@host:port/database (default: PAK2_STORE_URL, else [store].url)')
    .option('--json', 'print {store, from, schema, counts, problems} as JSON')
    .action(async (opts: { url?: string; json?: boolean }, command: Command) => {
      const garden = lazyGarden(command, io);
      let chosen: { url: string; from: string };
      try {
        chosen = storeUrl(command, io, opts.url, garden);
      } catch (error) {
        // No store named at all: the garden's records are its files.
        if (!(error instanceof UserError) || !error.message.startsWith('no PostgreSQL store named')) throw error;
        if (opts.json) return printJson(io, { store: 'files', runtime_root: garden().paths.runtimeRoot });
        io.out(`store      the garden's files, ${garden().paths.runtimeRoot} (no [store].url, no PAK2_STORE_URL)`);
        return;
      }
      await printStatus(io, command, chosen, opts.json === true, garden);
    });
}

async function printStatus(io: CliIO, command: Command, chosen: { url: string; from: string }, json: boolean, garden: () => Garden): Promise<void> {
  const { checkStore } = await import('../../doctor/store.js');
  const { coordinatorPresence, formatFinding } = await import('../../doctor/index.js');
  // The orphaned-run check needs the garden (its runtime root, its coordinator); a bare --url outside a garden goes without.
  let here: Garden | undefined;
  try {
    here = garden();
  } catch (error) {
    if (!(error instanceof UserError) || command.optsWithGlobals<{ garden?: string }>().garden) throw error;
  }
  const ctx = here ? { garden: here, presence: await coordinatorPresence(here.paths) } : undefined;
  const check = await checkStore(ctx, chosen.url, chosen.from === 'PAK2_STORE_URL' ? 'PAK2_STORE_URL' : 'store.url');
  const where = redactStoreUrl(chosen.url);
  const problems = check.problems.map(({ repair: _repair, ...finding }) => finding);
  const schema = check.inspection?.schema;
  if (json) printJson(io, { store: where, from: chosen.from, ...(schema ? { schema } : {}), ...(check.inspection?.counts ? { counts: check.inspection.counts } : {}), problems });
  else {
    const lines = [`store      ${where} (${chosen.from})`];
    if (schema) {
      const state = schema.state === 'current' ? 'current' : schema.state === 'older' ? 'older: pak2 migrates it when it next opens it' : 'newer: this pak2 refuses to open it';
      lines.push(`schema     version ${schema.database}, this pak2's ${schema.code}: ${state}`);
    }
    const c = check.inspection?.counts;
    if (c) {
      lines.push(`goals      ${c.goals} (${c.openGoals} open, ${c.goals - c.openGoals} closed; counter ${c.goalCounter})`);
      lines.push(`runs       ${c.runs} (${c.runningRuns} running)`);
      lines.push(`events     ${c.events}`);
      lines.push(`leases     ${c.activeLeases} active, ${c.endedLeases} ended`);
      lines.push(`comments   ${c.comments}`);
      lines.push(`documents  ${c.documents}`);
    }
    lines.push(`problems   ${problems.length === 0 ? 'none' : problems.length}`);
    for (const line of lines) io.out(line);
    for (const finding of problems) io.out(`  ${formatFinding(here?.paths.gardenRoot ?? io.cwd, finding)}`);
  }
  // A store this pak2 cannot open is a failure; the other problems are reported, as doctor's are.
  if (!check.inspection || schema?.state === 'newer') io.exitCode = 1;
}
