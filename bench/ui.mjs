#!/usr/bin/env node
// Keystroke-to-frame latency and memory of the workbench on a big garden:
// 10,000 goals and a followed running run whose events.jsonl is ~100 MB of
// claude stream-json. Builds a real temp garden on disk (in a child process,
// so its allocations stay out of the measured RSS), mounts the real App over
// the real read-only SnapshotSource, renders it with Ink's render() into a
// fake 120x40 TTY, sends keys one at a time through a fake stdin and times
// each from the stdin write to the next frame written to stdout. Prints
// figures beside the targets; asserts nothing.
// Usage: npm run build && node bench/ui.mjs [--goals N --mb N --keys N --fps N --gap MS --keep --profile FILE.cpuprofile]
// BENCH_TRACE=1 prints each key's latency. Like bin/pak2.js, it runs React's production build
// unless NODE_ENV says otherwise (NODE_ENV=development measures the development build).
import { execFileSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';

const { values } = parseArgs({
  options: {
    goals: { type: 'string', default: '10000' },
    mb: { type: 'string', default: '100' },
    keys: { type: 'string', default: '200' },
    fps: { type: 'string', default: '1000' },
    gap: { type: 'string', default: '20' },
    keep: { type: 'boolean', default: false },
    profile: { type: 'string' }, // write a .cpuprofile of the paced key phase to this file
    generate: { type: 'string' }, // internal: build the garden in this directory and exit
  },
});
const GOALS = Number(values.goals);
const MB = Number(values.mb);

// ---------------------------------------------------------------- generation

/** Deterministic PRNG (mulberry32), so every run builds the same garden. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'fix the flaky parser test render queue cache tail stream config plant goal run reflection coordinator snapshot watcher ledger budget cost token driver codex claude model prompt worktree branch merge lint build schema contract event inbox note chat thread memory skill knowledge garden seed dashboard status cursor filter layout pane overlay detail form retry timeout signal lock orphan reclaim requeue shutdown pipe sanitise output width column unicode emoji wrap scroll page keymap help quit'.split(
    ' ',
  );

function generate(root) {
  const rand = rng(42);
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  const sentence = () => {
    const s = words(6 + Math.floor(rand() * 14));
    return `${s[0].toUpperCase()}${s.slice(1)}.`;
  };
  const paragraph = (n) => Array.from({ length: n }, sentence).join(' ');
  const iso = (ms) => new Date(ms).toISOString();
  const now = Date.now();

  const runtime = path.join(root, '.runtime');
  const goalsDir = path.join(runtime, 'goals');
  const runsDir = path.join(runtime, 'runs');
  const eventsDir = path.join(runtime, 'events');
  for (const dir of [goalsDir, runsDir, eventsDir, path.join(runtime, 'inbox'), path.join(root, 'plants', 'gardener', 'memory')]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(root, 'PAK2.toml'), '[garden]\nname = "bench"\n[runtime]\nroot = ".runtime"\n');
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# bench\n');
  fs.writeFileSync(path.join(root, 'plants', 'gardener', 'meta.json'), JSON.stringify({ name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: iso(now - 40 * 86400e3) }, null, 2));
  fs.writeFileSync(path.join(root, 'plants', 'gardener', 'memory', 'MEMORY.md'), `# Memory\n\n${paragraph(8)}\n`);

  // Goals: 1 running (its run follows the 100 MB stream), 3 completed, 40 closed (in the ledger), the rest queued.
  const TYPES = ['build', 'fix', 'evaluate', 'tend', 'spike', 'research'];
  const counts = { running: 1, completed: 3, closed: 40 };
  counts.queued = GOALS - counts.running - counts.completed - counts.closed;
  const statuses = [...Array(counts.running).fill('running'), ...Array(counts.completed).fill('completed'), ...Array(counts.closed).fill('closed'), ...Array(counts.queued).fill('queued')];
  const ledger = [];
  const runs = [];
  let goalBytes = 0;
  statuses.forEach((status, i) => {
    const n = i + 1;
    const body = `${paragraph(1 + Math.floor(rand() * 3))}\n\n${rand() < 0.3 ? paragraph(3) : ''}`.trim();
    const slug = body.toLowerCase().replace(/[^a-z0-9 ]/g, '').split(' ').slice(0, 5).join('-');
    const id = `${n}-${slug}`;
    const submitted = now - Math.floor(rand() * 30 * 86400e3);
    const goal = { id, type: pick(TYPES), status, priority: Math.floor(rand() * 101), body, submitted_at: iso(submitted) };
    if (rand() < 0.9) goal.assigned_to = 'gardener';
    if (status !== 'queued') goal.updated_at = iso(now - 60e3);
    if (status === 'closed') {
      goal.closed_reason = rand() < 0.8 ? 'success' : 'failure';
      goal.closed_at = iso(now - 3600e3 + i * 1000);
      ledger.push(id);
    }
    const text = JSON.stringify(goal, null, 2);
    goalBytes += text.length;
    fs.writeFileSync(path.join(goalsDir, `${id}.json`), text);
    if (status !== 'queued') runs.push({ goal, status: status === 'running' ? 'running' : goal.closed_reason === 'failure' ? 'failure' : 'success' });
  });
  fs.writeFileSync(path.join(goalsDir, '.closed'), `${ledger.join('\n')}\n`);
  fs.writeFileSync(path.join(goalsDir, '.counter'), `${GOALS}\n`);

  // Runs: small streams for finished runs; the running one gets MB of realistic lines.
  const fixture = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures', 'streams', 'claude-build.jsonl'), 'utf8');
  const coordinator = [];
  let running;
  for (const { goal, status } of runs) {
    const id = `${goal.id}-r1`;
    const dir = path.join(runsDir, id);
    fs.mkdirSync(dir);
    const meta = { id, goal: goal.id, plant: 'gardener', status, started_at: iso(now - (status === 'running' ? 1800e3 : 7200e3)), driver: 'claude', model: 'claude-opus-4-6' };
    if (status !== 'running') {
      Object.assign(meta, { completed_at: iso(now - 3600e3), cost: { source: 'provider', usd: Math.round(rand() * 300) / 100 }, num_turns: 12, exit_code: 0 });
      if (status === 'failure') meta.failure_reason = 'agent_error';
      else meta.reflection = paragraph(2);
      fs.writeFileSync(path.join(dir, 'events.jsonl'), fixture);
      coordinator.push({ ts: iso(now - 60e3), type: 'RunClosed', goal: goal.id, run: id, plant: 'gardener', status, cost_source: 'provider', cost_usd: meta.cost.usd });
    } else running = { id, dir, goal: goal.id };
    fs.writeFileSync(path.join(dir, 'meta.json'), JSON.stringify(meta, null, 2));
  }
  fs.writeFileSync(path.join(eventsDir, 'coordinator.jsonl'), coordinator.map((e) => JSON.stringify(e)).join('\n') + '\n');

  // A pool of claude stream-json lines (assistant text, tool_use, tool_result), cycled to the target size.
  const session = 'd27651d7-778f-4634-9b6e-180f6228bda7';
  const uuid = () => `${Math.floor(rand() * 2 ** 32).toString(16).padStart(8, '0')}-778f-4634-9b6e-${Math.floor(rand() * 2 ** 48).toString(16).padStart(12, '0')}`;
  const code = (lines) => Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(6)}\t${'  '.repeat(Math.floor(rand() * 4))}const ${pick(WORDS)}${i} = ${pick(WORDS)}(${pick(WORDS)}, '${words(3)}'); // ${words(4)}`).join('\n');
  const file = () => `/work/garden/source/${pick(WORDS)}/${pick(WORDS)}.ts`;
  const assistant = (content, k) =>
    JSON.stringify({
      type: 'assistant',
      message: { id: `msg_${k}`, type: 'message', role: 'assistant', model: 'claude-opus-4-6', content, stop_reason: null, stop_sequence: null, usage: { input_tokens: 900 + Math.floor(rand() * 9000), output_tokens: 1 + Math.floor(rand() * 400), cache_creation_input_tokens: 0, cache_read_input_tokens: Math.floor(rand() * 60000) }, context_management: null },
      parent_tool_use_id: null,
      session_id: session,
      uuid: uuid(),
      request_id: `req_${k}`,
    });
  const pool = [];
  for (let k = 1; k <= 1500; k += 1) {
    const tool = `toolu_${k}`;
    const r = rand();
    if (r < 0.3) {
      pool.push(assistant([{ type: 'text', text: paragraph(1 + Math.floor(rand() * 6)) }], k));
      continue;
    }
    let input;
    let result;
    const t = rand();
    if (t < 0.35) {
      input = { command: `npx vitest run test/${pick(WORDS)} 2>&1 | tail -${20 + Math.floor(rand() * 60)}`, description: words(5) };
      result = Array.from({ length: 5 + Math.floor(rand() * 60) }, () => ` ✓ test/${pick(WORDS)}.test.ts > ${words(6)} ${Math.floor(rand() * 300)}ms`).join('\n');
    } else if (t < 0.65) {
      input = { file_path: file() };
      result = code(20 + Math.floor(rand() * 150));
    } else if (t < 0.85) {
      const old = code(3 + Math.floor(rand() * 20));
      input = { file_path: file(), old_string: old, new_string: `${old}\n${code(2 + Math.floor(rand() * 10))}` };
      result = `The file ${input.file_path} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n${code(10)}`;
    } else {
      input = { pattern: pick(WORDS), path: '/work/garden/source', output_mode: 'content' };
      result = Array.from({ length: 3 + Math.floor(rand() * 40) }, () => `${file()}:${Math.floor(rand() * 400)}:  ${words(8)}`).join('\n');
    }
    const name = t < 0.35 ? 'Bash' : t < 0.65 ? 'Read' : t < 0.85 ? 'Edit' : 'Grep';
    const intro = rand() < 0.4 ? [{ type: 'text', text: sentence() }] : [];
    pool.push(assistant([...intro, { type: 'tool_use', id: tool, name, input }], k));
    pool.push(
      JSON.stringify({
        type: 'user',
        message: { role: 'user', content: [{ tool_use_id: tool, type: 'tool_result', content: result, is_error: rand() < 0.05 }] },
        parent_tool_use_id: null,
        session_id: session,
        uuid: uuid(),
        timestamp: iso(now - 1000e3),
        tool_use_result: { stdout: result, stderr: '', interrupted: false, isImage: false, noOutputExpected: false },
      }),
    );
  }
  const target = MB * 1024 * 1024;
  const eventsFile = path.join(running.dir, 'events.jsonl');
  const fd = fs.openSync(eventsFile, 'w');
  let written = 0;
  let lines = 0;
  let p = 0;
  fs.writeSync(fd, `${fixture.split('\n')[0]}\n`);
  while (written < target) {
    const chunk = [];
    let size = 0;
    while (size < 8 * 1024 * 1024 && written + size < target) {
      const line = pool[p++ % pool.length];
      chunk.push(line);
      size += line.length + 1;
    }
    lines += chunk.length;
    written += fs.writeSync(fd, `${chunk.join('\n')}\n`);
  }
  fs.closeSync(fd);
  return { counts, goalBytes, running, eventsFile, eventsBytes: fs.statSync(eventsFile).size, eventsLines: lines, poolLines: pool.length };
}

if (values.generate) {
  process.stdout.write(JSON.stringify(generate(values.generate)));
  process.exit(0);
}

// ---------------------------------------------------------------- measurement

// Ink writes no frames when it believes it runs in CI (is-in-ci reads the env at import).
const ciWas = process.env.CI ?? process.env.CONTINUOUS_INTEGRATION;
process.env.CI = '0';
process.env.CONTINUOUS_INTEGRATION = '0';
// A terminal has colours; without them (stdout here is a pipe) the cursor and focus moves, which are
// only inverse/bold/colour changes, would render identical frames and never be written.
const colorWas = process.env.FORCE_COLOR;
process.env.FORCE_COLOR ??= '3';
// React picks its development or production build from NODE_ENV at import; bin/pak2.js sets production.
process.env.NODE_ENV ??= 'production';
const NODE_ENV = process.env.NODE_ENV;
const { render } = await import('ink');
const React = (await import('react')).default;
const { App } = await import('../dist/ui/app.js');
const { SnapshotSource, RunTail } = await import('../dist/snapshot/index.js');
const { loadGarden } = await import('../dist/garden/index.js');

const FPS = Number(values.fps);
const GAP = Number(values.gap);
const KEYS = Number(values.keys);
const COLUMNS = 120;
const ROWS = 40;
const BSU = '\u001b[?2026h';
const ESU = '\u001b[?2026l';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => (xs.length ? sorted(xs)[Math.floor((xs.length - 1) / 2)] : NaN);
const p95 = (xs) => (xs.length ? sorted(xs)[Math.max(0, Math.ceil(xs.length * 0.95) - 1)] : NaN);
const max = (xs) => (xs.length ? Math.max(...xs) : NaN);
const ms = (x) => `${x.toFixed(2)} ms`;
const MiB = (b) => `${(b / 1024 / 1024).toFixed(1)} MB`;
const log = (line) => process.stdout.write(`${line}\n`);

// Memory: sampled every 10 ms and after each key.
const peak = { rss: 0, heapUsed: 0 };
let phase = { rss: 0, heapUsed: 0 };
const sample = () => {
  const m = process.memoryUsage();
  for (const p of [peak, phase]) {
    if (m.rss > p.rss) p.rss = m.rss;
    if (m.heapUsed > p.heapUsed) p.heapUsed = m.heapUsed;
  }
};
/** Memory by phase: the peak during the phase that just ended. */
const phases = [];
const endPhase = (name) => {
  sample();
  phases.push({ name, ...phase });
  phase = { rss: 0, heapUsed: 0 };
};

const loadStart = os.loadavg()[0].toFixed(2);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-bench-ui-'));
process.on('exit', () => {
  if (!values.keep) fs.rmSync(root, { recursive: true, force: true });
});
log(`building a garden with ${GOALS} goals and a ${MB} MB events.jsonl in ${root} …`);
let t = performance.now();
const built = JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--generate', root, '--goals', String(GOALS), '--mb', String(MB)], { encoding: 'utf8', maxBuffer: 1 << 20 }));
const buildMs = performance.now() - t;

/** A TTY stdout that keeps no frames, only when the last frame landed. */
class FakeStdout extends EventEmitter {
  columns = COLUMNS;
  rows = ROWS;
  isTTY = true;
  frames = 0;
  bytes = 0;
  lastFrame = '';
  waiter = undefined; // { resolve } for the next frame
  firstFrameAt = undefined; // time of the first frame since the last mark()
  mark() {
    this.firstFrameAt = undefined;
  }
  write = (data) => {
    const at = performance.now();
    if (data === BSU || data === ESU) return true;
    this.frames += 1;
    this.bytes += data.length;
    this.lastFrame = data;
    this.firstFrameAt ??= at;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve(at);
    }
    return true;
  };
  nextFrame(timeoutMs) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.waiter = {
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
    });
  }
}

/** A raw-mode stdin as ink-testing-library builds it: `readable`, then read() hands out the chunk. */
class FakeStdin extends EventEmitter {
  isTTY = true;
  data = null;
  write = (data) => {
    this.data = data;
    this.emit('readable');
    this.emit('data', data);
  };
  read = () => {
    const { data } = this;
    this.data = null;
    return data;
  };
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
}

class FakeStderr extends EventEmitter {
  write = () => true;
}

// Timing of the tail alone: open the 100 MB stream the way the source does (last 256 KB).
const tailOpen = [];
let tailLines = 0;
for (let i = 0; i < 5; i += 1) {
  t = performance.now();
  const tail = new RunTail(built.running.id, built.eventsFile);
  tail.read();
  tailOpen.push(performance.now() - t);
  tailLines = tail.state().lines.length;
}

sample();
const baseline = process.memoryUsage();
phase = { rss: 0, heapUsed: 0 };
const sampler = setInterval(sample, 10);

const garden = loadGarden(root);
const source = new SnapshotSource({ garden, readOnly: true });
// Time each snapshot load (the source's private loader; instrumented here, not changed).
const loads = [];
const loader = source.loader;
const load = loader.load.bind(loader);
loader.load = async () => {
  const start = performance.now();
  try {
    return await load();
  } finally {
    loads.push(performance.now() - start);
  }
};
t = performance.now();
await source.start();
const startMs = performance.now() - t;
const first = source.getSnapshot();
endPhase('first snapshot (source.start)');

const stdout = new FakeStdout();
const stdin = new FakeStdin();
const renderTimes = [];
let unmount = () => undefined;
const actions = { follow: (runId) => source.follow(runId), quit: () => unmount() };
t = performance.now();
stdout.mark();
const instance = render(React.createElement(App, { store: source, actions }), {
  stdout,
  stdin,
  stderr: new FakeStderr(),
  exitOnCtrlC: false,
  patchConsole: false,
  maxFps: FPS,
  onRender: ({ renderTime }) => renderTimes.push(renderTime),
});
unmount = () => instance.unmount();
const mountMs = (stdout.firstFrameAt ?? performance.now()) - t;

/** Waits until no snapshot reload is scheduled or running, then `GAP` ms more. */
async function idle() {
  for (;;) {
    await sleep(GAP);
    if (!source.timer && !source.loading) return;
  }
}
await idle();
// Let the watcher finish its first walk of goals/ before the keys (it runs in the background after start()).
await sleep(1500);
endPhase('mount + first frame + watcher settling');

const ESC = '\u001b';
const KEY = { tab: '\t', shiftTab: '\u001b[Z', pgdn: '\u001b[6~', pgup: '\u001b[5~', bs: '\u007f', enter: '\r', esc: ESC };
/** One round of typical use: move in the queue, page, filter by typing, tab to the tail and scroll it, tab round. */
function round() {
  const seq = [];
  const rep = (key, n, label) => {
    for (let i = 0; i < n; i += 1) seq.push({ key, label });
  };
  rep('j', 25, 'j/k (goals)');
  rep('k', 10, 'j/k (goals)');
  rep(KEY.pgdn, 12, 'pgdn/pgup (goals)');
  rep(KEY.pgup, 4, 'pgdn/pgup (goals)');
  rep('/', 1, '/ filter typing');
  for (const ch of 'parser') rep(ch, 1, '/ filter typing');
  rep(KEY.bs, 3, '/ filter typing');
  for (const ch of 'ser') rep(ch, 1, '/ filter typing');
  rep(KEY.enter, 1, '/ filter typing');
  rep('j', 5, 'j/k (filtered)');
  rep(KEY.esc, 1, 'esc (clear filter)');
  rep(KEY.tab, 1, 'tab / shift-tab');
  rep('k', 15, 'j/k (tail scroll)');
  rep('j', 5, 'j/k (tail scroll)');
  rep(KEY.tab, 4, 'tab / shift-tab');
  rep(KEY.shiftTab, 2, 'tab / shift-tab');
  rep(KEY.tab, 2, 'tab / shift-tab');
  return seq;
}
const script = [];
while (script.length < KEYS) script.push(...round());
script.length = KEYS;

/** Sends one key; resolves with the time from the stdin write to the next frame (undefined: no frame within timeoutMs). */
async function press(key, timeoutMs) {
  stdout.mark();
  const cpu = process.cpuUsage();
  const start = performance.now();
  stdin.write(key);
  // React renders the key's update in a later task, so the frame comes after write() returns.
  const at = stdout.firstFrameAt ?? (await stdout.nextFrame(timeoutMs));
  const used = process.cpuUsage(cpu);
  sample();
  return { latency: at === undefined ? undefined : at - start, cpu: (used.user + used.system) / 1000 };
}

// Optional CPU profile of the paced key phase only (open in Chrome DevTools or speedscope).
let profiler;
if (values.profile) {
  const { Session } = await import('node:inspector/promises');
  profiler = new Session();
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.setSamplingInterval', { interval: 250 });
  await profiler.post('Profiler.start');
}
const paced = [];
const pacedCpu = [];
const byLabel = new Map();
let missed = 0;
const renderFrom = renderTimes.length;
const loadsFrom = loads.length;
t = performance.now();
for (const { key, label } of script) {
  const r = await press(key, 500);
  if (process.env.BENCH_TRACE) log(`${JSON.stringify(key)} ${label} ${r.latency?.toFixed(2)} loads=${loads.length}`);
  if (r.latency === undefined) missed += 1;
  else {
    paced.push(r.latency);
    pacedCpu.push(r.cpu);
    if (!byLabel.has(label)) byLabel.set(label, []);
    byLabel.get(label).push(r.latency);
  }
  await idle();
}
const pacedMs = performance.now() - t;
endPhase(`${KEYS} paced keys`);
if (profiler) {
  const { profile } = await profiler.post('Profiler.stop');
  fs.writeFileSync(values.profile, JSON.stringify(profile));
  profiler.disconnect();
}
const pacedLoads = loads.slice(loadsFrom);
const pacedRender = renderTimes.slice(renderFrom);

// Held key: j then k at 30 keys a second from the top, not waiting for reloads (crossing row 0 follows the running run).
await press('g', 500);
await idle();
const held = [];
let heldMissed = 0;
for (const key of [...Array(30).fill('j'), ...Array(30).fill('k')]) {
  const next = performance.now() + 33;
  const r = await press(key, 33);
  if (r.latency === undefined) heldMissed += 1;
  else held.push(r.latency);
  const wait = next - performance.now();
  if (wait > 0) await sleep(wait);
}
await idle();
endPhase('60 held keys');
clearInterval(sampler);
sample();
const end = process.memoryUsage();
const measures = performance.getEntriesByType('measure').length;
// Live heap: what is still reachable once a full GC has run.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
gc();
const live = process.memoryUsage();
let liveWithoutMeasures;
if (measures > 0) {
  performance.clearMeasures();
  gc();
  liveWithoutMeasures = process.memoryUsage();
}

const frame = stdout.lastFrame;
instance.unmount();
await source.stop();

const TARGET_MS = 16;
const TARGET_MB = 200;
const verdict = (ok) => (ok ? 'met' : 'MISSED');
const row = (label, xs) => `  ${label.padEnd(22)} n=${String(xs.length).padStart(3)}  median ${ms(median(xs)).padStart(9)}  p95 ${ms(p95(xs)).padStart(9)}  max ${ms(max(xs)).padStart(9)}`;
log(
  [
    '',
    `node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ${os.platform()} ${os.arch()}; load average ${loadStart} at the start, ${os.loadavg()[0].toFixed(2)} at the end`,
    `ink render options: maxFps ${FPS} (ink's default is 30; the workbench passes none), debug false, fake TTY ${COLUMNS}x${ROWS}, FORCE_COLOR=${process.env.FORCE_COLOR}${colorWas === undefined ? ' (set by the bench)' : ''}${ciWas !== undefined ? `; CI=${ciWas} in the env was overridden to 0 so ink writes frames` : ''}`,
    `react build: ${NODE_ENV === 'production' ? 'production' : 'development'} (NODE_ENV=${NODE_ENV ?? 'unset'}; bin/pak2.js sets none, so pak2 runs the development build unless the shell sets it)`,
    `garden: ${GOALS} goals (${built.counts.queued} queued, ${built.counts.running} running, ${built.counts.completed} completed, ${built.counts.closed} closed), ${MiB(built.goalBytes)} of goal files; built in ${(buildMs / 1000).toFixed(1)} s`,
    `followed run ${built.running.id}: events.jsonl ${MiB(built.eventsBytes)} (${built.eventsLines} lines)`,
    `snapshot: ${first.goals.length} goal rows, tail ${first.tail ? `${first.tail.lines.length} lines from ${MiB(first.tail.bytes)} offset, truncated=${first.tail.truncated}` : 'none'}, ${first.problems.length} problems`,
    '',
    'open',
    `  tail open on the ${MiB(built.eventsBytes)} stream (RunTail.read, last 256 KB, ${tailLines} lines): median ${ms(median(tailOpen))} of 5`,
    `  first snapshot (await source.start(): goal scan + tail open + watcher): ${ms(startMs)}, of which loader.load ${ms(loads[0] ?? NaN)}`,
    `  mount to first frame: ${ms(mountMs)}`,
    '',
    `keystroke to frame, ${paced.length} keys one at a time (the next sent ${GAP} ms after the source is idle)`,
    `  ALL                    median ${ms(median(paced))}  p95 ${ms(p95(paced))}  max ${ms(max(paced))}   target: median < ${TARGET_MS} ms → ${verdict(median(paced) < TARGET_MS)}`,
    ...[...byLabel].map(([label, xs]) => row(label, xs)),
    `  process CPU time from the write to the frame (less sensitive to other load on the machine): median ${ms(median(pacedCpu))}, p95 ${ms(p95(pacedCpu))}`,
    `  keys with no frame within 500 ms: ${missed}`,
    `  ink output render per frame (onRender renderTime): median ${ms(median(pacedRender))}, p95 ${ms(p95(pacedRender))}`,
    `  snapshot reloads during the keys (follow changes): ${pacedLoads.length}, loader.load median ${ms(median(pacedLoads))}, max ${ms(max(pacedLoads))}; keys phase ${(pacedMs / 1000).toFixed(1)} s`,
    `held j/k at 30 keys/s (60 keys, no waiting for reloads): median ${ms(median(held))}  p95 ${ms(p95(held))}  max ${ms(max(held))}; no frame within 33 ms: ${heldMissed}`,
    '',
    'memory (sampled every 10 ms and after each key, this process only; the garden was built in a child)',
    `  before the source started: rss ${MiB(baseline.rss)}, heap used ${MiB(baseline.heapUsed)}`,
    ...phases.map((p) => `  peak during ${p.name}: rss ${MiB(p.rss)}, heap used ${MiB(p.heapUsed)}`),
    `  peak: rss ${MiB(peak.rss)}, heap used ${MiB(peak.heapUsed)}   target: peak < ${TARGET_MB} MB → rss ${verdict(peak.rss < TARGET_MB * 1024 * 1024)}, heap ${verdict(peak.heapUsed < TARGET_MB * 1024 * 1024)}`,
    `  at the end: rss ${MiB(end.rss)}, heap used ${MiB(end.heapUsed)}; after a forced full GC: rss ${MiB(live.rss)}, heap used ${MiB(live.heapUsed)}; kernel max rss ${MiB(process.resourceUsage().maxRSS * 1024)}`,
    `  performance 'measure' entries held in the global timeline (React's development build logs renders with performance.measure): ${measures}${liveWithoutMeasures ? `; heap used after clearing them and a full GC: ${MiB(liveWithoutMeasures.heapUsed)}` : ''}`,
    `frames written: ${stdout.frames} (${MiB(stdout.bytes)}); last frame ${frame.split('\n').length} lines`,
    values.keep ? `garden kept at ${root}` : 'temp garden removed',
    ...(values.profile ? [`cpu profile of the paced key phase: ${values.profile}`] : []),
    '',
  ].join('\n'),
);
process.exit(0);
