import path from 'node:path';
/**
 * Resolves the layout of a garden. `runtimeRootSetting` is `[runtime].root`
 * from PAK2.toml, relative to the garden root (absolute is allowed); absent
 * means the legacy unified layout (runtime root = garden root).
 */
export function gardenPaths(gardenRoot, runtimeRootSetting) {
    const root = path.resolve(gardenRoot);
    const runtimeRoot = runtimeRootSetting ? path.resolve(root, runtimeRootSetting) : root;
    const eventsDir = path.join(runtimeRoot, 'events');
    return {
        gardenRoot: root,
        runtimeRoot,
        split: runtimeRoot !== root,
        configFile: path.join(root, 'PAK2.toml'),
        goalsDir: path.join(runtimeRoot, 'goals'),
        runsDir: path.join(runtimeRoot, 'runs'),
        eventsDir,
        coordinatorLog: path.join(eventsDir, 'coordinator.jsonl'),
        historyDir: path.join(runtimeRoot, 'history'),
        inboxDir: path.join(runtimeRoot, 'inbox'),
        conversationsDir: path.join(runtimeRoot, 'conversations'),
        dashboardDir: path.join(runtimeRoot, 'dashboard'),
        plantsDir: path.join(root, 'plants'),
        seedsDir: path.join(root, 'seeds'),
        motivationFile: path.join(root, 'MOTIVATION.md'),
    };
}
/** `<runtime-root>/runs/<run-id>/`. */
export function runDir(paths, runId) {
    return path.join(paths.runsDir, runId);
}
//# sourceMappingURL=paths.js.map