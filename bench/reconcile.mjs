#!/usr/bin/env node
// Times one reconcile pass on a garden of 50,000 closed goals, 20 queued and
// one running (so the pass does its full read without dispatching), beside a
// bare listing of the goals directory. Prints figures; asserts nothing.
// Usage: npm run bench:reconcile [-- --closed N --queued N --passes N]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { reconcile } from '../dist/coordinator/index.js';
import { loadGarden } from '../dist/garden/index.js';
import { OpenGoalScanner } from '../dist/store/index.js';

const { values } = parseArgs({ options: { closed: { type: 'string', default: '50000' }, queued: { type: 'string', default: '20' }, passes: { type: 'string', default: '15' } } });
const CLOSED = Number(values.closed);
const QUEUED = Number(values.queued);
const PASSES = Number(values.passes);

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-bench-'));
fs.writeFileSync(path.join(root, 'PAK2.toml'), '[runtime]\nroot = ".runtime"\n[defaults]\ndriver = "command"\n[coordinator]\nwatchdog_seconds = 86400\n');
fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# bench\n');
const garden = loadGarden(root);
const { paths } = garden;
fs.mkdirSync(paths.goalsDir, { recursive: true });
fs.mkdirSync(path.join(paths.plantsDir, 'gardener', 'memory'), { recursive: true });
fs.writeFileSync(path.join(paths.plantsDir, 'gardener', 'meta.json'), JSON.stringify({ name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: '2026-01-01T00:00:00Z' }));

const t = '2026-01-01T00:00:00.000Z';
const ledger = [];
let n = 0;
const goal = (status, extra = {}) => {
  n += 1;
  const id = `${n}-bench-goal`;
  fs.writeFileSync(path.join(paths.goalsDir, `${id}.json`), JSON.stringify({ id, type: 'build', status, priority: 50, assigned_to: 'gardener', body: 'A goal body of a typical length, describing some work to do in the garden.', submitted_at: t, ...extra }, null, 2));
  return id;
};
process.stdout.write(`building a garden with ${CLOSED} closed, ${QUEUED} queued and 1 running goal in ${root} …\n`);
for (let i = 0; i < CLOSED; i += 1) ledger.push(goal('closed', { closed_reason: 'success', closed_at: t }));
fs.writeFileSync(path.join(paths.goalsDir, '.closed'), `${ledger.join('\n')}\n`);
for (let i = 0; i < QUEUED; i += 1) goal('queued');
const running = goal('running');
const runDir = path.join(paths.runsDir, `${running}-r1`);
fs.mkdirSync(runDir, { recursive: true });
fs.writeFileSync(path.join(runDir, 'meta.json'), JSON.stringify({ id: `${running}-r1`, goal: running, plant: 'gardener', status: 'running', started_at: new Date().toISOString(), driver: 'command', model: 'default' }));
fs.writeFileSync(path.join(runDir, 'events.jsonl'), '{"type":"text","text":"alive"}\n');

const noDispatch = async () => {
  throw new Error('the bench garden must not dispatch');
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (fn) => {
  const start = performance.now();
  await fn();
  return performance.now() - start;
};

const listing = [];
for (let i = 0; i < PASSES; i += 1) listing.push(await time(() => fs.promises.readdir(paths.goalsDir)));
const cold = [];
for (let i = 0; i < PASSES; i += 1) {
  cold.push(
    await time(async () => {
      const s = await reconcile({ garden, dispatch: noDispatch, scanner: new OpenGoalScanner(paths) });
      if (s.dispatched.length || s.problems.length) throw new Error('unexpected pass result');
    }),
  );
}
// A warm pass reuses the directory listing once the directory is 2 s old.
await new Promise((resolve) => setTimeout(resolve, 2100));
const scanner = new OpenGoalScanner(paths);
await reconcile({ garden, dispatch: noDispatch, scanner });
const warm = [];
for (let i = 0; i < PASSES; i += 1) warm.push(await time(() => reconcile({ garden, dispatch: noDispatch, scanner })));

const fmt = (ms) => `${ms.toFixed(1)} ms`;
process.stdout.write(
  [
    `node ${process.version}, ${os.cpus().length} cores; median of ${PASSES}`,
    `bare readdir of goals/ (${CLOSED + QUEUED + 1} files): ${fmt(median(listing))}`,
    `cold reconcile pass (new scanner: ledger read + listing + open goals): ${fmt(median(cold))}`,
    `warm reconcile pass (scanner reused, goals/ unchanged): ${fmt(median(warm))}`,
    `warm / listing: ${(median(warm) / median(listing)).toFixed(2)}x`,
    '',
  ].join('\n'),
);
fs.rmSync(root, { recursive: true, force: true });
