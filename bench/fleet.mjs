#!/usr/bin/env node
// What pak2 itself costs a fleet of runs. A trivial command agent (one result
// line) is run N times directly, then N `spike` goals (no reflection) go
// through a real Coordinator on a split-layout git garden, from submit to
// all closed, at several max_concurrent_runs; per-run overhead is that wall
// time / N less the direct time. Then where pak2's time goes per run (the
// spans of source/timing.ts), and the latencies read from the event log.
// Prints figures; asserts nothing.
// Usage: npm run bench:fleet [-- --runs 100 --slots 1,4,8 --agents node,sh,wait --load 0 --isolation worktree|tree]
//   --agents   node: `node agent.mjs`; sh: `sh -c echo`; wait: `sh -c 'sleep 0.1; echo'`
//   --load K   K busy processes spin on the CPU while measuring (a loaded machine)
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Coordinator } from '../dist/coordinator/index.js';
import { loadGarden } from '../dist/garden/index.js';
import { historyNotice, setRuntimeHistoryListener } from '../dist/history/index.js';
import { commissionPlant, createGoal, onEvent, readRun } from '../dist/store/index.js';
import { enableSpans, disableSpans, spanTotals } from '../dist/timing.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '100' },
    slots: { type: 'string', default: '1,4,8' },
    agents: { type: 'string', default: 'node,sh' },
    load: { type: 'string', default: '0' },
    isolation: { type: 'string', default: 'worktree' },
  },
});
const RUNS = Number(values.runs);
const SLOTS = values.slots.split(',').map(Number);
const AGENTS = values.agents.split(',');
const LOAD = Number(values.load);
const ISOLATION = values.isolation;

const RESULT = '{"type":"result","status":"success","text":"ok","cost_usd":0}';
const AGENT_SOURCE = `process.stdout.write(${JSON.stringify(`${RESULT}\n`)});\n`;
/** The agents: an executable and its arguments, run with the garden root as cwd. */
const agentCommand = (root, agent) =>
  agent === 'node'
    ? [process.execPath, path.join(root, 'agent.mjs')]
    : // `wait`: an agent that spends 100 ms waiting (as a real one waits on its model), then reports.
      ['/bin/sh', '-c', `${agent === 'wait' ? 'sleep 0.1; ' : ''}echo '${RESULT}'`];

const git = (cwd, ...args) => execFileSync('git', args, { cwd, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@localhost', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@localhost' } });

/** A temp garden: split layout, a gardener plant, the agent as `[drivers.t]`, a git repository with one commit (so every close commits its runtime history). */
async function makeGarden(agent, slots) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-fleet-'));
  fs.writeFileSync(path.join(root, 'agent.mjs'), AGENT_SOURCE);
  fs.writeFileSync(
    path.join(root, 'PAK2.toml'),
    [
      '[runtime]',
      'root = ".runtime"',
      '[defaults]',
      'driver = "t"',
      '[coordinator]',
      'interval_seconds = 3600',
      'watchdog_seconds = 3600',
      `isolation = "${ISOLATION}"`,
      `max_concurrent_runs = ${slots}`,
      '[drivers.t]',
      `command = ${JSON.stringify(agentCommand(root, agent))}`,
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# Motivation\n\nA bench garden.\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed: gardener\n\nYou look after the bench garden.\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  git(root, 'init', '--quiet');
  git(root, 'add', '-A');
  git(root, 'commit', '--quiet', '-m', 'bench garden');
  return garden;
}

/** Runs the agent `n` times, one after the other, as pak2 does: prompt file as stdin, stdout and stderr into files. */
async function direct(root, agent, n) {
  const [command, ...args] = agentCommand(root, agent);
  const prompt = path.join(root, 'prompt.md');
  fs.writeFileSync(prompt, 'Do nothing.\n');
  const start = performance.now();
  for (let i = 0; i < n; i += 1) {
    const fds = [fs.openSync(prompt, 'r'), fs.openSync(path.join(root, 'out.jsonl'), 'a'), fs.openSync(path.join(root, 'err.log'), 'a')];
    const child = spawn(command, args, { cwd: root, stdio: fds, detached: true });
    for (const fd of fds) fs.closeSync(fd);
    await new Promise((resolve, reject) => child.on('exit', resolve).on('error', reject));
  }
  return (performance.now() - start) / n;
}

/** N spike goals through a Coordinator with `slots` slots: wall time from the first submit until every goal is closed and every run's runtime history captured; spans; latencies. */
async function fleet(agent, slots, n) {
  const garden = await makeGarden(agent, slots);
  const outcomes = new Map();
  const stderr = [];
  let captured = 0;
  let closed = 0;
  let allDone;
  const done = new Promise((resolve) => (allDone = resolve));
  // Done when every goal is closed and every run's runtime history is captured.
  const check = () => closed === n && captured === n && allDone();
  const restore = setRuntimeHistoryListener((runId, result) => {
    outcomes.set(result.outcome, (outcomes.get(result.outcome) ?? 0) + 1);
    const notice = historyNotice(runId, result);
    if (notice) stderr.push(`${notice}\n`);
    captured += 1;
    check();
  });
  const coordinator = new Coordinator({ garden, onStderr: (runId, chunk) => stderr.push(chunk), onError: (error) => stderr.push(String(error)) });
  await coordinator.start();
  const events = [];
  const off = onEvent((event) => {
    events.push(event);
    if (event.type === 'GoalClosed') {
      closed += 1;
      check();
    }
  });
  enableSpans();
  const cpu = cpuNow();
  const start = performance.now();
  for (let i = 0; i < n; i += 1) await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `Bench goal ${i + 1}: do nothing.`, driver: 't' });
  const submitted = performance.now() - start;
  await done;
  const wall = performance.now() - start;
  const used = cpuNow();
  const rss = process.memoryUsage().rss / 1e6;
  const spans = spanTotals();
  disableSpans();
  off();
  await coordinator.stop();
  restore();
  const statuses = new Map();
  for (const event of events.filter((e) => e.type === 'RunClosed')) {
    const run = await readRun(garden.paths, event.run);
    statuses.set(run.status, (statuses.get(run.status) ?? 0) + 1);
  }
  const records = fs.readdirSync(path.join(garden.paths.historyDir, 'commits')).length;
  fs.rmSync(garden.paths.gardenRoot, { recursive: true, force: true });
  return { slots, wall, submitted, spans, latencies: latencies(events), statuses, outcomes, records, stderr, rss, cpu: { self: used.self - cpu.self, children: used.children - cpu.children } };
}

/** CPU ms used so far by this process and by its children that have exited (the agents, git). */
function cpuNow() {
  const { user, system } = process.cpuUsage();
  const stat = fs.readFileSync('/proc/self/stat', 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // cutime and cstime (fields 16 and 17), in clock ticks of 10 ms.
  return { self: (user + system) / 1000, children: (Number(fields[13]) + Number(fields[14])) * 10 };
}

const median = (xs) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : NaN);

/** Per goal, from the event log: submit → RunStarted (waiting), RunStarted → RunClosed (the run), RunClosed → GoalClosed (the close). */
function latencies(events) {
  const at = (type, key) => new Map(events.filter((e) => e.type === type).map((e) => [e[key], Date.parse(e.ts)]));
  const submitted = at('GoalSubmitted', 'goal');
  const goalClosed = at('GoalClosed', 'goal');
  const started = new Map(events.filter((e) => e.type === 'RunStarted').map((e) => [e.goal, Date.parse(e.ts)]));
  const runClosed = new Map(events.filter((e) => e.type === 'RunClosed').map((e) => [e.goal, Date.parse(e.ts)]));
  const diff = (a, b) => [...a.keys()].filter((k) => b.has(k)).map((k) => b.get(k) - a.get(k));
  return { wait: median(diff(submitted, started)), run: median(diff(started, runClosed)), close: median(diff(runClosed, goalClosed)) };
}

const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');

const load = [];
for (let i = 0; i < LOAD; i += 1) load.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
const loadavg = os.loadavg()[0];
process.stdout.write(`pak2 fleet bench: node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ${fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).length} processes, load ${loadavg.toFixed(2)}${LOAD ? `, ${LOAD} busy loop(s) running` : ''}; ${RUNS} runs per row; isolation ${ISOLATION}\n\n`);

try {
  for (const agent of AGENTS) {
    const scratch = await makeGarden(agent, 1);
    await direct(scratch.paths.gardenRoot, agent, 5); // warm the page cache
    const directMs = await direct(scratch.paths.gardenRoot, agent, RUNS);
    fs.rmSync(scratch.paths.gardenRoot, { recursive: true, force: true });
    const rows = [];
    for (const slots of SLOTS) rows.push(await fleet(agent, slots, RUNS));

    const label = { node: 'node agent.mjs', sh: 'sh -c echo', wait: "sh -c 'sleep 0.1; echo'" }[agent];
    process.stdout.write(`agent: ${label}; run directly: ${f1(directMs)} ms per run\n`);
    process.stdout.write(`${pad('slots', 6)}${lpad('wall s', 8)}${lpad('runs/s', 8)}${lpad('ms/run', 8)}${lpad('pak2 ms/run', 12)}${lpad('× direct', 9)}${lpad('vs 1 slot', 10)}   wait/run/close ms (median)   outcome\n`);
    const base = rows[0];
    for (const row of rows) {
      const perRun = row.wall / RUNS;
      const overhead = perRun - directMs;
      const statuses = [...row.statuses].map(([k, v]) => `${v} ${k}`).join(', ');
      const history = [...row.outcomes].map(([k, v]) => `${v} ${k}`).join(', ');
      process.stdout.write(
        `${pad(row.slots, 6)}${lpad((row.wall / 1000).toFixed(2), 8)}${lpad(f1((RUNS * 1000) / row.wall), 8)}${lpad(f1(perRun), 8)}${lpad(f1(overhead), 12)}${lpad(f1(overhead / directMs), 9)}${lpad(`${(base.wall / row.wall).toFixed(2)}x`, 10)}   ${pad(`${f1(row.latencies.wait)} / ${f1(row.latencies.run)} / ${f1(row.latencies.close)}`, 28)}${statuses}; history: ${history}; ${row.records} records\n`,
      );
      if (row.stderr.length) process.stdout.write(`  stderr: ${row.stderr.join('').split('\n').slice(0, 3).join(' | ')}\n`);
    }
    process.stdout.write(`(submit of ${RUNS} goals alone: ${rows.map((r) => `${f1(r.submitted / RUNS)}`).join(' / ')} ms per goal)\n`);
    // A run costs CPU in pak2's one thread and in its children: with C cores, no number of slots runs more than C / (CPU per run) a second.
    process.stdout.write(`CPU per run, pak2 + children (agent, git): ${rows.map((r) => `${f1(r.cpu.self / RUNS)} + ${f1(r.cpu.children / RUNS)} ms`).join(' / ')}; at most ${rows.map((r) => f1((os.cpus().length * 1000 * RUNS) / (r.cpu.self + r.cpu.children))).join(' / ')} runs/s on ${os.cpus().length} cores, ${rows.map((r) => f1((1000 * RUNS) / r.cpu.self)).join(' / ')} runs/s on pak2's process (its RSS ${rows.map((r) => r.rss.toFixed(0)).join(' / ')} MB: each process it starts costs a fork of that)\n\n`);

    // Where the time goes: each span's wall time per run (spans of concurrent runs overlap).
    const names = [...new Set(rows.flatMap((r) => Object.keys(r.spans)))].sort((a, b) => (base.spans[b]?.ms ?? 0) - (base.spans[a]?.ms ?? 0));
    process.stdout.write(`where the time goes, ms per run (calls per run)\n${pad('span', 44)}${rows.map((r) => lpad(`${r.slots} slot${r.slots > 1 ? 's' : ''}`, 16)).join('')}\n`);
    for (const name of names) {
      process.stdout.write(`${pad(name, 44)}${rows.map((r) => { const s = r.spans[name]; return lpad(s ? `${f1(s.ms / RUNS)} (${(s.count / RUNS).toFixed(1)})` : '-', 16); }).join('')}\n`);
    }
    process.stdout.write('\n');
  }
} finally {
  for (const child of load) child.kill('SIGKILL');
}
