#!/usr/bin/env node
// The file store beside the PostgreSQL store, on this machine (issue 27; docs/store/level2.md, "Benchmarks"):
//  1. claims per second: N queued goals, claimed by 1 and 2 processes ("servers") of K concurrent claim
//     loops each. A claim is claimTask's sequence through the public store functions (source/coordinator/
//     remote.ts): scan the open goals, take the first queued one in dispatch order under tryGoalLock
//     (PostgreSQL: SELECT … FOR UPDATE SKIP LOCKED; files: the goal's file lock, waited for), queued →
//     dispatched, openRun, writeLease, dispatched → running, LeaseClaimed, all in the lock (one transaction
//     on PostgreSQL). On PostgreSQL it also runs with withGoalLock (`wait`: a claimer waits for the goal
//     another holds, as claims did before SKIP LOCKED) for comparison. Every goal must be claimed exactly
//     once: double claims are counted from the claimers' reports and from the runs in the store.
//  2. event fan-out: one writer process appends E events at a steady rate; M listeners in 1 and 2 processes
//     wake on LISTEN/NOTIFY (PostgresStore.watchEvents) or fs.watch and read what is new (readEvents);
//     latency = receipt time − the writer's clock around the append (same machine, same clock).
// PostgreSQL runs in throwaway clusters (test/support/postgres.ts, imported through tsx): one durable
// (fsync and synchronous commit on, as a team would run it) and one as the tests run it (fsync off).
// Prints a table and where the time goes (round trips, lock waits, time holding the event stamp lock, fsync).
// Asserts nothing beyond the counts it prints. Not a timed test.
// Usage: npm run bench:store [-- --goals 400 --loops 4 --listeners 10 --events 1000 --rate 200
//        --stores file,postgres,postgres-nofsync --processes 1,2 --skip-claims --skip-fanout]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { monotonicFactory } from 'ulid';
import { loadGarden } from '../dist/garden/index.js';
import {
  appendEvent,
  createGoal,
  dispatchOrder,
  OpenGoalScanner,
  openRun,
  readEvents,
  readGoal,
  runIdsForGoal,
  StoreError,
  transitionGoalLocked,
  tryGoalLock,
  withGoalLock,
  writeLease,
} from '../dist/store/index.js';
import { attachStore } from '../dist/store/backend.js';
import { openPostgresStore } from '../dist/store/postgres/store.js';
import { runnerMayTake } from '../dist/coordinator/remote.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    root: { type: 'string' },
    url: { type: 'string' },
    mode: { type: 'string', default: 'skip' },
    name: { type: 'string', default: 'p1' },
    goals: { type: 'string', default: '400' },
    loops: { type: 'string', default: '4' },
    listeners: { type: 'string', default: '10' },
    events: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '200' },
    stores: { type: 'string', default: 'file,postgres,postgres-nofsync' },
    processes: { type: 'string', default: '1,2' },
    'skip-claims': { type: 'boolean', default: false },
    'skip-fanout': { type: 'boolean', default: false },
  },
});

/** Wall-clock ms with sub-ms precision, comparable across processes on this machine. */
const clock = () => performance.timeOrigin + performance.now();
const pct = (sorted, p) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '–');

// ---------------------------------------------------------------- instrumentation (in the child processes)

/** A statement's kind for the per-claim tally: its verb and table (`SELECT goals`, `UPDATE goals`, `BEGIN`, `pg_advisory_xact_lock`, …). */
function statementKind(text) {
  const advisory = /pg_(advisory_xact_lock|notify)/.exec(text);
  if (advisory) return advisory[1];
  const [verb] = text.trim().split(/\s+/);
  const table = /\b(?:FROM|INTO|UPDATE)\s+(\w+)/i.exec(text);
  return `${verb.toUpperCase()}${table ? ` ${table[1]}` : ''}${/FOR UPDATE/.test(text) ? ' FOR UPDATE' : ''}`;
}

/** Counts and times every query of `pg` (round trips), the waits for locks and the time the event stamp lock is held. */
async function instrumentPg() {
  const { default: pg } = await import('pg');
  const stats = { byKind: {}, queries: 0, queryMs: 0, stampWaitMs: 0, stampHoldMs: 0, stamped: 0, writeCommitMs: 0, rowLockMs: 0, rowLocks: 0, scanMs: 0, commits: 0, commitMs: 0 };
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, values, callback) {
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof config?.submit === 'function' || !text) return query.call(this, config, values, callback);
    const started = performance.now();
    const client = this;
    const note = () => {
      const ms = performance.now() - started;
      const kind = statementKind(text);
      stats.byKind[kind] = (stats.byKind[kind] ?? 0) + 1;
      stats.queries += 1;
      stats.queryMs += ms;
      if (text.startsWith('SELECT pg_advisory_xact_lock($1)')) {
        stats.stampWaitMs += ms;
        client.benchStampAt = performance.now();
      } else if (text === 'COMMIT') {
        stats.commits += 1;
        stats.commitMs += ms;
        if (client.benchStampAt !== undefined) {
          // A commit that wrote events (and so records): with fsync on, its WAL flush happens here, inside the stamp lock.
          stats.writeCommitMs += ms;
          stats.stamped += 1;
          stats.stampHoldMs += performance.now() - client.benchStampAt;
          client.benchStampAt = undefined;
        }
      } else if (text === 'ROLLBACK') client.benchStampAt = undefined;
      else if (/FOR UPDATE/.test(text)) {
        stats.rowLocks += 1;
        stats.rowLockMs += ms;
      } else if (text.startsWith('SELECT id, record FROM goals')) stats.scanMs += ms;
    };
    // pool.query (a statement outside a transaction) passes a callback; the store's transactions use the promise.
    if (typeof values === 'function' || typeof callback === 'function') {
      const done = typeof values === 'function' ? values : callback;
      const wrapped = (error, result) => {
        note();
        done(error, result);
      };
      return typeof values === 'function' ? query.call(this, config, wrapped) : query.call(this, config, values, wrapped);
    }
    return query.call(this, config, values).then((result) => {
      note();
      return result;
    });
  };
  return stats;
}

/** Counts and times fsync calls and waits for proper-lockfile's locks (the file store's two costs beside the reads and writes). */
async function instrumentFiles() {
  const stats = { fsyncs: 0, fsyncMs: 0, locks: 0, lockWaitMs: 0 };
  const fsync = fs.fsync;
  fs.fsync = function (fd, callback) {
    const started = performance.now();
    return fsync.call(fs, fd, (error) => {
      stats.fsyncs += 1;
      stats.fsyncMs += performance.now() - started;
      callback(error);
    });
  };
  const probe = await fsp.open(SELF, 'r');
  const FileHandle = Object.getPrototypeOf(probe);
  await probe.close();
  const sync = FileHandle.sync;
  FileHandle.sync = async function () {
    const started = performance.now();
    try {
      return await sync.call(this);
    } finally {
      stats.fsyncs += 1;
      stats.fsyncMs += performance.now() - started;
    }
  };
  const { default: lockfile } = await import('proper-lockfile');
  const lock = lockfile.lock;
  lockfile.lock = async function (...args) {
    const started = performance.now();
    try {
      return await lock.apply(this, args);
    } finally {
      stats.locks += 1;
      stats.lockWaitMs += performance.now() - started;
    }
  };
  return stats;
}

/** Zeroes a stats object (counters to 0, tallies emptied): what warming up counted is not measured. */
function resetStats(stats) {
  for (const key of Object.keys(stats)) stats[key] = typeof stats[key] === 'number' ? 0 : {};
}

/** Sums the stats of several processes (counters and tallies alike). */
function sumStats(list) {
  const total = {};
  for (const stats of list) {
    for (const [key, value] of Object.entries(stats)) {
      if (typeof value === 'number') total[key] = (total[key] ?? 0) + value;
      else {
        total[key] ??= {};
        for (const [k, v] of Object.entries(value)) total[key][k] = (total[key][k] ?? 0) + v;
      }
    }
  }
  return total;
}

/** Waits for the parent's `go` line; says `ready` first. */
async function ready() {
  const lines = readline.createInterface({ input: process.stdin });
  process.stdout.write('ready\n');
  let started = false;
  // The parent gone before `go` (an error, ^C): nothing to measure for.
  lines.on('close', () => started || process.exit(1));
  await new Promise((resolve) => lines.on('line', (line) => line === 'go' && resolve()));
  started = true;
  lines.close();
}

/** CPU time (user + system) this process used since `since` (process.cpuUsage()), ms. */
const cpuMs = (since) => {
  const { user, system } = process.cpuUsage(since);
  return (user + system) / 1000;
};

/**
 * CPU time (user + system, ms) a cluster's server processes have used: the postmaster, its live children
 * (the backends, the WAL writer, …) and the children it has reaped (a backend that ended with its connection).
 */
function clusterCpuMs(cluster) {
  if (!cluster) return 0;
  const tick = 1000 / 100; // USER_HZ: Linux reports these times in 1/100 s
  let pid;
  try {
    pid = Number(fs.readFileSync(path.join(cluster.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the command (which may hold spaces) in parentheses: state ppid … utime stime cutime cstime.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
    if (Number(entry) === pid) total += utime + stime + cutime + cstime;
    else if (ppid === pid) total += utime + stime;
  }
  return total * tick;
}

const report = (result) => process.stdout.write(`result ${JSON.stringify(result)}\n`);

async function openGarden(root, url, max) {
  const garden = loadGarden(root);
  let store;
  if (url) {
    store = await openPostgresStore(url, { max });
    attachStore(garden.paths, store);
  }
  return { garden, store };
}

// ---------------------------------------------------------------- role: claimer

const nextLeaseId = monotonicFactory();

/** One claim, as claimTask makes it (without the plant, budget and dependency checks and the prompt context, which are not the store's). */
async function claimOnce(garden, who, mode, t) {
  const { paths, config } = garden;
  let at = performance.now();
  const { goals } = await new OpenGoalScanner(paths).scan();
  const candidates = goals.filter((g) => g.status === 'queued' && runnerMayTake(g)).sort(dispatchOrder);
  t.scan += performance.now() - at;
  for (const candidate of candidates) {
    at = performance.now();
    let goal;
    try {
      goal = await readGoal(paths, candidate.id);
    } catch {
      continue;
    }
    t.read += performance.now() - at;
    if (goal.status !== 'queued') continue;
    const asked = performance.now();
    let entered = 0;
    let left = 0;
    const body = async () => {
      entered = performance.now();
      try {
        let current;
        try {
          current = await transitionGoalLocked(paths, goal.id, 'dispatched');
        } catch (error) {
          if (error instanceof StoreError && error.code === 'INVALID_TRANSITION') {
            t.lost += 1;
            return undefined;
          }
          throw error;
        }
        const leaseId = nextLeaseId();
        const run = await openRun(paths, current, { plant: current.assigned_to, driver: 'command', model: 'unknown', runner: { name: who, host: 'bench', lease: leaseId } });
        const now = new Date();
        const ttl = config.runners.leaseTtlSeconds;
        const lease = {
          id: leaseId,
          run: run.id,
          goal: current.id,
          plant: current.assigned_to,
          runner: { name: who, host: 'bench' },
          state: 'active',
          ttl_seconds: ttl,
          claimed_at: now.toISOString(),
          renewed_at: now.toISOString(),
          expires_at: new Date(now.getTime() + ttl * 1000).toISOString(),
          heartbeats: 0,
        };
        await writeLease(paths, lease);
        current = await transitionGoalLocked(paths, goal.id, 'running');
        // In the claim's transaction on a store, as claimTask does: the claim and its event commit together.
        await appendEvent(paths, { type: 'LeaseClaimed', run: run.id, goal: current.id, plant: current.assigned_to, detail: `runner ${who}@bench lease ${leaseId} ttl ${ttl} s` });
        return { goal: current, run, leaseId };
      } finally {
        left = performance.now();
      }
    };
    let claimed;
    if (mode === 'skip') {
      // claimTask's lock: SKIP LOCKED on a store (a goal another claimer holds is passed over), the file lock waited for on files.
      const taken = await tryGoalLock(paths, goal.id, body);
      if (!taken) {
        t.skipped += 1;
        continue;
      }
      claimed = taken.value;
    } else claimed = await withGoalLock(paths, goal.id, body);
    const done = performance.now();
    if (entered) {
      t.lockWait += entered - asked;
      t.inside += left - entered;
      t.commit += done - left;
    }
    if (!claimed) continue;
    return claimed;
  }
  return undefined;
}

async function claimerRole() {
  const loops = Number(values.loops);
  const { garden, store } = await openGarden(values.root, values.url, loops + 2);
  const io = store ? await instrumentPg() : await instrumentFiles();
  await new OpenGoalScanner(garden.paths).scan(); // connected, schema checked, modules loaded
  resetStats(io);
  await ready();
  const cpu = process.cpuUsage();
  const t = { scan: 0, read: 0, lockWait: 0, inside: 0, commit: 0, lost: 0, skipped: 0 };
  const claimed = [];
  const started = clock();
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      for (;;) {
        const claim = await claimOnce(garden, `${values.name}-${i}`, values.mode, t);
        if (!claim) return;
        claimed.push(claim.goal.id);
      }
    }),
  );
  const ended = clock();
  report({ claimed, started, ended, t, io, cpuMs: cpuMs(cpu) });
  await store?.close();
}

// ---------------------------------------------------------------- role: listener

async function listenerRole() {
  const count = Number(values.listeners);
  const want = Number(values.events);
  const { garden, store } = await openGarden(values.root, values.url, count + 4);
  const { paths } = garden;
  const listeners = [];
  for (let l = 0; l < count; l += 1) {
    // A store's cursor is the last seq read; the file's, the byte offset read to.
    let cursor = store ? await store.lastEventSeq() : (await fsp.stat(paths.coordinatorLog)).size;
    const got = [];
    let busy = false;
    let again = false;
    let wokeAt = 0;
    let finish;
    const finished = new Promise((resolve) => (finish = resolve));
    const drain = async () => {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      do {
        again = false;
        const woke = wokeAt;
        const read = await readEvents(paths, cursor);
        const at = clock();
        cursor = read.offset;
        for (const event of read.events) {
          const [tag, i] = (event.detail ?? '').split(' ');
          if (tag === 'bench') got.push([Number(i), woke, at]);
        }
      } while (again);
      busy = false;
      if (got.length >= want) finish();
    };
    const wake = () => {
      wokeAt = clock();
      void drain();
    };
    let stop;
    if (store) stop = await store.watchEvents(wake);
    else {
      const watcher = fs.watch(paths.coordinatorLog, wake);
      stop = async () => watcher.close();
    }
    listeners.push({ got, finished, stop });
  }
  await ready();
  const cpu = process.cpuUsage();
  // The writer's last event, or 60 s without it: a listener that missed events says so in its count.
  await Promise.race([Promise.all(listeners.map((l) => l.finished)), new Promise((resolve) => setTimeout(resolve, 60_000).unref())]);
  for (const l of listeners) await l.stop();
  report({ listeners: listeners.map((l) => l.got), cpuMs: cpuMs(cpu) });
  await store?.close();
}

// ---------------------------------------------------------------- role: writer

async function writerRole() {
  const total = Number(values.events);
  const interval = 1000 / Number(values.rate);
  const { garden, store } = await openGarden(values.root, values.url, 4);
  const io = store ? await instrumentPg() : await instrumentFiles();
  await appendEvent(garden.paths, { type: 'DocumentUpserted', detail: 'warm-up' });
  resetStats(io);
  await ready();
  const cpu = process.cpuUsage();
  const marks = [];
  const start = performance.now();
  for (let i = 0; i < total; i += 1) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const t0 = clock();
    await appendEvent(garden.paths, { type: 'DocumentUpserted', detail: `bench ${i} ${t0.toFixed(3)}` });
    marks.push([t0, clock()]);
  }
  report({ marks, io, cpuMs: cpuMs(cpu) });
  await store?.close();
}

// ---------------------------------------------------------------- main

/** Spawns this script in `role`; resolves `ready` on its ready line and `result` on its result. */
function child(role, args) {
  // The parent's node flags too: `node --cpu-prof bench/store.mjs` profiles the claimers, listeners and writer.
  const proc = spawn(process.execPath, [...process.execArgv, SELF, '--role', role, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  let onReady;
  const isReady = new Promise((resolve) => (onReady = resolve));
  const result = new Promise((resolve, reject) => {
    let value;
    readline.createInterface({ input: proc.stdout }).on('line', (line) => {
      if (line === 'ready') onReady();
      else if (line.startsWith('result ')) value = JSON.parse(line.slice(7));
    });
    proc.on('exit', (code) => (code === 0 && value ? resolve(value) : reject(new Error(`bench ${role} child exited ${code}`))));
  });
  result.catch(() => onReady());
  return { ready: isReady, result, go: () => proc.stdin.write('go\n') };
}

/** Garden directories not yet removed: removed on exit too (an error, a closed pipe, ^C). */
const gardenDirs = new Set();
process.on('exit', () => {
  for (const dir of gardenDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function makeGardenDir(name) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-bench-store-${name}-`));
  if (values.role === 'main') gardenDirs.add(root);
  fs.writeFileSync(path.join(root, 'PAK2.toml'), '[runtime]\nroot = ".runtime"\n');
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# bench\n');
  return root;
}

/** A fresh garden on `store` (a file garden, or a new database of the cluster); `drop()` removes it. */
async function freshGarden(kind, clusters, name) {
  const root = makeGardenDir(name);
  const garden = loadGarden(root);
  fs.mkdirSync(garden.paths.eventsDir, { recursive: true });
  const remove = () => {
    fs.rmSync(root, { recursive: true, force: true });
    gardenDirs.delete(root);
  };
  if (kind === 'file') return { root, garden, url: undefined, drop: async () => remove() };
  const db = await clusters.support.freshDatabase(clusters[kind].url, 'pak2_bench');
  const store = await openPostgresStore(db.url, { max: 4 });
  attachStore(garden.paths, store);
  return {
    root,
    garden,
    url: db.url,
    store,
    drop: async () => {
      await store.close();
      await db.drop();
      remove();
    },
  };
}

async function claims(kind, mode, processes, clusters) {
  const goals = Number(values.goals);
  const loops = Number(values.loops);
  const g = await freshGarden(kind, clusters, 'claims');
  for (let i = 0; i < goals; i += 1) await createGoal(g.garden.paths, { type: 'spike', plant: 'worker', body: `Bench goal ${i + 1}` });
  // One claimer alone: what scanning the open goals costs (every claim does it first), median of 5.
  const scans = [];
  for (let i = 0; i < 5; i += 1) {
    const at = performance.now();
    const cpu = process.cpuUsage();
    await new OpenGoalScanner(g.garden.paths).scan();
    scans.push([performance.now() - at, cpuMs(cpu)]);
  }
  scans.sort((a, b) => a[0] - b[0]);
  const children = Array.from({ length: processes }, (_, p) => child('claimer', ['--root', g.root, ...(g.url ? ['--url', g.url] : []), '--mode', mode, '--loops', String(loops), '--name', `p${p + 1}`]));
  await Promise.all(children.map((c) => c.ready));
  const serverCpu = clusterCpuMs(clusters[kind]);
  for (const c of children) c.go();
  const results = await Promise.all(children.map((c) => c.result));
  const postgresCpu = clusterCpuMs(clusters[kind]) - serverCpu;
  const all = results.flatMap((r) => r.claimed);
  const seen = new Set();
  let doubles = 0;
  for (const id of all) (seen.has(id) ? (doubles += 1) : seen.add(id));
  // The store's own count: a goal with more than one run was claimed twice.
  let storeDoubles = 0;
  for (const id of seen) if ((await runIdsForGoal(g.garden.paths, id)).length !== 1) storeDoubles += 1;
  const wall = Math.max(...results.map((r) => r.ended)) - Math.min(...results.map((r) => r.started));
  const sum = (pick) => results.reduce((acc, r) => acc + pick(r), 0);
  const n = all.length || 1;
  const t = Object.fromEntries(Object.keys(results[0].t).map((key) => [key, sum((r) => r.t[key]) / n]));
  const io = sumStats(results.map((r) => r.io));
  await g.drop();
  const nodeCpu = sum((r) => r.cpuMs);
  return { kind, mode, processes, loops, goals, claimed: all.length, unclaimed: goals - seen.size, doubles: Math.max(doubles, storeDoubles), perSecond: all.length / (wall / 1000), wall, t, io, n, nodeCpu: nodeCpu / n, postgresCpu: postgresCpu / n, scan: scans[2] };
}

async function fanout(kind, processes, clusters) {
  const listeners = Number(values.listeners);
  const events = Number(values.events);
  const g = await freshGarden(kind, clusters, 'fanout');
  await appendEvent(g.garden.paths, { type: 'DocumentUpserted', detail: 'first' }); // the log exists before fs.watch
  const share = (p) => Math.floor(listeners / processes) + (p < listeners % processes ? 1 : 0);
  const common = ['--root', g.root, ...(g.url ? ['--url', g.url] : []), '--events', String(events)];
  const readers = Array.from({ length: processes }, (_, p) => child('listener', [...common, '--listeners', String(share(p))]));
  const writer = child('writer', [...common, '--rate', values.rate]);
  await Promise.all([...readers, writer].map((c) => c.ready));
  const serverCpu = clusterCpuMs(clusters[kind]);
  for (const c of readers) c.go();
  writer.go();
  const { marks, io, cpuMs: writerCpu } = await writer.result;
  const readings = await Promise.all(readers.map((c) => c.result));
  const postgresCpu = clusterCpuMs(clusters[kind]) - serverCpu;
  const got = readings.flatMap((r) => r.listeners);
  const listenerCpu = readings.reduce((acc, r) => acc + r.cpuMs, 0);
  const fromStart = [];
  const fromReturn = [];
  const read = [];
  let missing = 0;
  let disorder = 0;
  for (const list of got) {
    missing += events - new Set(list.map(([i]) => i)).size;
    for (let k = 0; k < list.length; k += 1) {
      const [i, woke, at] = list[k];
      if (k > 0 && i !== list[k - 1][0] + 1) disorder += 1;
      fromStart.push(at - marks[i][0]);
      fromReturn.push(at - marks[i][1]);
      if (woke) read.push(at - woke);
    }
  }
  const appendMs = marks.map(([a, b]) => b - a).sort((a, b) => a - b);
  for (const xs of [fromStart, fromReturn, read]) xs.sort((a, b) => a - b);
  await g.drop();
  return { kind, processes, listeners, events, delivered: fromStart.length, missing, disorder, fromStart, fromReturn, read, appendMs, io, writerCpu: writerCpu / events, listenerCpu: listenerCpu / events, postgresCpu: postgresCpu / events };
}

/** `BEGIN 3.0, SELECT goals 6.1, …`: a tally divided by `n`, the most frequent first. */
function tally(byKind, n) {
  return Object.entries(byKind ?? {})
    .sort((a, b) => b[1] - a[1])
    .map(([kind, count]) => `${kind} ${f1(count / n)}`)
    .join(', ');
}

function table(head, rows) {
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells) => cells.map((cell, c) => (c === 0 ? String(cell).padEnd(widths[c]) : String(cell).padStart(widths[c]))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** How a claim run took the goal's lock. */
const lockLabel = (r) => (r.kind === 'file' ? 'file lock' : r.mode === 'skip' ? 'skip locked' : 'wait');

const LABEL = { file: 'file', postgres: 'postgres', 'postgres-nofsync': 'postgres, fsync off' };

async function main() {
  const stores = values.stores.split(',').filter(Boolean);
  const processCounts = values.processes.split(',').map(Number);
  const { tsImport } = await import('tsx/esm/api');
  const support = await tsImport(path.join(ROOT, 'test/support/postgres.ts'), import.meta.url);
  const clusters = { support };
  const stop = () => {
    for (const kind of ['postgres', 'postgres-nofsync']) clusters[kind]?.stop();
  };
  process.on('exit', stop);
  process.on('SIGINT', () => process.exit(130));
  if (stores.includes('postgres')) clusters.postgres = await support.startCluster({ durable: true });
  if (stores.includes('postgres-nofsync')) clusters['postgres-nofsync'] = await support.startCluster();
  const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');
  console.log(`bench:store on ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, node ${process.version}, load average ${load()}; gardens and clusters in ${os.tmpdir()}`);

  if (!values['skip-claims']) {
    console.log(`\n1. claims: ${values.goals} queued goals, ${values.loops} claim loops per process\n`);
    const results = [];
    for (const kind of stores) {
      // On files claimTask's lock is waited for: one mode there.
      for (const mode of kind === 'file' ? ['skip'] : ['skip', 'wait']) {
        for (const p of processCounts) {
          const r = await claims(kind, mode, p, clusters);
          results.push(r);
          console.log(`   ${LABEL[kind]}, ${lockLabel(r)} ×${p}: ${r.perSecond.toFixed(0)} claims/s`);
        }
      }
    }
    console.log(
      '\n' +
        table(
          ['store', 'goal lock', 'procs', 'claimers', 'claims/s', 'claimed', 'double', 'unclaimed', 'ms/claim: scan', 'read', 'lock wait', 'inside', 'commit', 'lost races', 'CPU ms/claim: node', 'postgres'],
          results.map((r) => [LABEL[r.kind], lockLabel(r), r.processes, r.processes * r.loops, r.perSecond.toFixed(0), r.claimed, r.doubles, r.unclaimed, f1(r.t.scan), f1(r.t.read), f1(r.t.lockWait), f1(r.t.inside), f1(r.t.commit), (r.t.lost + r.t.skipped).toFixed(2), f1(r.nodeCpu), r.kind === 'file' ? '–' : f1(r.postgresCpu)]),
        ),
    );
    console.log(
      '\n   (ms/claim: wall time summed over the claimers, per claim made: the open-goal scan, the goal read before the lock, the wait for the lock, the claim under it, its commit and release;' +
        '\n   "lost races": per claim made, goals locked after another claimer took them, or passed over locked)',
    );
    console.log('\n   where the time goes, per claim:');
    for (const r of results) {
      const io = r.io;
      const scan = `a scan of the ${r.goals} open goals alone: ${f1(r.scan[0])} ms (${f1(r.scan[1])} ms CPU)`;
      if (r.kind === 'file') {
        console.log(`   ${LABEL[r.kind]} ×${r.processes}: ${f1(io.fsyncs / r.n)} fsyncs (${f1(io.fsyncMs / r.n)} ms), ${f1(io.locks / r.n)} file locks taken (${f1(io.lockWaitMs / r.n)} ms waiting for them); ${scan}`);
      } else {
        console.log(
          `   ${LABEL[r.kind]}, ${lockLabel(r)} ×${r.processes}: ${f1(io.queries / r.n)} round trips (${f1(io.queryMs / r.n)} ms), ${f1(io.commits / r.n)} commits (${f1(io.commitMs / r.n)} ms; one that wrote: ${f1(io.writeCommitMs / Math.max(1, io.stamped))} ms), ` +
            `row lock ${f1(io.rowLockMs / r.n)} ms, open-goal scan query ${f1(io.scanMs / r.n)} ms, event stamp lock: wait ${f1(io.stampWaitMs / Math.max(1, io.stamped))} ms and held ${f1(io.stampHoldMs / Math.max(1, io.stamped))} ms per stamping commit (${f1(io.stamped / r.n)} per claim)`,
        );
        const hold = io.stampHoldMs / Math.max(1, io.stamped);
        console.log(`      statements per claim: ${tally(io.byKind, r.n)}; ${scan}`);
        console.log(`      the stamp lock serializes every commit that writes events: at ${f1(hold)} ms held, at most ${(1000 / hold).toFixed(0)} such commits/s, ${(1000 / hold / Math.max(1, io.stamped / r.n)).toFixed(0)} claims/s`);
      }
    }
  }

  if (!values['skip-fanout']) {
    console.log(`\n2. event fan-out: one writer, ${values.events} events at ${values.rate}/s, ${values.listeners} listeners\n`);
    const results = [];
    for (const kind of stores) {
      for (const p of processCounts) {
        const r = await fanout(kind, p, clusters);
        results.push(r);
        console.log(`   ${LABEL[kind]} ×${p}: p50 ${f1(pct(r.fromStart, 50))} ms`);
      }
    }
    console.log(
      '\n' +
        table(
          ['store', 'listener procs', 'delivered', 'missing', 'out of order', 'append p50', 'append p95', 'p50', 'p95', 'max', 'after return p50', 'p95', 'read p50', 'CPU ms/event: writer', 'listeners', 'postgres'],
          results.map((r) => [
            LABEL[r.kind],
            r.processes,
            r.delivered,
            r.missing,
            r.disorder,
            f1(pct(r.appendMs, 50)),
            f1(pct(r.appendMs, 95)),
            f1(pct(r.fromStart, 50)),
            f1(pct(r.fromStart, 95)),
            f1(r.fromStart.at(-1)),
            f1(pct(r.fromReturn, 50)),
            f1(pct(r.fromReturn, 95)),
            f1(pct(r.read, 50)),
            f1(r.writerCpu),
            f1(r.listenerCpu),
            r.kind === 'file' ? '–' : f1(r.postgresCpu),
          ]),
        ),
    );
    console.log('\n   (ms; p50/p95/max: from the start of the append to the listener holding the event; "after return": from the writer\'s append returning, so the commit lies between the two; "read": from the wake-up (NOTIFY, inotify) to the event read)');
    console.log('\n   where the time goes, per append:');
    for (const r of results) {
      const io = r.io;
      const n = r.events;
      if (r.kind === 'file') console.log(`   ${LABEL[r.kind]} ×${r.processes}: ${f1(io.fsyncs / n)} fsyncs, ${f1(io.locks / n)} file locks; a listener re-reads from its offset on each inotify wake-up`);
      else console.log(`   ${LABEL[r.kind]} ×${r.processes}: ${f1(io.queries / n)} round trips (${f1(io.queryMs / n)} ms), COMMIT ${f1(io.writeCommitMs / Math.max(1, io.stamped))} ms, stamp lock held ${f1(io.stampHoldMs / Math.max(1, io.stamped))} ms; each listener: one NOTIFY, then one eventsAfter query`);
    }
  }
  console.log(`\nload average at the end: ${load()} (other work on the machine inflates every figure: round trips wait for a core)`);
  stop();
}

const roles = { main, claimer: claimerRole, listener: listenerRole, writer: writerRole };
const role = roles[values.role];
if (!role) {
  console.error(`bench/store.mjs: --role ${values.role} is not one of ${Object.keys(roles).join(', ')}`);
  process.exit(2);
}
await role();
