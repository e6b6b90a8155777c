#!/usr/bin/env node
// The event log's two doors, measured (issue 11; docs/server/level2.md):
//  1. catch-up: on a ~1 GB log, `--since` (findEventsAfter, then reading the
//     rest) from the event 1 MB before the end, beside plainly reading the
//     log's last 1 MB; and `pak2 events --since ID` end to end.
//  2. the stream: `pak2 serve` in its own process, 100 SSE subscribers, a
//     writer process appending 10,000 events; lag = receipt time − the time
//     put in the event just before its append (same machine, same clock).
// Prints figures; asserts only that every subscriber got every event once, in order.
// Usage: npm run bench:events [-- --size-mb 1024 --subscribers 100 --events 10000 --rate 1000 --runs 5 --full-scan --keep]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeTime } from 'ulid';
import { loadGarden } from '../dist/garden/index.js';
import { findEventsAfter, streamEvents } from '../dist/store/index.js';

const { values } = parseArgs({
  options: {
    'size-mb': { type: 'string', default: '1024' },
    subscribers: { type: 'string', default: '100' },
    events: { type: 'string', default: '10000' },
    rate: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
    'full-scan': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    'skip-log': { type: 'boolean', default: false },
    'skip-sse': { type: 'boolean', default: false },
  },
});
const SIZE = Number(values['size-mb']) * 1024 * 1024;
const SUBSCRIBERS = Number(values.subscribers);
const EVENTS = Number(values.events);
const RATE = Number(values.rate);
const RUNS = Number(values.runs);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'pak2.js');

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const ms = (x) => `${x.toFixed(x < 10 ? 2 : 1)} ms`;
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function makeGarden(name) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-bench-${name}-`));
  fs.writeFileSync(path.join(root, 'PAK2.toml'), '[runtime]\nroot = ".runtime"\n');
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# bench\n');
  const garden = loadGarden(root);
  fs.mkdirSync(garden.paths.eventsDir, { recursive: true });
  return garden;
}

// ---------------------------------------------------------------- 1. catch-up on a large log

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
// The random part of each id: 16 characters cut from a pool of random Crockford text (ids stay unique: the time part differs).
const POOL = Array.from({ length: 65_536 }, () => CROCKFORD[Math.floor(Math.random() * 32)]).join('');
let cut = 0;
const random16 = () => {
  cut = (cut + 4099) % (POOL.length - 16);
  return POOL.slice(cut, cut + 16);
};

// The time part of a ULID and an ISO time, with the slow-changing prefixes cached (encodeTime and toISOString cost ~1.5 µs each here).
let idPrefix = ['', -1];
const timeId = (t) => {
  const high = Math.floor(t / 1024);
  if (idPrefix[1] !== high) idPrefix = [encodeTime(t, 10).slice(0, 8), high];
  return idPrefix[0] + CROCKFORD[Math.floor(t / 32) % 32] + CROCKFORD[t % 32];
};
let isoPrefix = ['', -1];
const isoTime = (t) => {
  const second = Math.floor(t / 1000);
  if (isoPrefix[1] !== second) isoPrefix = [new Date(second * 1000).toISOString().slice(0, 20), second];
  return `${isoPrefix[0]}${String(t % 1000).padStart(3, '0')}Z`;
};

/** Writes ~`size` bytes of realistic events (ULID ids, 7 ms apart, so they sort by time), built as text: the disk, not JSON.stringify, sets the pace. */
async function buildLog(file, size) {
  const out = fs.createWriteStream(file, { highWaterMark: 16 * 1024 * 1024 });
  const start = Date.parse('2025-01-01T00:00:00.000Z');
  const tails = [
    (g) => `"type":"GoalSubmitted","goal":"${g}","plant":"gardener","detail":"build: a goal body summary of a typical length for the log"}`,
    (g) => `"type":"GoalTransitioned","goal":"${g}","from":"queued","to":"dispatched"}`,
    (g) => `"type":"RunStarted","goal":"${g}","run":"${g}-r1","plant":"gardener","detail":"claude/claude-opus-4-6"}`,
    (g) => `"type":"GoalTransitioned","goal":"${g}","from":"dispatched","to":"running"}`,
    (g) => `"type":"RunClosed","goal":"${g}","run":"${g}-r1","plant":"gardener","status":"success","cost_source":"provider","cost_usd":0.0123,"detail":"closed by driver"}`,
    (g) => `"type":"GoalTransitioned","goal":"${g}","from":"running","to":"completed"}`,
    (g) => `"type":"GoalTransitioned","goal":"${g}","from":"completed","to":"closed"}`,
    (g) => `"type":"GoalClosed","goal":"${g}","reason":"success"}`,
  ];
  let written = 0;
  let n = 0;
  while (written < size) {
    const parts = [];
    let length = 0;
    while (length < 1024 * 1024) {
      const t = start + n * 7;
      const line = `{"id":"${timeId(t)}${random16()}","ts":"${isoTime(t)}",${tails[n % 8](`${(n >> 3) + 1}-bench-goal-with-a-slug`)}\n`;
      parts.push(line);
      length += line.length;
      n += 1;
    }
    written += length;
    if (!out.write(parts.join(''))) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  return { events: n, bytes: fs.statSync(file).size };
}

/** The id of the first event whose line starts at or after `offset`. */
function idAt(file, offset) {
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const read = fs.readSync(fd, buffer, 0, buffer.length, offset);
    const text = buffer.subarray(0, read).toString('utf8');
    const line = text.slice(text.indexOf('\n') + 1).split('\n')[0];
    return JSON.parse(line).id;
  } finally {
    fs.closeSync(fd);
  }
}

async function catchUp() {
  const garden = makeGarden('log');
  const file = garden.paths.coordinatorLog;
  let t = performance.now();
  process.stdout.write(`building a ${mb(SIZE)} event log in ${file} …\n`);
  const { events, bytes } = await buildLog(file, SIZE);
  const buildMs = performance.now() - t;
  process.stdout.write(`  ${events.toLocaleString('en')} events, ${mb(bytes)} in ${(buildMs / 1000).toFixed(1)} s (${mb((bytes / buildMs) * 1000)}/s)\n`);

  const cursor = idAt(file, bytes - 1024 * 1024);
  const seek = [];
  const since = [];
  const last = [];
  const lastParsed = [];
  let sinceCount = 0;
  for (let i = 0; i < RUNS; i += 1) {
    t = performance.now();
    const { offset, exact } = await findEventsAfter(garden.paths, cursor);
    seek.push(performance.now() - t);
    if (!exact) throw new Error('the cursor was not found');
    let count = 0;
    await streamEvents(garden.paths, offset, () => {
      count += 1;
    });
    since.push(performance.now() - t);
    sinceCount = count;

    t = performance.now();
    const fd = await fs.promises.open(file, 'r');
    const buffer = Buffer.alloc(1024 * 1024);
    await fd.read(buffer, 0, buffer.length, bytes - buffer.length);
    await fd.close();
    last.push(performance.now() - t);
    let parsed = 0;
    for (const line of buffer.toString('utf8').split('\n').slice(1)) {
      if (!line) continue;
      JSON.parse(line);
      parsed += 1;
    }
    lastParsed.push(performance.now() - t);
    if (parsed < 1) throw new Error('nothing parsed');
  }
  const cli = [];
  for (let i = 0; i < Math.min(RUNS, 3); i += 1) {
    t = performance.now();
    const out = execFileSync(process.execPath, [BIN, 'events', '--garden', garden.paths.gardenRoot, '--since', cursor, '--json'], { maxBuffer: 64 * 1024 * 1024 });
    cli.push(performance.now() - t);
    if (out.toString().split('\n').filter(Boolean).length !== sinceCount) throw new Error('pak2 events --since printed a different count');
  }
  const version = [];
  for (let i = 0; i < Math.min(RUNS, 3); i += 1) {
    t = performance.now();
    execFileSync(process.execPath, [BIN, '--version']);
    version.push(performance.now() - t);
  }
  let full;
  if (values['full-scan']) {
    t = performance.now();
    let count = 0;
    await streamEvents(garden.paths, 0, () => {
      count += 1;
    });
    full = { ms: performance.now() - t, count };
  }
  process.stdout.write(`catch-up on ${mb(bytes)} (${events.toLocaleString('en')} events), cursor 1 MB before the end, median of ${RUNS} (warm page cache):\n`);
  process.stdout.write(`  --since: findEventsAfter ${ms(median(seek))} + reading the rest (${sinceCount} events, parsed and validated) = ${ms(median(since))}\n`);
  process.stdout.write(`  reading the last 1 MB: ${ms(median(last))} raw, ${ms(median(lastParsed))} with JSON.parse of each line\n`);
  process.stdout.write(`  pak2 events --since ID --json (a process, ${sinceCount} lines out): ${ms(median(cli))}; pak2 --version for scale: ${ms(median(version))}\n`);
  if (full) process.stdout.write(`  for scale, streaming the whole log from offset 0: ${(full.ms / 1000).toFixed(1)} s (${full.count.toLocaleString('en')} events)\n`);
  if (!values.keep) fs.rmSync(garden.paths.gardenRoot, { recursive: true, force: true });
}

// ---------------------------------------------------------------- 2. SSE lag

function startServe(garden) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--garden', garden.paths.gardenRoot, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d.toString();
      const url = /pak2: serving (\S+)/.exec(err)?.[1];
      if (url) resolve({ child, url, token: fs.readFileSync(path.join(garden.paths.runtimeRoot, 'serve', 'token'), 'utf8').trim() });
    });
    child.once('exit', (code) => reject(new Error(`pak2 serve exited ${code}: ${err}`)));
  });
}

function subscribe(url, token, expected, lags, agent) {
  return new Promise((resolveReady) => {
    const ids = [];
    let done;
    const finished = new Promise((r) => (done = r));
    const request = http.get(`${url}/events/stream`, { agent, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk) => {
        const now = performance.timeOrigin + performance.now();
        buffer += chunk;
        // Frames are `id: …\nevent: …\ndata: {…"detail":"<append time>"}\n\n`: read the two fields without a JSON parse,
        // so the subscribers' own CPU weighs as little as it can on the figures.
        let at = 0;
        for (let cut = buffer.indexOf('\n\n', at); cut >= 0; cut = buffer.indexOf('\n\n', at)) {
          if (buffer.startsWith('id: ', at)) {
            ids.push(buffer.slice(at + 4, at + 30));
            const d = buffer.indexOf('"detail":"', at) + 10;
            lags.push(now - Number(buffer.slice(d, buffer.indexOf('"', d))));
            if (ids.length === expected) done();
          }
          at = cut + 2;
        }
        buffer = buffer.slice(at);
      });
      resolveReady({ ids, finished, close: () => request.destroy() });
    });
    request.on('error', () => undefined);
  });
}

const WRITER = `
import { loadGarden } from ${JSON.stringify(path.join(ROOT, 'dist/garden/index.js'))};
import { appendEvent } from ${JSON.stringify(path.join(ROOT, 'dist/store/index.js'))};
import { performance } from 'node:perf_hooks';
const [root, count, rate] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)));
const { paths } = loadGarden(root);
const ids = [];
const start = performance.now();
for (let i = 0; i < count; i += 1) {
  if (rate > 0) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  }
  const e = await appendEvent(paths, { type: 'GoalSubmitted', goal: (i + 1) + '-lag', detail: String(performance.timeOrigin + performance.now()) });
  ids.push(e.id);
}
process.stdout.write(JSON.stringify({ ids, ms: performance.now() - start }));
`;

async function sseLag(rate) {
  const garden = makeGarden('sse');
  const serve = await startServe(garden);
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const lags = [];
  const clients = await Promise.all(Array.from({ length: SUBSCRIBERS }, () => subscribe(serve.url, serve.token, EVENTS, lags, agent)));
  const writer = spawn(process.execPath, ['--input-type=module', '-e', WRITER, garden.paths.gardenRoot, String(EVENTS), String(rate)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  writer.stdout.on('data', (d) => (out += d.toString()));
  await new Promise((r) => writer.once('exit', r));
  const written = JSON.parse(out);
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('subscribers did not get every event within 120 s')), 120_000));
  await Promise.race([Promise.all(clients.map((c) => c.finished)), timeout]);
  const lastReceipt = performance.now();
  for (const c of clients) {
    if (c.ids.length !== EVENTS || c.ids.some((id, i) => id !== written.ids[i])) throw new Error('a subscriber missed, repeated or reordered events');
    c.close();
  }
  serve.child.kill('SIGTERM');
  await new Promise((r) => serve.child.once('exit', r));
  const sorted = lags.sort((a, b) => a - b);
  const label = rate > 0 ? `paced at ${rate}/s` : 'as fast as appendEvent goes';
  process.stdout.write(
    `SSE lag, ${SUBSCRIBERS} subscribers × ${EVENTS.toLocaleString('en')} events (${label}; written in ${(written.ms / 1000).toFixed(2)} s): p50 ${ms(pct(sorted, 50))}, p99 ${ms(pct(sorted, 99))}, max ${ms(sorted.at(-1))} over ${sorted.length.toLocaleString('en')} receipts; every subscriber got every event once, in order\n`,
  );
  void lastReceipt;
  if (!values.keep) fs.rmSync(garden.paths.gardenRoot, { recursive: true, force: true });
}

process.stdout.write(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'})\n`);
if (!values['skip-log']) await catchUp();
if (!values['skip-sse']) {
  await sseLag(RATE);
  if (RATE > 0) await sseLag(0);
}
