#!/usr/bin/env node
// Redaction throughput (issue 10, item 7; source/guard/redact.ts):
//  1. redactFile on a ~100 MB executor log of JSON lines (stream-json-like),
//     a few known secret values and credential shapes sprinkled in, plus one
//     line longer than a read chunk: MB/s, replacements, peak RSS.
//  2. the in-memory redactor on 10 MB of the same text: MB/s.
// Prints figures; asserts only that no secret value is left in the file.
// Usage: npm run build && node bench/redact.mjs [-- --size-mb 100 --secrets 8 --keep]
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeRedactor, redactFile } from '../dist/guard/redact.js';

const { values } = parseArgs({
  options: {
    'size-mb': { type: 'string', default: '100' },
    secrets: { type: 'string', default: '8' },
    keep: { type: 'boolean', default: false },
  },
});
const SIZE = Number(values['size-mb']) * 1024 * 1024;
const SECRETS = Array.from({ length: Number(values.secrets) }, (_, i) => ({
  name: `BENCH_SECRET_${i}`,
  value: `s3cr3t-${i}-${'x'.repeat(8 + i)}-${(i * 7919).toString(36)}`,
}));

const scratch = path.join(path.dirname(fileURLToPath(import.meta.url)), '.scratch');
fs.mkdirSync(scratch, { recursive: true });
const file = path.join(scratch, 'redact-executor.log');

/** One log line; every 500th carries a secret value, every 700th a credential shape. */
function line(n) {
  const text =
    n % 500 === 0
      ? `export ${SECRETS[n % SECRETS.length].name}=${SECRETS[n % SECRETS.length].value}`
      : n % 700 === 0
        ? 'curl -H "Authorization: Bearer abcdef0123456789abcdef" https://api.example.com'
        : `Reading source/coordinator/file-${n}.ts: export function handle${n}(input) { return input.map((x) => x * ${n}); }`;
  return `${JSON.stringify({ type: 'assistant', seq: n, message: { role: 'assistant', content: [{ type: 'text', text }] } })}\n`;
}

function writeLog() {
  const fd = fs.openSync(file, 'w');
  let size = 0;
  let n = 0;
  let batch = '';
  while (size < SIZE) {
    const next = n === 1000 ? `${'L'.repeat(3 * 1024 * 1024)} ${SECRETS[0].value}\n` : line(n);
    batch += next;
    size += next.length;
    n++;
    if (batch.length > 1 << 20) {
      fs.writeSync(fd, batch);
      batch = '';
    }
  }
  fs.writeSync(fd, batch);
  fs.closeSync(fd);
  return { size, lines: n };
}

const redact = makeRedactor({ enabled: true, secrets: SECRETS });

const { size, lines } = writeLog();
const mb = size / 1024 / 1024;
const start = performance.now();
const count = await redactFile(file, redact);
const seconds = (performance.now() - start) / 1000;
const peakRss = process.resourceUsage().maxRSS / 1024;
const after = fs.readFileSync(file, 'utf8');
const leaked = SECRETS.filter((secret) => after.includes(secret.value)).map((secret) => secret.name);
console.log(
  `redactFile: ${mb.toFixed(1)} MB, ${lines} lines, ${count} replacements in ${seconds.toFixed(2)} s = ${(mb / seconds).toFixed(1)} MB/s; ` +
    `peak RSS so far ${peakRss.toFixed(0)} MB`,
);
if (leaked.length > 0) {
  console.error(`LEAKED: ${leaked.join(', ')}`);
  process.exitCode = 1;
}

let text = '';
for (let n = 0; text.length < 10 * 1024 * 1024; n++) text += line(n);
const memStart = performance.now();
redact(text);
const memSeconds = (performance.now() - memStart) / 1000;
console.log(`in memory: ${(text.length / 1024 / 1024).toFixed(1)} MB in ${memSeconds.toFixed(2)} s = ${(text.length / 1024 / 1024 / memSeconds).toFixed(1)} MB/s`);

if (!values.keep) fs.rmSync(file, { force: true });
