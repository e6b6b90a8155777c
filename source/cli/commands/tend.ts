import type { Command } from 'commander';
import { TEND_TRIGGERS } from '../../contracts/index.js';
import { tendView, type TendView } from '../../snapshot/index.js';
import { setTendsPaused } from '../../submit/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/** The tend view as lines for a person: the state, each trigger, the priority, the cap and today's count, the pause. */
export function tendLines(view: TendView): string[] {
  const cap = view.daily_cap === null ? 'no daily cap' : `daily cap ${view.daily_cap}, ${view.today ?? 0} queued today (${view.day}, ${view.timezone})`;
  return [
    `automatic tends: ${view.state}${view.paused ? ` (paused by ${view.paused.by} at ${view.paused.at}; pak2 tend resume)` : ''}`,
    ...TEND_TRIGGERS.map((t) => `  ${t}: ${view.triggers[t] ? 'on' : 'off ([tend] in PAK2.toml)'}`),
    `  priority ${view.priority}; ${cap}`,
  ];
}

/**
 * `pak2 tend [status] [--json]`, `pak2 tend pause`, `pak2 tend resume`
 * (docs/automatic-tend/level2.md, "Operator control"): what automatic tends
 * do now (`[tend]`, the pause, today's count against the cap), and the
 * operator's pause, kept in <runtime-root>/tend.json across restarts.
 */
export function registerTend(program: Command, io: CliIO): void {
  const tend = program
    .command('tend')
    .description('automatic tends (a gardener goal after a failed run or for stuck goals): status; pause or resume them')
    .option('--json', 'print the status as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const view = await tendView(gardenOf(command, io));
      if (opts.json) return printJson(io, view);
      for (const line of tendLines(view)) io.out(line);
      if (view.problem) io.err(`pak2: ${view.problem}; automatic tends are held back until it is fixed or removed`);
    });
  tend
    .command('status')
    .description('what automatic tends do now: each trigger on or off, priority, the daily cap and today\'s count, the pause')
    .option('--json', 'print the status as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const view = await tendView(gardenOf(command, io));
      if (opts.json || command.parent?.opts().json) return printJson(io, view);
      for (const line of tendLines(view)) io.out(line);
      if (view.problem) io.err(`pak2: ${view.problem}; automatic tends are held back until it is fixed or removed`);
    });
  for (const [name, paused] of [['pause', true], ['resume', false]] as const) {
    tend
      .command(name)
      .description(paused ? 'queue no automatic tend until resumed (kept across restarts; each one held back is a TendWithheld event)' : 'queue automatic tends again')
      .action(async (_opts: unknown, command: Command) => {
        const result = await setTendsPaused(gardenOf(command, io), paused);
        const state = paused ? 'paused' : 'resumed';
        io.out(result.changed ? `automatic tends ${state}${result.woke ? '; the coordinator looks again now' : ''}` : `automatic tends were already ${paused ? 'paused' : 'running'}`);
      });
  }
}
