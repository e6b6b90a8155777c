import path from 'node:path';
import type { LaunchSpec } from './launch.js';

/**
 * What an agent may write under `[coordinator] sandbox = "bubblewrap"`
 * (docs/run/isolation.md): the runtime root read-only, its secrets hidden,
 * and inside it only the run's own directory, its worktree and the reply
 * directory writable; the garden's PAK2.toml read-only. Paths are absolute.
 */
export interface SandboxBinds {
  runtimeRoot: string;
  /** Writable inside the read-only runtime root (the run directory, the worktree, the reply directory); those outside it are left as they are. */
  writable: string[];
  /** Directories inside the runtime root the agent must not even read (the server's tokens, the webhooks' secrets): an empty tmpfs over each. They must exist. */
  hidden?: string[];
  /** Files or directories outside the runtime root bound read-only too (the garden's PAK2.toml). They must exist. */
  readOnly?: string[];
}

/**
 * The agent's command wrapped in bubblewrap (`bwrap`, Debian's
 * `bubblewrap` package): the whole file system as it is (`--dev-bind / /`),
 * the runtime root bound read-only over itself, then each writable path
 * bound over that. No new namespaces beyond the mount one: the agent keeps
 * its network, its pid space (the run's sweep still finds it) and its
 * process group. Pure: it only builds the argv.
 */
export function bubblewrapSpec(spec: LaunchSpec, binds: SandboxBinds, bwrap = 'bwrap'): LaunchSpec {
  const inside = (p: string) => p === binds.runtimeRoot || p.startsWith(`${binds.runtimeRoot}${path.sep}`);
  const args = ['--dev-bind', '/', '/', '--ro-bind', binds.runtimeRoot, binds.runtimeRoot];
  for (const p of [...new Set(binds.hidden ?? [])].filter(inside).sort()) args.push('--tmpfs', p);
  for (const p of [...new Set(binds.writable)].filter(inside).sort()) args.push('--bind', p, p);
  for (const p of [...new Set(binds.readOnly ?? [])].filter((p) => !inside(p)).sort()) args.push('--ro-bind', p, p);
  return { ...spec, command: bwrap, args: [...args, '--', spec.command, ...spec.args] };
}
