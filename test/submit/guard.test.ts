/**
 * The submit action's guard and task class (issue 10, item 1): what a
 * guarded goal records, and every refusal, named by its argument.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../source/errors.js';
import { loadGarden } from '../../source/garden/index.js';
import { readGoal } from '../../source/store/index.js';
import { globProblem, submitGoal, type SubmitGoalInput } from '../../source/submit/index.js';
import { makeTestGarden } from '../support/garden.js';

const ROUTING = '[routing.simple]\ntiers = [{ driver = "success" }, { driver = "success", model = "big" }]\n[routing.hard]\ntiers = [{ driver = "success" }]\n';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
beforeEach(async () => {
  garden = await makeTestGarden({ extraToml: ROUTING });
});
afterEach(() => garden.cleanup());

function gitInit(): void {
  execFileSync('git', ['init', '-q'], { cwd: garden.paths.gardenRoot, stdio: 'ignore' });
}

const base: SubmitGoalInput = { type: 'fix', plant: 'gardener', body: 'Fix the parser' };

async function refusal(input: Partial<SubmitGoalInput>): Promise<UserError> {
  const error = await submitGoal(garden, { ...base, ...input }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UserError);
  return error as UserError;
}

function goalFiles(): string[] {
  return fs.existsSync(garden.paths.goalsDir) ? fs.readdirSync(garden.paths.goalsDir).filter((f) => f.endsWith('.json')) : [];
}

describe('submitGoal with a guard', () => {
  it('records exactly the guard fields given, the lists without duplicates, and the task class', async () => {
    gitInit();
    const goal = await submitGoal(garden, {
      ...base,
      guard: { verify: 'npm test', allowedFiles: ['src/**', 'src/**', 'test/*.ts'], forbiddenPaths: ['.env', '!keep/**'], timeoutSeconds: 120, envPassthrough: ['API_KEY'], contractId: 'c-1', redact: false },
      taskClass: 'simple',
    });
    expect(goal.guard).toEqual({ verify: 'npm test', allowed_files: ['src/**', 'test/*.ts'], forbidden_paths: ['.env', '!keep/**'], timeout_seconds: 120, env_passthrough: ['API_KEY'], contract_id: 'c-1', redact: false });
    expect(goal.task_class).toBe('simple');
    expect(await readGoal(garden.paths, goal.id)).toEqual(goal);
  });

  it('an empty guard is a guarded goal with only the [guard] defaults; no guard, no task class: neither field', async () => {
    gitInit();
    const guarded = await submitGoal(garden, { ...base, guard: {} });
    expect(guarded.guard).toEqual({});
    expect(guarded).not.toHaveProperty('task_class');
    const plain = await submitGoal(garden, base);
    expect(plain).not.toHaveProperty('guard');
    expect(plain).not.toHaveProperty('task_class');
  });

  it('a plain goal needs no git repository', async () => {
    const plain = await submitGoal(garden, base);
    expect(plain.id).toBe('1-fix-the-parser');
  });

  it.each<[Partial<SubmitGoalInput>, string]>([
    [{ guard: { verify: 'make check' } }, 'verify: a guarded goal needs a git repository'],
    [{ guard: { allowedFiles: ['src/**'] } }, 'allow: a guarded goal needs a git repository'],
    [{ guard: { forbiddenPaths: ['.env'] } }, 'forbid: a guarded goal needs a git repository'],
    [{ guard: { redact: false } }, 'no-redact: a guarded goal needs a git repository'],
    [{ guard: {} }, 'guard: a guarded goal needs a git repository'],
    [{ taskClass: 'simple' }, 'task-class: a routed goal needs a git repository'],
  ])('refuses %j in a garden that is not a git repository (exit 1), writing nothing', async (input, message) => {
    const error = await refusal(input);
    expect(error.message).toContain(message);
    expect(error.message).toContain(garden.paths.gardenRoot);
    expect(error.message).not.toContain('\n');
    expect(error.exitCode).toBe(1);
    expect(goalFiles()).toEqual([]);
  });

  it.each<[Partial<SubmitGoalInput>, string]>([
    [{ guard: { verify: '   ' } }, 'verify: the command is empty'],
    [{ guard: { allowedFiles: [''] } }, 'allow: an empty glob'],
    [{ guard: { allowedFiles: ['/etc/**'] } }, 'allow /etc/**: an absolute path'],
    [{ guard: { forbiddenPaths: ['src/../../x'] } }, "forbid src/../../x: a '..' segment"],
    [{ guard: { forbiddenPaths: ['!/abs'] } }, 'forbid !/abs: an absolute path'],
    [{ guard: { timeoutSeconds: 0 } }, 'verify-timeout 0: must be a whole number of seconds'],
    [{ guard: { timeoutSeconds: 1.5 } }, 'verify-timeout 1.5: must be a whole number'],
    [{ guard: { envPassthrough: ['1BAD'] } }, 'pass-env 1BAD: not an environment variable name'],
    [{ guard: { envPassthrough: ['A-B'] } }, 'pass-env A-B: not an environment variable name'],
    [{ guard: { contractId: ' ' } }, 'contract: the contract id is empty'],
    [{ taskClass: 'medium' }, 'task-class medium: not a [routing.<class>] in PAK2.toml (classes: hard, simple)'],
    [{ taskClass: 'Bad Class' }, 'task-class Bad Class: not a task class name'],
  ])('refuses %j naming the argument (exit 2), before looking for git', async (input, message) => {
    const error = await refusal(input);
    expect(error.message).toContain(message);
    expect(error.exitCode).toBe(2);
    expect(goalFiles()).toEqual([]);
  });

  it('a garden without [routing] says so for any task class', async () => {
    const bare = await makeTestGarden();
    try {
      const error = await submitGoal(bare, { ...base, taskClass: 'simple' }).catch((e: unknown) => e as UserError);
      expect((error as UserError).message).toMatch(/^task-class simple: not a \[routing\.<class>\] in PAK2\.toml \(no \[routing\.<class>\] table in .*PAK2\.toml\)$/);
    } finally {
      bare.cleanup();
    }
  });

  it('a garden in a subdirectory of a repository is in a git repository', async () => {
    gitInit();
    const sub = `${garden.paths.gardenRoot}/inner`;
    fs.mkdirSync(sub);
    fs.copyFileSync(garden.paths.configFile, `${sub}/PAK2.toml`);
    fs.cpSync(`${garden.paths.gardenRoot}/seeds`, `${sub}/seeds`, { recursive: true });
    const inner = loadGarden(sub);
    const { commissionPlant } = await import('../../source/store/index.js');
    await commissionPlant(inner.paths, 'gardener', 'gardener');
    const goal = await submitGoal(inner, { ...base, guard: { verify: 'true' } });
    expect(goal.guard).toEqual({ verify: 'true' });
  });
});

describe('globProblem', () => {
  it.each([
    ['src/**', undefined],
    ['*.{ts,tsx}', undefined],
    ['!docs/**', undefined],
    ['a/..b/c', undefined],
    ['', 'an empty glob'],
    ['C:/x', 'an absolute path; globs are relative to the garden root'],
    ['~/x', 'an absolute path; globs are relative to the garden root'],
    ['..', "a '..' segment reaches outside the garden root"],
    ['a\\..\\b', "a '..' segment reaches outside the garden root"],
    ['a\nb', 'a glob is one line, without control characters'],
  ])('%j: %s', (glob, problem) => {
    expect(globProblem(glob)).toBe(problem);
  });
});
