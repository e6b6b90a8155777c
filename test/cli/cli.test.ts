import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden();
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('pak2 submit', () => {
  it('prints the new goal id and writes a queued goal', async () => {
    const r = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'fix', '--priority', '70', '--body', 'Fix the flaky test']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim()).toBe('1-fix-the-flaky-test');
    const goal = JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, '1-fix-the-flaky-test.json'), 'utf8'));
    expect(goal).toMatchObject({ type: 'fix', priority: 70, status: 'queued', assigned_to: 'gardener', body: 'Fix the flaky test' });
  });

  it('reads the body from a file, and from stdin with -', async () => {
    fs.writeFileSync(path.join(garden.paths.gardenRoot, 'task.md'), 'Write the docs\n\nAll of them.');
    const fromFile = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'build', '--body-file', path.join(garden.paths.gardenRoot, 'task.md')]);
    expect(fromFile.stdout.trim()).toBe('1-write-the-docs');
    const fromStdin = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'build', '--body-file', '-'], { input: 'From stdin' });
    expect(fromStdin.stdout.trim()).toBe('2-from-stdin');
  });

  it.each([
    [['--plant', 'nobody', '--type', 'build', '--body', 'x'], '--plant nobody: no such plant in this garden (plants: gardener)'],
    [['--plant', '../evil', '--type', 'build', '--body', 'x'], '--plant ../evil: not a valid plant name'],
    [['--plant', 'gardener', '--type', 'nope', '--body', 'x'], "option '--type <type>' argument 'nope' is invalid"],
    [['--plant', 'gardener', '--type', 'build', '--priority', '500', '--body', 'x'], "option '--priority <n>' argument '500' is invalid"],
    [['--plant', 'gardener', '--type', 'build', '--priority', 'high', '--body', 'x'], "option '--priority <n>' argument 'high' is invalid"],
    [['--plant', 'gardener', '--type', 'build'], 'give exactly one of --body TEXT or --body-file F'],
    [['--plant', 'gardener', '--type', 'build', '--body', 'x', '--body-file', 'y'], 'give exactly one of --body TEXT or --body-file F'],
    [['--plant', 'gardener', '--type', 'build', '--body-file', 'missing.md'], '--body-file missing.md: no such file'],
    [['--plant', 'gardener', '--type', 'build', '--body', '   '], '--body: the task is empty'],
    [['--plant', 'gardener', '--type', 'build', '--body', 'x', '--driver', 'gpt'], '--driver gpt: not a driver'],
    [['--type', 'build', '--body', 'x'], "required option '--plant <plant>' not specified"],
  ])('refuses %j with a one-line error naming the argument, exit 2, writing nothing', async (args, message) => {
    const r = await runCli(['submit', ...g, ...args], { cwd: garden.paths.gardenRoot });
    expect(r.code).toBe(2);
    // Every refusal reads alike, commander's own included: `pak2: …`, not `error: …`.
    expect(oneLineError(r.stderr)).toMatch(/^pak2: /);
    expect(oneLineError(r.stderr)).toContain(message);
    expect(r.stdout).toBe('');
    expect(fs.existsSync(garden.paths.goalsDir) ? fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json')) : []).toEqual([]);
  });
});

describe('read commands', () => {
  it('goals and runs print tables and --json', async () => {
    await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--body', 'Try 漢字 and 🌱 in a body']);
    const table = await runCli(['goals', ...g]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+TYPE\s+PLANT\s+PRI\s+STATUS\s+AGE$/);
    expect(table.stdout).toContain('1-try-and-in-a-body');
    const json = JSON.parse((await runCli(['goals', ...g, '--json'])).stdout);
    expect(json).toEqual([expect.objectContaining({ id: '1-try-and-in-a-body', body: 'Try 漢字 and 🌱 in a body' })]);
    expect((await runCli(['runs', ...g])).stdout.trim()).toBe('no runs yet');
    const cycle = await runCli(['cycle', '--no-ui', '--until-idle', ...g]);
    expect(cycle.code).toBe(0);
    expect(cycle.stdout).toMatch(/GoalClosed\s+1-try-and-in-a-body \(success\)/);
    const runs = JSON.parse((await runCli(['runs', ...g, '--json'])).stdout);
    expect(runs).toEqual([expect.objectContaining({ id: '1-try-and-in-a-body-r1', status: 'success' })]);
    const show = await runCli(['show', '1-try-and-in-a-body-r1', ...g]);
    expect(show.stdout).toContain('status success');
    expect(show.stdout).toContain('cost $0.0200 (provider)');
  });

  it('cycle --json prints one JSON event per line', async () => {
    await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--body', 'json please']);
    const cycle = await runCli(['cycle', '--no-ui', '--until-idle', '--json', ...g]);
    const events = cycle.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(events.map((e) => e.type)).toEqual([
      'CoordinatorStarted',
      'GoalTransitioned',
      'RunStarted',
      'GoalTransitioned',
      'RunClosed',
      'GoalTransitioned',
      'GoalTransitioned',
      'GoalClosed',
      'CoordinatorStopped',
    ]);
  });

  it.each([
    [['show', '999-nope'], 'no goal 999-nope'],
    [['show', '999-nope-r1'], 'no run or goal 999-nope-r1'],
    [['show', '../../etc/passwd'], 'ID ../../etc/passwd: not a goal id (N-slug) or run id (N-slug-rN)'],
    [['runs', '--goal', '42-nothing'], 'no goal 42-nothing'],
    [['runs', '--goal', 'bad id'], '--goal bad id: not a goal id'],
  ])('%j: one-line error, exit 2', async (args, message) => {
    const r = await runCli([...args, ...g]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain(message);
  });

  it('a malformed goal file is named on stderr, kept as it is, the rest still lists, and the exit says the listing is incomplete', async () => {
    await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--body', 'good one']);
    const bad = path.join(garden.paths.goalsDir, '5-bad.json');
    fs.writeFileSync(bad, '{"id": "5-bad", "type": ');
    const r = await runCli(['goals', ...g]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("pak2: 1 goal(s) could not be read; the listing is incomplete");
    expect(r.stderr).toContain(`${bad}: malformed JSON`);
    expect(r.stdout).toContain('1-good-one');
    expect(fs.readFileSync(bad, 'utf8')).toBe('{"id": "5-bad", "type": ');
  });
});

describe('garden errors', () => {
  it('a TOML syntax error names the file and line', async () => {
    fs.writeFileSync(garden.paths.configFile, '[coordinator]\nwatchdog_seconds = = 3\n');
    const r = await runCli(['goals', ...g]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toMatch(new RegExp(`${garden.paths.configFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line 2, column \\d+`));
  });

  it('a bad value names the key and the reason code', async () => {
    fs.writeFileSync(garden.paths.configFile, '[coordinator]\nwatchdog_seconds = -5\n');
    const r = await runCli(['goals', ...g]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain('coordinator.watchdog_seconds: INVALID_CONFIG_VALUE');
  });

  it('an unknown key is named', async () => {
    fs.writeFileSync(garden.paths.configFile, '[coordinator]\nwatchdog = 5\n');
    const r = await runCli(['goals', ...g]);
    expect(oneLineError(r.stderr)).toContain('coordinator.watchdog: UNKNOWN_CONFIG_KEY');
  });

  it('outside any garden the error says where it looked', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-nogarden-'));
    try {
      const r = await runCli(['goals'], { cwd: empty });
      expect(r.code).toBe(2);
      expect(oneLineError(r.stderr)).toContain(`no PAK2.toml in ${empty} or any directory above it`);
    } finally {
      fs.rmSync(empty, { recursive: true });
    }
  });

  it('finds the garden from a subdirectory', async () => {
    const sub = path.join(garden.paths.gardenRoot, 'deep', 'er');
    fs.mkdirSync(sub, { recursive: true });
    const r = await runCli(['submit', '--plant', 'gardener', '--type', 'spike', '--body', 'from below'], { cwd: sub });
    expect(r.stdout.trim()).toBe('1-from-below');
  });

  it('an unknown command is a usage error', async () => {
    const r = await runCli(['launch-rockets']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'launch-rockets'");
  });
});

describe('init and genesis', () => {
  it('init refuses a garden already there; genesis is idempotent', async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-init-'));
    try {
      const dir = path.join(base, 'my-garden');
      const init = await runCli(['init', dir, '--driver', 'command']);
      expect(init.code).toBe(0);
      expect(fs.readFileSync(path.join(dir, 'PAK2.toml'), 'utf8')).toContain('name = "my-garden"');
      const again = await runCli(['init', dir]);
      expect(again.code).toBe(2);
      expect(oneLineError(again.stderr)).toBe(`pak2: ${path.join(dir, 'PAK2.toml')}: exists; this directory is a garden already (next: pak2 genesis, then pak2); pak2 init changed nothing`);
      const noCommand = await runCli(['genesis', '--garden', dir]);
      expect(noCommand.code).toBe(1);
      expect(oneLineError(noCommand.stderr)).toContain('driver command has no command: set [drivers.command].command');
      const toml = path.join(dir, 'PAK2.toml');
      fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('# command = ["node", "tools/my-agent.mjs"]', 'command = "true"'));
      const first = await runCli(['genesis', '--garden', dir]);
      expect(first.stdout).toContain('commissioned plant gardener');
      expect(first.stdout).toContain('queued goal 1-survey-the-garden');
      const before = fs.readdirSync(path.join(dir, '.runtime', 'goals')).sort();
      const second = await runCli(['genesis', '--garden', dir]);
      expect(second.stdout.trim()).toBe(`genesis: nothing to do; ${dir} is already set up`);
      expect(fs.readdirSync(path.join(dir, '.runtime', 'goals')).sort()).toEqual(before);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('genesis names the missing driver CLI and how to install it', async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-init-'));
    try {
      const dir = path.join(base, 'g');
      await runCli(['init', dir, '--driver', 'codex']);
      const r = await runCli(['genesis', '--garden', dir], { env: { PATH: path.dirname(process.execPath) } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('the default driver codex needs `codex`, which is not on PATH');
      expect(r.stderr).toContain('hint: install it: npm install -g @openai/codex');
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });
});

describe('headless starts and the dashboard', () => {
  it('pak2 cycle without a terminal runs headless with a one-line notice, and stops cleanly on SIGTERM', async () => {
    const { startCli } = await import('../support/cli.js');
    const child = startCli(['cycle', ...g], { env: { CI: '' } });
    let stderr = '';
    let stdout = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    const { waitFor } = await import('../support/garden.js');
    await waitFor(() => stdout.includes('CoordinatorStarted'));
    expect(stderr.trim()).toBe('pak2: not a terminal: running headless');
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    expect(stdout).toContain('CoordinatorStopped');
  });

  it('pak2 dashboard without a terminal prints one read-only frame and records the invocation', async () => {
    await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--body', 'visible in the dashboard']);
    const r = await runCli(['dashboard', ...g], { env: { COLUMNS: '180', LINES: '30' } });
    expect(r.code).toBe(0);
    expect(r.stderr.trim()).toBe('pak2: not a terminal: printing one frame of the dashboard');
    expect(r.stdout).toContain('1-visible-in-the-dashboard');
    expect(r.stdout).toContain('dashboard (read-only)');
    const events = fs.readFileSync(garden.paths.coordinatorLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; detail?: string });
    const started = events.filter((e) => e.type === 'DashboardStarted');
    const finished = events.filter((e) => e.type === 'DashboardFinished');
    expect(started).toHaveLength(1);
    expect(finished).toHaveLength(1);
    const records = fs.readdirSync(path.join(garden.paths.dashboardDir, 'invocations'));
    expect(records).toHaveLength(1);
    const record = JSON.parse(fs.readFileSync(path.join(garden.paths.dashboardDir, 'invocations', records[0]!), 'utf8'));
    expect(record).toMatchObject({ command: 'pak2 dashboard', cost: { source: 'estimated', wall_seconds: expect.any(Number) } });
    expect(Date.parse(record.finished_at)).toBeGreaterThanOrEqual(Date.parse(record.started_at));
    expect(started[0]!.detail).toBe(`invocation ${record.id}`);
    // Read-only: no goal changed state, no coordinator ran.
    expect(events.some((e) => e.type === 'CoordinatorStarted')).toBe(false);
  });
});
