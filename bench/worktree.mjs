#!/usr/bin/env node
// What a worktree per run costs (docs/landing/level2.md): on a repository of
// --files files (default 10,000), N goals (--runs, default 10) of a trivial
// command agent that changes one file, through a real Coordinator, once with
// `isolation = "tree"` and once with `isolation = "worktree"` (create, commit,
// land through the merge queue with no verify, remove). Prints the seconds
// per run of each and the difference, beside the bare git steps (worktree
// add, remove) timed alone. Figures only; asserts nothing.
// Usage: npm run bench:worktree [-- --files N --runs N]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Coordinator } from '../dist/coordinator/index.js';
import { loadGarden } from '../dist/garden/index.js';
import { commissionPlant, createGoal, readGoal } from '../dist/store/index.js';

const { values } = parseArgs({ options: { files: { type: 'string', default: '10000' }, runs: { type: 'string', default: '10' } } });
const FILES = Number(values.files);
const RUNS = Number(values.runs);
const git = (cwd, ...args) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', ...args], { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();

function rmQuietly(dir) {
  try {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
  } catch (error) {
    process.stderr.write(`(left ${dir}: ${error.message})\n`);
  }
}

function makeRepo(isolation) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `pak2-bench-wt-${isolation}-`));
  const agent = path.join(root, '..', `${path.basename(root)}-agent.mjs`);
  fs.writeFileSync(agent, "import fs from 'node:fs';\nfs.readFileSync(0);\nfs.writeFileSync(`changed-${process.env.PAK2_RUN_ID}.txt`, 'x\\n');\nconsole.log(JSON.stringify({ type: 'result', status: 'success', text: 'ok', cost_usd: 0 }));\n");
  fs.writeFileSync(
    path.join(root, 'PAK2.toml'),
    ['[runtime]', 'root = ".runtime"', '[defaults]', 'driver = "t"', '[coordinator]', 'interval_seconds = 3600', `isolation = "${isolation}"`, `[drivers.t]`, `command = ${JSON.stringify([process.execPath, agent])}`, ''].join('\n'),
  );
  fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# bench\n');
  fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
  fs.mkdirSync(path.join(root, 'seeds'));
  fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# seed\n');
  for (let i = 0; i < FILES; i += 1) {
    const dir = path.join(root, 'src', `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `f${i}.ts`), `export const v${i} = ${i};\n`);
  }
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'config', 'gc.auto', '0'); // no background gc racing the clean-up
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'a large project');
  return { root, agent };
}

async function timeRuns(isolation) {
  const { root, agent } = makeRepo(isolation);
  const garden = loadGarden(root);
  await commissionPlant(garden.paths, 'gardener', 'gardener');
  const ids = [];
  const coordinator = new Coordinator({ garden, onStderr: () => undefined });
  await coordinator.start();
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i += 1) {
    // One at a time: the cost of one run's way from dispatch to landed, not the overlap of several.
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `change ${i}` });
    ids.push(goal.id);
    for (;;) {
      if ((await readGoal(garden.paths, goal.id)).status === 'closed') break;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const elapsed = (performance.now() - t0) / 1000;
  await coordinator.stop();
  const landed = isolation === 'worktree' ? git(root, 'ls-tree', '--name-only', 'main').split('\n').filter((f) => f.startsWith('changed-')).length : undefined;
  rmQuietly(root);
  fs.rmSync(agent, { force: true });
  return { perRun: elapsed / RUNS, landed };
}

function timeGitSteps() {
  const { root, agent } = makeRepo('worktree');
  const wt = path.join(root, '.runtime', 'wt');
  const t0 = performance.now();
  git(root, 'worktree', 'add', '-q', '-b', 'bench', wt, 'main');
  const add = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  git(root, 'worktree', 'remove', '--force', wt);
  const remove = (performance.now() - t1) / 1000;
  rmQuietly(root);
  fs.rmSync(agent, { force: true });
  return { add, remove };
}

process.stdout.write(`pak2 bench:worktree — ${FILES} files, ${RUNS} runs each, one at a time, trivial command agent, no verify\n`);
const steps = timeGitSteps();
const tree = await timeRuns('tree');
const worktree = await timeRuns('worktree');
process.stdout.write(`git worktree add (alone)     ${steps.add.toFixed(3)} s\n`);
process.stdout.write(`git worktree remove (alone)  ${steps.remove.toFixed(3)} s\n`);
process.stdout.write(`isolation = "tree"           ${tree.perRun.toFixed(3)} s per run\n`);
process.stdout.write(`isolation = "worktree"       ${worktree.perRun.toFixed(3)} s per run (create, commit, land, remove); ${worktree.landed}/${RUNS} landed on main\n`);
process.stdout.write(`added by worktree mode       ${(worktree.perRun - tree.perRun).toFixed(3)} s per run (target ≤ 1 s)\n`);
