import type { Command } from 'commander';
import { age } from '../../format.js';
import { readAttention } from '../../snapshot/index.js';
import { ackAttention } from '../../submit/index.js';
import { UserError } from '../../errors.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 attention [--json]` and `pak2 ack <id...> | --all`
 * (docs/attention/level2.md): the "needs you" list, newest first, one line
 * each (`kind  id  age  summary`), or `nothing needs you`; `--json` prints
 * `{"items": [...]}`, each item as schema/attention-item.schema.json says.
 */
export function registerAttention(program: Command, io: CliIO): void {
  program
    .command('attention')
    .description('what needs you: open questions, landings awaiting review, budget stops, failed runs not yet acknowledged, blocked goals')
    .option('--json', 'print {"items": [...]}: id, kind, summary, goal, run, since')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const read = await readAttention(garden);
      for (const line of read.problems) io.err(`pak2: ${line}`);
      if (opts.json) return printJson(io, { items: read.items });
      if (read.items.length === 0) return io.out('nothing needs you');
      const now = new Date();
      for (const item of read.items) io.out(`${item.kind.padEnd(8)} ${item.id}  ${age(item.since, now)} ago  ${item.summary}`);
      io.out(`${read.items.length} need${read.items.length === 1 ? 's' : ''} you; pak2 ack ID (or --all) once looked at`);
    });

  program
    .command('ack')
    .description('acknowledge needs-you items: they leave the list (pak2 attention lists the ids)')
    .argument('[ids...]', 'item ids as pak2 attention prints them')
    .option('--all', 'every item listed now')
    .action(async (ids: string[], opts: { all?: boolean }, command: Command) => {
      if (opts.all && ids.length > 0) throw new UserError('ID: give item ids or --all, not both');
      if (!opts.all && ids.length === 0) throw new UserError('ID: give the item ids to acknowledge (pak2 attention lists them), or --all');
      const garden = gardenOf(command, io);
      const result = await ackAttention(garden, opts.all ? 'all' : ids);
      if (result.acked.length === 0 && result.already.length === 0) return io.out('nothing needs you');
      for (const id of result.acked) io.out(`acknowledged ${id}`);
      for (const id of result.already) io.out(`${id}: already acknowledged`);
    });
}
