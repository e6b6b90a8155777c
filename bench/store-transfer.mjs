#!/usr/bin/env node
// Moving a garden between stores at scale (issue 27, acceptance: "Import a
// file garden of 50,000 closed goals, export it back, compare: identical
// records"). Builds a runtime root of N closed goals in pak2's own format
// (bench/lib/closed-garden.mjs: each goal with its run's meta.json and
// seal, its eight events, its ledger line), imports it into an empty
// PostgreSQL database (`pak2 store import`'s importGarden), exports it into
// a new directory (exportGarden) and compares every record file byte for
// byte (compareRecordFiles). Prints the time of each step and of each
// record kind within it, the peak RSS, the database's size, and the
// comparison; exits 1 when anything differs.
// Usage: npm run bench:store-transfer [-- --goals 50000 --url postgres://… --dir DIR --keep]
//   Without --url it starts a throwaway cluster (test/support/postgres.ts:
//   Debian's PostgreSQL binaries, 127.0.0.1, a free port; durable: fsync on)
//   and removes it at the end.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { writeClosedGoals } from './lib/closed-garden.mjs';
import { compareRecordFiles, exportGarden, importGarden } from '../dist/store/postgres/transfer.js';

const { values } = parseArgs({
  options: {
    goals: { type: 'string', default: '50000' },
    url: { type: 'string' }, // an existing server (its database must not exist: one is made and dropped)
    dir: { type: 'string', default: os.tmpdir() }, // where the file garden and the export go (e.g. /dev/shm: no disk in the figures)
    keep: { type: 'boolean', default: false }, // keep the directories
  },
});
const count = Number(values.goals);
const work = fs.mkdtempSync(path.join(values.dir, 'pak2-bench-transfer-'));
const source = path.join(work, 'garden-runtime');
const target = path.join(work, 'exported');
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The tests' throwaway cluster (imported through tsx), durable as a team runs it.
const { tsImport } = await import('tsx/esm/api');
const cluster = values.url ? undefined : await (await tsImport(path.join(ROOT, 'test/support/postgres.ts'), import.meta.url)).startCluster({ durable: true });
const admin = values.url ?? cluster.url;
const { default: pg } = await import('pg');
const database = `pak2_bench_transfer_${process.pid}`;
const adminClient = new pg.Client({ connectionString: admin });
await adminClient.connect();
await adminClient.query(`CREATE DATABASE ${database}`);
const url = new URL(admin);
url.pathname = `/${database}`;

let failed = false;
try {
  let t = performance.now();
  writeClosedGoals(source, { count });
  const buildMs = performance.now() - t;
  const files = compareRecordFiles(source, source).files;
  const bytes = fs.readdirSync(source, { recursive: true }).reduce((sum, rel) => {
    const stat = fs.statSync(path.join(source, rel));
    return stat.isFile() ? sum + stat.size : sum;
  }, 0);
  console.log(`file garden: ${count} closed goals in ${values.dir}, ${files} record files, ${(bytes / 1e6).toFixed(1)} MB, written in ${s(buildMs)}`);

  t = performance.now();
  const imported = await importGarden(source, url.toString());
  const importMs = performance.now() - t;
  if (!imported.imported || imported.damaged.length > 0) throw new Error(`import refused: ${JSON.stringify(imported.damaged.slice(0, 3))}`);
  console.log(`import:  ${s(importMs)} (read and check ${s(imported.readMs)}, one transaction ${s(imported.loadMs)}; notes: ${imported.notes.length})`);
  for (const k of imported.kinds) console.log(`  ${k.kind.padEnd(9)} ${String(k.records).padStart(8)}  read ${s(k.readMs).padStart(8)}  insert ${s(k.ms).padStart(8)}`);
  const size = await adminClient.query('SELECT pg_database_size($1) AS bytes', [database]);
  console.log(`  database size after import: ${(Number(size.rows[0].bytes) / 1e6).toFixed(1)} MB`);

  t = performance.now();
  const exported = await exportGarden(url.toString(), target);
  const exportMs = performance.now() - t;
  console.log(`export:  ${s(exportMs)}`);
  for (const k of exported.kinds) console.log(`  ${k.kind.padEnd(9)} ${String(k.records).padStart(8)}  read and write ${s(k.ms).padStart(8)}`);

  t = performance.now();
  const comparison = compareRecordFiles(source, target);
  const compareMs = performance.now() - t;
  failed = comparison.differing.length + comparison.onlyInFirst.length + comparison.onlyInSecond.length > 0;
  console.log(`compare: ${s(compareMs)}: ${comparison.identical} of ${comparison.files} record files identical byte for byte; differing ${comparison.differing.length}, only in the garden ${comparison.onlyInFirst.length}, only in the export ${comparison.onlyInSecond.length}`);
  for (const rel of [...comparison.differing, ...comparison.onlyInFirst, ...comparison.onlyInSecond].slice(0, 10)) console.log(`  ${rel}`);
  console.log(`peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
  console.log(failed ? 'RESULT: the round trip differs' : 'RESULT: identical records');
} finally {
  await adminClient.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await adminClient.end();
  cluster?.stop();
  if (!values.keep) fs.rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work}`);
}
process.exitCode = failed ? 1 : 0;
