/**
 * Nothing lost, nothing doubled, nothing frozen (issue 15): each fault an
 * operator met, injected for real, asserting the true outcome.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, reconcile } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import { parseConfig } from '../../source/garden/index.js';
import { appendJsonLine, createGoal, OpenGoalScanner, readGoal, readRun, runMetaFile, runSealFile } from '../../source/store/index.js';
import { cleanupAll, exitOf, isAlive, pidfile, robustGarden, runCli, runShell, start, tempDir, waitFor, waitForPids, PAK2_BIN } from '../robustness/helpers.js';

afterEach(cleanupAll);

/** Rewrites a file in place keeping its size and restoring its mtime (as `touch -r` would). */
function editKeepingSizeAndMtime(file: string, from: string, to: string): void {
  const before = fs.statSync(file);
  const text = fs.readFileSync(file, 'utf8');
  expect(from.length).toBe(to.length);
  expect(text).toContain(from);
  const reference = `${file}.ref`;
  execFileSync('touch', ['-r', file, reference]);
  fs.writeFileSync(file, text.replace(from, to));
  execFileSync('touch', ['-r', reference, file]);
  fs.rmSync(reference);
  const after = fs.statSync(file);
  expect([after.size, after.mtimeMs]).toEqual([before.size, before.mtimeMs]);
}

describe('2. an edit that keeps size and mtime is seen', () => {
  it('the agent is prompted with the body on disk at dispatch, not a cached one', async () => {
    const garden = await robustGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'task alpha', driver: 'success' });
    const scanner = new OpenGoalScanner(garden.paths);
    await scanner.scan(); // warm: the goal is cached
    editKeepingSizeAndMtime(path.join(garden.paths.goalsDir, `${goal.id}.json`), 'task alpha', 'task omega');
    const seen = path.join(garden.paths.gardenRoot, 'prompt-seen.txt');
    process.env.FAKE_AGENT_WRITE = seen;
    try {
      await reconcile({ garden, scanner, dispatch: (g, runId) => dispatch(g, runId, { garden, onStderr: () => undefined }), awaitDispatch: true });
    } finally {
      delete process.env.FAKE_AGENT_WRITE;
    }
    const prompt = fs.readFileSync(seen, 'utf8');
    expect(prompt).toContain('task omega');
    expect(prompt).not.toContain('task alpha');
  });

  it('a priority raised the same way decides the dispatch order', async () => {
    const garden = await robustGarden();
    const low = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'first submitted', priority: 50 });
    const mid = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'second submitted', priority: 60 });
    const scanner = new OpenGoalScanner(garden.paths);
    await scanner.scan();
    editKeepingSizeAndMtime(path.join(garden.paths.goalsDir, `${low.id}.json`), '"priority": 50', '"priority": 90');
    const order: string[] = [];
    await reconcile({ garden, scanner, dispatch: async (g) => void order.push(g.id) });
    expect(order).toEqual([low.id]);
    expect((await readGoal(garden.paths, mid.id)).status).toBe('queued');
  });
});

describe('3. a torn record does not wedge its goal', () => {
  for (const variant of ['with its seal', 'with no seal (a record from before seals)'] as const) {
    it(`a live run's meta.json cut to 50 bytes while the coordinator is down (${variant}): the next coordinator closes it, names the damage, requeues the goal and kills the orphan`, async () => {
      const garden = await robustGarden();
      const pids = pidfile(garden.paths.gardenRoot);
      const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'stall', driver: 'stall' });
      const first = start(['cycle', '--garden', garden.paths.gardenRoot, '--no-ui'], { env: { FAKE_AGENT_PIDFILE: pids } });
      const agents = await waitForPids(pids, first);
      first.child.kill('SIGKILL');
      await exitOf(first);
      expect(agents.every(isAlive)).toBe(true);
      const runId = `${goal.id}-r1`;
      const meta = runMetaFile(garden.paths, runId);
      fs.writeFileSync(meta, fs.readFileSync(meta, 'utf8').slice(0, 50));
      if (variant !== 'with its seal') fs.rmSync(runSealFile(garden.paths, runId));
      const coordinator = new Coordinator({ garden, onStderr: () => undefined, dispatch: async () => undefined });
      await coordinator.start();
      await coordinator.stop();
      const run = await readRun(garden.paths, runId);
      expect(run).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped', record_tampering: { fields: ['(unreadable)'] } });
      if (variant !== 'with its seal') expect(run.outputs?.error).toContain('was rebuilt from the goal and process record');
      expect(JSON.parse(fs.readFileSync(meta, 'utf8'))).toEqual(run);
      expect((await readGoal(garden.paths, goal.id)).status).toBe('queued');
      await waitFor(() => agents.every((pid) => !isAlive(pid)), 5000);
    });
  }
});

describe('4. listings never drop entries silently', () => {
  function writeRuns(garden: Awaited<ReturnType<typeof robustGarden>>, count: number): void {
    fs.mkdirSync(path.join(garden.paths.runsDir, '.seals'), { recursive: true });
    for (let i = 1; i <= count; i += 1) {
      const id = `${i}-bulk-r1`;
      const record = { id, goal: `${i}-bulk`, plant: 'gardener', status: 'success', started_at: '2026-11-30T10:00:00.000Z', completed_at: '2026-11-30T10:00:01.000Z', driver: 'command', model: 'default', cost: { source: 'unknown' } };
      fs.mkdirSync(path.join(garden.paths.runsDir, id));
      const text = `${JSON.stringify(record, null, 2)}\n`;
      fs.writeFileSync(path.join(garden.paths.runsDir, id, 'meta.json'), text);
      fs.writeFileSync(path.join(garden.paths.runsDir, '.seals', `${id}.json`), text);
    }
  }

  it('`pak2 runs` under `ulimit -n 1024` lists all 2,001 runs, exit 0', async () => {
    const garden = await robustGarden();
    writeRuns(garden, 2001);
    const result = await runShell(`ulimit -n 1024 && "${process.execPath}" "${PAK2_BIN}" runs --garden "${garden.paths.gardenRoot}" --json`, { timeoutMs: 60_000 });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as unknown[]).length).toBe(2001);
  });

  it('with every meta.json empty (and no seals), `pak2 runs` names what it could not read and exits 1, never "no runs yet"', async () => {
    const garden = await robustGarden();
    writeRuns(garden, 30);
    fs.rmSync(path.join(garden.paths.runsDir, '.seals'), { recursive: true });
    for (const name of fs.readdirSync(garden.paths.runsDir)) fs.writeFileSync(path.join(garden.paths.runsDir, name, 'meta.json'), '');
    const result = await runCli(['runs', '--garden', garden.paths.gardenRoot]);
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain('no runs yet');
    expect(result.stderr).toContain('pak2: 30 run(s) could not be read; the listing is incomplete');
    expect(result.stderr.split('\n').filter((l) => l.startsWith('pak2: skipped ')).length).toBe(20);
  });
});

describe('6. configuration and names: every problem named', () => {
  it('an empty PAK2.toml over a garden whose runtime is in .runtime/ is refused, naming it, instead of "no goals yet"', async () => {
    const garden = await robustGarden();
    await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'exists' });
    fs.writeFileSync(path.join(garden.paths.gardenRoot, 'PAK2.toml'), '');
    const result = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('sets no [runtime].root');
    expect(result.stderr).toContain('holds a runtime (1 goal file(s))');
  });

  it('a [runtime].root moved to an empty place (outside the garden, or another name) while .runtime/ holds goals is refused, naming both, instead of "no goals yet"', async () => {
    const garden = await robustGarden();
    await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'exists' });
    const toml = path.join(garden.paths.gardenRoot, 'PAK2.toml');
    const original = fs.readFileSync(toml, 'utf8');
    expect(original).toContain('root = ".runtime"');
    for (const root of ['../elsewhere-runtime', 'rt']) {
      fs.writeFileSync(toml, original.replace('root = ".runtime"', `root = "${root}"`));
      const result = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`[runtime].root is "${root}" (${path.resolve(garden.paths.gardenRoot, root)}), which holds no goals, but ${path.join(garden.paths.gardenRoot, '.runtime')} holds a runtime with goal files that would not be read`);
    }
    // A new root that holds goals of its own is the operator's choice: no refusal.
    fs.mkdirSync(path.join(garden.paths.gardenRoot, 'rt', 'goals'), { recursive: true });
    fs.copyFileSync(path.join(garden.paths.goalsDir, '1-exists.json'), path.join(garden.paths.gardenRoot, 'rt', 'goals', '1-exists.json'));
    const moved = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain('1-exists');
  });

  it('goal files whose names are not goal ids (spaces, "..") are named and the listing exits 1', async () => {
    const garden = await robustGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'a real one' });
    const text = fs.readFileSync(path.join(garden.paths.goalsDir, `${goal.id}.json`), 'utf8');
    fs.writeFileSync(path.join(garden.paths.goalsDir, '2-with space.json'), text);
    fs.writeFileSync(path.join(garden.paths.goalsDir, '3-dots..json'), text);
    const result = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(goal.id);
    expect(result.stderr).toContain(`${path.join(garden.paths.goalsDir, '2-with space.json')}: not a goal file name`);
    expect(result.stderr).toContain(`${path.join(garden.paths.goalsDir, '3-dots..json')}: not a goal file name`);
  });

  it('a PAK2.toml with two bad keys names both, with the values given', () => {
    expect(() => parseConfig('[coordinator]\nwatchdog_seconds = -5\nwatchdgo_seconds = 30\n')).toThrow(
      'PAK2.toml: 2 problems: coordinator.watchdog_seconds: INVALID_CONFIG_VALUE (must be a whole number of seconds from 1 to 2147483; got -5); coordinator.watchdgo_seconds: UNKNOWN_CONFIG_KEY (not a PAK2.toml key; got 30)',
    );
  });
});

describe('8. concurrent appends are whole', () => {
  it('ten concurrent 1.1 MB appends in one process leave ten parseable lines', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'log.jsonl');
    const big = 'x'.repeat(1.1 * 1024 * 1024);
    await Promise.all(Array.from({ length: 10 }, (_, i) => appendJsonLine(file, { i, big })));
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(lines.map((l) => (JSON.parse(l) as { i: number }).i).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('two processes appending 1.1 MB lines at once interleave no line', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'log.jsonl');
    const script = `import('${path.resolve('source/store/files.ts').replace(/\\/g, '/')}').then(async ({ appendJsonLine }) => { const big = 'y'.repeat(1.1 * 1024 * 1024); await Promise.all(Array.from({ length: 5 }, (_, i) => appendJsonLine(process.argv[1], { p: process.argv[2], i, big }))); })`;
    const tsx = path.resolve('node_modules/.bin/tsx');
    await Promise.all(['a', 'b'].map((p) => runShell(`"${tsx}" -e "${script.replace(/"/g, '\\"')}" "${file}" ${p}`, { timeoutMs: 60_000 })));
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(lines.length).toBe(10);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('after a torn last line, 50 concurrent appends add 50 lines and no blank one', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'log.jsonl');
    fs.writeFileSync(file, '{"whole":true}\n{"torn":');
    await Promise.all(Array.from({ length: 50 }, (_, i) => appendJsonLine(file, { i })));
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    const body = lines.slice(0, -1);
    expect(body.filter((l) => l === '')).toEqual([]);
    expect(body.slice(0, 2)).toEqual(['{"whole":true}', '{"torn":']);
    expect(body.slice(2).map((l) => (JSON.parse(l) as { i: number }).i).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});
