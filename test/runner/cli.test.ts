import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runnerSettings, type RunnerFlags } from '../../source/cli/commands/runner.js';
import { main, type CliIO } from '../../source/cli/main.js';
import { UserError } from '../../source/errors.js';
import { defaultRunnerName, defaultStateDir, instanceFile, lockStateDir, runnerInstance, stateLockFile } from '../../source/runner/state.js';
import { spawn } from 'node:child_process';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';

afterEach(() => cleanupFixtures());

function flags(overrides: Partial<RunnerFlags> = {}): RunnerFlags {
  return { plant: [], driver: [], ...overrides };
}

async function refusal(f: RunnerFlags, cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const error = await runnerSettings(f, { cwd, env }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(UserError);
  expect((error as Error).message).not.toContain('\n');
  return (error as Error).message;
}

describe('pak2 runner flags', () => {
  it('names the flag that is missing or wrong, in one line', async () => {
    const dir = makeTempDir({ token: 'tok\n', empty: '', two: 'a b\n' });
    const ok = { server: 'http://h:7717', tokenFile: 'token', state: 'state' };
    expect(await refusal(flags(), dir)).toMatch(/^--server: required/);
    expect(await refusal(flags({ server: 'not a url', tokenFile: 'token' }), dir)).toMatch(/^--server not a url: not a URL/);
    expect(await refusal(flags({ server: 'ftp://h', tokenFile: 'token' }), dir)).toMatch(/^--server ftp:\/\/h: must be an http/);
    expect(await refusal(flags({ server: 'http://h' }), dir)).toMatch(/^--token-file: required/);
    expect(await refusal(flags({ ...ok, tokenFile: 'nope' }), dir)).toBe(`--token-file ${path.join(dir, 'nope')}: no such file`);
    expect(await refusal(flags({ ...ok, tokenFile: 'empty' }), dir)).toMatch(new RegExp(`^--token-file ${path.join(dir, 'empty')}: the file is empty`));
    expect(await refusal(flags({ ...ok, tokenFile: 'two' }), dir)).toMatch(/holds more than one word/);
    expect(await refusal(flags({ ...ok, tokenFile: '.' }), dir)).toMatch(/: is a directory$/);
    expect(await refusal(flags({ ...ok, name: 'has space' }), dir)).toMatch(/^--name has space: letters/);
    expect(await refusal(flags({ ...ok, plant: ['Gardener'] }), dir)).toMatch(/^--plant Gardener: not a plant name/);
    expect(await refusal(flags({ ...ok, driver: ['-x'] }), dir)).toMatch(/^--driver -x: not a driver name/);
    expect(await refusal(flags({ ...ok, maxRuns: '0' }), dir)).toMatch(/^--max-runs 0: must be a whole number of at least 1/);
    expect(await refusal(flags({ ...ok, maxRuns: '1.5' }), dir)).toMatch(/^--max-runs 1.5/);
    expect(await refusal(flags({ ...ok, poll: '0' }), dir)).toMatch(/^--poll 0: must be seconds/);
    expect(await refusal(flags({ ...ok, poll: 'soon' }), dir)).toMatch(/^--poll soon/);
    expect(await refusal(flags({ ...ok, workdir: 'missing' }), dir)).toMatch(/^--workdir .*missing: not a directory/);
    fs.writeFileSync(path.join(dir, 'blocker'), '');
    expect(await refusal(flags({ ...ok, state: 'blocker/sub' }), dir)).toMatch(/^--state .*blocker\/sub: cannot write there/);
  });

  it('reads the token and fills the defaults', async () => {
    const dir = makeTempDir({ token: '  tok-1  \n' });
    const settings = await runnerSettings(flags({ server: 'http://h:7717', tokenFile: 'token', plant: ['gardener'], driver: ['command', 'claude'], maxRuns: '2', poll: '0.5' }), { cwd: dir, env: { XDG_STATE_HOME: path.join(dir, 'xdg') } });
    expect(settings).toMatchObject({ token: 'tok-1', tokenFile: path.join(dir, 'token'), plants: ['gardener'], drivers: ['command', 'claude'], maxRuns: 2, pollMs: 500, workdir: dir });
    expect(settings.name).toBe(defaultRunnerName());
    expect(settings.stateDir).toBe(path.join(dir, 'xdg', 'pak2', `runner-${settings.name}`));
    expect(defaultStateDir('box', { HOME: '/home/u' })).toBe('/home/u/.local/state/pak2/runner-box');
    expect(defaultRunnerName('my host.example.com')).toBe('my-host.example.com');
  });

  it('a runner token names its runner: --name defaults to its name, another --name is refused; a read token is refused', async () => {
    const secret = 'A'.repeat(43);
    const dir = makeTempDir({ runner: `pak2_runner_box_2.a_${secret}\n`, read: `pak2_read_dash_${secret}\n`, ops: `pak2_operator_alice_${secret}\n` });
    const ok = { server: 'http://h:7717', state: 'state' };
    expect((await runnerSettings(flags({ ...ok, tokenFile: 'runner' }), { cwd: dir, env: {} })).name).toBe('box_2.a');
    expect((await runnerSettings(flags({ ...ok, tokenFile: 'runner', name: 'box_2.a' }), { cwd: dir, env: {} })).name).toBe('box_2.a');
    expect(await refusal(flags({ ...ok, tokenFile: 'runner', name: 'other' }), dir)).toBe(`--name other: the token in ${path.join(dir, 'runner')} is runner box_2.a's; a runner token names its runner (leave --name out, or give --name box_2.a)`);
    expect(await refusal(flags({ ...ok, tokenFile: 'read' }), dir)).toMatch(/^--token-file .*read: holds a read token \(dash\); a runner needs a runner token/);
    // An operator token (a made one, or the serve/token file's) leaves the name to --name or the host name.
    expect((await runnerSettings(flags({ ...ok, tokenFile: 'ops', name: 'anyone' }), { cwd: dir, env: {} })).name).toBe('anyone');
    expect((await runnerSettings(flags({ ...ok, tokenFile: 'ops' }), { cwd: dir, env: {} })).name).toBe(defaultRunnerName());
  });

  it('through the CLI: a bad flag is one line and exit 2', async () => {
    const lines: string[] = [];
    const io: CliIO = { out: () => undefined, err: (t) => lines.push(t), env: {}, cwd: makeTempDir(), isTTY: false };
    expect(await main(['node', 'pak2', 'runner', '--token-file', 'x'], io)).toBe(2);
    expect(lines).toEqual(["pak2: --server: required: the garden server's URL, e.g. http://garden-host:7717"]);
  });
});

describe('the runner instance id', () => {
  it('is made once (a ULID in <state>/instance) and kept; another state directory has its own', () => {
    const state = makeTempDir();
    const id = runnerInstance(state);
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(fs.readFileSync(instanceFile(state), 'utf8').trim()).toBe(id);
    expect(runnerInstance(state)).toBe(id);
    expect(runnerInstance(makeTempDir())).not.toBe(id);
  });
});

describe('the state directory lock', () => {
  it('refuses a second runner process on one state directory, and takes over from a dead one', async () => {
    const state = makeTempDir();
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'runner'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => other.once('spawn', resolve));
      fs.writeFileSync(stateLockFile(state), `${other.pid}\n`);
      expect(() => lockStateDir(state)).toThrow(`another pak2 runner (pid ${other.pid}) uses ${state}`);
    } finally {
      other.kill('SIGKILL');
      await new Promise((resolve) => other.once('exit', resolve));
    }
    const release = lockStateDir(state);
    expect(fs.readFileSync(stateLockFile(state), 'utf8').trim()).toBe(String(process.pid));
    release();
    expect(fs.existsSync(stateLockFile(state))).toBe(false);
  });
});
