/**
 * `pak2 submit`'s guard flags (issue 10, item 1): each flag lands on the
 * goal's `guard` exactly as given, and each refusal is one line naming the
 * flag, with a non-zero exit and nothing written.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

const ROUTING = '[routing.simple]\ntiers = [{ driver = "success" }, { driver = "success", model = "big" }]\n[routing.hard]\ntiers = [{ driver = "success" }]\n';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden({ extraToml: ROUTING });
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

const submit = ['submit', '--plant', 'gardener', '--type', 'fix', '--body', 'Fix the parser'];

function gitInit(): void {
  execFileSync('git', ['init', '-q'], { cwd: garden.paths.gardenRoot, stdio: 'ignore' });
}

function goalFiles(): string[] {
  return fs.existsSync(garden.paths.goalsDir) ? fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json')) : [];
}

function readGoalFile(id: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, `${id}.json`), 'utf8')) as Record<string, unknown>;
}

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('pak2 submit guard flags', () => {
  it.each<[string[], Record<string, unknown> | undefined, string | undefined]>([
    [['--verify', 'npm test'], { verify: 'npm test' }, undefined],
    [['--allow', 'src/**', '--allow', 'test/*.ts'], { allowed_files: ['src/**', 'test/*.ts'] }, undefined],
    [['--forbid', '.env', '--forbid', '.git/**'], { forbidden_paths: ['.env', '.git/**'] }, undefined],
    [['--verify-timeout', '90'], { timeout_seconds: 90 }, undefined],
    [['--pass-env', 'API_KEY', '--pass-env', 'OTHER_KEY'], { env_passthrough: ['API_KEY', 'OTHER_KEY'] }, undefined],
    [['--contract', 'contract-123'], { contract_id: 'contract-123' }, undefined],
    [['--no-redact'], { redact: false }, undefined],
    [['--guard'], {}, undefined],
    [['--task-class', 'simple'], undefined, 'simple'],
    [['--verify', 'make check', '--forbid', '.env', '--task-class', 'hard'], { verify: 'make check', forbidden_paths: ['.env'] }, 'hard'],
  ])('%j writes guard %j and task_class %j', async (flags, guard, taskClass) => {
    gitInit();
    const r = await runCli([...submit, ...g, ...flags, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const printed = JSON.parse(r.stdout) as Record<string, unknown>;
    const goal = readGoalFile(printed.id as string);
    expect(goal).toEqual(printed);
    if (guard) expect(goal.guard).toEqual(guard);
    else expect(goal).not.toHaveProperty('guard');
    if (taskClass) expect(goal.task_class).toBe(taskClass);
    else expect(goal).not.toHaveProperty('task_class');
  });

  it('without a guard flag the goal has no guard (and needs no git)', async () => {
    const r = await runCli([...submit, ...g]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(readGoalFile(r.stdout.trim())).not.toHaveProperty('guard');
  });

  it.each<[string[], string]>([
    [['--verify', 'npm test'], '--verify: a guarded goal needs a git repository; the garden '],
    [['--allow', 'src/**'], '--allow: a guarded goal needs a git repository'],
    [['--forbid', '.env'], '--forbid: a guarded goal needs a git repository'],
    [['--verify-timeout', '5'], '--verify-timeout: a guarded goal needs a git repository'],
    [['--pass-env', 'KEY'], '--pass-env: a guarded goal needs a git repository'],
    [['--contract', 'c'], '--contract: a guarded goal needs a git repository'],
    [['--no-redact'], '--no-redact: a guarded goal needs a git repository'],
    [['--guard'], '--guard: a guarded goal needs a git repository'],
    [['--task-class', 'simple'], '--task-class: a routed goal needs a git repository'],
  ])('%j outside a git repository: one line naming the flag, exit 1, nothing written', async (flags, message) => {
    const r = await runCli([...submit, ...g, ...flags]);
    expect(r.code).toBe(1);
    const line = oneLineError(r.stderr);
    expect(line).toContain(message);
    expect(line).toContain('not a git repository');
    expect(r.stdout).toBe('');
    expect(goalFiles()).toEqual([]);
  });

  it.each<[string[], string]>([
    [['--task-class', 'medium'], '--task-class medium: not a [routing.<class>] in PAK2.toml (classes: hard, simple)'],
    [['--task-class', 'UPPER'], '--task-class UPPER: not a task class name'],
    [['--allow', ''], '--allow: an empty glob'],
    [['--allow', '/etc/passwd'], '--allow /etc/passwd: an absolute path; globs are relative to the garden root'],
    [['--forbid', '../outside/**'], "--forbid ../outside/**: a '..' segment reaches outside the garden root"],
    [['--pass-env', '9LIVES'], '--pass-env 9LIVES: not an environment variable name'],
    [['--pass-env', 'MY-VAR'], '--pass-env MY-VAR: not an environment variable name'],
    [['--verify', ' '], '--verify: the command is empty'],
    [['--contract', ''], '--contract: the contract id is empty'],
    [['--verify-timeout', '0'], 'pak2: --verify-timeout 0: must be a whole number of seconds from 1 to 2147483'],
    [['--verify-timeout', 'soon'], 'pak2: --verify-timeout soon: must be a whole number of seconds from 1 to 2147483'],
    [['--verify-timeout', '2147484'], 'pak2: --verify-timeout 2147484: must be a whole number of seconds from 1 to 2147483'],
  ])('refuses %j with one line naming the flag, exit 2, nothing written', async (flags, message) => {
    gitInit();
    const r = await runCli([...submit, ...g, ...flags]);
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain(message);
    expect(r.stderr).not.toContain('option \'');
    expect(r.stdout).toBe('');
    expect(goalFiles()).toEqual([]);
  });

  it('--help lists every guard flag', async () => {
    const r = await runCli(['submit', '--help']);
    for (const flag of ['--verify <cmd>', '--allow <glob>', '--forbid <glob>', '--verify-timeout <seconds>', '--pass-env <name>', '--contract <id>', '--no-redact', '--guard', '--task-class <name>']) {
      expect(r.stdout).toContain(flag);
    }
  });
});
