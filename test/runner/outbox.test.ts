import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../../source/runner/client.js';
import { OutboxRelay } from '../../source/runner/outbox.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';
import { routeOf, startFakeServer, type FakeServer, type SeenRequest } from './fake-server.js';

const servers: FakeServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
  cleanupFixtures();
});

const T = '2026-11-30T12:00:00.000Z';
const ids: [string, string, string] = ['01KB0000000000000000000001', '01KB0000000000000000000002', '01KB0000000000000000000003'];

/** A garden's side of comments: a thread; a post with a lease is the agent's. */
function commentGarden() {
  const thread: Record<string, unknown>[] = [];
  let next = 0;
  const handler = (request: SeenRequest) => {
    const route = routeOf(request);
    if (route === 'POST /goals/3-fix/comments') {
      const body = request.body as { body: string; blocking?: boolean; lease?: string };
      if (body.body.includes('refuse me')) return { status: 400, body: { error: 'body: too odd', field: '/body' } };
      const comment = { id: ids[next++], goal: '3-fix', run: '3-fix-r1', author: body.lease ? 'agent:3-fix-r1' : 'operator', body: body.body, blocking: Boolean(body.blocking), created_at: T };
      thread.push(comment);
      return { status: 201, body: { comment, goal: { id: '3-fix' } } };
    }
    if (route === 'GET /goals/3-fix/comments') return { status: 200, body: { comments: thread, open: [] } };
    return undefined;
  };
  return { thread, handler };
}

async function setup() {
  const garden = commentGarden();
  const server = await startFakeServer(garden.handler);
  servers.push(server);
  const dir = makeTempDir();
  const relay = new OutboxRelay(new RunnerClient(server.url, 't', { name: 'r', host: 'h' }), '3-fix', 'LEASE-1', path.join(dir, 'outbox'), path.join(dir, 'inbox'));
  await relay.prepare();
  return { ...garden, server, relay, dir };
}

/** Writes an outbox file as an agent does: to a temp name, then renamed into place. */
function drop(outbox: string, key: string, content: string): void {
  const temp = path.join(outbox, `.${key}.tmp`);
  fs.writeFileSync(temp, content);
  fs.renameSync(temp, path.join(outbox, `${key}.json`));
}

describe('OutboxRelay', () => {
  it('posts an outbox file with the lease, then moves it to sent/ with the comment id', async () => {
    const { relay, server, thread } = await setup();
    drop(relay.outbox, 'q1', JSON.stringify({ body: 'Which branch should I use?', blocking: true }));
    const result = await relay.post();
    expect(result.posted).toMatchObject([{ key: 'q1', comment: ids[0], blocking: true }]);
    expect(server.seen[0]!.body).toEqual({ body: 'Which branch should I use?', blocking: true, lease: 'LEASE-1' });
    expect(thread[0]).toMatchObject({ author: 'agent:3-fix-r1', blocking: true });
    expect(fs.existsSync(path.join(relay.outbox, 'q1.json'))).toBe(false);
    expect(JSON.parse(fs.readFileSync(path.join(relay.outbox, 'sent', 'q1.json'), 'utf8'))).toMatchObject({ key: 'q1', comment: ids[0] });
    expect(relay.waiting().map((s) => s.key)).toEqual(['q1']);
    // The next pass posts nothing again.
    expect((await relay.post()).posted).toEqual([]);
    expect(server.seen).toHaveLength(1);
  });

  it('two posts at once (a tick and the flush after the agent ended) post a file once', async () => {
    const { relay, server, thread } = await setup();
    drop(relay.outbox, 'q1', JSON.stringify({ body: 'Which branch should I use?', blocking: true }));
    const [a, b] = await Promise.all([relay.post(), relay.post()]);
    expect([...a.posted, ...b.posted].map((p) => p.key)).toEqual(['q1']);
    expect(server.seen.filter((r) => routeOf(r) === 'POST /goals/3-fix/comments')).toHaveLength(1);
    expect(thread).toHaveLength(1);
  });

  it('writes the answer to the inbox under the same key when it arrives, once', async () => {
    const { relay } = await setup();
    drop(relay.outbox, 'q1', JSON.stringify({ body: 'Which branch?', blocking: true }));
    await relay.post();
    const answer = { id: ids[2], goal: '3-fix', author: 'operator', body: 'Use main.', blocking: false, answers: ids[0], created_at: T };
    expect(await relay.deliver([{ ...answer, answers: 'someone-else' }])).toEqual([]);
    const delivered = await relay.deliver([answer]);
    expect(delivered.map((d) => d.key)).toEqual(['q1']);
    expect(JSON.parse(fs.readFileSync(path.join(relay.inbox, 'q1.json'), 'utf8'))).toEqual(answer);
    expect(relay.waiting()).toEqual([]);
    expect(await relay.deliver([answer])).toEqual([]);
  });

  it('finds an answer in the thread when asked (the heartbeat may have been missed)', async () => {
    const { relay, thread } = await setup();
    drop(relay.outbox, 'q2', JSON.stringify({ body: 'Ok to delete the cache?', blocking: true }));
    await relay.post();
    thread.push({ id: ids[1], goal: '3-fix', author: 'operator', body: 'Yes.', blocking: false, answers: ids[0], created_at: T });
    expect((await relay.poll()).map((d) => d.key)).toEqual(['q2']);
    expect(fs.existsSync(path.join(relay.inbox, 'q2.json'))).toBe(true);
  });

  it('rejects a file that is not a comment, with the reason, and ignores temp files', async () => {
    const { relay, server } = await setup();
    fs.writeFileSync(path.join(relay.outbox, '.q3.json.tmp'), '{"body": "half');
    drop(relay.outbox, 'broken', '{"body": ');
    drop(relay.outbox, 'empty', JSON.stringify({ body: '  ' }));
    drop(relay.outbox, 'odd', JSON.stringify({ body: 'refuse me' }));
    const result = await relay.post();
    expect(result.posted).toEqual([]);
    expect(result.rejected.map((r) => r.key).sort()).toEqual(['broken', 'empty', 'odd']);
    expect(result.rejected.find((r) => r.key === 'odd')!.reason).toMatch(/400: body: too odd/);
    expect(fs.readdirSync(path.join(relay.outbox, 'rejected')).sort()).toEqual(['broken.json', 'empty.json', 'odd.json']);
    expect(fs.existsSync(path.join(relay.outbox, '.q3.json.tmp'))).toBe(true);
    expect(server.seen).toHaveLength(1); // only the one the server refused was sent
  });

  it('says why in one line: a file that is not JSON (without quoting it), an empty, missing or non-string body', async () => {
    const { relay } = await setup();
    drop(relay.outbox, 'multi', '{\n  "body": "Which branch?",\n  "blocking": yes\n}\n');
    drop(relay.outbox, 'empty', JSON.stringify({ body: '' }));
    drop(relay.outbox, 'none', JSON.stringify({ blocking: true }));
    drop(relay.outbox, 'number', JSON.stringify({ body: 3 }));
    drop(relay.outbox, 'list', '[]');
    const reasons = Object.fromEntries((await relay.post()).rejected.map((r) => [r.key, r.reason]));
    for (const reason of Object.values(reasons)) expect(reason).not.toMatch(/[\r\n]/);
    expect(reasons.multi).toMatch(/^not JSON \(.+\): a comment is \{"body": "…", "blocking": true\|false\}$/);
    expect(reasons.multi).not.toContain('Which branch');
    expect(reasons.empty).toMatch(/^empty "body": a comment is/);
    expect(reasons.none).toMatch(/^no "body": a comment is/);
    expect(reasons.number).toMatch(/^"body" is not a string \(number\)/);
    expect(reasons.list).toMatch(/^not a JSON object/);
  });

  it('asking(): a blocking question in the outbox or posted and unanswered; not a plain comment, not once answered', async () => {
    const { relay } = await setup();
    expect(relay.asking()).toBe(false);
    drop(relay.outbox, 'note', JSON.stringify({ body: 'FYI', blocking: false }));
    expect(relay.asking()).toBe(false);
    drop(relay.outbox, 'q1', JSON.stringify({ body: 'Which branch?', blocking: true }));
    expect(relay.asking()).toBe(true); // not posted yet: the agent already waits
    await relay.post();
    expect(relay.asking()).toBe(true);
    await relay.deliver([{ id: ids[2], goal: '3-fix', author: 'operator', body: 'main', blocking: false, answers: ids[1], created_at: T }]);
    expect(relay.asking()).toBe(false);
  });
});
