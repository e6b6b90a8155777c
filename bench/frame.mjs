#!/usr/bin/env node
// The cost of one workbench frame, in process: the real App (dist/, so run
// `npm run build` first) rendered by Ink to a fake 120x40 terminal, from a
// literal snapshot of 10,000 goals and a running run whose tail holds 400
// lines of claude stream-json. Keys are written to a fake stdin one at a
// time (the same round of keys as bench/ui.mjs); each is timed from the
// write to Ink's write of the frame that shows it, and, with --expose-gc and
// a young generation big enough that no scavenge runs inside a frame, the
// heap allocated per frame is read as the growth of heapUsed. The numbers
// are the frame's own (React, Yoga, Ink's output, log-update), without the
// pseudo-terminal and the coordinator of bench/ui.mjs.
//
// Usage: npm run build && node --expose-gc --max-semi-space-size=64 bench/frame.mjs [--keys N] [--columns N --rows N]
//   --expose-gc and the semi-space size are for this measurement only (allocation per frame).
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

process.env.NODE_ENV ??= 'production';
// Colours on, as in a terminal (chalk decides when Ink is imported, below): without them a cursor move changes no character.
process.env.FORCE_COLOR = '3';
delete process.env.CI;

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '300' },
    goals: { type: 'string', default: '10000' },
    columns: { type: 'string', default: '120' },
    rows: { type: 'string', default: '40' },
    gap: { type: 'string', default: '40' },
    dist: { type: 'string', default: 'dist' }, // another build to compare (a copy of dist/ inside the repo)
  },
});
const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.resolve(HERE, '..', values.dist);
const React = (await import('react')).default;
const { render } = await import('ink');
const { App } = await import(path.join(DIST, 'ui', 'app.js'));
const { fixedStore } = await import(path.join(DIST, 'ui', 'hooks', 'use-snapshot.js'));
const { EMPTY_SNAPSHOT, renderRawLine } = await import(path.join(DIST, 'snapshot', 'index.js'));

const COLUMNS = Number(values.columns);
const ROWS = Number(values.rows);
const now = Date.now();
const iso = (ms) => new Date(ms).toISOString();
const WORDS = 'fix the flaky parser test render queue cache tail stream config plant goal run reflection coordinator snapshot watcher ledger budget cost token driver'.split(' ');
let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const words = (n) => Array.from({ length: n }, () => pick(WORDS)).join(' ');

const goals = [];
const running = { id: '44-fix-the-parser-r1', goal: '44-fix-the-parser', plant: 'gardener', status: 'running', started_at: iso(now - 600e3), driver: 'claude', model: 'claude-opus-4-6' };
goals.push({ goal: { id: running.goal, type: 'fix', status: 'running', priority: 100, assigned_to: 'gardener', body: words(30), submitted_at: iso(now - 3600e3) }, run: running });
for (let i = 0; i < Number(values.goals) - 1; i += 1) {
  const body = words(20 + Math.floor(rand() * 60));
  const id = `${i + 45}-${body.split(' ').slice(0, 5).join('-')}`;
  goals.push({ goal: { id, type: pick(['build', 'fix', 'tend', 'spike']), status: 'queued', priority: Math.floor(rand() * 100), assigned_to: 'gardener', body, submitted_at: iso(now - Math.floor(rand() * 30 * 86400e3)) }, run: undefined });
}
const fixture = fs.readFileSync(path.resolve(HERE, '..', 'test', 'fixtures', 'streams', 'claude-build.jsonl'), 'utf8').split('\n');
const usage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
const lines = [];
while (lines.length < 400) for (const raw of fixture) lines.push(...renderRawLine(raw, usage));
const tail = { runId: running.id, file: '/garden/.runtime/runs/x/events.jsonl', lines: lines.slice(-400), usage, bytes: 100 * 1024 * 1024, truncated: true };
const snapshot = {
  ...EMPTY_SNAPSHOT,
  version: 1,
  takenAt: iso(now),
  garden: { name: 'bench', root: '/garden', runtimeRoot: '/garden/.runtime', readOnly: false, drivers: ['claude'] },
  coordinator: { state: 'running', liveRuns: [running.id] },
  goals,
  counts: { queued: goals.length - 1, inFlight: 1, closedShown: 0 },
  plants: [{ plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: iso(now - 86400e3) }, memory: `# Memory\n\n${words(80)}\n`, skills: ['- skills/a.md — A skill'], knowledge: ['- knowledge/b.md — Some knowledge'], threads: [] }],
  tail,
  costToday: { usd: 1.5, runs: 3, unknown: 0 },
};

class Stdout extends EventEmitter {
  isTTY = true;
  columns = COLUMNS;
  rows = ROWS;
  writes = 0;
  onFrame = undefined;
  write = (data) => {
    this.writes += 1;
    if (typeof data === 'string' && data.length > 20) this.onFrame?.(data);
    return true;
  };
}
class Stdin extends EventEmitter {
  isTTY = true;
  data = null;
  write = (data) => {
    this.data = data;
    this.emit('readable');
  };
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
  read = () => {
    const { data } = this;
    this.data = null;
    return data;
  };
}
const stdout = new Stdout();
const stdin = new Stdin();
const renderTimes = [];
const instance = render(React.createElement(App, { store: fixedStore(snapshot), actions: { follow: () => undefined, quit: () => undefined } }), {
  stdout,
  stdin,
  stderr: new Stdout(),
  exitOnCtrlC: false,
  patchConsole: false,
  onRender: ({ renderTime }) => renderTimes.push(renderTime),
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
await sleep(500);

const KEY = { tab: '\t', shiftTab: '\u001b[Z', pgdn: '\u001b[6~', pgup: '\u001b[5~', bs: '\u007f', enter: '\r', esc: '\u001b' };
const round = [...'jjjjjjjjjjjjjjjjjjjjjjjjjkkkkkkkkkk', ...Array(12).fill(KEY.pgdn), ...Array(4).fill(KEY.pgup), '/', ...'parser', KEY.bs, KEY.bs, KEY.bs, ...'ser', KEY.enter, ...'jjjjj', KEY.esc, KEY.tab, ...'kkkkkkkkkkkkkkkjjjjj', KEY.tab, KEY.tab, KEY.tab, KEY.tab, KEY.shiftTab, KEY.shiftTab, KEY.tab, KEY.tab];
const script = [];
while (script.length < Number(values.keys)) script.push(...round);
script.length = Number(values.keys);

const gc = globalThis.gc;
const latencies = [];
const allocs = [];
const inkRender = [];
let missed = 0;
for (const key of script) {
  gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const r0 = renderTimes.length;
  const start = performance.now();
  const shown = new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 1000);
    stdout.onFrame = () => {
      clearTimeout(timer);
      resolve(performance.now());
    };
  });
  stdin.write(key);
  const at = await shown;
  stdout.onFrame = undefined;
  if (at === undefined) missed += 1;
  else {
    latencies.push(at - start);
    allocs.push(process.memoryUsage().heapUsed - heap0);
    if (renderTimes.length > r0) inkRender.push(renderTimes[renderTimes.length - 1]);
  }
  await sleep(Number(values.gap));
}
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor((xs.length - 1) / 2)];
const p95 = (xs) => sorted(xs)[Math.max(0, Math.ceil(xs.length * 0.95) - 1)];
const f = (x) => x.toFixed(2);
process.stdout.write(
  [
    `${COLUMNS}x${ROWS}, ${goals.length} goals, ${tail.lines.length} tail lines, ${latencies.length} keys (${missed} with no frame)${gc ? '' : ' (no --expose-gc: allocation not measured)'}`,
    `key to frame written: median ${f(median(latencies))} ms, p95 ${f(p95(latencies))} ms`,
    `Ink's output stage (onRender renderTime): median ${f(median(inkRender))} ms, p95 ${f(p95(inkRender))} ms`,
    gc ? `heap allocated per key's frame: median ${f(median(allocs) / 1048576)} MB, p95 ${f(p95(allocs) / 1048576)} MB` : '',
    '',
  ].join('\n'),
);
instance.unmount();
process.exit(0);
