import path from 'node:path';
import type { Command } from 'commander';
import { loadGarden, type Garden } from '../garden/index.js';
import { sanitize } from '../sanitize.js';
import { attachConfiguredStore } from '../store/attach.js';
import type { CliIO } from './main.js';

/**
 * Loads the garden a command acts on: `--garden DIR` exactly, else the
 * nearest ancestor of the working directory holding PAK2.toml.
 *
 * @throws UserError naming the directory or PAK2.toml problem.
 */
export function gardenOf(command: Command, io: CliIO): Garden {
  const dir = command.optsWithGlobals<{ garden?: string }>().garden;
  const garden = dir ? loadGarden(path.resolve(io.cwd, dir)) : loadGarden(io.cwd, { search: true });
  // A PostgreSQL garden's records are read and written there (docs/store/level2.md); it connects on first use.
  attachConfiguredStore(garden, io.env);
  return garden;
}

/** Prints `value` as pretty JSON, sanitized: DEL and C1 characters, which JSON.stringify leaves raw, as `\u009b` escapes (the same value). */
export function printJson(io: CliIO, value: unknown): void {
  io.out(sanitize(JSON.stringify(value, null, 2)));
}
