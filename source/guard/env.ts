/**
 * The environment of a guarded run's agent and verify command (seed 001,
 * `env_passthrough`). Unguarded runs inherit the coordinator's environment
 * (users' API keys must reach the CLIs); a guarded run gets only what it
 * needs: the basics of a login shell, the driver's own variables, and the
 * names the goal or `[guard]` passes through.
 */

/**
 * Always passed: what a shell and the agent CLIs need to start, and the
 * network settings of the machine (proxies, extra CA certificates), without
 * which a CLI that works unguarded would fail guarded.
 */
export const GUARD_BASE_ENV = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'TERM', 'TMPDIR', 'TZ', 'COLORTERM', 'NO_COLOR',
  'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'all_proxy',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE',
] as const;
/**
 * pak2's own hand-over to the agent (never a secret): its goal and run ids,
 * and on a runner the outbox and inbox its comments go through
 * (docs/runners/level2.md, "An agent's comments"). Passed to a guarded
 * run's agent, not to its verify command.
 */
export const PAK2_AGENT_ENV = ['PAK2_GOAL_ID', 'PAK2_RUN_ID', 'PAK2_OUTBOX', 'PAK2_INBOX'] as const;
/** Prefixes passed as well: locales and XDG directories. */
const BASE_PREFIXES = ['LC_', 'XDG_'];

/** The driver's own variables (its API key and base URL reach it; verify does not get them). */
export const DRIVER_ENV_PREFIXES: Readonly<Record<string, readonly string[]>> = {
  claude: ['ANTHROPIC_', 'CLAUDE_', 'CLAUDE_CODE_'],
  codex: ['OPENAI_', 'CODEX_'],
};

/**
 * The environment for a guarded run: `base` filtered to {@link GUARD_BASE_ENV},
 * `LC_*`, `XDG_*`, the driver's prefixes and {@link PAK2_AGENT_ENV} (when
 * `driver` is given: the agent's environment) and `passthrough` names.
 * Names in `passthrough` that are unset are absent.
 */
export function guardedEnvironment(base: NodeJS.ProcessEnv, passthrough: readonly string[], driver?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const prefixes = [...BASE_PREFIXES, ...(driver ? (DRIVER_ENV_PREFIXES[driver] ?? []) : [])];
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    const own = driver !== undefined && (PAK2_AGENT_ENV as readonly string[]).includes(name);
    if (own || (GUARD_BASE_ENV as readonly string[]).includes(name) || prefixes.some((p) => name.startsWith(p)) || passthrough.includes(name)) env[name] = value;
  }
  return env;
}
