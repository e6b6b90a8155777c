/**
 * The run record tells the truth about what the real CLIs did, through the
 * coordinator and the real driver (stdout into events.jsonl itself, the
 * stream follower, the watchdog's progress and open-tool rules).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { GoalRecord, RunRecord } from '../../source/contracts/index.js';
import { Coordinator, reconcile } from '../../source/coordinator/index.js';
import { dispatch, RUN_PROCESS_FILE, type RunProcessRecord } from '../../source/driver/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { isAlive, readEventLog, waitFor } from '../support/garden.js';
import { startModelServer, type ModelScript, type ModelServer } from '../support/model-server.js';
import { cycleUntilIdle, makeAgentGarden, processesWith, streamOf, type AgentGarden, codexScriptedConfig } from './agents.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let server: ModelServer | undefined;
let serverChild: ChildProcess | undefined;
let garden: AgentGarden | undefined;
const tempDirs: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (serverChild && serverChild.exitCode === null && serverChild.signalCode === null) {
    const exited = new Promise((resolve) => serverChild!.once('exit', resolve));
    serverChild.stdin?.end(); // it closes its server and exits at end of stdin
    const timer = setTimeout(() => serverChild?.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  }
  serverChild = undefined;
  garden?.cleanup();
  garden = undefined;
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * The scripted model server in a process of its own, so it keeps answering
 * while this test blocks its own event loop (the coordinator's, in-process).
 */
async function startModelServerProcess(script: ModelScript): Promise<string> {
  // The script goes in a file: a megabyte-sized answer does not fit in the environment.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-e2e-model-server-'));
  tempDirs.push(dir);
  const scriptFile = path.join(dir, 'script.json');
  fs.writeFileSync(scriptFile, JSON.stringify(script));
  const code = [
    `import fs from 'node:fs';`,
    `import { startModelServer } from ${JSON.stringify(path.join(ROOT, 'test/support/model-server.ts'))};`,
    'const s = await startModelServer(JSON.parse(fs.readFileSync(process.env.PAK2_TEST_SCRIPT, "utf8")));',
    'process.stdout.write(s.url + "\\n");',
    'process.stdin.resume();',
    'process.stdin.on("end", async () => { await s.close(); process.exit(0); });',
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: ROOT,
    env: { ...process.env, PAK2_TEST_SCRIPT: scriptFile },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  serverChild = child;
  return new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0]!;
      if (out.includes('\n')) resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`model server process exited ${code}`)));
  });
}

/** claude's environment: the scripted server, an isolated config dir and HOME, no retries. */
function claudeEnv(url: string, extra: Record<string, string> = {}) {
  return (stateDir: string): NodeJS.ProcessEnv => ({
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'test-key',
    CLAUDE_CONFIG_DIR: stateDir,
    // A private HOME: the Bash tool's shell snapshot and locks live under it.
    HOME: stateDir,
    CLAUDE_CODE_MAX_RETRIES: '0',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...extra,
  });
}

/** A codex garden whose provider is the scripted server (as in codex.test.ts). */
async function codexGarden(url: string, coordinator: Record<string, number>): Promise<AgentGarden> {
  return makeAgentGarden(
    'codex',
    coordinator,
    (stateDir) => {
      fs.writeFileSync(
        path.join(stateDir, 'config.toml'),
        codexScriptedConfig(url),
      );
      return { CODEX_HOME: stateDir, HOME: stateDir, PAK2_TEST_MODEL_KEY: 'test-key' };
    },
    'gpt-5',
  );
}

/**
 * Runs the in-process coordinator until `goalId` is closed, then stops it (a
 * failed run's automatic tend, if already dispatched, is stopped with it).
 */
async function cycleUntilClosed(g: AgentGarden, goalId: string, timeoutMs = 25_000): Promise<void> {
  const coordinator = new Coordinator({ garden: g, env: g.env, onStderr: () => undefined });
  await coordinator.start();
  try {
    await waitFor(async () => (await readGoal(g.paths, goalId)).status === 'closed', timeoutMs);
  } finally {
    await coordinator.stop();
  }
}

function processRecord(g: AgentGarden, runId: string): RunProcessRecord {
  return JSON.parse(fs.readFileSync(path.join(g.paths.runsDir, runId, RUN_PROCESS_FILE), 'utf8')) as RunProcessRecord;
}

/** Every process of the run is gone: its recorded pid, anything carrying its run mark or the test's CLI state dir. */
async function expectNoProcessLeft(g: AgentGarden, runId: string): Promise<void> {
  const proc = processRecord(g, runId);
  expect(proc.pid).toBeGreaterThan(0);
  await waitFor(() => !isAlive(proc.pid) && processesWith(proc.mark).length === 0 && processesWith(g.stateDir).length === 0, 10_000).catch(() => undefined);
  expect(isAlive(proc.pid)).toBe(false);
  expect(processesWith(proc.mark)).toEqual([]);
  expect(processesWith(g.stateDir)).toEqual([]);
}

function readMeta(g: AgentGarden, runId: string): RunRecord & { watchdog?: { limit: string; limit_seconds: number; silent_seconds: number; last_event: string } } {
  return JSON.parse(fs.readFileSync(path.join(g.paths.runsDir, runId, 'meta.json'), 'utf8')) as RunRecord;
}

/** Blocks this thread (and so the in-process coordinator and its stream follower) for at least `minMs`, until `done()` or `maxMs`. */
function busyBlock(minMs: number, maxMs: number, done: () => boolean): number {
  const t0 = Date.now();
  for (;;) {
    const elapsed = Date.now() - t0;
    if (elapsed >= maxMs || (elapsed >= minMs && done())) return elapsed;
    for (let i = 0; i < 1e5; i++); // spin
  }
}

describe('the run record tells the truth about the real CLIs', () => {
  it("claude's multi-megabyte answer is recorded whole while the coordinator is busy", async () => {
    // ~1.5 MB of words and line breaks; claude prints it in the assistant event and again in the result event.
    const text = Array.from({ length: 15_000 }, (_, i) => `line ${String(i).padStart(5, '0')} ${'x'.repeat(88)}`).join('\n');
    expect(text.length).toBeGreaterThan(1_400_000);
    const url = await startModelServerProcess({ turns: [{ text }] });
    const g = (garden = await makeAgentGarden('claude', {}, claudeEnv(url)));
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Answer at length.' });
    const runId = `${goal.id}-r1`;
    const eventsFile = path.join(g.paths.runsDir, runId, 'events.jsonl');

    const ctx = { garden: g, env: g.env, onStderr: () => undefined };
    const first = await reconcile({ garden: g, dispatch: (gl: GoalRecord, id: string) => dispatch(gl, id, ctx), env: g.env });
    expect(first.dispatched).toEqual([runId]);

    // claude is up once its init line is in events.jsonl; from then on, starve the coordinator's reader.
    await waitFor(() => fs.existsSync(eventsFile) && fs.statSync(eventsFile).size > 0, 20_000);
    const { pid } = processRecord(g, runId);
    const hasResult = () => fs.readFileSync(eventsFile, 'utf8').includes('"type":"result"');
    const blockedMs = busyBlock(3_000, 20_000, () => !isAlive(pid));
    // The whole answer reached the file while this process (its only reader) was blocked, and claude had exited.
    expect(blockedMs).toBeGreaterThanOrEqual(3_000);
    expect(blockedMs).toBeLessThan(20_000); // claude exited (a zombie nobody could reap yet) inside the block
    expect(hasResult()).toBe(true);
    expect(isAlive(pid)).toBe(false);
    expect(fs.statSync(eventsFile).size).toBeGreaterThan(2 * text.length);

    await Promise.all(first.pending);
    const second = await reconcile({ garden: g, dispatch: (gl: GoalRecord, id: string) => dispatch(gl, id, ctx), env: g.env });
    expect(second.closed).toEqual([{ goal: goal.id, reason: 'success' }]);

    const run = await readRun(g.paths, runId);
    expect(run.status).toBe('success');
    expect(run.failure_reason).toBeUndefined();
    const stream = streamOf(g, runId);
    const results = stream.filter((e) => e.type === 'result');
    expect(results).toHaveLength(1);
    expect((results[0]!.result as string).length).toBe(text.length);
    expect(results[0]!.result).toBe(text);
    expect(run.outputs?.final_text?.length).toBe(text.length);
    expect(run.outputs?.final_text).toBe(text);
    expect(run.cost?.source).toBe('provider');
    expect(run.cost?.usd).toBeCloseTo(results[0]!.total_cost_usd as number, 10);
    expect(run.session_id).toBeTruthy();
    expect(run.session_id).toBe(results[0]!.session_id);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    await expectNoProcessLeft(g, runId);
  });

  it('the real claude running its Bash tool `sleep N` under a shorter watchdog is not killed while the tool is open', async () => {
    server = await startModelServer({ turns: [{ toolCall: { shell: 'sleep 5' } }, { text: 'done' }] });
    const g = (garden = await makeAgentGarden('claude', { watchdog_seconds: 2, tool_silence_seconds: 30, interval_seconds: 1 }, claudeEnv(server.url)));
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Sleep a little, then say done.' });
    const runId = `${goal.id}-r1`;
    await cycleUntilIdle(g);

    const run = readMeta(g, runId);
    expect(run.status).toBe('success');
    expect(run.outputs?.final_text).toBe('done');
    expect(run.watchdog).toBeUndefined();
    expect(readEventLog(g).filter((e) => e.type === 'WatchdogKilled')).toEqual([]);

    // The tool really ran, and the silence while it was open was longer than watchdog_seconds.
    const stream = streamOf(g, runId);
    const blocksOf = (e: Record<string, unknown>) => ((e.message as { content?: Array<Record<string, unknown>> } | undefined)?.content ?? []);
    // Between the tool_use and its tool_result claude says only that its background task started and (5 s later) ended.
    expect(stream.map((e) => [e.type, e.subtype].filter(Boolean).join(' '))).toEqual([
      'system init',
      'assistant',
      'system task_started',
      'system task_notification',
      'user',
      'assistant',
      'result success',
    ]);
    const toolUse = stream.flatMap((e) => (e.type === 'assistant' ? ((e.message as { content: Array<Record<string, unknown>> }).content ?? []) : [])).find((b) => b.type === 'tool_use');
    expect(toolUse).toMatchObject({ name: 'Bash', input: { command: 'sleep 5' } });
    const toolResult = stream.flatMap((e) => (e.type === 'user' ? ((e.message as { content: Array<Record<string, unknown>> }).content ?? []) : [])).find((b) => b.type === 'tool_result');
    expect(toolResult).toMatchObject({ tool_use_id: toolUse!.id });
    expect(toolResult!.is_error).not.toBe(true);
    const calls = server.requests.filter((r) => r.answer === 'toolCall' || r.answer === 'text');
    expect(calls.map((r) => r.answer)).toEqual(['toolCall', 'text']);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(5_000);
    await expectNoProcessLeft(g, runId);
  });

  it('without an open tool, the same silence is a stall: the watchdog kills claude and keeps its session', async () => {
    server = await startModelServer({ turns: [{ fail: 'stall' }] });
    const g = (garden = await makeAgentGarden('claude', { watchdog_seconds: 2, tool_silence_seconds: 30, interval_seconds: 1 }, claudeEnv(server.url, { API_TIMEOUT_MS: '600000' })));
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Wait for a model that never answers.' });
    const runId = `${goal.id}-r1`;
    const t0 = Date.now();
    await cycleUntilClosed(g, goal.id);
    const elapsed = Date.now() - t0;

    const run = readMeta(g, runId);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed' });
    expect(run.watchdog).toMatchObject({ limit: 'watchdog_seconds', limit_seconds: 2 });
    expect(run.watchdog!.silent_seconds).toBeGreaterThanOrEqual(2);
    // claude said only its init line, then waited on the model; SIGINT got no result out of it, only (2.1.332) its interruption note.
    const stream = streamOf(g, runId);
    // Given time before the kill grace ends (a loaded machine), claude also writes the interrupted turn's error result.
    const kinds = stream.map((e) => `${e.type} ${e.subtype}`);
    expect(kinds.slice(0, 2)).toEqual(['system init', 'user undefined']);
    expect(kinds.slice(2)).toEqual(kinds.length > 2 ? ['result error_during_execution'] : []);
    expect(JSON.stringify(stream[1])).toContain('[Request interrupted by user]');
    expect(run.watchdog!.last_event).toBe('system init');
    expect(run.session_id).toBeTruthy();
    expect(run.session_id).toBe(stream[0]!.session_id);
    // No result: nothing reported a cost. claude's late error result reports one, and the record keeps it.
    if (kinds.length > 2) expect(run.cost).toMatchObject({ source: 'provider', usd: (stream[2] as { total_cost_usd?: number }).total_cost_usd });
    else expect(run.cost).toEqual({ source: 'unknown' });
    expect(run.outputs?.error).toBe(`killed by the watchdog: silent for ${run.watchdog!.silent_seconds} s (watchdog_seconds 2 s); last event: system init`);
    // The model request really was made (and left hanging).
    expect(server.requests.some((r) => r.answer === 'stall')).toBe(true);
    expect(readEventLog(g).filter((e) => e.type === 'WatchdogKilled' && e.run === runId)).toHaveLength(1);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    expect(elapsed).toBeLessThan(25_000);
    await expectNoProcessLeft(g, runId);
  });

  it('the same stall on the real codex: killed by the watchdog, its thread id kept as the session', async () => {
    server = await startModelServer({ mode: 'stall' });
    const g = (garden = await codexGarden(server.url, { watchdog_seconds: 2, tool_silence_seconds: 30, interval_seconds: 1 }));
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Wait for a model that never answers.' });
    const runId = `${goal.id}-r1`;
    const t0 = Date.now();
    await cycleUntilClosed(g, goal.id);
    const elapsed = Date.now() - t0;

    const run = readMeta(g, runId);
    expect(run).toMatchObject({ status: 'killed', failure_reason: 'killed' });
    expect(run.watchdog).toMatchObject({ limit: 'watchdog_seconds', limit_seconds: 2 });
    expect(run.watchdog!.silent_seconds).toBeGreaterThanOrEqual(2);
    // codex started its thread and turn (plus its unknown-model notice), then waited on the model.
    const stream = streamOf(g, runId);
    expect(stream.map((e) => e.type)).toEqual(['thread.started', 'item.completed', 'turn.started']);
    expect(run.watchdog!.last_event).toBe('turn.started');
    expect(stream[0]!.thread_id).toBeTruthy();
    expect(run.session_id).toBe(stream[0]!.thread_id);
    expect(run.cost).toEqual({ source: 'unknown' });
    expect(run.outputs?.error).toBe(`killed by the watchdog: silent for ${run.watchdog!.silent_seconds} s (watchdog_seconds 2 s); last event: turn.started`);
    expect(server.requests.some((r) => r.answer === 'stall')).toBe(true);
    expect(readEventLog(g).filter((e) => e.type === 'WatchdogKilled' && e.run === runId)).toHaveLength(1);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    expect(elapsed).toBeLessThan(25_000);
    await expectNoProcessLeft(g, runId);
  });
});


