import type { Command } from 'commander';
import type { CliIO } from '../main.js';

/** `pak2 comment` (docs/runners/level2.md) — being built in this change. */
export function registerComment(program: Command, _io: CliIO): void {
  program.command('comment').description('(being built)');
}
