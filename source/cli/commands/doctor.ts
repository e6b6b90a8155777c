import path from 'node:path';
import type { Command } from 'commander';
import { printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 doctor [--fix] [--json]`: checks the garden and prints one line per
 * finding (file, field, the fix); exit 0 when clean, 1 when anything is
 * found (after `--fix`: when anything remains). docs/doctor/level2.md.
 */
export function registerDoctor(program: Command, io: CliIO): void {
  program
    .command('doctor')
    .description('check the garden (config, goals, ledger, runs, leases, plants, events, lock, orphan processes, runtime git); --fix makes the safe fixes')
    .option('--fix', 'make the safe fixes (never deletes a record: damaged files are moved aside under <runtime-root>/doctor/)')
    .option('--json', 'print {findings: [{check, file, field?, message, fix?, fixed?}]}')
    .action(async (opts: { fix?: boolean; json?: boolean }, command: Command) => {
      // Loaded only when doctor runs, so other commands start without it.
      const { doctorFailed, formatReport, runDoctor } = await import('../../doctor/index.js');
      const dir = command.optsWithGlobals<{ garden?: string }>().garden;
      const report = await runDoctor({
        dir: dir ? path.resolve(io.cwd, dir) : io.cwd,
        search: !dir,
        fix: Boolean(opts.fix),
        env: io.env,
      });
      if (opts.json) printJson(io, { findings: report.findings });
      else for (const line of formatReport(report)) io.out(line);
      if (doctorFailed(report)) io.exitCode = 1;
    });
}
