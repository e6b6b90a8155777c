import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile } from '../../source/coordinator/index.js';
import { dispatch, routeOf } from '../../source/driver/index.js';
import type { Garden } from '../../source/garden/index.js';
import { runDir } from '../../source/garden/index.js';
import { createGoal, deliverReplyNote, ensureReplyDir, listConversations, readConversationMessages, readRun } from '../../source/store/index.js';
import { appendGoalSupplement, sendOperatorMessage } from '../../source/submit/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: (Garden & { cleanup: () => void }) | undefined;
afterEach(() => garden?.cleanup());

const pass = (g: Garden) => reconcile({ garden: g, dispatch: (goal, runId) => dispatch(goal, runId, { garden: g, onStderr: () => undefined }), awaitDispatch: true });

describe('the reply surface and the legacy rename rule', () => {
  async function gardenNamed(name?: string) {
    garden = await makeTestGarden({ extraToml: name ? `[garden]\nname = "${name}"` : '' });
    return garden;
  }

  it('creates the reply directory on first delivery', async () => {
    const g = await gardenNamed('acme');
    expect(await ensureReplyDir(g.paths, g.config)).toEqual({ dir: path.join(g.paths.inboxDir, 'acme'), outcome: 'created' });
    expect(await ensureReplyDir(g.paths, g.config)).toMatchObject({ outcome: 'exists' });
  });

  it('renames a legacy inbox/garden/ to inbox/<name>/ when the target does not exist', async () => {
    const g = await gardenNamed('acme');
    fs.mkdirSync(path.join(g.paths.inboxDir, 'garden'), { recursive: true });
    fs.writeFileSync(path.join(g.paths.inboxDir, 'garden', 'old-reply.md'), '# old\n');
    const note = await deliverReplyNote(g.paths, g.config, 'hello', '# hello');
    expect(path.dirname(note)).toBe(path.join(g.paths.inboxDir, 'acme'));
    expect(fs.existsSync(path.join(g.paths.inboxDir, 'garden'))).toBe(false);
    expect(fs.readFileSync(path.join(g.paths.inboxDir, 'acme', 'old-reply.md'), 'utf8')).toBe('# old\n');
  });

  it('keeps both when both exist, and writes to the configured one', async () => {
    const g = await gardenNamed('acme');
    for (const dir of ['garden', 'acme']) fs.mkdirSync(path.join(g.paths.inboxDir, dir), { recursive: true });
    fs.writeFileSync(path.join(g.paths.inboxDir, 'garden', 'old-reply.md'), '# old\n');
    expect(await ensureReplyDir(g.paths, g.config)).toMatchObject({ outcome: 'kept_both' });
    const note = await deliverReplyNote(g.paths, g.config, 'hello', '# hello');
    expect(path.dirname(note)).toBe(path.join(g.paths.inboxDir, 'acme'));
    expect(fs.readFileSync(path.join(g.paths.inboxDir, 'garden', 'old-reply.md'), 'utf8')).toBe('# old\n');
  });

  it('with the default name the legacy directory is the reply directory', async () => {
    const g = await gardenNamed();
    fs.mkdirSync(path.join(g.paths.inboxDir, 'garden'), { recursive: true });
    expect(await ensureReplyDir(g.paths, g.config)).toEqual({ dir: path.join(g.paths.inboxDir, 'garden'), outcome: 'exists' });
  });
});

describe('conversations through the command driver', () => {
  it('an operator message queues a converse goal; the reply is recorded, delivered, and the next turn resumes the session', async () => {
    garden = await makeTestGarden();
    const first = await sendOperatorMessage(garden, 'Hello?');
    expect(first.goal).toMatchObject({ type: 'converse', conversation_id: first.conversationId, assigned_to: 'gardener', priority: 80, body: 'Hello?' });
    expect(routeOf(first.goal)).toBe('conversation');
    await pass(garden);
    const runOne = await readRun(garden.paths, `${first.goal.id}-r1`);
    expect(runOne).toMatchObject({ status: 'success', session_id: 'fake-session-1' });
    expect(runOne.reflection).toBeUndefined();
    const prompt = fs.readFileSync(path.join(runDir(garden.paths, runOne.id), 'prompt.md'), 'utf8');
    expect(prompt).toContain("# Conversation\n\nReply to the operator's message in # Task below");
    expect(prompt).toContain(`Conversation id: ${first.conversationId}`);
    expect(prompt.indexOf('# Conversation')).toBeLessThan(prompt.indexOf('# Task'));
    expect(prompt).toMatch(/operator: Hello\?/);

    const [conversation] = await listConversations(garden.paths);
    expect(conversation).toMatchObject({ started_by: 'operator', continuity: { driver: 'success', session_id: 'fake-session-1' } });
    let messages = await readConversationMessages(garden.paths, first.conversationId);
    expect(messages.map((m) => [m.sender, m.text])).toEqual([
      ['operator', 'Hello?'],
      ['garden', 'done'],
    ]);
    expect(messages[1]).toMatchObject({ run: runOne.id });
    expect(fs.readFileSync(messages[1]!.note!, 'utf8')).toBe('# Re: Hello?\n\ndone\n');

    // The second turn resumes: the command driver gets PAK2_SESSION_ID on its main turn.
    const capture = path.join(garden.paths.gardenRoot, 'env-seen.txt');
    fs.writeFileSync(path.join(garden.paths.gardenRoot, 'env-agent.sh'), `#!/bin/sh\ncat >/dev/null\necho "$PAK2_SESSION_ID" > ${capture}\necho '{"type":"result","status":"success","text":"again","session_id":"fake-session-1"}'\n`, { mode: 0o755 });
    garden.config.drivers.success = { command: ['sh', path.join(garden.paths.gardenRoot, 'env-agent.sh')] };
    const second = await sendOperatorMessage(garden, 'And now?');
    expect(second.conversationId).toBe(first.conversationId);
    await pass(garden);
    expect(fs.readFileSync(capture, 'utf8').trim()).toBe('fake-session-1');
    messages = await readConversationMessages(garden.paths, first.conversationId);
    expect(messages.map((m) => m.text)).toEqual(['Hello?', 'done', 'And now?', 'again']);
  });

  it('a post-reply hop takes its own route and posts to the conversation', async () => {
    garden = await makeTestGarden();
    const { conversationId } = await sendOperatorMessage(garden, 'Start something');
    await pass(garden);
    const hop = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Follow up on the last reply', conversation_id: conversationId, post_reply_hop: true });
    expect(routeOf(hop)).toBe('hop');
    await pass(garden);
    const run = await readRun(garden.paths, `${hop.id}-r1`);
    expect(run.status).toBe('success');
    expect(run.reflection).toMatch(/^Learned:/); // a build hop still reflects
    const prompt = fs.readFileSync(path.join(runDir(garden.paths, run.id), 'prompt.md'), 'utf8');
    expect(prompt).toContain('This is a follow-up hop after your last reply');
    const messages = await readConversationMessages(garden.paths, conversationId);
    expect(messages.at(-1)).toMatchObject({ sender: 'garden', run: run.id, fact: `hop:${hop.id}` });
  });

  it('refuses an empty message and a plant that cannot answer', async () => {
    garden = await makeTestGarden();
    await expect(sendOperatorMessage(garden, '   ')).rejects.toThrow('message: empty');
    await expect(sendOperatorMessage(garden, 'hi', { plant: 'nobody' })).rejects.toThrow('plant nobody: no such plant in this garden (plants: gardener)');
    expect(await listConversations(garden.paths)).toEqual([]);
  });
});

describe('goal supplements and the dispatch packet', () => {
  it('supplements of a conversation-origin durable goal are frozen at dispatch and injected before the task', async () => {
    garden = await makeTestGarden();
    const { conversationId } = await sendOperatorMessage(garden, 'Please fix the date test');
    const durable = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Fix the date test', conversation_id: conversationId, priority: 90 });
    await appendGoalSupplement(garden, durable.id, 'Use UTC everywhere.');
    await appendGoalSupplement(garden, durable.id, 'The test lives in test/date.test.ts.', 'garden');
    await pass(garden);
    const runId = `${durable.id}-r1`;
    const packet = JSON.parse(fs.readFileSync(path.join(runDir(garden.paths, runId), 'dispatch-packet.json'), 'utf8'));
    expect(packet).toMatchObject({ goal: durable.id, run: runId, conversation_id: conversationId, supplements: [{ text: 'Use UTC everywhere.', source: 'operator' }, { text: 'The test lives in test/date.test.ts.', source: 'garden' }] });
    const prompt = fs.readFileSync(path.join(runDir(garden.paths, runId), 'prompt.md'), 'utf8');
    const block = prompt.indexOf('# Goal Supplements');
    expect(block).toBeGreaterThan(prompt.indexOf('# Your Current Run'));
    expect(block).toBeLessThan(prompt.indexOf('# Task'));
    expect(prompt).toMatch(/1\. \(operator, [^)]+\) Use UTC everywhere\.\n2\. \(garden, [^)]+\) The test lives in test\/date\.test\.ts\./);
    // Dispatched: the packet is final; a later supplement is refused.
    await expect(appendGoalSupplement(garden, durable.id, 'too late')).rejects.toThrow(/is (running|closed); supplements are added before dispatch/);
  });

  it('refuses supplements for goals that are not conversation-origin durable goals, and empty text', async () => {
    garden = await makeTestGarden();
    const plain = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'plain' });
    await expect(appendGoalSupplement(garden, plain.id, 'x')).rejects.toThrow(`goal ${plain.id} takes no supplements`);
    const { goal: converse } = await sendOperatorMessage(garden, 'hi');
    await expect(appendGoalSupplement(garden, converse.id, 'x')).rejects.toThrow('takes no supplements');
    const durable = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'durable', conversation_id: converse.conversation_id! });
    await expect(appendGoalSupplement(garden, durable.id, '  ')).rejects.toThrow('supplement text is empty');
    await expect(appendGoalSupplement(garden, '999-nope', 'x')).rejects.toThrow('no goal 999-nope');
    // A plain goal gets no packet at dispatch.
    await pass(garden);
    expect(fs.existsSync(path.join(runDir(garden.paths, `${plain.id}-r1`), 'dispatch-packet.json'))).toBe(false);
  });
});

describe('chat and supplements through the CLI', () => {
  it('pak2 chat -m says at once when the reply run failed, instead of waiting out the timeout', async () => {
    garden = await makeTestGarden({ extraToml: '' });
    const toml = garden.paths.configFile;
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('driver = "success"', 'driver = "exit3"'));
    const { Coordinator } = await import('../../source/coordinator/index.js');
    const { loadGarden } = await import('../../source/garden/index.js');
    const coordinator = new Coordinator({ garden: loadGarden(garden.paths.gardenRoot), onStderr: () => undefined });
    await coordinator.start();
    try {
      const started = Date.now();
      const r = await runCli(['chat', '--garden', garden.paths.gardenRoot, '-m', 'will this fail?', '--timeout', '120']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/the reply run for 1-reply-will-this-fail ended failure \(nonzero_exit\)/);
      expect(Date.now() - started).toBeLessThan(60_000); // not the 120 s timeout
    } finally {
      await coordinator.stop();
    }
  });

  it('pak2 submit --conversation queues a durable goal that pak2 supplement can add to', async () => {
    garden = await makeTestGarden();
    const { conversationId } = await sendOperatorMessage(garden, 'please queue the date fix');
    const g = ['--garden', garden.paths.gardenRoot];
    const unknown = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--body', 'x', '--conversation', 'c-20260101T000000-00000000']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--conversation c-20260101T000000-00000000: no conversation');
    const submitted = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--body', 'Fix the date test', '--conversation', conversationId]);
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    const added = await runCli(['supplement', id, ...g, '--text', 'Use UTC.']);
    expect(added).toMatchObject({ code: 0, stdout: `supplement added to ${id}\n` });
    const plain = (await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--body', 'plain'])).stdout.trim();
    const refused = await runCli(['supplement', plain, ...g, '--text', 'x']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(`pak2: goal ${plain} takes no supplements: only a conversation-origin durable goal (with conversation_id, not converse) does`);
  });
});
