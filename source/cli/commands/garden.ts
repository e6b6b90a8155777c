import path from 'node:path';
import type { Command } from 'commander';
import { genesis, initGarden } from '../../lifecycle/index.js';
import { publishExport } from '../../lifecycle/publish.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 init DIR` and `pak2 genesis` (seed 002, "Startup contract"), and
 * `pak2 publish DIR` (seed 002, "Authored export contract").
 */
export function registerGardenCommands(program: Command, io: CliIO): void {
  program
    .command('init')
    .description('create a new garden in DIR (which must be new or empty)')
    .argument('<dir>', 'the directory to create the garden in')
    .option('--name <name>', '[garden].name (default: the directory name)')
    .option('--driver <driver>', '[defaults].driver: claude, codex or command', 'claude')
    .action((dir: string, opts: { name?: string; driver: string }) => {
      const root = path.resolve(io.cwd, dir);
      const written = initGarden(root, { ...(opts.name ? { name: opts.name } : {}), driver: opts.driver });
      io.out(`created garden in ${root}: ${written.join(', ')}`);
      io.out(root === path.resolve(io.cwd) ? 'next: pak2 genesis' : `next: cd ${dir} && pak2 genesis`);
    });

  program
    .command('genesis')
    .description('set up the garden: runtime directories, the gardener plant, its first goal (no dispatch)')
    .option('--json', 'print what was done as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const report = await genesis(garden, io.env);
      if (opts.json) return printJson(io, report);
      for (const warning of report.warnings) io.err(`warning: ${warning}`);
      if (!report.created.length && !report.commissioned.length && !report.queued.length) {
        io.out(`genesis: nothing to do; ${garden.paths.gardenRoot} is already set up`);
        return;
      }
      if (report.created.length) io.out(`created ${report.created.join(', ')}`);
      for (const plant of report.commissioned) io.out(`commissioned plant ${plant}`);
      for (const goal of report.queued) io.out(`queued goal ${goal}`);
      if (report.committed) io.out(`committed ${report.committed.paths.join(', ')} as ${report.committed.commit.slice(0, 12)}`);
      io.out('next: pak2 cycle');
    });
  program
    .command('publish')
    .description('write the clean authored export of pak2 (code, tests, docs, template) into DIR: new, empty, or a git checkout whose worktree it replaces; runs no git command')
    .argument('<dir>', 'the destination: a new or empty directory, or a git checkout')
    .option('--name <name>', '[garden].name of the export-local PAK2.toml (default: the directory name)')
    .option('--json', 'print what was done as JSON')
    .action((dir: string, opts: { name?: string; json?: boolean }) => {
      const report = publishExport(path.resolve(io.cwd, dir), opts.name ? { name: opts.name } : {});
      if (opts.json) return printJson(io, report);
      if (report.keptGit) io.out(`kept ${path.join(report.destination, '.git')}${report.removed.length ? `; removed ${report.removed.join(', ')}` : ''}`);
      io.out(`exported to ${report.destination}: ${report.exported.join(', ')}`);
      io.out(`wrote ${report.written.join(', ')}`);
      io.out('no git command was run; review, then commit and push yourself');
    });
}
