#!/usr/bin/env node
// Keystroke-to-frame latency and peak memory of the real workbench on a big
// garden: 10,000 goals, and a live run whose events.jsonl grows to ~100 MB
// of claude stream-json.
//
// Builds a temp garden on disk (in a child process), then starts the
// workbench exactly as an operator does — `node bin/pak2.js` in the garden,
// coordinator included — in a pseudo-terminal (util-linux `script`, 120x40,
// TERM=xterm-256color, no CI). The coordinator dispatches the top goal to a
// `command` agent (written into the garden) that writes the 100 MB stream
// to its stdout, which is the run's events.jsonl, and then stays alive and
// quiet; the workbench follows that run's tail. Keys are written to the
// terminal one at a time; each is timed from the write to the end of the
// first frame (Ink brackets each frame in synchronized-update marks) whose
// screen differs from the screen before the key in a line that does not
// change by itself (the spinner and clock lines found while idle are left
// out), so a spinner tick is never taken for the key's frame. Memory is the
// workbench process's own: VmRSS from /proc sampled every 10 ms, VmHWM (the
// kernel's peak) at the end of each phase and last read before the exit. Prints figures beside
// the targets; asserts nothing.
//
// Usage: npm run build && node bench/ui.mjs [--goals N --mb N --keys N --gap MS --keep --trace]
//   [--node-args="--cpu-prof --cpu-prof-dir=DIR"]   extra node flags for the workbench process
//   [--record FILE]   the terminal's raw output (frames, and whatever else the process prints)
//   [--drip MS]   the agent writes one more stream line every MS ms after the burst (default: quiet)
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    goals: { type: 'string', default: '10000' },
    mb: { type: 'string', default: '100' },
    keys: { type: 'string', default: '200' },
    gap: { type: 'string', default: '60' },
    drip: { type: 'string', default: '0' },
    keep: { type: 'boolean', default: false },
    trace: { type: 'boolean', default: false },
    'node-args': { type: 'string', default: '' },
    record: { type: 'string' }, // write the terminal's raw output to this file
    generate: { type: 'string' }, // internal: build the garden in this directory and exit
  },
});
const GOALS = Number(values.goals);
const MB = Number(values.mb);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');

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

/** The agent the coordinator runs: writes the stream to stdout (the run's events.jsonl), then stays alive. */
const AGENT = `import fs from 'node:fs';
const [stream, drip] = process.argv.slice(2);
process.stdin.resume();
process.stdin.on('data', () => undefined);
const fd = fs.openSync(stream, 'r');
const buffer = Buffer.alloc(4 * 1024 * 1024);
for (let n; (n = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0; ) {
  for (let off = 0; off < n; ) off += fs.writeSync(1, buffer, off, n - off);
}
fs.closeSync(fd);
fs.writeFileSync(process.env.PAK2_RUN_DIR + '/bench-burst-done', '');
const head = Buffer.alloc(1024 * 1024);
const lines = head.subarray(0, fs.readSync(fs.openSync(stream, 'r'), head, 0, head.length, 0)).toString('utf8').split('\\n').slice(0, -1);
let i = 1;
if (Number(drip) > 0) setInterval(() => fs.writeSync(1, lines[i++ % lines.length] + '\\n'), Number(drip));
// Alive until the workbench ends it, or is gone (then this agent is an orphan: it leaves too).
const parent = process.ppid;
setInterval(() => process.ppid !== parent && process.exit(0), 1000);
`;

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
  for (const dir of [goalsDir, runsDir, eventsDir, path.join(runtime, 'inbox'), path.join(root, 'plants', 'gardener', 'memory'), path.join(root, 'seeds')]) fs.mkdirSync(dir, { recursive: true });
  const streamFile = path.join(root, 'bench-stream.jsonl');
  const agentFile = path.join(root, 'bench-agent.mjs');
  fs.writeFileSync(agentFile, AGENT);
  fs.writeFileSync(
    path.join(root, 'PAK2.toml'),
    [
      '[runtime]',
      'root = ".runtime"',
      '[garden]',
      'name = "bench"',
      '[defaults]',
      'driver = "bench"',
      '[coordinator]',
      'watchdog_seconds = 3600',
      'run_timeout_seconds = 7200',
      'max_concurrent_runs = 1',
      '[drivers.bench]',
      `command = ${JSON.stringify([process.execPath, agentFile, streamFile, String(Number(values.drip))])}`,
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# bench\n');
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed: gardener\n');
  fs.writeFileSync(path.join(root, 'plants', 'gardener', 'meta.json'), JSON.stringify({ name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: iso(now - 40 * 86400e3) }, null, 2));
  fs.writeFileSync(path.join(root, 'plants', 'gardener', 'memory', 'MEMORY.md'), `# Memory\n\n${paragraph(8)}\n`);

  // Goals: 43 closed (in the ledger, each with a finished run), the rest queued; goal 44 has the top
  // priority, so the coordinator dispatches it first and its run is the one the tail follows.
  const TYPES = ['build', 'fix', 'evaluate', 'tend', 'spike', 'research'];
  const counts = { closed: 43, queued: GOALS - 43 };
  const ledger = [];
  let goalBytes = 0;
  let top;
  const fixture = fs.readFileSync(path.join(REPO, 'test', 'fixtures', 'streams', 'claude-build.jsonl'), 'utf8');
  const coordinator = [];
  for (let i = 0; i < GOALS; i += 1) {
    const n = i + 1;
    const status = i < counts.closed ? 'closed' : 'queued';
    const body = `${paragraph(1 + Math.floor(rand() * 3))}\n\n${rand() < 0.3 ? paragraph(3) : ''}`.trim();
    const slug = body.toLowerCase().replace(/[^a-z0-9 ]/g, '').split(' ').slice(0, 5).join('-');
    const id = `${n}-${slug}`;
    const submitted = now - Math.floor(rand() * 30 * 86400e3);
    const goal = { id, type: pick(TYPES), status, priority: i === counts.closed ? 100 : Math.floor(rand() * 100), body, submitted_at: iso(submitted) };
    if (rand() < 0.9 || i === counts.closed) goal.assigned_to = 'gardener';
    if (i === counts.closed) top = id;
    if (status === 'closed') {
      goal.updated_at = iso(now - 60e3);
      goal.closed_reason = rand() < 0.8 ? 'success' : 'failure';
      goal.closed_at = iso(now - 3600e3 + i * 1000);
      ledger.push(JSON.stringify({ id, type: goal.type, ...(goal.assigned_to ? { plant: goal.assigned_to } : {}), priority: goal.priority, closed_reason: goal.closed_reason, closed_at: goal.closed_at, submitted_at: goal.submitted_at }));
      const runId = `${id}-r1`;
      const dir = path.join(runsDir, runId);
      fs.mkdirSync(dir);
      const run = goal.closed_reason === 'failure' ? 'failure' : 'success';
      const meta = { id: runId, goal: id, plant: 'gardener', status: run, started_at: iso(now - 7200e3), driver: 'claude', model: 'claude-opus-4-6', completed_at: iso(now - 3600e3), cost: { source: 'provider', usd: Math.round(rand() * 300) / 100 }, num_turns: 12, exit_code: 0 };
      if (run === 'failure') meta.failure_reason = 'agent_error';
      else meta.reflection = paragraph(2);
      fs.writeFileSync(path.join(dir, 'meta.json'), JSON.stringify(meta, null, 2));
      fs.writeFileSync(path.join(dir, 'events.jsonl'), fixture);
      coordinator.push({ ts: iso(now - 60e3), type: 'RunClosed', goal: id, run: runId, plant: 'gardener', status: run, cost_source: 'provider', cost_usd: meta.cost.usd });
    }
    const text = JSON.stringify(goal, null, 2);
    goalBytes += text.length;
    fs.writeFileSync(path.join(goalsDir, `${id}.json`), text);
  }
  fs.writeFileSync(path.join(goalsDir, '.closed'), `${ledger.join('\n')}\n`);
  fs.writeFileSync(path.join(goalsDir, '.counter'), `${GOALS}\n`);
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
  const fd = fs.openSync(streamFile, 'w');
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
  return { counts, goalBytes, top, streamBytes: fs.statSync(streamFile).size, streamLines: lines };
}

if (values.generate) {
  process.stdout.write(JSON.stringify(generate(values.generate)));
  process.exit(0);
}

// ---------------------------------------------------------------- measurement

const COLUMNS = 120;
const ROWS = 40;
const GAP = Number(values.gap);
const KEYS = Number(values.keys);
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
const TIME = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

const loadStart = os.loadavg().map((x) => x.toFixed(2)).join(' ');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-bench-ui-'));
const cleanup = () => {
  if (!values.keep) fs.rmSync(root, { recursive: true, force: true });
};
log(`building a garden with ${GOALS} goals and a ${MB} MB stream in ${root} …`);
let t = performance.now();
const built = JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--generate', root, '--goals', String(GOALS), '--mb', String(MB), '--drip', values.drip], { encoding: 'utf8', maxBuffer: 1 << 20 }));
const buildMs = performance.now() - t;

// ---- the workbench in a pseudo-terminal
const pidFile = path.join(root, 'bench-workbench.pid');
const timeFile = path.join(root, 'bench-time.txt');
const nodeArgs = values['node-args'].trim();
const workbench = `${nodeArgs ? `${JSON.stringify(process.execPath)} ${nodeArgs}` : JSON.stringify(process.execPath)} ${JSON.stringify(path.join(REPO, 'bin', 'pak2.js'))}`;
// `echo $$; exec` makes the pid file name the process that becomes /usr/bin/time (or node itself).
const command = `stty cols ${COLUMNS} rows ${ROWS}; echo $$ > ${JSON.stringify(pidFile)}; exec ${TIME ? `${TIME} -f %M -o ${JSON.stringify(timeFile)} ` : ''}${workbench}`;
const env = { ...process.env, TERM: 'xterm-256color', LANG: 'C.UTF-8', COLUMNS: String(COLUMNS), LINES: String(ROWS) };
for (const name of ['CI', 'CONTINUOUS_INTEGRATION', 'NODE_ENV', 'NODE_OPTIONS', 'TMUX', 'TMUX_PANE', 'FORCE_COLOR', 'NO_COLOR']) delete env[name];
const spawnedAt = performance.now();
const term = spawn('script', ['-qfec', command, '/dev/null'], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
let exited;
const exitPromise = new Promise((resolve) => term.on('exit', (code, signal) => resolve((exited = { code, signal, at: performance.now() }))));
let stderr = '';
term.stderr.on('data', (d) => (stderr += d));

/** Frames as Ink writes them: the text between a synchronized-update begin and end. */
const frames = { count: 0, bytes: 0, last: undefined, lastAt: 0, lastStartAt: 0, waiters: new Set() };
let pending = '';
let inFrame = false;
let frameStartAt = 0;
term.stdout.setEncoding('utf8');
const record = values.record ? fs.createWriteStream(values.record) : undefined;
term.stdout.on('data', (chunk) => {
  const at = performance.now();
  record?.write(chunk);
  frames.bytes += chunk.length;
  let data = pending + chunk;
  pending = '';
  for (;;) {
    if (!inFrame) {
      const b = data.indexOf(BSU);
      if (b < 0) {
        pending = data.slice(Math.max(0, data.length - BSU.length));
        return;
      }
      inFrame = true;
      frameStartAt = at;
      data = data.slice(b + BSU.length);
    }
    const e = data.indexOf(ESU);
    if (e < 0) {
      pending = data;
      return;
    }
    const frame = { text: data.slice(0, e), at, startAt: frameStartAt, n: ++frames.count };
    inFrame = false;
    data = data.slice(e + ESU.length);
    frames.last = frame;
    for (const waiter of [...frames.waiters]) waiter(frame);
  }
});

/** The frame's screen lines: the erase prefix of log-update dropped. */
const screenOf = (frame) => frame.text.replace(/^(?:\u001b\[(?:2K|1A|G|\d*[ABCDG]|\?25[lh]))*/, '').split('\n');

/** Resolves with the first frame (ending after now) for which `accept(frame)` holds, or undefined after `timeoutMs`. */
function frameWhere(accept, timeoutMs) {
  return new Promise((resolve) => {
    const waiter = (frame) => {
      if (!accept(frame)) return;
      frames.waiters.delete(waiter);
      clearTimeout(timer);
      resolve(frame);
    };
    const timer = setTimeout(() => {
      frames.waiters.delete(waiter);
      resolve(undefined);
    }, timeoutMs);
    frames.waiters.add(waiter);
  });
}

/** Ends the workbench this bench started (its quit path first, then SIGKILL), prints why, and exits. */
async function fail(why) {
  log(`${why}\n${stderr}\n${frames.last ? screenOf(frames.last).join('\n') : ''}`);
  const target = typeof pid === 'number' ? pid : undefined;
  if (target && !exited) {
    try {
      process.kill(target, 'SIGTERM');
    } catch {
      // gone
    }
    const end = performance.now() + 15_000;
    while (!exited && performance.now() < end) await sleep(100);
    if (!exited) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  cleanup();
  process.exit(1);
}

async function until(predicate, timeoutMs, what) {
  const end = performance.now() + timeoutMs;
  while (!predicate()) {
    if (exited) await fail(`the workbench exited (${JSON.stringify(exited)}) while waiting for ${what}`);
    if (performance.now() > end) await fail(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`);
    await sleep(10);
  }
}

// ---- the workbench process: its pid, memory and CPU from /proc
await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim(), 10_000, 'the pid file');
const outerPid = Number(fs.readFileSync(pidFile, 'utf8').trim());
var pid = outerPid; // eslint-disable-line no-var -- read by fail(), declared above its first use
if (TIME) {
  await until(() => {
    try {
      return fs.readFileSync(`/proc/${outerPid}/task/${outerPid}/children`, 'utf8').trim();
    } catch {
      return false;
    }
  }, 10_000, 'the workbench under /usr/bin/time');
  pid = Number(fs.readFileSync(`/proc/${outerPid}/task/${outerPid}/children`, 'utf8').trim().split(/\s+/)[0]);
}
const status = () => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
};
/** On-CPU time of the workbench's main (JS) thread, ns (schedstat), and of the whole process, ms (stat). */
const cpu = () => {
  try {
    const main = Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { mainNs: main, processMs: ((Number(stat[11]) + Number(stat[12])) * 1000) / 100 };
  } catch {
    return { mainNs: NaN, processMs: NaN };
  }
};
const peak = { rss: 0 };
let phase = { rss: 0 };
let lastHwm = 0;
const sample = () => {
  const s = status();
  if (!s) return;
  if (Number.isFinite(s.hwm)) lastHwm = s.hwm;
  if (s.rss > peak.rss) peak.rss = s.rss;
  if (s.rss > phase.rss) phase.rss = s.rss;
};
const sampler = setInterval(sample, 10);
const phases = [];
const endPhase = (name) => {
  sample();
  phases.push({ name, rss: phase.rss, hwm: status()?.hwm ?? NaN });
  phase = { rss: 0 };
};

// ---- start: first frame, dispatch, the burst, settling
await until(() => frames.count > 0, 30_000, 'the first frame');
const firstFrameMs = frames.last.at - spawnedAt;
const runsDir = path.join(root, '.runtime', 'runs');
const runId = `${built.top}-r1`;
const eventsFile = path.join(runsDir, runId, 'events.jsonl');
await until(() => fs.existsSync(eventsFile), 300_000, `the coordinator to dispatch ${built.top}`);
const dispatchedMs = performance.now() - spawnedAt;
endPhase('start: first frame and dispatch');
t = performance.now();
await until(() => fs.existsSync(path.join(runsDir, runId, 'bench-burst-done')), 120_000, 'the agent to write its stream');
const burstMs = performance.now() - t;
const eventsBytes = fs.statSync(eventsFile).size;
// The tail shows the stream's end once the source has polled it (every 500 ms): wait for two quiet seconds of screen.
const volatile = new Set();
{
  let before = frames.last;
  const settleEnd = performance.now() + 20_000;
  let quietSince = performance.now();
  const seen = [];
  while (performance.now() < settleEnd) {
    await sleep(50);
    const now = frames.last;
    if (now !== before) {
      seen.push(now);
      before = now;
    }
    // Screens over the last 2 s that differ only in a few lines: those lines tick by themselves.
    const recent = seen.filter((f) => f.at > performance.now() - 2000);
    if (performance.now() - quietSince > 2500) break;
    if (recent.length >= 2) {
      const a = screenOf(recent[0]);
      const changed = new Set();
      for (const f of recent.slice(1)) screenOf(f).forEach((line, i) => line !== a[i] && changed.add(i));
      if (changed.size > 3) quietSince = performance.now();
    }
  }
  // The lines that change while nobody types (spinner, elapsed time, clock): watched for 3 s.
  const watchEnd = performance.now() + 3000;
  let prev = screenOf(frames.last);
  while (performance.now() < watchEnd) {
    const f = await frameWhere(() => true, watchEnd - performance.now());
    if (!f) break;
    const s = screenOf(f);
    s.forEach((line, i) => line !== prev[i] && volatile.add(i));
    prev = s;
  }
}
endPhase(`the ${MiB(eventsBytes)} stream written and followed, settled`);
const settledScreen = screenOf(frames.last);

// ---- keys
const KEY = { tab: '\t', shiftTab: '\u001b[Z', pgdn: '\u001b[6~', pgup: '\u001b[5~', bs: '\u007f', enter: '\r', esc: '\u001b' };
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
// A count that cuts a round inside the filter would leave it open, and the quit's `q` would be typed into it: close it.
if (script.findLastIndex((k) => k.key === '/') > script.findLastIndex((k) => k.key === KEY.enter)) script.push({ key: KEY.enter, label: '/ filter typing' }, { key: KEY.esc, label: 'esc (clear filter)' });

/** True when `screen` differs from `base` in a line that does not tick by itself. */
const differs = (screen, base) => screen.length !== base.length || screen.some((line, i) => !volatile.has(i) && line !== base[i]);

/** Writes one key; resolves with the time from the write to the end of the first frame that shows it. */
async function press(key, timeoutMs) {
  const base = screenOf(frames.last);
  const c0 = cpu();
  const start = performance.now();
  const shown = frameWhere((f) => f.startAt >= start && differs(screenOf(f), base), timeoutMs);
  term.stdin.write(key);
  const frame = await shown;
  const c1 = cpu();
  sample();
  return { latency: frame ? frame.at - start : undefined, mainCpu: (c1.mainNs - c0.mainNs) / 1e6 };
}

const paced = [];
const pacedCpu = [];
const byLabel = new Map();
let missed = 0;
const cpuKeys0 = cpu();
t = performance.now();
for (const { key, label } of script) {
  const r = await press(key, 1000);
  if (values.trace) log(`${JSON.stringify(key)} ${label} ${r.latency?.toFixed(2)} cpu ${r.mainCpu.toFixed(2)}`);
  if (r.latency === undefined) missed += 1;
  else {
    paced.push(r.latency);
    pacedCpu.push(r.mainCpu);
    if (!byLabel.has(label)) byLabel.set(label, []);
    byLabel.get(label).push(r.latency);
  }
  await sleep(GAP);
}
const pacedMs = performance.now() - t;
const cpuKeys1 = cpu();
endPhase(`${KEYS} paced keys`);

// Held key: j then k at 30 keys a second from the top, not waiting for frames.
await press('g', 1000);
await sleep(200);
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
await sleep(500);
endPhase('60 held keys');
const lastScreen = screenOf(frames.last);

// ---- quit: q, then y (a run is live): the run is stopped and closed from its stream
t = performance.now();
term.stdin.write('q');
await frameWhere((f) => f.text.includes('Quit now?'), 3000);
term.stdin.write('y');
const quitTimeout = setTimeout(() => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}, 60_000);
await exitPromise;
clearTimeout(quitTimeout);
const quitMs = exited.at - t;
endPhase('quit (sampled; the process ends)');
clearInterval(sampler);
const timeRss = TIME && fs.existsSync(timeFile) ? Number(fs.readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)) * 1024 : NaN;
const beforeQuit = phases.at(-2);

const TARGET_MS = 16;
const TARGET_MB = 200;
const verdict = (ok) => (ok ? 'met' : 'MISSED');
const row = (label, xs) => `  ${label.padEnd(22)} n=${String(xs.length).padStart(3)}  median ${ms(median(xs)).padStart(9)}  p95 ${ms(p95(xs)).padStart(9)}  max ${ms(max(xs)).padStart(9)}`;
log(
  [
    '',
    `node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ${os.platform()} ${os.arch()}; load average ${loadStart} at the start, ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} at the end`,
    `workbench: ${workbench} in a ${COLUMNS}x${ROWS} pseudo-terminal (script), TERM=xterm-256color, coordinator running, default heap settings${nodeArgs ? ` (node args: ${nodeArgs})` : ''}`,
    `garden: ${GOALS} goals (${built.counts.queued} queued, ${built.counts.closed} closed), ${MiB(built.goalBytes)} of goal files; built in ${(buildMs / 1000).toFixed(1)} s`,
    `followed run ${runId}: events.jsonl ${MiB(eventsBytes)} written by the agent in ${(burstMs / 1000).toFixed(1)} s${Number(values.drip) > 0 ? `, then a line every ${values.drip} ms` : ', then quiet'}`,
    `lines that change by themselves (left out when matching a key's frame): ${[...volatile].sort((a, b) => a - b).join(', ') || 'none'}`,
    '',
    `start: first frame ${ms(firstFrameMs)} after spawn; run dispatched ${ms(dispatchedMs)} after spawn`,
    '',
    `keystroke to frame, ${paced.length} keys one at a time (the next sent ${GAP} ms after the frame)`,
    `  ALL                    median ${ms(median(paced))}  p95 ${ms(p95(paced))}  max ${ms(max(paced))}   target: median < ${TARGET_MS} ms → ${verdict(median(paced) < TARGET_MS)}`,
    ...[...byLabel].map(([label, xs]) => row(label, xs)),
    `  on-CPU time of the workbench's JS thread from the write to the frame (less sensitive to other load): median ${ms(median(pacedCpu))}, p95 ${ms(p95(pacedCpu))}`,
    `  keys with no frame showing them within 1 s: ${missed}; keys phase ${(pacedMs / 1000).toFixed(1)} s, process CPU ${((cpuKeys1.processMs - cpuKeys0.processMs) / 1000).toFixed(2)} s`,
    `held j/k at 30 keys/s (60 keys, no waiting): median ${ms(median(held))}  p95 ${ms(p95(held))}  max ${ms(max(held))}; no frame within 33 ms: ${heldMissed}`,
    '',
    'memory of the workbench process (VmRSS sampled every 10 ms; VmHWM = the kernel\'s peak so far)',
    ...phases.map((p) => `  during ${p.name}: peak sampled rss ${MiB(p.rss)}, VmHWM ${Number.isNaN(p.hwm) ? 'n/a' : MiB(p.hwm)}`),
    `  peak before quitting (VmHWM): ${MiB(beforeQuit.hwm)}   target: < ${TARGET_MB} MB → ${verdict(beforeQuit.hwm < TARGET_MB * 1024 * 1024)}`,
    `  peak over the whole life, quit included: VmHWM ${MiB(lastHwm)} at its last reading before the exit${TIME ? ` (/usr/bin/time: ${MiB(timeRss)}, the largest of the workbench and the agent processes it ended)` : ''}; quit took ${ms(quitMs)}; exit ${JSON.stringify({ code: exited.code, signal: exited.signal })}`,
    `frames written: ${frames.count} (${MiB(frames.bytes)} of terminal output)`,
    values.keep ? `garden kept at ${root}` : 'temp garden removed',
    '',
  ].join('\n'),
);
if (values.trace) log(`settled screen:\n${settledScreen.join('\n')}\nlast screen:\n${lastScreen.join('\n')}`);
cleanup();
process.exit(0);
