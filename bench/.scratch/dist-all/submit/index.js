import { GOAL_TYPES, PRIORITY_MAX, PRIORITY_MIN } from '../contracts/index.js';
import { driverProblem, getDriverPlugin, pluginDefaults } from '../driver/plugins/index.js';
import { UserError } from '../errors.js';
import { ENV_DEFAULT_DRIVER, resolveSettings } from '../garden/index.js';
import { appendConversationMessage, createGoal, latestConversation, listPlants, openConversation, readGoal, readPlant, StoreError, transitionGoal } from '../store/index.js';
/**
 * The public way to queue a goal (seed 002, submit.py `submit_goal`): checks
 * every field, then creates the goal (`queued`, GoalSubmitted). `pak2
 * submit` and the workbench's goal form both call this.
 *
 * @throws UserError naming the field: `type`, `plant` (unknown, archived, or
 *   not a valid name), `priority` (not 0–100), `driver` (unknown, or the
 *   default from PAK2_DEFAULT_DRIVER / `[defaults].driver` cannot launch),
 *   `body` (empty).
 */
export async function submitGoal(garden, input, now = new Date(), env = process.env) {
    if (!GOAL_TYPES.includes(input.type))
        throw new UserError(`type ${JSON.stringify(input.type)}: must be one of ${GOAL_TYPES.join(', ')}`);
    if (input.priority !== undefined && (!Number.isInteger(input.priority) || input.priority < PRIORITY_MIN || input.priority > PRIORITY_MAX)) {
        throw new UserError(`priority ${input.priority}: must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`);
    }
    if (!input.body.trim())
        throw new UserError('body: the task is empty');
    try {
        const plant = await readPlant(garden.paths, input.plant);
        if (plant.status !== 'active')
            throw new UserError(`plant ${input.plant}: the plant is ${plant.status}`);
    }
    catch (error) {
        if (error instanceof StoreError && (error.code === 'PLANT_NOT_FOUND' || error.code === 'INVALID_PLANT_NAME')) {
            const names = (await listPlants(garden.paths)).plants.map((p) => p.name);
            const why = error.code === 'INVALID_PLANT_NAME' ? 'not a valid plant name' : 'no such plant in this garden';
            throw new UserError(`plant ${input.plant}: ${why} (plants: ${names.join(', ') || 'none; run pak2 genesis'})`);
        }
        throw error;
    }
    if (input.driver !== undefined && !getDriverPlugin(input.driver, garden.config)) {
        throw new UserError(`driver ${input.driver}: not a driver (claude, codex, command, or a [drivers.<name>] entry in PAK2.toml)`);
    }
    // The driver this goal would really use (goal → env → PAK2.toml → default) must be able to launch.
    const settings = resolveSettings({ ...(input.driver ? { driver: input.driver } : {}) }, garden.config, env, (d) => pluginDefaults(d, garden.config));
    const problem = driverProblem(settings.driver, garden.config);
    if (problem) {
        const where = { goal: `driver ${settings.driver}`, env: ENV_DEFAULT_DRIVER, toml: `[defaults].driver in ${garden.paths.configFile}`, plugin: `driver ${settings.driver} (the built-in default)` };
        throw new UserError(`${where[settings.sources.driver] ?? 'driver'}: ${problem}`);
    }
    return createGoal(garden.paths, {
        type: input.type,
        plant: input.plant,
        body: input.body,
        ...(input.priority !== undefined ? { priority: input.priority } : {}),
        ...(input.driver ? { driver: input.driver } : {}),
        ...(input.model ? { model: input.model } : {}),
        ...(input.reasoningEffort ? { reasoning_effort: input.reasoningEffort } : {}),
        ...(input.title ? { title: input.title } : {}),
    }, now);
}
/**
 * Records an operator chat message in the current conversation (opening one
 * with started_by "operator" when there is none). The chat pane and `pak2
 * chat` share this. docs/conversation/level2.md.
 *
 * @throws UserError for an empty message.
 */
export async function sendOperatorMessage(garden, text, now = new Date()) {
    if (!text.trim())
        throw new UserError('message: empty');
    const conversation = (await latestConversation(garden.paths)) ?? (await openConversation(garden.paths, 'operator', now));
    return appendConversationMessage(garden.paths, conversation.id, { sender: 'operator', text: text.trim() }, now);
}
/**
 * Cancels a queued goal (operator cancel): queued → closed with
 * closed_reason `cancelled`. A goal already dispatched or running is not
 * cancelled here; stop the coordinator, or let the watchdog act.
 *
 * @throws UserError for an unknown id or a goal that is not queued.
 */
export async function cancelGoal(garden, id, now = new Date()) {
    let goal;
    try {
        goal = await readGoal(garden.paths, id);
    }
    catch (error) {
        if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND')
            throw new UserError(`ID ${id}: no such goal`);
        throw error;
    }
    if (goal.status !== 'queued')
        throw new UserError(`ID ${id}: the goal is ${goal.status}; only a queued goal can be cancelled`, { exitCode: 1 });
    return transitionGoal(garden.paths, id, 'closed', { closedReason: 'cancelled', now });
}
//# sourceMappingURL=index.js.map