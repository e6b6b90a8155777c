#!/usr/bin/env node
// What neutralising an agent's stderr costs (issue 23; docs/run/level2.md,
// "Printed text"): 10 MB of stderr through the headless forward
// (StderrForward: a SanitizeStream per run, whole lines printed), in 64 KB
// chunks as the driver's follower hands them over, for plain text, text
// with some colour and progress bars, and text that is nearly all escapes;
// and sanitize() of the same 10 MB at once. Prints figures; asserts nothing.
// Usage: npm run build && node bench/sanitize.mjs [--mb 10 --runs 5]
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { StderrForward } from '../dist/cli/headless.js';
import { sanitize } from '../dist/sanitize.js';

const { values } = parseArgs({ options: { mb: { type: 'string', default: '10' }, runs: { type: 'string', default: '5' } } });
const size = Number(values.mb) * 1024 * 1024;
const runs = Number(values.runs);
const CHUNK = 64 * 1024;

const fill = (unit) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
const inputs = {
  plain: fill('npm warn deprecated some-package@1.2.3: this line has no control character at all\n'),
  typical: fill('\x1b[33mwarn\x1b[39m compiling src/index.ts\n[=====     ] 50%\r[==========] 100%\r\n'),
  hostile: fill('\x1b]52;c;cHduZWQ=\x07\x1b[2J\u009b2J\x1bc\x07'),
};

for (const [name, text] of Object.entries(inputs)) {
  const forwardMs = [];
  const wholeMs = [];
  let printed = 0;
  for (let r = 0; r < runs; r++) {
    printed = 0;
    const forward = new StderrForward((t) => (printed += t.length));
    let start = performance.now();
    for (let i = 0; i < text.length; i += CHUNK) forward.push('run-1', text.slice(i, i + CHUNK));
    forward.end();
    forwardMs.push(performance.now() - start);
    start = performance.now();
    sanitize(text);
    wholeMs.push(performance.now() - start);
  }
  const best = (xs) => Math.min(...xs);
  const mbps = (ms) => (size / 1024 / 1024 / (ms / 1000)).toFixed(0);
  console.log(`${name.padEnd(8)} ${(size / 1024 / 1024).toFixed(0)} MB: forward ${best(forwardMs).toFixed(0)} ms (${mbps(best(forwardMs))} MB/s), sanitize whole ${best(wholeMs).toFixed(0)} ms (${mbps(best(wholeMs))} MB/s); printed ${(printed / 1024 / 1024).toFixed(1)} M chars`);
}
