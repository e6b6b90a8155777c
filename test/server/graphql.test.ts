/**
 * The GraphQL door (seed 004, "How events leave the system": "a GraphQL
 * eventAdded subscription over graphql-sse. Both take the same since
 * cursor"; issue 28, item 9; docs/server/level2.md, "GraphQL"): a real
 * graphql-sse client (`createClient`, Node's fetch) against a real server on
 * 127.0.0.1. The subscription delivers the same events in the same order
 * from the same cursor as GET /events/stream, on the file store and on
 * PostgreSQL; queries and mutations go through the REST routes' role checks
 * (a read token's mutation is 403 and writes nothing); hostile documents and
 * bad cursors are a clear 4xx with no machine path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { afterEach, describe, expect, it } from 'vitest';
import { createToken, GRAPHQL_LIMITS, graphqlSchema, graphqlSdl, MUTATION_ROUTES, revokeToken, type RunningServer } from '../../source/server/index.js';
import { appendEvent, createGoal, readGoal } from '../../source/store/index.js';
import { startCli } from '../support/cli.js';
import { readEventLog } from '../support/garden.js';
import { gardenOn, STORE_KINDS, type StoreKind } from '../store/contract/stores.js';
import { serve, sseConnect, until } from './support.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(kind: StoreKind = 'file') {
  const g = await gardenOn(kind);
  cleanups.push(() => g.cleanup());
  return g;
}

/** A graphql-sse client of `url` (…/api/v1) with `token`; no retries, so a refusal is seen at once. */
function client(url: string, token: string): Client {
  const c = createClient({ url: `${url}/graphql`, headers: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
  cleanups.push(() => c.dispose());
  return c;
}

/** A subscription's results as they come, its end, and when it connected. */
function subscribe(c: Client, query: string, variables: Record<string, unknown> = {}) {
  const sub = { results: [] as ExecutionResult<any, any>[], error: undefined as unknown, completed: false, connected: false, dispose: () => {} };
  sub.dispose = c.subscribe(
    { query, variables },
    { next: (r) => void sub.results.push(r), error: (e) => void (sub.error = e), complete: () => void (sub.completed = true) },
    { connected: () => void (sub.connected = true) } as never,
  );
  cleanups.push(() => sub.dispose());
  return sub;
}

/** GraphQL over HTTP with a JSON answer. */
async function gql(server: RunningServer, query: string, variables?: Record<string, unknown>, init: { token?: string; method?: 'GET' | 'POST'; headers?: Record<string, string> } = {}) {
  const token = init.token ?? server.token;
  const headers = { authorization: `Bearer ${token}`, ...init.headers };
  const response =
    init.method === 'GET'
      ? await fetch(`${server.url}/graphql?${new URLSearchParams({ query, ...(variables ? { variables: JSON.stringify(variables) } : {}) })}`, { headers })
      : await fetch(`${server.url}/graphql`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: { message: string; extensions?: { code: string; status: number; field?: string } }[] } };
}

const EVENT_FIELDS = 'cursor id type goal data';

describe.each(STORE_KINDS)('eventAdded against GET /events/stream (%s store)', (kind) => {
  it('delivers the same events, in the same order, from the same cursor, then the same new ones; filters alike', async () => {
    const g = await garden(kind);
    const written: string[] = [];
    for (let i = 0; i < 150; i += 1) written.push((await appendEvent(g.paths, { type: i % 3 ? 'GoalSubmitted' : 'GoalClosed', goal: `${(i % 5) + 1}-g`, detail: `before ${i}` })).id!);
    const server = await serve(g, cleanups, { webhooks: false });
    const since = written[49]!;
    const sse = sseConnect(`${server.url}/events/stream?since=${since}`, server.token);
    const sseFiltered = sseConnect(`${server.url}/events/stream?since=${since}&type=GoalClosed&goal=2-g`, server.token);
    cleanups.push(() => sse.close(), () => sseFiltered.close());
    const c = client(server.url, server.token);
    const sub = subscribe(c, `subscription ($since: EventCursor) { eventAdded(since: $since) { ${EVENT_FIELDS} } }`, { since });
    const filtered = subscribe(c, `subscription { eventAdded(since: "${since}", type: [GoalClosed], goal: "2-g") { ${EVENT_FIELDS} } }`);
    await Promise.all([sse.ready, sseFiltered.ready]);
    await until(() => sub.connected && filtered.connected, 20_000, 'the subscriptions connected');
    // Live events, written while both are open, of more than one goal's runs.
    for (let i = 0; i < 150; i += 1) written.push((await appendEvent(g.paths, { type: i % 2 ? 'RunClosed' : 'GoalClosed', goal: `${(i % 5) + 1}-g`, run: `${(i % 5) + 1}-g-r1`, detail: `live ${i}` })).id!);
    await until(() => sse.messages.length >= 250 && sub.results.length >= 250, 30_000, 'both streams caught up');
    const fromSse = sse.messages.map((m) => ({ cursor: m.id, type: m.event, data: JSON.parse(m.data) }));
    const fromGraphql = sub.results.map((r) => {
      expect(r.errors).toBeUndefined();
      const e = r.data.eventAdded;
      return { cursor: e.cursor, type: e.type, data: e.data };
    });
    expect(fromGraphql).toEqual(fromSse);
    expect(fromGraphql.map((e) => e.cursor)).toEqual(written.slice(50));
    expect(sub.results.every((r) => r.data.eventAdded.id === r.data.eventAdded.cursor)).toBe(true);
    const wanted = written.length;
    const expectFiltered = fromSse.filter((e) => e.type === 'GoalClosed' && (e.data.goal === '2-g' || String(e.data.run ?? '').startsWith('2-g-r')));
    expect(expectFiltered.length).toBeGreaterThan(10);
    await until(() => sseFiltered.messages.length >= expectFiltered.length && filtered.results.length >= expectFiltered.length, 20_000, 'the filtered streams');
    expect(filtered.results.map((r) => r.data.eventAdded.cursor)).toEqual(sseFiltered.messages.map((m) => m.id));
    expect(filtered.results.map((r) => r.data.eventAdded.data)).toEqual(expectFiltered.map((e) => e.data));
    expect(written).toHaveLength(wanted);
    expect(sub.error).toBeUndefined();
    expect(sub.completed).toBe(false);
  }, 90_000);
});

describe('eventAdded', () => {
  it('without since starts at the end of the log: only events written after it connected', async () => {
    const g = await garden();
    await appendEvent(g.paths, { type: 'GoalClosed', goal: '1-before', reason: 'success' });
    const server = await serve(g, cleanups, { webhooks: false });
    const sub = subscribe(client(server.url, server.token), 'subscription { eventAdded { id type goal } }');
    await until(() => sub.connected, 20_000, 'connected');
    const after = await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '2-after' });
    await until(() => sub.results.length >= 1, 20_000, 'the new event');
    expect(sub.results.map((r) => r.data.eventAdded)).toEqual([{ id: after.id, type: 'GoalSubmitted', goal: '2-after' }]);
  });

  it('a client that stops reading while 3,000 large events are written gets each once, in order, when it reads again', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    // A raw graphql-sse request (what createClient sends), read by hand so it can stop reading.
    const http = await import('node:http');
    const results: string[] = [];
    let response: import('node:http').IncomingMessage | undefined;
    const request = http.request(`${server.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, accept: 'text/event-stream', 'content-type': 'application/json' } }, (res) => {
      response = res;
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let cut = buffer.indexOf('\n\n'); cut >= 0; cut = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (/^event: next$/m.test(block) && data) results.push((JSON.parse(data) as { data: { eventAdded: { id: string } } }).data.eventAdded.id);
        }
      });
    });
    request.on('error', () => undefined);
    request.end(JSON.stringify({ query: 'subscription { eventAdded { id detail } }' }));
    cleanups.push(() => request.destroy());
    await until(() => response !== undefined, 20_000, 'the stream');
    response!.pause();
    const padding = 'x'.repeat(4000);
    const written: string[] = [];
    for (let i = 0; i < 3000; i += 1) written.push((await appendEvent(g.paths, { type: 'GoalSubmitted', goal: `${i + 1}-slow`, detail: padding })).id!);
    expect(results.length).toBeLessThan(3000);
    response!.resume();
    await until(() => results.length >= 3000, 60_000, 'the slow client, caught up');
    expect(results).toEqual(written);
  }, 120_000);

  it('a revoked token ends its subscription; a read token may subscribe', async () => {
    const g = await garden();
    const reader = (await createToken(g.paths, { role: 'read', name: 'dash' })).token;
    const server = await serve(g, cleanups, { webhooks: false, streamTokenCheckMs: 50 });
    const sub = subscribe(client(server.url, reader), 'subscription { eventAdded { id } }');
    await until(() => sub.connected, 20_000, 'connected');
    const one = await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '1-a' });
    await until(() => sub.results.length === 1, 20_000, 'the event');
    expect(sub.results[0]!.data.eventAdded.id).toBe(one.id);
    await revokeToken(g.paths, 'dash');
    await until(() => sub.error !== undefined || sub.completed, 20_000, 'the subscription ended');
    await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '2-b' });
    expect(sub.results).toHaveLength(1);
  });

  it('a bad cursor, an unknown field, a subscription by JSON and no token are refused before the stream starts', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const c = client(server.url, server.token);
    const bad = subscribe(c, 'subscription ($s: EventCursor) { eventAdded(since: $s) { id } }', { s: 'not-a-ulid' });
    const literal = subscribe(c, 'subscription { eventAdded(since: "01ABC") { id } }');
    const unknown = subscribe(c, 'subscription { eventAdded { nope } }');
    await until(() => Boolean(bad.error && literal.error && unknown.error), 20_000, 'the refusals');
    for (const [sub, pattern] of [
      [bad, /since "not-a-ulid": not an event id \(a ULID\)/],
      [literal, /since "01ABC": not an event id \(a ULID\)/],
      [unknown, /Cannot query field "nope" on type "Event"/],
    ] as const) {
      const response = (sub.error as { response?: Response }).response!;
      expect(response.status).toBe(400);
      const body = (await response.json()) as { errors: { message: string; extensions: { status: number } }[] };
      expect(body.errors[0]!.message).toMatch(pattern);
      expect(body.errors[0]!.extensions.status).toBe(400);
      expect(sub.results).toEqual([]);
    }
    // graphql-sse's own refusals come in the same shape.
    const noQuery = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, accept: 'text/event-stream', 'content-type': 'application/json' }, body: '{}' });
    expect(noQuery.status).toBe(400);
    expect(await noQuery.json()).toEqual({ errors: [{ message: 'Missing query', extensions: { code: 'BAD_REQUEST', status: 400, field: 'body' } }] });
    const byJson = await gql(server, 'subscription { eventAdded { id } }');
    expect(byJson.status).toBe(400);
    expect(byJson.body.errors![0]!.message).toMatch(/a subscription comes over graphql-sse: send Accept: text\/event-stream/);
    const anonymous = createClient({ url: `${server.url}/graphql`, retryAttempts: 0 });
    cleanups.push(() => anonymous.dispose());
    const refused = subscribe(anonymous, 'subscription { eventAdded { id } }');
    await until(() => refused.error !== undefined, 20_000, '401');
    expect((refused.error as { response: Response }).response.status).toBe(401);
  });
});

describe('queries and mutations', () => {
  it("submitGoal takes a goal's acceptance criteria and Goal answers them, as POST /goals does", async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const criteria = [{ text: 'the test passes twice', verify: 'npm test && npm test' }, { text: 'the cause is written down', verify: null }];
    const submitted = await gql(server, 'mutation ($input: SubmitGoalInput!) { submitGoal(input: $input) { id acceptance_criteria { text verify } } }', {
      input: { type: 'fix', plant: 'gardener', body: 'Fix the flaky test', acceptance_criteria: [criteria[0], { text: criteria[1]!.text }] },
    });
    expect(submitted.body.errors).toBeUndefined();
    expect(submitted.body.data.submitGoal.acceptance_criteria).toEqual(criteria);
    expect((await readGoal(g.paths, submitted.body.data.submitGoal.id)).acceptance_criteria).toEqual([criteria[0], { text: criteria[1]!.text }]);
  });

  it('goals, goal, runs, events, comments and leases answer as their REST routes; nested runs and comments', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const reader = (await createToken(g.paths, { role: 'read', name: 'dash' })).token;
    const submitted = await gql(server, 'mutation ($input: SubmitGoalInput!) { submitGoal(input: $input) { id status priority assigned_to type } }', {
      input: { type: 'fix', plant: 'gardener', body: 'Fix the flaky test', priority: 70 },
    });
    expect(submitted).toMatchObject({ status: 200, body: { data: { submitGoal: { id: '1-fix-the-flaky-test', status: 'queued', priority: 70, assigned_to: 'gardener', type: 'fix' } } } });
    const id = submitted.body.data.submitGoal.id as string;
    await gql(server, `mutation { postComment(goal: "${id}", body: "which test?", blocking: true) { comment { id blocking author } goal { status } } }`);
    const read = await gql(
      server,
      `query ($id: ID!) {
        goals(status: queued) { total problems goals { id body record } }
        blocked: goals(status: blocked) { total goals { id status blocked_on comments { open comments { body author } } runs { id } } }
        goal(id: $id) { id body }
        runs(goal: $id) { total runs { id } }
        events(type: [GoalSubmitted, CommentPosted], limit: 1) { next more events { type goal cursor } }
        comments(goal: $id) { open comments { id body blocking } }
        leases { id }
      }`,
      { id },
      { token: reader },
    );
    expect(read.status).toBe(200);
    expect(read.body.errors).toBeUndefined();
    const rest = async (route: string) => (await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${reader}` } })).json() as Promise<any>;
    const d = read.body.data;
    expect(d.goals).toEqual({ total: 0, problems: [], goals: [] });
    expect(d.blocked.total).toBe(1);
    expect(d.blocked.goals[0]).toMatchObject({ id, status: 'blocked', blocked_on: { comment: expect.any(String), from: 'queued' }, runs: [] });
    expect(d.blocked.goals[0].comments).toEqual({ open: [d.blocked.goals[0].blocked_on.comment], comments: [{ body: 'which test?', author: 'operator' }] });
    expect(d.goal).toEqual({ id, body: 'Fix the flaky test' });
    expect(d.runs).toEqual({ total: 0, runs: [] });
    const events = await rest('/events?type=GoalSubmitted,CommentPosted&limit=1');
    expect(d.events).toEqual({ next: events.next, more: true, events: [{ type: 'GoalSubmitted', goal: id, cursor: events.events[0].id }] });
    const page2 = await gql(server, 'query ($s: EventCursor) { events(since: $s, type: [GoalSubmitted, CommentPosted]) { more events { type } } }', { s: d.events.next });
    expect(page2.body.data.events).toEqual({ more: false, events: [{ type: 'CommentPosted' }] });
    expect(d.comments).toEqual({ open: [d.comments.comments[0].id], comments: [{ id: d.comments.comments[0].id, body: 'which test?', blocking: true }] });
    expect(d.leases).toEqual([]);
    // A runner's claim (REST) shows as a lease.
    const claimable = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'for a runner' });
    const claim = await fetch(`${server.url}/tasks/claim`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'pak2-runner': 'r1', 'pak2-runner-host': 'box-1', 'content-type': 'application/json' }, body: '{}' });
    expect(claim.status).toBe(200);
    const leases = await gql(server, '{ all: leases { goal state runner { name host } } mine: leases(runner: "r1") { goal } theirs: leases(runner: "r2") { goal } }', undefined, { token: reader });
    expect(leases.body).toEqual({ data: { all: [{ goal: claimable.id, state: 'active', runner: { name: 'r1', host: 'box-1' } }], mine: [{ goal: claimable.id }], theirs: [] } });
    const byGet = await gql(server, '{ goal(id: "1-fix-the-flaky-test") { status } }', undefined, { method: 'GET', token: reader });
    expect(byGet).toMatchObject({ status: 200, body: { data: { goal: { status: 'blocked' } } } });
  });

  it('a read token is refused every mutation (403, nothing written); a runner token the operator actions; the operator acts', async () => {
    const g = await garden();
    const notices: string[] = [];
    const server = await serve(g, cleanups, { webhooks: false, onNotice: (line) => notices.push(line) });
    const reader = (await createToken(g.paths, { role: 'read', name: 'dash' })).token;
    const runner = (await createToken(g.paths, { role: 'runner', name: 'r1' })).token;
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'queued one' });
    const before = fs.readFileSync(g.paths.coordinatorLog, 'utf8');
    const submit = 'mutation { submitGoal(input: {type: fix, plant: "gardener", body: "from a read token"}) { id } }';
    const cancel = `mutation { cancelGoal(id: "${goal.id}") { goal { status } } }`;
    for (const [token, query, role] of [
      [reader, submit, 'read'],
      [reader, cancel, 'read'],
      [runner, submit, 'runner'],
      [runner, cancel, 'runner'],
      // Hidden behind a fragment and @skip: still the mutation's route that decides.
      [reader, `mutation { ...M } fragment M on Mutation { cancelGoal(id: "${goal.id}") @skip(if: true) { goal { id } } }`, 'read'],
    ] as const) {
      const refused = await gql(server, query, undefined, { token });
      expect(refused.status, query).toBe(403);
      expect(refused.body.data).toBeUndefined();
      expect(refused.body.errors![0]!.message).toMatch(new RegExp(`^mutation (submitGoal|cancelGoal): POST /goals(/:id/cancel)?: the ${role} token (dash|r1) may call the GET routes, the event stream(,| and) GraphQL queries.*; this needs an operator token$`));
      expect(refused.body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN', status: 403, field: 'Authorization' });
    }
    expect(notices).toContain('pak2 serve: refused GraphQL mutation submitGoal from 127.0.0.1: token dash (role read) may not run it (403)');
    // A runner token's comment needs its lease, as over REST.
    const noLease = await gql(server, `mutation { postComment(goal: "${goal.id}", body: "hi") { comment { id } } }`, undefined, { token: runner });
    expect(noLease.status).toBe(403);
    expect(noLease.body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN', status: 403, field: '/lease' });
    expect(fs.readFileSync(g.paths.coordinatorLog, 'utf8')).toBe(before);
    expect(fs.readdirSync(g.paths.goalsDir).filter((f) => f.endsWith('.json'))).toHaveLength(1);
    // The operator's cancel goes through the same action: the goal closes cancelled, GoalClosed is written.
    const cancelled = await gql(server, cancel);
    expect(cancelled).toMatchObject({ status: 200, body: { data: { cancelGoal: { goal: { status: 'closed' } } } } });
    expect(readEventLog(g).filter((e) => e.goal === goal.id && e.type === 'GoalClosed')).toMatchObject([{ reason: 'cancelled' }]);
    // A refused action keeps REST's status and words: cancelling it again is 409.
    const again = await gql(server, cancel);
    expect(again.status).toBe(409);
    expect(again.body.errors![0]!.extensions).toMatchObject({ code: 'CONFLICT', status: 409 });
    // No mutation by GET.
    const byGet = await gql(server, cancel, undefined, { method: 'GET' });
    expect(byGet.status).toBe(405);
    expect(byGet.body.errors![0]!.message).toBe('a mutation comes by POST, not GET');
    // REST's input checks: a priority out of range names the field.
    const bad = await gql(server, 'mutation { submitGoal(input: {type: fix, plant: "gardener", body: "b", priority: 101}) { id } }');
    expect(bad.status).toBe(400);
    expect(bad.body.errors![0]!.extensions).toMatchObject({ code: 'BAD_REQUEST', status: 400, field: '/priority' });
    const cap = await gql(server, 'mutation { setBudgetCap(cap: run_usd, usd: 2, lift: true) { key } }');
    expect(cap.status).toBe(400);
    expect(cap.body.errors![0]!.message).toBe('usd: give exactly one of usd (USD greater than 0), lift: true or config: true');
    const set = await gql(server, 'mutation { setBudgetCap(cap: run_usd, usd: 2) { key after } }');
    expect(set.body).toEqual({ data: { setBudgetCap: { key: 'run_usd', after: 2 } } });
  });

  it('an unknown goal or run is a 404 error with REST’s words and no machine path; no token is 401', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    const missing = await gql(server, '{ run(id: "9-nothing-r1") { id } }');
    expect(missing.status).toBe(404);
    expect(missing.body.data).toEqual({ run: null });
    const message = missing.body.errors![0]!.message;
    expect(message).toMatch(/9-nothing-r1/);
    expect(message).not.toContain(g.paths.runtimeRoot);
    expect(message).not.toContain(g.paths.gardenRoot);
    expect(missing.body.errors![0]!).toMatchObject({ path: ['run'], extensions: { code: 'NOT_FOUND', status: 404 } });
    const partly = await gql(server, '{ goals { total } goal(id: "9-nothing") { id } }');
    expect(partly.status).toBe(200);
    expect(partly.body.data).toEqual({ goals: { total: 0 }, goal: null });
    const anonymous = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ goals { total } }' }) });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ field: 'Authorization' });
  });
});

describe('hostile input', () => {
  it('a deep, huge, wide or malformed document is a clear 4xx before anything runs', async () => {
    const g = await garden();
    const server = await serve(g, cleanups, { webhooks: false });
    // __type(name) { fields { type { fields { type { … 31 levels.
    let nest = 'name';
    for (let i = 0; i < 15; i += 1) nest = `fields { type { ${nest} } }`;
    const cases: [string, string, RegExp, number][] = [
      ['deep', `{ __type(name: "Goal") { ${nest} } }`, /^query: fields nested more than 20 deep; ask for less$/, 400],
      ['many tokens', `{ goals { ${'id '.repeat(GRAPHQL_LIMITS.tokens)} } }`, /^query: more than 10000 tokens; send a smaller document$/, 400],
      ['wide', `{ ${Array.from({ length: 11 }, (_, i) => `g${i}: goals { total }`).join(' ')} }`, /^query: 11 root fields; at most 10 in one request$/, 400],
      [
        'a fragment bomb',
        `{ goals { goals { ...A } } } fragment A on Goal { ...B ...B ...B ...B } fragment B on Goal { ...C ...C ...C ...C } fragment C on Goal { ...D ...D ...D ...D } fragment D on Goal { ...E ...E ...E ...E } fragment E on Goal { ...F ...F ...F ...F } fragment F on Goal { id body status }`,
        /^query: more than 1000 fields selected/,
        400,
      ],
      ['syntax', '{ goals { ', /^Syntax Error: Expected Name, found <EOF>\.$/, 400],
      ['unknown field', '{ goals { nope } }', /^Cannot query field "nope" on type "GoalPage"\.$/, 400],
      ['bad cursor', '{ events(since: "yesterday") { more } }', /since "yesterday": not an event id \(a ULID\)/, 400],
      ['no query', '', /^query: a GraphQL document is required/, 400],
    ];
    for (const [what, query, pattern, status] of cases) {
      const answer = await gql(server, query);
      expect(answer.status, what).toBe(status);
      expect(answer.body.data, what).toBeUndefined();
      expect(answer.body.errors![0]!.message, what).toMatch(pattern);
      expect(answer.body.errors![0]!.extensions!.status, what).toBe(status);
    }
    const post = (body: string, type = 'application/json') => fetch(`${server.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': type }, body });
    const notJson = await post('{"query": ');
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { errors: { message: string }[] }).errors[0]!.message).toMatch(/JSON/);
    const batch = await post('[{"query": "{ goals { total } }"}]');
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { errors: { message: string }[] }).errors[0]!.message).toBe('body: one operation per request ({query, variables?, operationName?}); batches are not taken');
    const huge = await post(JSON.stringify({ query: `{ goals { total } } # ${'x'.repeat(1_100_000)}` }));
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('PAYLOAD_TOO_LARGE');
    const text = await post('{ goals { total } }', 'text/plain');
    expect(text.status).toBe(415);
    const stray = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ goals { total } }')}&debug=1`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(stray.status).toBe(400);
    expect(((await stray.json()) as { errors: { message: string }[] }).errors[0]!.message).toBe('debug: unknown parameter (query, variables, operationName, extensions)');
    // Nested lookups are bounded: 101 goals' runs are refused past the hundredth (Run lists are non-null, so no data is left: 400).
    for (let i = 0; i < 101; i += 1) await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: `goal ${i}` });
    const fanOut = await gql(server, '{ goals { goals { id runs { id } } } }');
    expect(fanOut.status).toBe(400);
    expect(fanOut.body.data).toBeNull();
    expect(fanOut.body.errors![0]!.message).toMatch(/^runs: at most 100 nested lookups/);
    // The server still answers.
    expect((await gql(server, '{ goals(limit: 1) { total } }')).body.data).toEqual({ goals: { total: 101 } });
  });
});

describe('the schema', () => {
  it('docs/server/schema.graphql is the schema the server builds (npm run schema writes it); every mutation has its REST route', () => {
    const file = fs.readFileSync(path.join(ROOT, 'docs/server/schema.graphql'), 'utf8');
    expect(file, 'docs/server/schema.graphql differs from the schema: npm run schema').toBe(graphqlSdl());
    const schema = graphqlSchema();
    expect(file).toContain(printSchema(schema));
    expect(Object.keys(schema.getMutationType()!.getFields()).sort()).toEqual(Object.keys(MUTATION_ROUTES).sort());
  });
});

describe('pak2 serve', () => {
  it('serves /api/v1/graphql: a query and the subscription with createClient', async () => {
    const g = await garden();
    const child = startCli(['serve', '--garden', g.paths.gardenRoot, '--port', '0']);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    cleanups.push(async () => {
      child.kill('SIGTERM');
      await exited;
    });
    await until(() => /pak2: serving (\S+)/.test(stderr), 20_000, 'the start line');
    const url = /pak2: serving (\S+)/.exec(stderr)![1]!;
    const token = fs.readFileSync(path.join(g.paths.runtimeRoot, 'serve', 'token'), 'utf8').trim();
    const c = client(url, token);
    const first = await appendEvent(g.paths, { type: 'GoalSubmitted', goal: '1-a' });
    const sub = subscribe(c, `subscription { eventAdded(since: "${first.id}") { type goal } }`);
    const answer = await c.iterate({ query: 'mutation { submitGoal(input: {type: spike, plant: "gardener", body: "over graphql-sse"}) { id } }' }).next();
    expect(answer.value).toEqual({ data: { submitGoal: { id: '1-over-graphql-sse' } } });
    await until(() => sub.results.length >= 1, 20_000, 'the GoalSubmitted');
    expect(sub.results[0]!.data.eventAdded).toEqual({ type: 'GoalSubmitted', goal: '1-over-graphql-sse' });
  }, 60_000);
});
