import type { Command } from 'commander';
import type { CliIO } from '../main.js';

/** `pak2 runner` (docs/runners/level2.md) — being built in this change. */
export function registerRunner(program: Command, _io: CliIO): void {
  program.command('runner').description('(being built)');
}
