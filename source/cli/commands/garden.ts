import path from 'node:path';
import type { Command } from 'commander';
import { genesis, initOrAdopt } from '../../lifecycle/index.js';
import { publishExport } from '../../lifecycle/publish.js';
import { shellWord } from '../../shell-word.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/** The paths genesis committed, for a person: each one, or past five, by top folder with a count (`PAK2.toml, .pak2/ (12 files)`). */
function describeCommitted(paths: string[]): string {
  if (paths.length <= 5) return paths.join(', ');
  const groups = new Map<string, number>();
  for (const p of paths) {
    const top = p.includes('/') ? `${p.split('/')[0]}/` : p;
    groups.set(top, (groups.get(top) ?? 0) + 1);
  }
  return [...groups].map(([top, n]) => (top.endsWith('/') ? `${top} (${n} file${n === 1 ? '' : 's'})` : top)).join(', ');
}

/**
 * `pak2 init DIR` and `pak2 genesis` (seed 002, "Startup contract"), and
 * `pak2 publish DIR` (seed 002, "Authored export contract").
 */
export function registerGardenCommands(program: Command, io: CliIO): void {
  program
    .command('init')
    .description('create a garden in DIR (default .): a new or empty directory gets the whole template; your own git repository is adopted (PAK2.toml, .pak2/, .runtime/ ignored)')
    .argument('[dir]', 'the directory: new, empty, or the top of your git repository', '.')
    .option('--name <name>', '[garden].name (default: the directory name)')
    .option('--driver <driver>', '[defaults].driver: claude, codex or command', 'claude')
    .action(async (dir: string, opts: { name?: string; driver: string }) => {
      const root = path.resolve(io.cwd, dir);
      const report = await initOrAdopt(root, { ...(opts.name ? { name: opts.name } : {}), driver: opts.driver }, io.env);
      if (report.mode === 'fresh') {
        io.out(`created garden in ${root}: ${report.written.join(', ')}`);
      } else {
        io.out(`adopted the git repository ${root}: wrote ${report.written.join(', ')}`);
        const kept = `no file git tracks was changed${report.uncommitted ? `; your ${report.uncommitted} uncommitted change(s) are as they were` : ''}`;
        if (report.ignore.added) io.out(`ignored .runtime/ with ${report.ignore.pattern} in ${path.relative(root, report.ignore.file).startsWith('..') ? report.ignore.file : path.relative(root, report.ignore.file)}; ${kept}`);
        else io.out(`.runtime/ is ignored by git already${report.ignore.by ? ` (${report.ignore.by})` : ''}; ${kept}`);
      }
      // As typed, quoted for the shell (`cd 'my garden'`); a name starting with `-` would be an option to cd.
      io.out(root === path.resolve(io.cwd) ? 'next: pak2 genesis' : `next: cd ${shellWord(dir.startsWith('-') ? `./${dir}` : dir)} && pak2 genesis`);
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
      if (report.committed) io.out(`committed ${describeCommitted(report.committed.paths)} as ${report.committed.commit.slice(0, 12)}`);
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
