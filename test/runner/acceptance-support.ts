/**
 * Real processes for the remote-runner acceptance tests (issue 12): a
 * garden served by a real `pak2 serve` on 127.0.0.1, real `pak2 runner`
 * processes, each in its own work directory and state directory, and a
 * scripted command agent whose behaviour each test picks.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { until } from '../server/support.js';

/**
 * The scripted agent (`node agent.mjs MODE`), a `command` driver:
 * - `wait`: prints a line a second until the file $AGENT_RELEASE exists, then its result;
 * - `ask`: posts a blocking question through the runner's outbox, waits for the answer in the inbox, reports it;
 * - `ask-exit`: posts the blocking question and ends at once, successfully;
 * - `attach`: writes report.txt in its work directory and asks the runner to attach a pull-request link, that file, and a file outside the work directory.
 * The reflection turn answers with one line.
 */
export const AGENT_SOURCE = `
import fs from 'node:fs';
import path from 'node:path';
const mode = process.argv[2];
const say = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
if (process.env.PAK2_PHASE === 'reflection') {
  say({ type: 'text', text: 'Learned: remote runs report through their runner.' });
  say({ type: 'result', status: 'success', text: 'Learned: remote runs report through their runner.', cost_usd: 0.001 });
  process.exit(0);
}
const ask = () => {
  const out = process.env.PAK2_OUTBOX;
  fs.writeFileSync(path.join(out, 'q1.json.tmp'), JSON.stringify({ body: 'Which colour should the button be?', blocking: true }));
  fs.renameSync(path.join(out, 'q1.json.tmp'), path.join(out, 'q1.json'));
};
say({ type: 'text', text: 'starting ' + mode + ' in ' + process.cwd() });
if (mode === 'wait') {
  while (!fs.existsSync(process.env.AGENT_RELEASE)) { say({ type: 'text', text: 'working' }); await sleep(1000); }
  say({ type: 'result', status: 'success', text: 'done waiting', cost_usd: 0.01, session_id: 'sess-' + process.env.PAK2_RUN_ID, num_turns: 2 });
} else if (mode === 'ask') {
  ask();
  const answer = path.join(process.env.PAK2_INBOX, 'q1.json');
  while (!fs.existsSync(answer)) { say({ type: 'text', text: 'waiting for the answer' }); await sleep(500); }
  const body = JSON.parse(fs.readFileSync(answer, 'utf8')).body;
  say({ type: 'result', status: 'success', text: 'answer: ' + body, cost_usd: 0.02 });
} else if (mode === 'attach') {
  const out = process.env.PAK2_OUTBOX;
  const drop = (key, value) => { fs.writeFileSync(path.join(out, key + '.tmp'), JSON.stringify(value)); fs.renameSync(path.join(out, key + '.tmp'), path.join(out, key + '.json')); };
  fs.writeFileSync('report.txt', 'all checks green\\n');
  drop('a1', { artifact: { kind: 'link', name: 'pull-request', url: 'http://127.0.0.1:9/pulls/7' } });
  drop('a2', { artifact: { kind: 'file', name: 'report.txt', path: 'report.txt' } });
  drop('a3', { artifact: { kind: 'file', name: 'secret', path: '../outside.txt' } });
  say({ type: 'result', status: 'success', text: 'attached', cost_usd: 0.001 });
} else if (mode === 'ask-exit') {
  ask();
  say({ type: 'result', status: 'success', text: 'asked and left', cost_usd: 0.005 });
}
`;

/** A served garden with runner work directories. */
export interface ServedGarden {
  root: string;
  runtimeRoot: string;
  url: string;
  token: string;
  tokenFile: string;
  agent: string;
  release: string;
  serve: ChildProcess;
  stderr: () => string;
  /** GET/POST the garden's API with the token (and runner headers when `runner` is given). */
  api: (method: string, route: string, body?: unknown, runner?: string, headers?: Record<string, string>) => Promise<{ status: number; json: any }>;
  cleanup: () => Promise<void>;
}

/** TOML for a `[drivers.agent]` running the scripted agent in `mode`. */
export function agentToml(agent: string, mode: string): string {
  return `[drivers.agent]\ncommand = ${JSON.stringify([process.execPath, agent, mode])}\n`;
}

/** Starts `pak2 serve` on a new garden (lease TTL `ttl` seconds, no coordinator) with the scripted agent as driver `agent` in `mode`. */
export async function servedGarden(mode: string, ttl: number): Promise<ServedGarden> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-runners-'));
  const agent = path.join(tmp, 'agent.mjs');
  fs.writeFileSync(agent, AGENT_SOURCE);
  const g = await makeTestGarden({ coordinator: { max_concurrent_runs: 0 }, extraToml: `${agentToml(agent, mode)}[runners]\nlease_ttl_seconds = ${ttl}\n` });
  const serve = startCli(['serve', '--garden', g.paths.gardenRoot, '--port', '0']);
  let stderr = '';
  serve.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => serve.once('exit', () => resolve()));
  await until(() => /pak2: serving (\S+)/.test(stderr) || serve.exitCode !== null, 20_000, 'the serve start line');
  const url = /pak2: serving (\S+)/.exec(stderr)?.[1];
  if (!url) throw new Error(`pak2 serve did not start: ${stderr}`);
  const tokenFile = path.join(g.paths.runtimeRoot, 'serve', 'token');
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  const api = async (method: string, route: string, body?: unknown, runner?: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${url}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(runner ? { 'pak2-runner': runner, 'pak2-runner-host': 'test-host' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  };
  return {
    root: g.paths.gardenRoot,
    runtimeRoot: g.paths.runtimeRoot,
    url,
    token,
    tokenFile,
    agent,
    release: path.join(tmp, 'release'),
    serve,
    stderr: () => stderr,
    api,
    cleanup: async () => {
      serve.kill('SIGTERM');
      const timer = setTimeout(() => serve.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      killAgents(agent);
      g.cleanup();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** A runner process and what it printed. */
export interface RunnerProcess {
  name: string;
  child: ChildProcess;
  workdir: string;
  state: string;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts `pak2 runner NAME` against the served garden, in its own work and state directories (kept across restarts when given). */
export function startRunner(s: ServedGarden, name: string, mode: string, dirs?: { workdir: string; state: string }, extra: string[] = []): RunnerProcess {
  const workdir = dirs?.workdir ?? fs.mkdtempSync(path.join(os.tmpdir(), `pak2-runner-${name}-work-`));
  const state = dirs?.state ?? fs.mkdtempSync(path.join(os.tmpdir(), `pak2-runner-${name}-state-`));
  fs.writeFileSync(path.join(workdir, 'PAK2.toml'), agentToml(s.agent, mode));
  const child = startCli(['runner', '--server', s.url, '--token-file', s.tokenFile, '--name', name, '--workdir', workdir, '--state', state, '--poll', '1', ...extra], {
    cwd: workdir,
    env: { AGENT_RELEASE: s.release },
  });
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { name, child, workdir, state, output: () => output, exited };
}

/** Stops a runner (SIGTERM, then SIGKILL after 10 s) and removes its directories unless `keep`. */
export async function stopRunner(r: RunnerProcess, keep = false): Promise<void> {
  if (r.child.exitCode === null && r.child.signalCode === null) {
    r.child.kill('SIGTERM');
    const timer = setTimeout(() => r.child.kill('SIGKILL'), 10_000);
    await r.exited;
    clearTimeout(timer);
  }
  if (!keep) {
    fs.rmSync(r.workdir, { recursive: true, force: true });
    fs.rmSync(r.state, { recursive: true, force: true });
  }
}

/** Kills every process whose command line names the scripted agent (the orphans a kill -9 of their runner leaves). */
export function killAgents(agent: string): void {
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(agent)) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone, or not ours
    }
  }
}

/** The garden's event log as records. */
export function events(s: ServedGarden): Array<Record<string, string>> {
  const file = path.join(s.runtimeRoot, 'events', 'coordinator.jsonl');
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, string>);
}

/** A run's meta.json on the garden. */
export function runRecord(s: ServedGarden, runId: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(s.runtimeRoot, 'runs', runId, 'meta.json'), 'utf8'));
}

/** A goal's record on the garden. */
export function goalRecord(s: ServedGarden, goalId: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(s.runtimeRoot, 'goals', `${goalId}.json`), 'utf8'));
}

export { until };
