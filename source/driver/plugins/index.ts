import type { GardenConfig } from '../../garden/index.js';
import { claudePlugin } from './claude.js';
import { codexPlugin } from './codex.js';
import { commandPlugin } from './command.js';
import type { DriverPlugin } from './types.js';

export type { DriverPlugin, LaunchContext, ParsedStream, ParseContext, SpendMeter } from './types.js';
export { claudePlugin } from './claude.js';
export { codexPlugin, CODEX_SIDECARS } from './codex.js';
export { commandPlugin } from './command.js';

/** Built-in driver names. Any other name with `[drivers.<name>].command` runs through the command plugin. */
export const BUILTIN_DRIVERS = ['claude', 'codex', 'command'] as const;

/**
 * Looks up a driver plugin (seed 002, `get_driver_plugin`): `claude`,
 * `codex`, `command`, or any name configured with `[drivers.<name>].command`.
 *
 * @returns the plugin, or undefined for an unknown driver.
 */
export function getDriverPlugin(name: string, config?: Pick<GardenConfig, 'drivers'>): DriverPlugin | undefined {
  if (name === 'claude') return claudePlugin;
  if (name === 'codex') return codexPlugin;
  if (name === 'command') return commandPlugin('command');
  if (config?.drivers[name]?.command) return commandPlugin(name);
  return undefined;
}

/**
 * The executor of a run as seed 001's `execution_envelope.json` names it:
 * `name` is the display label (the run's driver as the garden names it) and,
 * when that label is not itself an adapter, `kind` names the adapter
 * underneath (`[drivers.myagent]` runs through `command`). Without a label
 * (`claude`, `codex`, `command`, also when `[drivers.claude]` only swaps the
 * executable) `name` is the adapter and `kind` is absent. A driver no
 * adapter can run has no `kind` either.
 */
export function executorIdentity(driver: string, config?: Pick<GardenConfig, 'drivers'>): { name: string; kind?: (typeof BUILTIN_DRIVERS)[number] } {
  if ((BUILTIN_DRIVERS as readonly string[]).includes(driver)) return { name: driver };
  return getDriverPlugin(driver, config) ? { name: driver, kind: 'command' } : { name: driver };
}

/** Plugin defaults for the override chain; empty for an unknown driver. */
export function pluginDefaults(name: string, config?: Pick<GardenConfig, 'drivers'>): { model?: string; reasoningEffort?: string } {
  const plugin = getDriverPlugin(name, config);
  return plugin ? { ...(plugin.defaultModel ? { model: plugin.defaultModel } : {}), ...(plugin.defaultReasoningEffort ? { reasoningEffort: plugin.defaultReasoningEffort } : {}) } : {};
}

/**
 * Why a driver name cannot launch anything, or undefined when it can: an
 * unknown name, or a command driver with no `[drivers.<name>].command`.
 */
export function driverProblem(name: string, config: Pick<GardenConfig, 'drivers'>): string | undefined {
  const plugin = getDriverPlugin(name, config);
  if (!plugin) return `unknown driver ${JSON.stringify(name)} (use claude, codex, command, or add [drivers.${name}].command to PAK2.toml)`;
  if (!plugin.executable && !config.drivers[name]?.command?.length) return `driver ${name} has no command: set [drivers.${name}].command in PAK2.toml`;
  return undefined;
}
