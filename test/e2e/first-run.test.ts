import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { REFLECTION_PROMPT } from '../../source/driver/index.js';
import { loadGarden } from '../../source/garden/index.js';
import { listConversations, readConversationMessages, readGoal, readRun } from '../../source/store/index.js';
import { AGENT_BIN } from '../support/agent-clis.js';
import { runCli, startCli } from '../support/cli.js';
import { waitFor } from '../support/garden.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { processesWith } from './agents.js';

let server: ModelServer | undefined;
let cycle: ChildProcess | undefined;
const dirs: string[] = [];
afterEach(async () => {
  if (cycle && cycle.exitCode === null) {
    cycle.kill('SIGTERM');
    await new Promise((resolve) => cycle!.once('exit', resolve));
  }
  cycle = undefined;
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const REPLY_MARK = "Reply to the operator's message in # Task";

describe('the first-run path on the real claude CLI: init, genesis, cycle, chat', () => {
  it('delivers the startup note before any run, narrates the first run, and answers chat in one resumed session', async () => {
    server = await startModelServer({
      turns: [
        { match: 'Survey this garden', toolCall: { writeFile: { path: 'plants/gardener/memory/MEMORY.md', content: '# Memory\n\nA test garden.\n' } } },
        { text: 'Survey done: memory written.' },
        { match: REFLECTION_PROMPT.slice(0, 40), text: 'I learned the garden is empty but for pak2 files.' },
        { match: REPLY_MARK, text: 'Hello from the garden: all is well.' },
      ],
    });
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-first-run-'));
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-first-run-claude-'));
    dirs.push(base, state);
    const root = path.join(base, 'garden');
    const env: NodeJS.ProcessEnv = {
      PATH: `${AGENT_BIN}${path.delimiter}${process.env.PATH ?? ''}`,
      HOME: state,
      CLAUDE_CONFIG_DIR: state,
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CODE_MAX_RETRIES: '0',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    };

    expect((await runCli(['init', root, '--driver', 'claude'], { env })).code).toBe(0);
    const genesis = await runCli(['genesis', '--garden', root], { env });
    expect(genesis.stdout).toContain('queued goal 1-survey-the-garden');
    const garden = loadGarden(root);

    let out = '';
    cycle = startCli(['cycle', '--no-ui', '--garden', root], { env });
    cycle.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(async () => (await readGoal(garden.paths, '1-survey-the-garden').catch(() => undefined))?.status === 'closed', 60_000);

    // The first goal ran on the real CLI and succeeded.
    const first = await readRun(garden.paths, '1-survey-the-garden-r1');
    expect(first.status).toBe('success');
    expect(fs.readFileSync(path.join(root, 'plants/gardener/memory/MEMORY.md'), 'utf8')).toContain('A test garden.');

    // One system-started conversation, whose first message is the startup note, delivered to the inbox before the run started.
    const conversations = await listConversations(garden.paths);
    expect(conversations).toHaveLength(1);
    const startup = conversations[0]!;
    expect(startup).toMatchObject({ started_by: 'system', startup: true });
    await waitFor(async () => (await readConversationMessages(garden.paths, startup.id)).some((m) => m.fact?.startsWith('run_closed:')), 15_000);
    const messages = await readConversationMessages(garden.paths, startup.id);
    expect(messages[0]).toMatchObject({ sender: 'system', fact: 'startup_note' });
    expect(messages[0]!.text).toContain('Queued: 1 goal — 1-survey-the-garden (tend, gardener)');
    const note = messages[0]!.note!;
    expect(path.dirname(note)).toBe(path.join(garden.paths.inboxDir, garden.config.gardenName));
    expect(fs.readFileSync(note, 'utf8').trim()).toBe(messages[0]!.text);
    expect(fs.statSync(note).mtimeMs).toBeLessThanOrEqual(Date.parse(first.started_at));
    expect(Date.parse(messages[0]!.ts)).toBeLessThanOrEqual(Date.parse(first.started_at));
    // Play-by-play from recorded facts.
    expect(messages.map((m) => m.fact)).toEqual(['startup_note', 'run_started:1-survey-the-garden-r1', 'run_closed:1-survey-the-garden-r1']);
    expect(messages[2]!.text).toMatch(/^Run 1-survey-the-garden-r1 succeeded, cost \$\d+\.\d{4} \(provider\); reflection recorded\.$/);

    // The operator writes twice; both replies come from one agent session, the second resumed.
    const one = await runCli(['chat', '--garden', root, '-m', 'How is the garden?', '--timeout', '60'], { env });
    expect(one.stderr).toContain('queued 2-reply-how-is-the-garden');
    expect(one.stdout).toContain('garden: Hello from the garden: all is well.');
    expect(one.code).toBe(0);
    const two = await runCli(['chat', '--garden', root, '-m', 'Anything else?', '--timeout', '60'], { env });
    expect(two.code).toBe(0);
    const goalIds = (await readConversationMessages(garden.paths, startup.id)).filter((m) => m.sender === 'operator').map((m) => m.goal!);
    expect(goalIds).toHaveLength(2);
    // The reply is delivered before its run's record is closed: wait for the record, not for the reply.
    await waitFor(async () => (await readRun(garden.paths, `${goalIds[1]}-r1`)).status !== 'running', 30_000);
    const runOne = await readRun(garden.paths, `${goalIds[0]}-r1`);
    const runTwo = await readRun(garden.paths, `${goalIds[1]}-r1`);
    expect(runOne.status).toBe('success');
    expect(runTwo.status).toBe('success');
    expect(runTwo.session_id).toBe(runOne.session_id);
    expect((await listConversations(garden.paths))[0]!.continuity).toMatchObject({ driver: 'claude', session_id: runOne.session_id });
    // The resumed turn carried the first exchange to the model.
    const resumed = server.requests.filter((r) => r.api === 'anthropic' && JSON.stringify(r.body).includes('Anything else?'));
    expect(resumed.length).toBeGreaterThan(0);
    expect(JSON.stringify(resumed.at(-1)!.body)).toContain('Hello from the garden: all is well.');
    // Each reply is in the conversation, with its run and note, and in the inbox.
    const after = await readConversationMessages(garden.paths, startup.id);
    const replies = after.filter((m) => m.sender === 'garden' && m.run?.startsWith(goalIds[1]!));
    expect(replies).toHaveLength(1);
    expect(fs.readFileSync(replies[0]!.note!, 'utf8')).toContain('Hello from the garden');
    // The window closed with the operator's first message: no play-by-play about the chat runs.
    expect(after.filter((m) => m.fact?.startsWith('run_started:'))).toHaveLength(1);

    cycle.kill('SIGTERM');
    await new Promise((resolve) => cycle!.once('exit', resolve));
    expect(out).toContain('CoordinatorStopped');
    expect(processesWith(state)).toEqual([]);
  }, 180_000);
});
