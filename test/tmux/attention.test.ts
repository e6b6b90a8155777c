/**
 * The needs-you list in a real terminal (docs/attention/level2.md): the
 * workbench in tmux while a question, a failed run and a budget stop
 * arrive. The status line counts them (`1 needs you`, `2 need you`, `3 need
 * you`), `!` lists them, `a`
 * acknowledges one; the pane's raw output (tmux pipe-pane) holds the bell
 * and the OSC 9 and OSC 777 sequences once per new item, and the
 * `[notify] command` receives each item once as JSON. The workbench also
 * delivers the garden's webhooks, with no `pak2 serve`.
 *
 * PAK2_SHOW_SCREENS=1 prints the screens the test reads.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AttentionItem } from '../../source/contracts/index.js';
import { addSubscription } from '../../source/server/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { postComment } from '../../source/submit/index.js';
import { makeTestGarden, waitFor } from '../support/garden.js';
import { cleanupsAfterEach, PAK2_BIN, shellQuote, show, statusLine, TmuxSession } from './tmux.js';

const cleanups = cleanupsAfterEach();
const SPEND_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/spend-agent.mjs');

const count = (text: string, part: string) => text.split(part).length - 1;

describe('the needs-you list in the workbench', () => {
  it('fills as a question, a failure and a budget stop arrive; the status line counts them; bell, OSC 9 and OSC 777 once per new item; the [notify] command gets each', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-attn-tmux-'));
    const out = path.join(root, 'notified.jsonl');
    const raw = path.join(root, 'pane.raw');
    fs.writeFileSync(path.join(root, 'notify.mjs'), `import fs from 'node:fs';\nlet t = '';\nprocess.stdin.on('data', (d) => (t += d));\nprocess.stdin.on('end', () => fs.appendFileSync(${JSON.stringify(out)}, t));\n`);
    const garden = await makeTestGarden({
      root,
      coordinator: { max_concurrent_runs: 2 },
      extraToml: `[notify]\nterminal = "all"\ncommand = ${JSON.stringify([process.execPath, path.join(root, 'notify.mjs')])}\n[drivers.spender]\ncommand = ${JSON.stringify([process.execPath, SPEND_AGENT, 'climb'])}\n[budget]\nrun_usd = 1\n`,
    });
    cleanups.push(() => garden.cleanup());
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-home-'));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm-256color', LANG: 'C.UTF-8' };

    // A loopback webhook receiver: the workbench delivers to it, no pak2 serve runs.
    const hooked: { event: { type: string; run?: string } }[] = [];
    const receiver = http.createServer((request, response) => {
      let body = '';
      request.on('data', (d: Buffer) => (body += d.toString()));
      request.on('end', () => {
        hooked.push(JSON.parse(body) as (typeof hooked)[number]);
        response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    await addSubscription(garden.paths, { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, events: ['RunClosed'] });

    const tmux = new TmuxSession();
    cleanups.push(() => tmux.kill());
    tmux.start({ cwd: garden.paths.gardenRoot, env, argv: [process.execPath, PAK2_BIN], columns: 120, rows: 30 });
    // Everything the workbench writes to its terminal, bytes as written.
    tmux.tmux('pipe-pane', '-t', tmux.target, `cat >> ${shellQuote(raw)}`);
    let screen = await tmux.waitFor('the workbench', (s) => (statusLine(s).includes('coordinator idle') ? s : undefined));
    expect(statusLine(screen)).not.toMatch(/need/);

    // A question: a running goal's agent asks.
    const asks = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'asks', driver: 'stall' });
    await waitFor(async () => (await readGoal(garden.paths, asks.id)).status === 'running', 20_000);
    const { comment } = await postComment(garden, asks.id, { body: 'Which port should it listen on?', blocking: true, author: `agent:${asks.id}-r1` });
    screen = await tmux.waitFor('1 needs you', (s) => (statusLine(s).includes('1 needs you') ? s : undefined));
    show('a question', screen);
    expect(statusLine(screen)).toContain('! needs you');

    // A failure.
    const fails = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fails', driver: 'exit3' });
    await waitFor(async () => (await readRun(garden.paths, `${fails.id}-r1`).catch(() => undefined))?.status === 'failure', 20_000);
    screen = await tmux.waitFor('2 need you', (s) => (statusLine(s).includes('2 need you') ? s : undefined));
    show('a failure', screen);

    await waitFor(() => hooked.some((b) => b.event.type === 'RunClosed' && b.event.run === `${fails.id}-r1`), 20_000);

    // A budget stop: the agent's spend crosses run_usd and pak2 stops it.
    const spends = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'spends', driver: 'spender' });
    await waitFor(async () => (await readRun(garden.paths, `${spends.id}-r1`).catch(() => undefined))?.failure_reason === 'budget_exceeded', 20_000);
    screen = await tmux.waitFor('3 need you', (s) => (statusLine(s).includes('3 need you') ? s : undefined));
    show('a budget stop', screen);

    // The [notify] command got each new item once, in order.
    await waitFor(() => fs.existsSync(out) && fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).length === 3, 15_000);
    const notified = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as AttentionItem);
    expect(notified.map((i) => i.id)).toEqual([`question:${comment.id}`, `run:${fails.id}-r1`, `run:${spends.id}-r1`]);
    expect(notified[2]).toMatchObject({ kind: 'budget', summary: `${spends.id}: ${spends.id}-r1 was stopped over its budget (budget_exceeded)` });

    // The list: newest first; a acknowledges the selected one (the failure).
    tmux.keys('!');
    screen = await tmux.waitFor('the needs-you list', (s) => (s.includes('Needs you') && s.includes(`${fails.id}-r1 ended failure`) && s.includes('Which port should it listen on?') ? s : undefined));
    show('the list', screen);
    const rows = screen.split('\n').filter((l) => /│ [› ] (question|failed|budget)/.test(l));
    expect(rows.map((l) => /(question|failed|budget)/.exec(l)![1])).toEqual(['budget', 'failed', 'question']);
    expect(rows[0]).toContain('›');
    // The budget stop acknowledged, then the failure.
    tmux.keys('a');
    screen = await tmux.waitFor('the budget stop acknowledged', (s) => (!s.includes('was stopped over its budget') && statusLine(s).includes('2 need you') ? s : undefined));
    tmux.keys('a');
    screen = await tmux.waitFor('the failure acknowledged', (s) => (!s.includes(`${fails.id}-r1 ended failure`) && statusLine(s).includes('1 needs you') ? s : undefined));
    show('acknowledged', screen);
    expect(screen).toContain('Which port should it listen on?');
    tmux.keys('Escape');
    await tmux.waitFor('the panes again', (s) => (s.includes('╭─ Goals ') ? s : undefined));

    // Bell, OSC 9 and OSC 777: once per new item, none for the acknowledgement.
    const bytes = fs.readFileSync(raw, 'latin1');
    expect(count(bytes, '\x1b]9;pak2: ')).toBe(3);
    expect(count(bytes, '\x1b]777;notify;pak2 needs you;')).toBe(3);
    expect(count(bytes, `\x1b]9;pak2: ${asks.id} asks: Which port should it listen on?\x07`)).toBe(1);
    expect(count(bytes, `\x1b]777;notify;pak2 needs you;${fails.id}: ${fails.id}-r1 ended failure (nonzero_exit)\x07`)).toBe(1);
    // The bells: one each, not counting the BEL that ends each OSC sequence.
    expect(count(bytes, '\x07') - 6).toBe(3);

    tmux.keys('q');
    await tmux.waitFor('the quit question', (s) => (/live run/.test(s) ? s : undefined));
    tmux.keys('y');
    expect(await tmux.exitStatus(30_000)).toBe(0);
  }, 120_000);
});
