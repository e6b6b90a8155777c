/** Environment variables of the override chain (seed 002, "Driver"). */
export const ENV_DEFAULT_DRIVER = 'PAK2_DEFAULT_DRIVER';
export const ENV_DEFAULT_MODEL = 'PAK2_DEFAULT_MODEL';
export const ENV_DEFAULT_REASONING_EFFORT = 'PAK2_DEFAULT_REASONING_EFFORT';
/** The driver used when goal, environment and PAK2.toml all say nothing. */
export const FALLBACK_DRIVER = 'codex';
function pick(goalValue, envValue, tomlValue, pluginValue) {
    if (goalValue)
        return [goalValue, 'goal'];
    if (envValue)
        return [envValue, 'env'];
    if (tomlValue)
        return [tomlValue, 'toml'];
    if (pluginValue)
        return [pluginValue, 'plugin'];
    return [undefined, 'none'];
}
/**
 * The override chain goal → `PAK2_DEFAULT_*` env → `[defaults]` in PAK2.toml →
 * plugin default (seed 002, "Driver"). The driver falls back to `codex`;
 * model and reasoning effort fall back to the chosen plugin's defaults,
 * looked up through `pluginDefaults(driver)`.
 */
export function resolveSettings(goal, config, env, pluginDefaults) {
    const [driver, driverSource] = pick(goal.driver, env[ENV_DEFAULT_DRIVER], config.defaults.driver, FALLBACK_DRIVER);
    const defaults = pluginDefaults(driver);
    const [model, modelSource] = pick(goal.model, env[ENV_DEFAULT_MODEL], config.defaults.model, defaults.model);
    const [effort, effortSource] = pick(goal.reasoning_effort, env[ENV_DEFAULT_REASONING_EFFORT], config.defaults.reasoning_effort, defaults.reasoningEffort);
    return {
        driver: driver,
        model,
        reasoningEffort: effort,
        sources: { driver: driverSource, model: modelSource, reasoningEffort: effortSource },
    };
}
//# sourceMappingURL=resolve.js.map