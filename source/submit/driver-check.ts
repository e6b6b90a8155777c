import { driverProblem, getDriverPlugin, pluginDefaults } from '../driver/plugins/index.js';
import { UserError } from '../errors.js';
import { ENV_DEFAULT_DRIVER, resolveSettings, type Garden } from '../garden/index.js';

/**
 * Checks the driver a goal names (`driver`, the head of the override chain)
 * and the driver it would really use (goal → PAK2_DEFAULT_DRIVER →
 * `[defaults].driver` → the built-in default): the named one must be a
 * driver, and the one used must be able to launch. `pak2 submit` and
 * `pak2 retry` check through here.
 *
 * @throws UserError naming where the driver came from: `driver D` (not a
 *   driver, or cannot launch), PAK2_DEFAULT_DRIVER, `[defaults].driver in
 *   <file>`, or the built-in default.
 */
export function checkGoalDriver(garden: Garden, driver: string | undefined, env: NodeJS.ProcessEnv): void {
  if (driver !== undefined && !getDriverPlugin(driver, garden.config)) {
    throw new UserError(`driver ${driver}: not a driver (claude, codex, command, or a [drivers.<name>] entry in PAK2.toml)`);
  }
  const settings = resolveSettings({ ...(driver ? { driver } : {}) }, garden.config, env, (d) => pluginDefaults(d, garden.config));
  const problem = driverProblem(settings.driver, garden.config);
  if (problem) {
    const where: Record<string, string> = { goal: `driver ${settings.driver}`, env: ENV_DEFAULT_DRIVER, toml: `[defaults].driver in ${garden.paths.configFile}`, plugin: `driver ${settings.driver} (the built-in default)` };
    throw new UserError(`${where[settings.sources.driver] ?? 'driver'}: ${problem}`);
  }
}
