#!/usr/bin/env node
// Cold paths against history (issue 13): builds gardens with 0, 50,000 and
// 500,000 closed goals (goal files and ledger written directly) and times,
// in one run, each path as a separate `node bin/pak2.js …` process:
//   pak2 goals, pak2 cycle --no-ui --until-idle (nothing queued), the
//   dashboard's first frame (pak2 dashboard without a terminal), and on a
//   small garden pak2 --version, --help, submit and goals;
// beside its floors measured in the same run: `node -e 0`, and a bare
// listing of goals/ (`ls -f`). Prints the median time as a ratio to its
// floor and to the same path on the empty garden, and the peak RSS
// (/usr/bin/time -f %M when present, else /proc/<pid>/status VmHWM).
// Prints figures; asserts nothing.
// Each big-garden path is timed twice: with goals/ unchanged since the last
// pak2 process, and right after a pak2 submit and cancel (untimed).
// Then adoption (issue 25, item 10): N closed goal files written into goals/
// outside pak2 (no ledger line) with a closed_at seconds old, and the same
// with an old closed_at (the ledger is rebuilt instead); the time of the
// first `pak2 goals`, which adopts them, once each (it changes the garden).
// Usage: npm run bench:scale [-- --sizes 0,50000,500000 --reps 5 --dir DIR --fresh --clean
//                               --adopt 2000,4000,50000 --adopt-only]
//   The gardens are kept in --dir (default $TMPDIR/pak2-bench-scale) and
//   reused by later runs; --sizes 0,50000 leaves out the big one.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '0,50000,500000' },
    reps: { type: 'string', default: '5' },
    dir: { type: 'string', default: path.join(os.tmpdir(), 'pak2-bench-scale') },
    clean: { type: 'boolean', default: false }, // remove the gardens at the end
    fresh: { type: 'boolean', default: false }, // rebuild the gardens even when present
    adopt: { type: 'string', default: '2000,4000,50000' }, // external closed goals adopted ('' leaves it out)
    'adopt-only': { type: 'boolean', default: false }, // only the adoption figures
  },
});
const SIZES = values.sizes.split(',').map(Number);
const REPS = Math.max(1, Number(values.reps));
const ROOT = path.resolve(values.dir);
const PAK2 = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'pak2.js');
const TIME = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

// ---------------------------------------------------------------- gardens

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const WORDS = 'fix the flaky parser test render queue cache tail stream config plant goal run reflection coordinator snapshot watcher ledger budget cost token driver model prompt worktree branch merge lint build schema contract event inbox note chat thread memory skill knowledge garden seed dashboard status cursor filter layout'.split(' ');

/** A garden (PAK2.toml, a gardener plant, one old run) with `closed` closed goals written straight to disk. */
function buildGarden(dir, closed) {
  const marker = path.join(dir, '.bench-complete');
  if (!values.fresh && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === `${closed}\n`) return { dir, built: false, seconds: 0 };
  fs.rmSync(dir, { recursive: true, force: true });
  const t = performance.now();
  const runtime = path.join(dir, '.runtime');
  const goals = path.join(runtime, 'goals');
  for (const d of [goals, path.join(runtime, 'events'), path.join(runtime, 'runs', '1-bench-goal-r1'), path.join(dir, 'plants', 'gardener', 'memory'), path.join(dir, 'seeds')]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(dir, 'PAK2.toml'), '[garden]\nname = "bench"\n[runtime]\nroot = ".runtime"\n[defaults]\ndriver = "command"\n[drivers.command]\ncommand = "true"\n');
  fs.writeFileSync(path.join(dir, 'MOTIVATION.md'), '# bench\n');
  fs.writeFileSync(path.join(dir, 'seeds', 'gardener.md'), '# Seed: gardener\n');
  fs.writeFileSync(path.join(dir, 'plants', 'gardener', 'meta.json'), JSON.stringify({ name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: new Date(T0).toISOString() }, null, 2));
  fs.writeFileSync(path.join(dir, 'plants', 'gardener', 'memory', 'MEMORY.md'), '# Memory\n');
  const ledger = fs.openSync(path.join(goals, '.closed'), 'w');
  let lines = [];
  for (let n = 1; n <= closed; n += 1) {
    const slug = [WORDS[n % WORDS.length], WORDS[(n * 7) % WORDS.length], WORDS[(n * 13) % WORDS.length]].join('-');
    const id = `${n}-${slug}`;
    const submitted = new Date(T0 + n * 60_000).toISOString();
    const closedAt = new Date(T0 + n * 60_000 + 30_000).toISOString();
    const reason = n % 10 === 0 ? 'failure' : 'success';
    const goal = { id, type: 'build', status: 'closed', priority: 50, assigned_to: 'gardener', body: `Goal ${n}: ${slug.replaceAll('-', ' ')} in the garden, with a body of a typical length.`, submitted_at: submitted, updated_at: closedAt, closed_at: closedAt, closed_reason: reason };
    fs.writeFileSync(path.join(goals, `${id}.json`), `${JSON.stringify(goal, null, 2)}\n`);
    lines.push(JSON.stringify({ id, type: 'build', plant: 'gardener', priority: 50, closed_reason: reason, closed_at: closedAt, submitted_at: submitted }));
    if (lines.length === 10_000) {
      fs.writeSync(ledger, `${lines.join('\n')}\n`);
      lines = [];
      process.stderr.write(`\r  building ${closed.toLocaleString('en-US')}: ${n.toLocaleString('en-US')}`);
    }
  }
  if (lines.length) fs.writeSync(ledger, `${lines.join('\n')}\n`);
  fs.closeSync(ledger);
  fs.writeFileSync(path.join(goals, '.counter'), `${closed}\n`);
  fs.writeFileSync(path.join(runtime, 'events', 'coordinator.jsonl'), '');
  fs.writeFileSync(marker, `${closed}\n`);
  if (closed >= 10_000) process.stderr.write('\n');
  return { dir, built: true, seconds: (performance.now() - t) / 1000 };
}

// ---------------------------------------------------------------- measuring

/** Peak RSS of a process by polling /proc (the fallback without /usr/bin/time). */
function pollPeak(pid, state) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m) state.kb = Math.max(state.kb, Number(m[1]));
  } catch {
    // gone
  }
}

/** Runs one command to its end: wall time (ms) and peak RSS (MB). */
function runOnce(argv, options = {}) {
  return new Promise((resolve, reject) => {
    const rssFile = path.join(ROOT, `.rss-${process.pid}`);
    const [cmd, args] = TIME ? [TIME, ['-f', '%M', '-o', rssFile, ...argv]] : [argv[0], argv.slice(1)];
    const t = performance.now();
    const child = spawn(cmd, args, { cwd: options.cwd, env: { ...process.env, CI: '', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const peak = { kb: 0 };
    const poll = TIME ? undefined : setInterval(() => pollPeak(child.pid, peak), 5);
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = performance.now() - t;
      if (poll) clearInterval(poll);
      let kb = peak.kb;
      if (TIME) {
        try {
          kb = Number(fs.readFileSync(rssFile, 'utf8').trim().split('\n').pop());
        } catch {
          kb = 0;
        }
      }
      if (code !== 0 && !options.anyExit) reject(new Error(`${argv.join(' ')}: exit ${code}\n${stderr}`));
      else resolve({ ms, mb: kb / 1024 });
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The median time and the highest peak RSS of `reps` runs, after one warm-up run. */
async function measure(argv, options = {}) {
  options.before?.();
  await runOnce(argv, options);
  const times = [];
  let mb = 0;
  for (let i = 0; i < (options.reps ?? REPS); i += 1) {
    options.before?.();
    const r = await runOnce(argv, options);
    times.push(r.ms);
    mb = Math.max(mb, r.mb);
    if (options.between) options.between();
  }
  return { ms: median(times), mb };
}

const pak2 = (...args) => [process.execPath, PAK2, ...args];

/** A change to goals/ as a user makes one (untimed): a goal submitted, then cancelled (closed), each its own pak2 process. */
function changeGoals(garden) {
  const run = (...args) => {
    const r = spawnSync(process.execPath, [PAK2, ...args, '--garden', garden], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`pak2 ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
    return r.stdout.trim();
  };
  const id = run('submit', '--plant', 'gardener', '--type', 'build', '--body', 'bench change');
  run('cancel', id);
}
const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const fmtX = (x) => `${x.toFixed(2)}×`;

// ---------------------------------------------------------------- the run

/** Writes `count` closed goal files into a garden's goals/ as a tool or a restore would: no ledger line, closed at `closedAt`. */
function writeExternalClosed(dir, count, closedAt) {
  const goals = path.join(dir, '.runtime', 'goals');
  for (let n = 1; n <= count; n += 1) {
    const id = `${n + 1_000_000}-restored-goal`;
    const goal = { id, type: 'build', status: 'closed', priority: 50, assigned_to: 'gardener', body: `Restored goal ${n}.`, submitted_at: closedAt, updated_at: closedAt, closed_at: closedAt, closed_reason: 'success' };
    fs.writeFileSync(path.join(goals, `${id}.json`), `${JSON.stringify(goal, null, 2)}\n`);
  }
}

/** Adoption of `count` external closed goals by the first `pak2 goals`: [recent closed_at, old closed_at] rows. */
async function adoptionRows(count) {
  const out = [];
  for (const [label, closedAt] of [['closed_at seconds old', () => new Date().toISOString()], ['closed_at a year old', () => new Date(T0).toISOString()]]) {
    const dir = path.join(ROOT, `adopt-${count}`);
    fs.rmSync(path.join(dir, '.bench-complete'), { force: true });
    buildGarden(dir, 0);
    fs.rmSync(path.join(dir, '.bench-complete'), { force: true }); // the adopted goals change it: rebuilt next time
    writeExternalClosed(dir, count, closedAt());
    const r = await runOnce(pak2('goals', '--garden', dir), { anyExit: true });
    const listed = fs.readFileSync(path.join(dir, '.runtime', 'goals', '.closed'), 'utf8').split('\n').filter(Boolean).length;
    out.push([`adopt ${count.toLocaleString('en-US')} external closed`, `first pak2 goals, ${label}`, fmtMs(r.ms), `${listed.toLocaleString('en-US')} in the ledger`, '-', `${r.mb.toFixed(0)} MB`, '-']);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

fs.mkdirSync(ROOT, { recursive: true });
const ADOPT = values.adopt ? values.adopt.split(',').filter(Boolean).map(Number) : [];
if (values['adopt-only']) {
  const rows = [];
  for (const count of ADOPT) rows.push(...(await adoptionRows(count)));
  const headers = ['garden', 'path', 'time', 'ledger after', '', 'peak RSS', ''];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  process.stdout.write(`${[line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')}\n`);
  fs.rmSync(path.join(ROOT, `.rss-${process.pid}`), { force: true });
  process.exit(0);
}
process.stdout.write(`pak2 scale bench: node ${process.version}, ${os.cpus().length} cores, ${TIME ? '/usr/bin/time' : '/proc VmHWM'} for RSS, median of ${REPS} (after one warm-up), gardens in ${ROOT}\n`);
const gardens = [];
for (const size of SIZES) {
  const g = buildGarden(path.join(ROOT, `closed-${size}`), size);
  // The first pak2 process on a garden it has no record of checks each ledger line against its goal file once
  // (docs/goal/level2.md, "The goal files win"): done here, untimed by the table, and said.
  const first = await runOnce(pak2('goals', '--garden', g.dir), { anyExit: true });
  process.stdout.write(`garden with ${size.toLocaleString('en-US')} closed goals: ${g.built ? `built in ${g.seconds.toFixed(1)} s` : 'reused'}; first pak2 goals ${fmtMs(first.ms)}\n`);
  gardens.push({ size, dir: g.dir });
}

const nodeFloor = await measure([process.execPath, '-e', '0']);
process.stdout.write(`\nfloor: node -e 0 ${fmtMs(nodeFloor.ms)}, ${nodeFloor.mb.toFixed(0)} MB\n\n`);

const rows = [];
const PATHS = [
  { name: 'pak2 goals', argv: (g) => pak2('goals', '--garden', g) },
  { name: 'pak2 cycle --no-ui --until-idle', argv: (g) => pak2('cycle', '--no-ui', '--until-idle', '--garden', g) },
  { name: 'dashboard first frame', argv: (g) => pak2('dashboard', '--garden', g), env: { COLUMNS: '120', LINES: '40' } },
];
const empty = {};
for (const g of gardens) {
  const goalsDir = path.join(g.dir, '.runtime', 'goals');
  const list = await measure(['ls', '-f', goalsDir]);
  // Each path as it is met: goals/ unchanged since the last pak2 process, and right after a submit and a cancel
  // (each run follows its own change; the empty garden's figure of the same kind is the reference).
  for (const after of [false, true]) {
    for (const p of PATHS) {
      const name = after ? `${p.name}, after a change` : p.name;
      const r = await measure(p.argv(g.dir), { env: p.env, reps: g.size >= 500_000 ? Math.min(REPS, 3) : REPS, ...(after ? { before: () => changeGoals(g.dir) } : {}) });
      if (g.size === SIZES[0]) empty[name] = r;
      const floor = nodeFloor.ms + list.ms;
      rows.push([
        `${g.size.toLocaleString('en-US')} closed`,
        name,
        fmtMs(r.ms),
        `${fmtX(r.ms / floor)} (node -e 0 + ls -f ${fmtMs(list.ms)})`,
        empty[name] ? fmtX(r.ms / empty[name].ms) : '-',
        `${r.mb.toFixed(0)} MB`,
        empty[name] ? fmtX(r.mb / empty[name].mb) : '-',
      ]);
    }
  }
}

// The CLI's own start, on a small garden (the empty one; submit queues into a copy).
const small = path.join(ROOT, 'small');
fs.rmSync(small, { recursive: true, force: true });
buildGarden(small, 20);
const STARTS = [
  { name: 'pak2 --version', argv: pak2('--version') },
  { name: 'pak2 --help', argv: pak2('--help') },
  { name: 'pak2 submit', argv: pak2('submit', '--garden', small, '--plant', 'gardener', '--type', 'build', '--body', 'bench goal') },
  { name: 'pak2 goals (small garden)', argv: pak2('goals', '--garden', small) },
];
for (const s of STARTS) {
  const r = await measure(s.argv, { cwd: small });
  rows.push(['small', s.name, fmtMs(r.ms), `${fmtX(r.ms / nodeFloor.ms)} (node -e 0)`, '-', `${r.mb.toFixed(0)} MB`, fmtX(r.mb / nodeFloor.mb)]);
}

// Adoption of goals written outside pak2 (issue 25, item 10).
for (const count of ADOPT) rows.push(...(await adoptionRows(count)));

const headers = ['garden', 'path', 'time', '× floor', '× empty garden', 'peak RSS', '× empty (small: × node)'];
const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
process.stdout.write(`${[line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')}\n`);
fs.rmSync(path.join(ROOT, `.rss-${process.pid}`), { force: true });
if (values.clean) fs.rmSync(ROOT, { recursive: true, force: true });
