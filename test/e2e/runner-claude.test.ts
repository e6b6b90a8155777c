/**
 * Issue 12: a `pak2 runner` drives the real claude CLI against the project's
 * scripted model server, and the garden's record of that remote run matches
 * what a local run of the same scenario records (docs/runners/level2.md).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateRunClose, type RunRecord } from '../../source/contracts/index.js';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { startCli } from '../support/cli.js';
import { startModelServer, type ModelScript, type ModelServer } from '../support/model-server.js';
import { until } from '../server/support.js';
import { claudeScriptedEnv, cycleUntilIdle, makeAgentGarden, processesWith, type AgentGarden } from './agents.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const REFLECTION_MARK = REFLECTION_PROMPT.slice(0, 40);
const SCRIPT: ModelScript = {
  turns: [
    { text: 'Creating the file.', toolCall: { writeFile: { path: 'hello.txt', content: 'hello from a runner\n' } }, usage: { input_tokens: 1200, output_tokens: 40 } },
    { text: 'I created hello.txt.', usage: { input_tokens: 1300, output_tokens: 12 } },
    { match: REFLECTION_MARK, text: 'I learned that the work directory is a checkout of the garden.', usage: { input_tokens: 1400, output_tokens: 15 } },
  ],
};

async function agentGarden(coordinator: Record<string, number> = {}): Promise<{ garden: AgentGarden; server: ModelServer }> {
  const server = await startModelServer(SCRIPT);
  cleanups.push(() => server.close());
  const garden = await makeAgentGarden('claude', coordinator, (stateDir) => claudeScriptedEnv(server.url, stateDir));
  cleanups.push(() => garden.cleanup());
  return { garden, server };
}

/** The facts both records must agree on. */
function facts(run: RunRecord) {
  return {
    status: run.status,
    driver: run.driver,
    exit_code: run.exit_code,
    num_turns: run.num_turns,
    final_text: run.outputs?.final_text,
    reflection: run.reflection,
    cost_source: run.cost?.source,
    cost_usd: run.cost?.usd,
    input_tokens: run.cost?.input_tokens,
    output_tokens: run.cost?.output_tokens,
    has_session: typeof run.session_id === 'string' && run.session_id.length > 0,
  };
}

describe('end to end: a runner drives the real claude CLI', () => {
  it('the garden records the remote run as a local run of the same scenario records it', async () => {
    // The local run.
    const local = await agentGarden();
    const localGoal = await createGoal(local.garden.paths, { type: 'build', plant: 'gardener', body: 'Create hello.txt containing a greeting.' });
    await cycleUntilIdle(local.garden);
    const localRun = await readRun(local.garden.paths, `${localGoal.id}-r1`);
    expect(localRun.status).toBe('success');

    // The remote run: the garden served, no coordinator; a runner in a checkout of its own.
    const remote = await agentGarden({ max_concurrent_runs: 0 });
    const g = remote.garden;
    const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Create hello.txt containing a greeting.' });
    const serve = startCli(['serve', '--garden', g.paths.gardenRoot, '--port', '0']);
    let serveErr = '';
    serve.stderr!.on('data', (d: Buffer) => (serveErr += d.toString()));
    cleanups.push(async () => {
      serve.kill('SIGTERM');
      await new Promise((r) => serve.once('exit', r));
    });
    await until(() => /pak2: serving (\S+)/.test(serveErr), 20_000, 'the serve start line');
    const url = /pak2: serving (\S+)/.exec(serveErr)![1]!;
    const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-runner-claude-work-'));
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-runner-claude-state-'));
    cleanups.push(() => {
      fs.rmSync(workdir, { recursive: true, force: true });
      fs.rmSync(state, { recursive: true, force: true });
    });
    const runner = startCli(['runner', '--server', url, '--token-file', path.join(g.paths.runtimeRoot, 'serve', 'token'), '--name', 'claude-box', '--workdir', workdir, '--state', state, '--poll', '1', '--max-runs', '1'], { cwd: workdir, env: g.env });
    let runnerOut = '';
    runner.stderr!.on('data', (d: Buffer) => (runnerOut += d.toString()));
    const runnerExit = new Promise<number | null>((resolve) => runner.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (runner.exitCode === null) runner.kill('SIGKILL');
      await runnerExit;
    });
    expect(await runnerExit, runnerOut).toBe(0);

    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(validateRunClose(run, 'build')).toEqual([]);
    expect(facts(run)).toEqual(facts(localRun));
    expect(run.runner).toMatchObject({ name: 'claude-box' });
    // The agent worked in the runner's checkout, not in the garden.
    expect(fs.readFileSync(path.join(workdir, 'hello.txt'), 'utf8')).toBe('hello from a runner\n');
    expect(fs.existsSync(path.join(g.paths.gardenRoot, 'hello.txt'))).toBe(false);
    // The garden holds the stream the CLI wrote, the diff and the prompt.
    const stream = fs.readFileSync(path.join(g.paths.runsDir, run.id, 'events.jsonl'), 'utf8');
    expect(stream.split('\n').filter((l) => l.includes('"type":"result"'))).toHaveLength(2);
    expect(fs.readdirSync(path.join(g.paths.runsDir, run.id, 'artifacts')).sort()).toEqual(expect.arrayContaining(['prompt.md']));
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('success');
    expect(processesWith(g.stateDir)).toEqual([]);
  }, 180_000);
});
