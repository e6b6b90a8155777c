import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isTerminalRunStatus, REFLECTION_REQUIRED_TYPES, } from '../contracts/index.js';
import { runDir } from '../garden/index.js';
import { appendEvent, appendJsonLine, closeRun, readPlant, readRun, runEventsFile, StoreError } from '../store/index.js';
import { launch } from './launch.js';
import { addCosts } from './pricing.js';
import { getDriverPlugin } from './plugins/index.js';
import { buildPrompt, REFLECTION_PROMPT } from './prompt.js';
/** The line the driver writes into events.jsonl before the reflection continuation's output. */
export const REFLECTION_MARKER_TYPE = 'pak2.reflection';
/** The type of the JSON error line the driver writes when it cannot launch the agent. */
export const DRIVER_ERROR_TYPE = 'error';
/** File in the run directory that keeps the agent's stderr. */
export const RUN_STDERR_FILE = 'stderr.log';
/** File in the run directory naming the live agent process, so a later coordinator can reclaim an orphan. */
export const RUN_PROCESS_FILE = 'process.json';
function writeProcessRecord(dir, record) {
    try {
        fs.writeFileSync(path.join(dir, RUN_PROCESS_FILE), `${JSON.stringify(record, null, 2)}\n`);
    }
    catch {
        // best effort: without it only the watchdog can reclaim the run
    }
}
/** Records a stdout line that is not a JSON object as `{"type":"text","text":…}`, so events.jsonl stays JSON lines. */
export function wrapNonJsonLine(line) {
    const trimmed = line.trim();
    if (trimmed.startsWith('{')) {
        try {
            const value = JSON.parse(trimmed);
            if (typeof value === 'object' && value !== null && !Array.isArray(value))
                return trimmed;
        }
        catch {
            // not JSON: wrapped below
        }
    }
    return JSON.stringify({ type: 'text', text: line });
}
/** Splits events.jsonl into the main phase's and the reflection phase's parsed JSON lines. */
export function readPhases(eventsFile) {
    let text = '';
    try {
        text = fs.readFileSync(eventsFile, 'utf8');
    }
    catch {
        return { main: [], reflection: [] };
    }
    const main = [];
    const reflection = [];
    let target = main;
    for (const line of text.split('\n')) {
        if (!line.trim())
            continue;
        let value;
        try {
            value = JSON.parse(line);
        }
        catch {
            continue;
        }
        if (value?.type === REFLECTION_MARKER_TYPE) {
            target = reflection;
            continue;
        }
        target.push(value);
    }
    return { main, reflection };
}
function stoppedStatus(stop) {
    if (stop === 'timeout')
        return { status: 'timeout', reason: 'timeout' };
    if (stop === 'coordinator_stopped')
        return { status: 'killed', reason: 'coordinator_stopped' };
    return { status: 'killed', reason: 'killed' };
}
/**
 * Seconds left of the run's wall-time limit (`[coordinator].run_timeout_seconds`),
 * counted from the run record's started_at; at least 1 ms.
 */
function remainingMs(run, timeoutSeconds, now) {
    return Math.max(1, Date.parse(run.started_at) + timeoutSeconds * 1000 - now.getTime());
}
/**
 * The production dispatch function (seed 002, "Driver"): builds the prompt,
 * launches the goal's driver plugin on the opened run, reads cost, status,
 * session id and final text from the stream, solicits reflection by
 * continuing the same session for build / fix / evaluate / tend, and closes
 * the run. Resolves when the run is closed (or was closed by someone else,
 * e.g. the watchdog). A missing CLI or unknown driver writes a JSON error line
 * to events.jsonl and closes the run as `failure` / `launch_failed` with cost
 * unknown.
 *
 * Terminal statuses it produces: success, failure (agent_error, nonzero_exit,
 * launch_failed, reflection_failed), zero_output, timeout, killed
 * (coordinator_stopped; `killed` by the watchdog is closed by the coordinator).
 *
 * @returns the closed run record, or undefined when another closer won.
 */
export async function dispatch(goal, runId, ctx) {
    const now = ctx.now ?? (() => new Date());
    const { paths, config } = ctx.garden;
    const run = await readRun(paths, runId);
    const dir = runDir(paths, runId);
    const eventsFile = runEventsFile(paths, runId);
    const close = async (input) => {
        try {
            return await closeRun(paths, runId, goal.type, { by: 'driver', ...input }, now());
        }
        catch (error) {
            // The watchdog (or the operator) closed it first: the terminal record stands.
            if (error instanceof StoreError && error.code === 'INVALID_TRANSITION')
                return undefined;
            throw error;
        }
    };
    const failLaunch = async (message) => {
        await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message });
        return close({ status: 'failure', failureReason: 'launch_failed', cost: { source: 'unknown' }, errorText: message });
    };
    const stderrLog = path.join(dir, RUN_STDERR_FILE);
    const plugin = getDriverPlugin(run.driver, config);
    if (!plugin)
        return failLaunch(`unknown driver ${JSON.stringify(run.driver)}: use claude, codex, command, or configure [drivers.${run.driver}].command in PAK2.toml`);
    let prompt;
    try {
        const plant = await readPlant(paths, run.plant);
        prompt = buildPrompt({ paths, goal, runId, plant, runDirectory: dir, workingDirectory: paths.gardenRoot });
    }
    catch (error) {
        return failLaunch(`cannot build the prompt: ${error.message}`);
    }
    await fsp.writeFile(path.join(dir, 'prompt.md'), prompt);
    const launchCtx = {
        prompt,
        model: run.model,
        reasoningEffort: run.reasoning_effort,
        runDir: dir,
        cwd: paths.gardenRoot,
        configCommand: config.drivers[run.driver]?.command,
    };
    const runPhase = async (phase, sessionId) => {
        let spec;
        try {
            spec = phase === 'main' ? plugin.buildLaunchCommand(launchCtx) : plugin.buildReflectionCommand({ ...launchCtx, sessionId });
        }
        catch (error) {
            return error.message;
        }
        const result = await launch(spec, {
            cwd: paths.gardenRoot,
            stdin: phase === 'main' ? prompt : REFLECTION_PROMPT,
            stdoutFile: eventsFile,
            timeoutMs: remainingMs(run, config.coordinator.runTimeoutSeconds, now()),
            mapLine: plugin.mapLine ? (line) => plugin.mapLine(line) : wrapNonJsonLine,
            onStderr: (chunk) => {
                // Kept with the run, and forwarded (seed 002: to the coordinator's stderr).
                fs.appendFileSync(stderrLog, chunk);
                if (ctx.onStderr)
                    ctx.onStderr(runId, chunk);
                else
                    process.stderr.write(chunk);
            },
            onStart: (handle) => {
                if (handle.pid)
                    writeProcessRecord(dir, { pid: handle.pid, mark: handle.mark, host: os.hostname(), phase, started_at: now().toISOString() });
                ctx.onRunStart?.(runId, handle);
            },
            ...(ctx.env ? { env: ctx.env } : {}),
        });
        ctx.onRunEnd?.(runId);
        if (result.spawnError) {
            const hint = plugin.installHint ? ` (install: ${plugin.installHint})` : '';
            return `cannot start ${spec.command}: ${result.spawnError}${hint}`;
        }
        return result;
    };
    const main = await runPhase('main');
    if (typeof main === 'string')
        return failLaunch(main);
    if (isTerminalRunStatus((await readRun(paths, runId)).status))
        return undefined;
    const parsed = plugin.parseEvents(readPhases(eventsFile).main, { phase: 'main', runDir: dir, model: run.model });
    const base = {
        cost: parsed.cost,
        ...(parsed.finalText !== undefined ? { finalText: parsed.finalText } : {}),
        ...(parsed.numTurns !== undefined ? { numTurns: parsed.numTurns } : {}),
        ...(parsed.sessionId ? { sessionId: parsed.sessionId } : {}),
        exitCode: main.exitCode,
    };
    if (main.stoppedBy) {
        const { status, reason } = stoppedStatus(main.stoppedBy);
        return close({ ...base, status, failureReason: reason, ...(reason === 'coordinator_stopped' ? { by: 'coordinator' } : {}) });
    }
    const verdict = judge(parsed, main);
    if (verdict.status !== 'success')
        return close({ ...base, ...verdict, ...(parsed.errorText ? { errorText: parsed.errorText } : {}) });
    if (!REFLECTION_REQUIRED_TYPES.includes(goal.type))
        return close({ ...base, status: 'success' });
    const reflection = await solicitReflection(ctx, plugin, runId, goal, parsed, runPhase, eventsFile, dir, run.model);
    const cost = plugin.combineCosts ? plugin.combineCosts(parsed.cost, reflection.cost) : addCosts(parsed.cost, reflection.cost);
    if (reflection.stoppedBy) {
        const { status, reason } = stoppedStatus(reflection.stoppedBy);
        return close({ ...base, cost, status, failureReason: reason, ...(reason === 'coordinator_stopped' ? { by: 'coordinator' } : {}) });
    }
    if (!reflection.text)
        return close({ ...base, cost, status: 'failure', failureReason: 'reflection_failed', errorText: reflection.error ?? 'the reflection turn returned no text' });
    await appendEvent(paths, { type: 'ReflectionRecorded', run: runId, goal: goal.id, plant: run.plant }, now());
    return close({ ...base, cost, status: 'success', reflection: reflection.text });
}
/** The run's verdict from the agent's own report and its exit. */
function judge(parsed, result) {
    if (parsed.status === 'failure' && parsed.errorText)
        return { status: 'failure', failureReason: 'agent_error' };
    if (result.exitCode !== 0)
        return { status: 'failure', failureReason: parsed.errorText ? 'agent_error' : 'nonzero_exit' };
    if (!parsed.producedOutput)
        return { status: 'zero_output', failureReason: 'zero_output' };
    if (parsed.status === 'failure')
        return { status: 'failure', failureReason: 'agent_error' };
    return { status: 'success' };
}
async function solicitReflection(ctx, plugin, runId, goal, parsed, runPhase, eventsFile, dir, model) {
    const { paths } = ctx.garden;
    await appendJsonLine(eventsFile, { type: REFLECTION_MARKER_TYPE, session_id: parsed.sessionId ?? null });
    await appendEvent(paths, { type: 'ReflectionRequested', run: runId, goal: goal.id }, (ctx.now ?? (() => new Date()))());
    const result = await runPhase('reflection', parsed.sessionId);
    if (typeof result === 'string') {
        await appendJsonLine(eventsFile, { type: DRIVER_ERROR_TYPE, source: 'pak2', message: result });
        return { error: result };
    }
    if (result.stoppedBy)
        return { stoppedBy: result.stoppedBy };
    const reflected = plugin.parseEvents(readPhases(eventsFile).reflection, { phase: 'reflection', runDir: dir, model });
    const text = result.exitCode === 0 && reflected.status === 'success' ? reflected.finalText?.trim() : undefined;
    return { ...(text ? { text } : {}), cost: reflected.cost, ...(reflected.errorText ? { error: reflected.errorText } : {}) };
}
//# sourceMappingURL=dispatch.js.map