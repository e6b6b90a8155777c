/**
 * An agent that tries to drive the operator's terminal (issue 23, point 6):
 * clear screen, cursor home, title (OSC 0), clipboard (OSC 52), a C1 CSI, a
 * DCS string, a full reset, a bell, bidi overrides and isolates (U+202E),
 * zero-width characters, an OSC left open at the end of its
 * stderr, a progress bar on CR, on stderr, on stdout and in its result's
 * text, error and reflection (test/fixtures/hostile-agent.mjs). Every byte
 * the real CLI prints (`pak2 cycle --no-ui`, `--json`, `show`, `runs`,
 * `goals`, `chat`, `trace`, `comment`, `threads`, `events`) is inert: no
 * ESC, no C1, no BEL, no other control character but tab and line feed;
 * the sequences are shown as `\u001b…` escapes and the text around them is
 * intact. The run's files keep the raw bytes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDir } from '../../source/garden/index.js';
import { appendEvent, closeRun, createGoal, openRun, upsertThread } from '../../source/store/index.js';
import { outcomeFixture, writeGuardFiles } from '../helpers/guard-fixtures.js';
import { runCli, type CliResult } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

const HOSTILE_AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/hostile-agent.mjs');
/** What test/fixtures/hostile-agent.mjs writes (the same text). */
const HOSTILE = 'clear\x1b[2J\x1b[H|title\x1b]0;pwned\x07|clip\x1b]52;c;cHduZWQ=\x07|c1\u009b2J|dcs\x1bP1$qm\x1b\\|reset\x1bc|bell\x07|red\x1b[31mRED\x1b[0m|bidi\u202eevil\u202c|isolate\u2067x\u2069|zw\u200bsp\ufeff|ls\u2028x|end';
/** HOSTILE as pak2 prints it: each control character as its escape, the colour dropped. */
const SHOWN = 'clear\\u001b[2J\\u001b[H|title\\u001b]0;pwned\\u0007|clip\\u001b]52;c;cHduZWQ=\\u0007|c1\\u009b2J|dcs\\u001bP1$qm\\u001b\\|reset\\u001bc|bell\\u0007|redRED|bidi\\u202eevil\\u202c|isolate\\u2067x\\u2069|zw\\u200bsp\\ufeff|ls\\u2028x|end';

const DRIVERS = ['success', 'failure'].map((s) => `[drivers.hostile-${s}]\ncommand = ${JSON.stringify([process.execPath, HOSTILE_AGENT, s])}`).join('\n');

/** No byte that a terminal acts on: ESC, C1 (as UTF-8), BEL or any other control character but tab and line feed. */
function expectInert(text: string, where: string): void {
  expect(text.includes('\x1b'), `${where} printed ESC`).toBe(false);
  expect(/[\u0080-\u009f]/.test(text), `${where} printed a C1 control`).toBe(false);
  expect(text.includes('\x07'), `${where} printed BEL`).toBe(false);
  expect(/[\x00-\x08\x0b-\x1f\x7f]/.test(text), `${where} printed a control character`).toBe(false);
  expect(/[\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/.test(text), `${where} printed a bidi control or a hidden character`).toBe(false);
}

function expectAllInert(r: CliResult, where: string): void {
  expectInert(r.stdout, `${where} (stdout)`);
  expectInert(r.stderr, `${where} (stderr)`);
}

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeAll(async () => {
  garden = await makeTestGarden({ extraToml: DRIVERS });
  g = ['--garden', garden.paths.gardenRoot];
});
afterAll(() => garden.cleanup());

describe('pak2 cycle --no-ui with a hostile agent', () => {
  let cycle: CliResult;
  let built: string;
  let fixed: string;
  beforeAll(async () => {
    built = (await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'build', '--driver', 'hostile-success', '--body', `Build ${HOSTILE}`])).stdout.trim();
    fixed = (await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--driver', 'hostile-failure', '--body', 'Fix it'])).stdout.trim();
    cycle = await runCli(['cycle', '--no-ui', '--until-idle', ...g]);
  }, 60_000);

  it('forwards the agent stderr neutralised: sequences shown, text intact, CR a line break, a split sequence and an open OSC inert', () => {
    expect(cycle.code, cycle.stderr).toBe(0);
    expectAllInert(cycle, 'cycle --no-ui');
    expect(cycle.stdout).toMatch(new RegExp(`GoalClosed\\s+${built} \\(success\\)`));
    expect(cycle.stdout).toMatch(new RegExp(`GoalClosed\\s+${fixed} \\(failure\\)`));
    const err = cycle.stderr;
    expect(err).toContain(`\nstderr ${SHOWN}\nprogress 10%\nprogress 20%\nsplit \\u001b]52;c;c3BsaXQ=\\u0007 done\n`);
    expect(err).toContain(`\nreflection stderr ${SHOWN}\n`);
    // The OSC the agent left open is text on a line of its own: the next line is not swallowed into a title.
    expect(err.match(/^unterminated \\u001b\]0;the title never ends$/gm)).toHaveLength(2);
  });

  it("keeps the raw bytes in the run's stderr.log and events.jsonl", () => {
    const dir = runDir(garden.paths, `${built}-r1`);
    const stderrLog = fs.readFileSync(path.join(dir, 'stderr.log'), 'utf8');
    expect(stderrLog).toContain(`stderr ${HOSTILE}\nprogress 10%\rprogress 20%\r\nsplit \x1b]52;c;c3BsaXQ=\x07 done\nunterminated \x1b]0;the title never ends`);
    expect(stderrLog).toContain(`reflection stderr ${HOSTILE}\n`);
    const events = fs.readFileSync(path.join(dir, 'events.jsonl'), 'utf8');
    expect(events).toContain(`stdout ${HOSTILE}\n`);
    expect(events).toContain(JSON.stringify({ type: 'result', status: 'success', text: `final ${HOSTILE}`, cost_usd: 0.01, session_id: 'hostile-session' }));
  });

  it('show prints the final text, reflection, error and goal body inert; --json keeps their values', async () => {
    const run = await runCli(['show', `${built}-r1`, ...g]);
    expect(run.code, run.stderr).toBe(0);
    expectAllInert(run, 'show RUN');
    expect(run.stdout).toContain(`final text:\n  final ${SHOWN}`);
    expect(run.stdout).toContain(`reflection:\n  reflection ${SHOWN}`);
    const failed = await runCli(['show', `${fixed}-r1`, ...g]);
    expectAllInert(failed, 'show failed RUN');
    expect(failed.stdout).toContain(`error ${SHOWN}`);
    const goal = await runCli(['show', built, ...g]);
    expectAllInert(goal, 'show GOAL');
    expect(goal.stdout).toContain(`  Build ${SHOWN}`);
    const json = await runCli(['show', `${built}-r1`, '--json', ...g]);
    expectAllInert(json, 'show RUN --json');
    const record = JSON.parse(json.stdout) as { outputs: { final_text: string }; reflection: string };
    expect(record.outputs.final_text).toBe(`final ${HOSTILE}`);
    expect(record.reflection).toBe(`reflection ${HOSTILE}`);
  });

  it('runs, runs --json, goals and goals --all --json print nothing a terminal acts on; JSON keeps the values', async () => {
    for (const args of [['runs'], ['goals'], ['goals', '--all']]) expectAllInert(await runCli([...args, ...g]), args.join(' '));
    const runs = await runCli(['runs', '--json', ...g]);
    expectAllInert(runs, 'runs --json');
    const records = JSON.parse(runs.stdout) as { id: string; outputs?: { final_text?: string; error?: string } }[];
    expect(records.find((r) => r.id === `${built}-r1`)?.outputs?.final_text).toBe(`final ${HOSTILE}`);
    expect(records.find((r) => r.id === `${fixed}-r1`)?.outputs?.error).toContain(`error ${HOSTILE}`);
    const goals = await runCli(['goals', '--all', '--json', ...g]);
    expectAllInert(goals, 'goals --all --json');
    expect((JSON.parse(goals.stdout) as { id: string; body: string }[]).find((x) => x.id === built)?.body).toBe(`Build ${HOSTILE}`);
  });
});

describe('headless --json, chat, events, trace, comment, threads', () => {
  it('cycle --no-ui --json: each line is JSON, the agent stderr on stderr is inert', async () => {
    await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--driver', 'hostile-success', '--body', 'As JSON']);
    const r = await runCli(['cycle', '--no-ui', '--until-idle', '--json', ...g]);
    expect(r.code, r.stderr).toBe(0);
    expectAllInert(r, 'cycle --json');
    const types = r.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types).toContain('GoalClosed');
    expect(r.stderr).toContain(`stderr ${SHOWN}`);
  }, 60_000);

  it('chat prints the garden reply inert', async () => {
    const sent = await runCli(['chat', '--message', 'hello', '--no-wait', ...g]);
    expect(sent.code, sent.stderr).toBe(0);
    const cycle = await runCli(['cycle', '--no-ui', '--until-idle', ...g], { env: { PAK2_DEFAULT_DRIVER: 'hostile-success' } });
    expectAllInert(cycle, 'cycle (chat reply)');
    const chat = await runCli(['chat', ...g]);
    expect(chat.code, chat.stderr).toBe(0);
    expectAllInert(chat, 'chat');
    expect(chat.stdout).toMatch(/operator: hello/);
    expect(chat.stdout).toContain(`garden: final ${SHOWN}`);
  }, 60_000);

  it('events and events --json: a hostile detail is shown, one line per event; JSON keeps the value', async () => {
    const detail = `an agent said ${HOSTILE}\nfake line`;
    const event = await appendEvent(garden.paths, { type: 'RunLeftovers', run: '99-x-r1', goal: '99-x', detail });
    const text = await runCli(['events', '--goal', '99-x', ...g]);
    expect(text.code, text.stderr).toBe(0);
    expectAllInert(text, 'events');
    expect(text.stdout.trim().split('\n')).toHaveLength(1);
    expect(text.stdout).toContain(`an agent said ${SHOWN} fake line`);
    const json = await runCli(['events', '--goal', '99-x', '--json', ...g]);
    expectAllInert(json, 'events --json');
    expect(JSON.parse(json.stdout)).toEqual(event);
  });

  it('trace prints hostile verify output inert', async () => {
    const goal = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Fix the parser' });
    const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'claude', model: 'sonnet' });
    await closeRun(garden.paths, run.id, goal.type, { status: 'failure', failureReason: 'verify_failed', cost: { source: 'provider', usd: 0.1 } });
    writeGuardFiles(garden.paths, run.id, {
      outcome: outcomeFixture(run.id, { state: 'blocked', diagnostic_code: 'verify_failed', verify_ok: false, verify_exit_code: 1, verify_stdout: `out ${HOSTILE}`, verify_stderr: `err ${HOSTILE}`, failed_command: 'npm test', verifier_was_skipped: false, scope_violations: [] }),
      patch: null,
    });
    const r = await runCli(['trace', run.id, ...g]);
    expect(r.code, r.stderr).toBe(0);
    expectAllInert(r, 'trace');
    expect(r.stdout).toContain(`out ${SHOWN}`);
    expect(r.stdout).toContain(`err ${SHOWN}`);
  });

  it('comment threads and active threads print inert', async () => {
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Look around' });
    const posted = await runCli(['comment', goal.id, `note ${HOSTILE}`, ...g]);
    expect(posted.code, posted.stderr).toBe(0);
    const thread = await runCli(['comment', goal.id, ...g]);
    expectAllInert(thread, 'comment');
    expect(thread.stdout).toContain(`note ${SHOWN}`);
    await upsertThread(garden.paths, 'gardener', { id: 't-hostile', title: 'Hostile', status: 'active', next: `next ${HOSTILE}` });
    const threads = await runCli(['threads', 'gardener', ...g]);
    expectAllInert(threads, 'threads');
    expect(threads.stdout).toContain(`next ${SHOWN}`);
  });
});
