import type { Command } from 'commander';
import { BUDGET_CAP_KEYS } from '../../contracts/index.js';
import { table } from '../../format.js';
import { budgetReport } from '../../snapshot/index.js';
import { setBudgetCap } from '../../submit/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

const usd = (n: number | null) => (n === null ? '-' : `$${n.toFixed(2)}`);

/**
 * `pak2 budget [--json]` and `pak2 budget set <cap> <usd|off>`
 * (docs/budget/level2.md): every cap with what was spent and reserved
 * against it and what is left, the live runs' spend so far, the goals a cap
 * holds; and a cap set over PAK2.toml's `[budget]` (budget.json), which
 * wakes the running coordinator so goals it no longer holds dispatch.
 */
export function registerBudget(program: Command, io: CliIO): void {
  const budget = program
    .command('budget')
    .description('budget caps in USD: what each allows, what is spent and reserved, what is left; set raises or lowers one')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const report = await budgetReport(garden);
      if (opts.json) return printJson(io, report);
      const rows = report.caps.map((c) => [c.key + (c.scope ? ` (${c.scope})` : ''), usd(c.usd), c.from === 'none' ? '' : c.from === 'set' && c.usd === null ? 'off (set)' : c.from, c.cap === 'run' || c.cap === 'goal' ? '' : usd(c.spent_usd), c.reserved_usd ? usd(c.reserved_usd) : '', c.left_usd === null ? '' : usd(c.left_usd)]);
      io.out(`budget · ${report.day} (${report.timezone}) · month ${report.month}`);
      io.out(table(['CAP', 'USD', 'FROM', 'SPENT', 'RESERVED', 'LEFT'], rows));
      for (const l of report.live) io.out(`live ${l.run}: ${usd(l.usd)} so far (${l.source})`);
      for (const h of report.held) io.out(`held ${h.goal}: ${h.reason}`);
      if (report.unknown_runs.count) io.out(`${report.unknown_runs.count} run(s) of unknown cost this month, each counted as ${usd(report.unknown_runs.counted_usd_each)} ([budget] unknown_run_usd)`);
      if (report.problem) io.err(`pak2: ${report.problem}; the coordinator dispatches nothing until it is fixed or removed`);
      if (report.caps.every((c) => c.usd === null && c.from === 'none')) io.out('no caps: set them under [budget] in PAK2.toml, or: pak2 budget set garden_day_usd 20');
    });

  budget
    .command('set')
    .description('set a cap in USD over PAK2.toml (kept in <runtime-root>/budget.json), lift it with off, or go back to PAK2.toml\'s with config')
    .argument('<cap>', `one of ${BUDGET_CAP_KEYS.join(', ')}`)
    .argument('<usd>', 'an amount in USD greater than 0, off, or config')
    .action(async (cap: string, amount: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const set = await setBudgetCap(garden, cap, amount);
      const before = set.before === null || set.before === undefined ? 'none' : usd(set.before);
      io.out(`${set.key}: ${set.after === null ? 'none' : usd(set.after)} (was ${before})${set.woke ? '; the coordinator looks again now' : ''}`);
    });
}
