/**
 * The CLI as a subprocess against hostile input and machine state: closed
 * pipes, out-of-range config, control characters, torn logs, misnamed and
 * racing goal files, bad init targets, and file-system errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createGoal } from '../../source/store/index.js';
import { FAKE_AGENT } from '../support/garden.js';
import {
  cleanupAll,
  expectNoCrash,
  goalFiles,
  oneLineError,
  PAK2_BIN,
  readEventLog,
  readGoalFile,
  REPO_ROOT,
  robustGarden,
  runCli,
  runShell,
  tempDir,
} from './helpers.js';

afterEach(cleanupAll);

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

describe('a closed stdout', () => {
  it('`pak2 goals --all --json | head -c 10` with output larger than a pipe buffer: no EPIPE, no stack trace', async () => {
    const garden = await robustGarden();
    const filler = 'lorem ipsum dolor sit amet '.repeat(20);
    for (let i = 0; i < 300; i += 1) await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: `Goal number ${i}\n\n${filler}` });
    expect(goalFiles(garden)).toHaveLength(300);
    const script = `{ ${shellQuote(process.execPath)} ${shellQuote(PAK2_BIN)} goals --all --json --garden ${shellQuote(garden.paths.gardenRoot)}; echo "pak2-exit=$?" >&2; } | head -c 10`;
    const r = await runShell(script);
    expect(r.stdout).toHaveLength(10);
    expect(r.stderr).not.toContain('EPIPE');
    expectNoCrash(r.stderr);
    expect(r.stderr.trim()).toBe('pak2-exit=0');
  }, 120_000);
});

describe('config caps', () => {
  it('run_timeout_seconds = 3000000 is refused naming the key and the allowed range', async () => {
    const garden = await robustGarden();
    const toml = fs.readFileSync(garden.paths.configFile, 'utf8');
    expect(toml).toContain('run_timeout_seconds = 600');
    fs.writeFileSync(garden.paths.configFile, toml.replace('run_timeout_seconds = 600', 'run_timeout_seconds = 3000000'));
    const r = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(r.code).toBe(2);
    const line = oneLineError(r.stderr);
    expect(line).toContain('coordinator.run_timeout_seconds');
    expect(line).toContain('from 1 to 2147483');
  });

  it('max_concurrent_runs = 1000 is refused naming the key and the allowed range', async () => {
    const garden = await robustGarden();
    const toml = fs.readFileSync(garden.paths.configFile, 'utf8');
    fs.writeFileSync(garden.paths.configFile, toml.replace('[coordinator]\n', '[coordinator]\nmax_concurrent_runs = 1000\n'));
    const r = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(r.code).toBe(2);
    const line = oneLineError(r.stderr);
    expect(line).toContain('coordinator.max_concurrent_runs');
    expect(line).toMatch(/from 0 to \d+/);
  });
});

describe('output sanitising', () => {
  it('a body with ANSI and OSC escapes prints no ESC or BEL byte in show and goals', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const body = 'Escape \x1b[31mRED\x1b]0;pwned\x07\x1b[2J done';
    const submit = await runCli(['submit', ...g, '--plant', 'gardener', '--type', 'spike', '--body', body]);
    expect(submit.code, submit.stderr).toBe(0);
    const id = submit.stdout.trim();
    expect(readGoalFile(garden, id).body).toBe(body);
    for (const args of [['show', id], ['goals'], ['goals', '--all']]) {
      const r = await runCli([...args, ...g]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(id);
      expect(r.stdout.includes('\x1b'), `${args.join(' ')} printed ESC`).toBe(false);
      expect(r.stdout.includes('\x07'), `${args.join(' ')} printed BEL`).toBe(false);
      expect(r.stderr.includes('\x1b') || r.stderr.includes('\x07')).toBe(false);
    }
    expect((await runCli(['show', id, ...g])).stdout).toContain('RED');
  });
});

describe('event log', () => {
  it('a torn last line does not swallow the next event', async () => {
    const garden = await robustGarden();
    const torn = '{"ts":"2026-11-29T09:00:00Z","type":"GoalSub';
    fs.mkdirSync(path.dirname(garden.paths.coordinatorLog), { recursive: true });
    fs.appendFileSync(garden.paths.coordinatorLog, torn);
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'After the tear']);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();
    const lines = fs.readFileSync(garden.paths.coordinatorLog, 'utf8').split('\n');
    expect(lines).toContain(torn);
    const submitted = lines.filter((l) => l.includes(id));
    expect(submitted).toHaveLength(1);
    expect(JSON.parse(submitted[0]!)).toMatchObject({ type: 'GoalSubmitted', goal: id });
  });
});

describe('goal ids are claimed exclusively', () => {
  it('two concurrent submits from counter 99999 get different ids; goal files match GoalSubmitted events', async () => {
    const garden = await robustGarden();
    fs.mkdirSync(garden.paths.goalsDir, { recursive: true });
    fs.writeFileSync(path.join(garden.paths.goalsDir, '.counter'), '99999\n');
    const args = ['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'Same body twice'];
    const [a, b] = await Promise.all([runCli(args), runCli(args)]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const ids = [a.stdout.trim(), b.stdout.trim()];
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids.sort()).toEqual(['100000-same-body-twice', '100001-same-body-twice']);
    const submitted = readEventLog(garden).filter((e) => e.type === 'GoalSubmitted');
    expect(goalFiles(garden)).toHaveLength(submitted.length);
    expect(submitted.map((e) => e.goal).sort()).toEqual(goalFiles(garden).map((f) => f.slice(0, -5)).sort());
  });

  it('a counter too large to continue from gives a one-line error, exit non-zero, and writes no goal', async () => {
    const garden = await robustGarden();
    fs.mkdirSync(garden.paths.goalsDir, { recursive: true });
    fs.writeFileSync(path.join(garden.paths.goalsDir, '.counter'), '99999999999999999999\n');
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'Too far']);
    expect(r.code).not.toBe(0);
    oneLineError(r.stderr);
    expectNoCrash(r.stderr);
    expect(r.stdout).toBe('');
    expect(goalFiles(garden)).toEqual([]);
    expect(readEventLog(garden).filter((e) => e.type === 'GoalSubmitted')).toEqual([]);
  });
});

describe('pak2 cancel', () => {
  it('cancels a queued goal; refuses a closed one (exit 1) and an unknown id (exit 2)', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Never mind' });
    const r = await runCli(['cancel', goal.id, ...g]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim()).toBe(`cancelled ${goal.id}`);
    expect(readGoalFile(garden, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
    expect(readEventLog(garden)).toContainEqual(expect.objectContaining({ type: 'GoalClosed', goal: goal.id, reason: 'cancelled' }));

    const again = await runCli(['cancel', goal.id, ...g]);
    expect(again.code).toBe(1);
    expect(oneLineError(again.stderr)).toContain(goal.id);
    expectNoCrash(again.stderr);

    const unknown = await runCli(['cancel', '999-nope', ...g]);
    expect(unknown.code).toBe(2);
    expect(oneLineError(unknown.stderr)).toBe('pak2: ID 999-nope: no such goal');
    // Not an id at all (a path): said so, as pak2 show says it, and nothing outside goals/ is reached.
    const path_ = await runCli(['cancel', '../../etc/passwd', ...g]);
    expect(path_.code).toBe(2);
    expect(oneLineError(path_.stderr)).toBe('pak2: ID ../../etc/passwd: not a goal id (N-slug)');
  });
});

describe('pak2 --version', () => {
  it.each([['--version'], ['-V']])('%s prints the package.json version', async (flag) => {
    const version = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const r = await runCli([flag]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim()).toBe(version);
  });
});

describe('pak2 init targets', () => {
  it('accepts a directory holding only .git/', async () => {
    const base = tempDir();
    const dir = path.join(base, 'repo');
    fs.mkdirSync(path.join(dir, '.git'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    const r = await runCli(['init', dir, '--driver', 'command']);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(path.join(dir, 'PAK2.toml'))).toBe(true);
    expect(fs.readFileSync(path.join(dir, '.git', 'HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
  });

  it('a missing parent: one line naming the parent, exit 2, nothing created', async () => {
    const base = tempDir();
    const r = await runCli(['init', 'a/missing/parent/x'], { cwd: base });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain(path.join(base, 'a', 'missing', 'parent'));
    expect(fs.readdirSync(base)).toEqual([]);
  });

  it('--driver bogus: one line naming --driver, nothing created', async () => {
    const base = tempDir();
    const r = await runCli(['init', 'x', '--driver', 'bogus'], { cwd: base });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain('--driver');
    expect(fs.readdirSync(base)).toEqual([]);
  });

  it('a path under a file: one-line error, no internal error, no stack', async () => {
    const garden = await robustGarden();
    const r = await runCli(['init', path.join(garden.paths.gardenRoot, 'PAK2.toml', 'sub')]);
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBe(70);
    oneLineError(r.stderr);
    expectNoCrash(r.stderr);
    expect(fs.statSync(garden.paths.configFile).isFile()).toBe(true);
  });
});

describe('pak2 genesis', () => {
  it('without seeds/gardener.md: one line naming the file, and no runtime directories created', async () => {
    const root = tempDir();
    fs.writeFileSync(
      path.join(root, 'PAK2.toml'),
      ['[runtime]', 'root = ".runtime"', '[defaults]', 'driver = "agent"', '[drivers.agent]', `command = ${JSON.stringify([process.execPath, FAKE_AGENT, 'success'])}`, ''].join('\n'),
    );
    fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# Motivation\n');
    const before = fs.readdirSync(root).sort();
    const r = await runCli(['genesis', '--garden', root]);
    expect(r.code).not.toBe(0);
    expect(oneLineError(r.stderr)).toContain(path.join(root, 'seeds', 'gardener.md'));
    expectNoCrash(r.stderr);
    expect(fs.existsSync(path.join(root, '.runtime'))).toBe(false);
    expect(fs.readdirSync(root).sort()).toEqual(before);
  });
});

describe('pak2 submit refuses bad bodies and drivers', () => {
  it('a --body-file with a NUL byte: one-line error saying binary', async () => {
    const garden = await robustGarden();
    const file = path.join(garden.paths.gardenRoot, 'task.bin');
    fs.writeFileSync(file, Buffer.from('hello\0world'));
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body-file', file]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toMatch(/binary/);
    expect(goalFiles(garden)).toEqual([]);
  });

  it('a --body-file over 1 MiB: one-line error', async () => {
    const garden = await robustGarden();
    const file = path.join(garden.paths.gardenRoot, 'big.md');
    fs.writeFileSync(file, 'a'.repeat(1024 * 1024 + 1));
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body-file', file]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain('--body-file');
    expect(goalFiles(garden)).toEqual([]);
  });

  it('PAK2_DEFAULT_DRIVER=bogus without --driver: refused, exit 2, naming PAK2_DEFAULT_DRIVER, no goal', async () => {
    const garden = await robustGarden();
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'x'], { env: { PAK2_DEFAULT_DRIVER: 'bogus' } });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain('PAK2_DEFAULT_DRIVER');
    expect(goalFiles(garden)).toEqual([]);
  });

  it('[defaults] driver = "nope" in PAK2.toml: refused when PAK2.toml loads, naming defaults.driver, no goal', async () => {
    const garden = await robustGarden();
    const toml = fs.readFileSync(garden.paths.configFile, 'utf8');
    expect(toml).toContain('driver = "success"');
    fs.writeFileSync(garden.paths.configFile, toml.replace('driver = "success"', 'driver = "nope"'));
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'x'], { env: { PAK2_DEFAULT_DRIVER: '' } });
    expect(r.code).not.toBe(0);
    expect(oneLineError(r.stderr)).toContain('PAK2.toml: defaults.driver: INVALID_CONFIG_VALUE (claude, codex, command or a [drivers.<name>] table; got "nope")');
    expectNoCrash(r.stderr);
    expect(goalFiles(garden)).toEqual([]);
  });
});

describe('pak2 show with a malformed run record', () => {
  it('still shows the goal (exit 0) and names the bad meta.json on stderr', async () => {
    const garden = await robustGarden();
    const g = ['--garden', garden.paths.gardenRoot];
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'Show me anyway' });
    const cycle = await runCli(['cycle', '--no-ui', '--until-idle', ...g]);
    expect(cycle.code, cycle.stderr).toBe(0);
    const bad = path.join(garden.paths.runsDir, `${goal.id}-r2`, 'meta.json');
    fs.mkdirSync(path.dirname(bad), { recursive: true });
    fs.writeFileSync(bad, '{"id": "broken", ');
    const r = await runCli(['show', goal.id, ...g]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`goal ${goal.id}`);
    expect(r.stdout).toContain(`run ${goal.id}-r1: success`);
    expect(r.stderr).toContain(bad);
    expectNoCrash(r.stderr);
  });
});

describe('file-system errors are the machine state, not bugs', () => {
  it('.runtime/goals being a regular file: submit fails with one pak2: line, no internal error, no stack', async () => {
    const garden = await robustGarden();
    fs.rmSync(garden.paths.goalsDir, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(garden.paths.goalsDir), { recursive: true });
    fs.writeFileSync(garden.paths.goalsDir, 'not a directory\n');
    const r = await runCli(['submit', '--garden', garden.paths.gardenRoot, '--plant', 'gardener', '--type', 'spike', '--body', 'Where do I go']);
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBe(70);
    oneLineError(r.stderr);
    expectNoCrash(r.stderr);
    expect(r.stdout).toBe('');
  });
});
