/**
 * Inputs from the field (issue 16), rebuilt small: each asserts the right
 * value through the real coordinator.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, reconcile } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import type { Garden } from '../../source/garden/index.js';
import { createGoal, readConversation, readConversationMessages, readGoal, readRun, setConversationContinuity } from '../../source/store/index.js';
import { sendOperatorMessage } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden, readEventLog, waitFor } from '../support/garden.js';
import { git } from '../history/support.js';

const TRUTH_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/truth-agent.mjs');

type TestGarden = Garden & { cleanup: () => void };
let garden: TestGarden | undefined;
let coordinator: Coordinator | undefined;
afterEach(async () => {
  await coordinator?.stop();
  coordinator = undefined;
  garden?.cleanup();
  garden = undefined;
});

async function claudeGarden(scenario: string): Promise<TestGarden> {
  garden = await makeTestGarden({ extraToml: `[drivers.claude]\ncommand = ${JSON.stringify([process.execPath, TRUTH_AGENT, scenario])}` });
  return garden;
}

describe('1. denied tools behind a success result', () => {
  it('a success result with permission_denials is recorded failure / permission_denied, with the denial, shown, and tended', async () => {
    const g = await claudeGarden('claude-denied');
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'Add a report skill.', driver: 'claude' });
    const summary = await reconcile({ garden: g, dispatch: (x, runId) => dispatch(x, runId, { garden: g, onStderr: () => undefined }), awaitDispatch: true });
    const run = await readRun(g.paths, `${goal.id}-r1`);
    expect(run).toMatchObject({
      status: 'failure',
      failure_reason: 'permission_denied',
      session_id: 'S1',
      cost: { source: 'provider', usd: 0.03 },
      permission_denials: [{ tool: 'Write', path: '.claude/skills/report.md' }],
      outputs: { final_text: 'I could not write .claude/skills/report.md: the write was refused.', error: 'the agent reported success, but 1 tool call(s) were denied: Write .claude/skills/report.md' },
    });
    // No reflection is asked of a run that did not do what it tried.
    expect(run.reflection).toBeUndefined();
    expect(readEventLog(g).some((e) => e.type === 'ReflectionRequested')).toBe(false);
    expect((await readGoal(g.paths, goal.id)).closed_reason).toBe('failure');
    expect(summary.tends.map((t) => t.trigger)).toEqual(['run_failure']);
    const shown = await runCli(['show', run.id, '--garden', g.paths.gardenRoot]);
    expect(shown.stdout).toContain('denied 1 tool call(s) refused: Write .claude/skills/report.md');
  });
});

describe('2. a chat session that cannot be resumed is not resumed forever', () => {
  it('a resume failing with a 400 (tool_use without tool_result) starts a fresh session once, says so in the chat, and keeps the new session', async () => {
    const g = await claudeGarden('dead-resume');
    const sent = await sendOperatorMessage(g, 'What is the state of the garden?');
    await setConversationContinuity(g.paths, sent.conversationId, 'claude', 'S32', new Date(), 'gardener');
    // The chat goal is assigned to the gardener; its driver is the garden default, so name claude on it.
    const file = path.join(g.paths.goalsDir, `${sent.goal.id}.json`);
    fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), driver: 'claude' }, null, 2));
    const summary = await reconcile({ garden: g, dispatch: (x, runId) => dispatch(x, runId, { garden: g, onStderr: () => undefined }), awaitDispatch: true });
    const run = await readRun(g.paths, `${sent.goal.id}-r1`);
    expect(run).toMatchObject({ status: 'success', session_id: 'S33', outputs: { final_text: 'Fresh start: here is my answer.' } });
    expect((await readConversation(g.paths, sent.conversationId)).continuity).toMatchObject({ driver: 'claude', session_id: 'S33' });
    const messages = await readConversationMessages(g.paths, sent.conversationId);
    expect(messages.map((m) => m.sender)).toEqual(['operator', 'system', 'garden']);
    expect(messages[1]!.text).toMatch(/^The agent session S32 cannot be resumed \(error_during_execution: API Error: 400 .*tool_use` ids were found without `tool_result`.*\); starting a fresh session/);
    expect(messages[2]!.text).toBe('Fresh start: here is my answer.');
    expect(summary.tends).toEqual([]);
  });
});

describe('5. git variables from a hook never reach the agent', () => {
  it('GIT_DIR and GIT_INDEX_FILE pointing at another repository are removed from the agent environment, said once', async () => {
    const agentScript = path.join(process.env.TMPDIR ?? '/tmp', `pak2-git-agent-${process.pid}.sh`);
    fs.writeFileSync(agentScript, '#!/bin/sh\ncat >/dev/null\necho "$PAK2_RUN_ID" > "note-$PAK2_RUN_ID.txt"\ngit add "note-$PAK2_RUN_ID.txt" && git commit -qm "agent commit $PAK2_RUN_ID" && echo committed\n');
    fs.chmodSync(agentScript, 0o755);
    garden = await makeTestGarden({ extraToml: `[drivers.gitagent]\ncommand = ${JSON.stringify(['/bin/sh', agentScript])}` });
    const g = garden;
    git(g.paths.gardenRoot, 'init', '-q');
    fs.writeFileSync(path.join(g.paths.gardenRoot, '.gitignore'), '.runtime/\n');
    git(g.paths.gardenRoot, 'add', '-A');
    git(g.paths.gardenRoot, 'commit', '-qm', 'garden');
    const other = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'pak2-other-repo-'));
    git(other, 'init', '-q');
    git(other, 'commit', '-q', '--allow-empty', '-m', 'other');
    const env = { ...process.env, GIT_DIR: path.join(other, '.git'), GIT_INDEX_FILE: path.join(other, '.git', 'index'), GIT_AUTHOR_NAME: 'A', GIT_AUTHOR_EMAIL: 'a@example.com', GIT_COMMITTER_NAME: 'A', GIT_COMMITTER_EMAIL: 'a@example.com' };
    try {
      for (const body of ['first', 'second']) {
        const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body, driver: 'gitagent' });
        await reconcile({ garden: g, env, dispatch: (x, runId) => dispatch(x, runId, { garden: g, env, onStderr: () => undefined }), awaitDispatch: true });
        expect((await readRun(g.paths, `${goal.id}-r1`)).status).toBe('success');
      }
      // The commit landed in the garden's repository, not the other one.
      expect(git(g.paths.gardenRoot, 'log', '--format=%s')).toContain('agent commit');
      expect(git(other, 'log', '--format=%s')).not.toContain('agent commit');
      const said = readEventLog(g).filter((e) => e.type === 'AgentEnvironmentCleaned');
      expect(said).toHaveLength(1);
      expect(said[0]!.detail).toContain('removed GIT_DIR, GIT_INDEX_FILE');
    } finally {
      fs.rmSync(agentScript, { force: true });
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});

describe('6. a replaced goals directory is watched again', () => {
  it('after `mv goals goals.old && mkdir goals && cp`, a goal written by another process dispatches without the timer', async () => {
    garden = await makeTestGarden({ coordinator: { interval_seconds: 3600 } });
    const g = garden;
    await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'before the move' });
    coordinator = new Coordinator({ garden: g, onStderr: () => undefined });
    await coordinator.start();
    await coordinator.untilIdle();
    const old = `${g.paths.goalsDir}.old`;
    fs.renameSync(g.paths.goalsDir, old);
    fs.mkdirSync(g.paths.goalsDir);
    for (const name of fs.readdirSync(old)) fs.cpSync(path.join(old, name), path.join(g.paths.goalsDir, name), { recursive: true });
    await new Promise((r) => setTimeout(r, 1500));
    const submitted = await runCli(['submit', '--garden', g.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'after the move']);
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    // The timer is an hour away: only the re-armed watch can wake the loop.
    await waitFor(async () => (await readGoal(g.paths, id)).status === 'closed', 10_000);
  });
});
