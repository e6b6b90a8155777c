import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { resolveSettings } from '../garden/index.js';
import { driverProblem, getDriverPlugin, pluginDefaults } from '../driver/plugins/index.js';
import { appendEvent, commissionPlant, createGoal, listGoalIds, readPlant, StoreError } from '../store/index.js';
import { UserError } from '../errors.js';
import { findExecutable } from './which.js';
/** The plant genesis commissions, and its seed. */
export const GARDENER = 'gardener';
/** The body of the gardener's first goal. */
export const FIRST_GARDENER_GOAL = `Survey this garden and start your memory.

1. Read MOTIVATION.md and look over the repository: its layout, how it builds and tests, what state it is in.
2. Write plants/gardener/memory/MEMORY.md: what this garden is, how to work in it, and what you would do next.
3. Finish with a short report for the operator: what you found, and the three goals you would queue next.`;
/**
 * Sets up a fresh garden (seed 002, "Startup contract": `pak2 genesis`):
 * checks prerequisites, creates the runtime directories, commissions the
 * gardener from seeds/gardener.md and queues its first goal, then stops
 * before dispatch. Running it again changes nothing.
 *
 * @throws UserError when the default driver's CLI is missing (with how to install it) or the gardener seed is absent.
 */
export async function genesis(garden, env = process.env) {
    const { paths, config } = garden;
    const report = { created: [], commissioned: [], queued: [], warnings: [] };
    if (!findExecutable('git', env))
        report.warnings.push('git is not on PATH: pak2 records runtime history with git (install git)');
    const settings = resolveSettings({}, config, env, (d) => pluginDefaults(d, config));
    const problem = driverProblem(settings.driver, config);
    if (problem)
        throw new UserError(`${paths.configFile}: the default driver (from ${settings.sources.driver}): ${problem}`, { exitCode: 1 });
    const plugin = getDriverPlugin(settings.driver, config);
    const executable = config.drivers[settings.driver]?.command?.[0] ?? plugin.executable;
    if (executable && !findExecutable(executable, env)) {
        throw new UserError(`the default driver ${settings.driver} needs \`${executable}\`, which is not on PATH`, { hint: `install it: ${plugin.installHint}`, exitCode: 1 });
    }
    if (!fs.existsSync(path.join(paths.seedsDir, `${GARDENER}.md`)) && !fs.existsSync(path.join(paths.plantsDir, GARDENER, 'meta.json'))) {
        throw new UserError(`${path.join(paths.seedsDir, `${GARDENER}.md`)}: missing; genesis commissions the gardener from it`, { hint: 'pak2 init writes it; or copy seeds/ from the pak2 package' });
    }
    for (const dir of [paths.runtimeRoot, paths.goalsDir, paths.runsDir, paths.eventsDir, paths.inboxDir, paths.conversationsDir, paths.plantsDir]) {
        if (!fs.existsSync(dir)) {
            await fsp.mkdir(dir, { recursive: true });
            report.created.push(path.relative(paths.gardenRoot, dir) || '.');
        }
    }
    try {
        await readPlant(paths, GARDENER);
    }
    catch (error) {
        if (!(error instanceof StoreError && error.code === 'PLANT_NOT_FOUND'))
            throw error;
        try {
            await commissionPlant(paths, GARDENER, GARDENER, { description: 'looks after the garden' });
        }
        catch (commissionError) {
            if (commissionError instanceof StoreError && commissionError.code === 'SEED_NOT_FOUND') {
                throw new UserError(`${commissionError.message}; genesis needs seeds/gardener.md (pak2 init writes it)`);
            }
            throw commissionError;
        }
        report.commissioned.push(GARDENER);
    }
    if ((await listGoalIds(paths)).length === 0) {
        const goal = await createGoal(paths, { type: 'tend', plant: GARDENER, priority: 60, title: 'survey the garden', body: FIRST_GARDENER_GOAL });
        report.queued.push(goal.id);
    }
    if (report.created.length || report.commissioned.length || report.queued.length) {
        await appendEvent(paths, { type: 'GardenGenesis', detail: [...report.commissioned.map((p) => `commissioned ${p}`), ...report.queued.map((g) => `queued ${g}`)].join('; ') || 'runtime directories created' });
    }
    return report;
}
//# sourceMappingURL=genesis.js.map