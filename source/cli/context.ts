import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { findGardenRoot, loadGarden, type Garden } from '../garden/index.js';
import { sanitize } from '../sanitize.js';
import { attachConfiguredStore } from '../store/attach.js';
import type { CliIO } from './main.js';

/**
 * Loads the garden a command acts on: `--garden DIR` exactly, else the
 * nearest ancestor of the working directory holding PAK2.toml — except in
 * a local agent's own worktree ({@link agentGardenRoot}), where that is the
 * worktree's checkout of PAK2.toml and the garden is the one the agent runs for.
 *
 * @throws UserError naming the directory or PAK2.toml problem.
 */
export function gardenOf(command: Command, io: CliIO): Garden {
  const dir = command.optsWithGlobals<{ garden?: string }>().garden;
  const agent = dir ? undefined : agentGardenRoot(io);
  const garden = dir ? loadGarden(path.resolve(io.cwd, dir)) : agent ? loadGarden(agent) : loadGarden(io.cwd, { search: true });
  // A PostgreSQL garden's records are read and written there (docs/store/level2.md); it connects on first use.
  attachConfiguredStore(garden, io.env);
  return garden;
}

/**
 * The garden a command run by a local agent in its own worktree acts on
 * (docs/run/level2.md, "The command driver"): `PAK2_GARDEN`, when
 * `PAK2_WORKTREE` is set, the working directory is inside that worktree,
 * and the nearest PAK2.toml at or above it is the worktree's own copy (or
 * there is none). The worktree is a checkout of the garden's repository, so
 * its PAK2.toml names a runtime root inside the worktree that holds no
 * goals: `pak2 comment "$PAK2_GOAL_ID"` would find no goal there. A garden
 * of its own inside the worktree (a test fixture) or anywhere else is
 * found as usual; undefined outside a worktree run.
 */
export function agentGardenRoot(io: Pick<CliIO, 'cwd' | 'env'>): string | undefined {
  const garden = io.env.PAK2_GARDEN;
  const worktree = io.env.PAK2_WORKTREE;
  if (!garden || !worktree) return undefined;
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const here = real(io.cwd);
  const tree = real(worktree);
  if (here !== tree && !here.startsWith(`${tree}${path.sep}`)) return undefined;
  let found: string | undefined;
  try {
    found = findGardenRoot(io.cwd);
  } catch {
    return garden;
  }
  return real(found) === tree ? garden : undefined;
}

/** Prints `value` as pretty JSON, sanitized: DEL and C1 characters, which JSON.stringify leaves raw, as `\u009b` escapes (the same value). */
export function printJson(io: CliIO, value: unknown): void {
  io.out(sanitize(JSON.stringify(value, null, 2)));
}
