import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { UserError } from '../../source/errors.js';
import {
  COORDINATOR_DEFAULTS,
  DEFAULT_GARDEN_NAME,
  ENV_DEFAULT_DRIVER,
  ENV_DEFAULT_MODEL,
  ENV_DEFAULT_REASONING_EFFORT,
  FALLBACK_DRIVER,
  findGardenRoot,
  gardenPaths,
  loadGarden,
  parseConfig,
  resolveSettings,
  runDir,
} from '../../source/garden/index.js';
import { cleanupFixtures, makeGarden, makeTempDir } from '../helpers/fixtures.js';

afterEach(cleanupFixtures);

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs `fn`, expecting a UserError; returns it. */
function userError(fn: () => unknown): UserError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(UserError);
    return error as UserError;
  }
  return expect.fail('expected a UserError');
}

describe('parseConfig defaults', () => {
  it('an empty file gives every default', () => {
    const config = parseConfig('');
    expect(config.gardenName).toBe('garden');
    expect(config.runtimeRoot).toBeUndefined();
    expect(config.defaults).toEqual({});
    expect(config.drivers).toEqual({});
    expect(config.coordinator).toEqual({ intervalSeconds: 60, watchdogSeconds: 300, runTimeoutSeconds: 3600, maxConcurrentRuns: 1, toolSilenceSeconds: 1800, resultGraceSeconds: 10, resultGraceCapSeconds: 1800, conversationSlots: 1 });
    expect(config.tend).toEqual({ triggers: { run_failure: true, queued_attention_needed: true }, priority: 70 });
  });

  it('the exported defaults are the documented ones', () => {
    expect(COORDINATOR_DEFAULTS).toEqual({ interval_seconds: 60, watchdog_seconds: 300, run_timeout_seconds: 3600, max_concurrent_runs: 1, tool_silence_seconds: 1800, result_grace_seconds: 10, result_grace_cap_seconds: 1800, conversation_slots: 1 });
    expect(DEFAULT_GARDEN_NAME).toBe('garden');
  });

  it('a partial [coordinator] keeps the other defaults', () => {
    const config = parseConfig('[coordinator]\nwatchdog_seconds = 42\n');
    expect(config.coordinator).toEqual({ intervalSeconds: 60, watchdogSeconds: 42, runTimeoutSeconds: 3600, maxConcurrentRuns: 1, toolSilenceSeconds: 1800, resultGraceSeconds: 10, resultGraceCapSeconds: 1800, conversationSlots: 1 });
  });

  it('an empty [garden] table keeps the default name', () => {
    expect(parseConfig('[garden]\n').gardenName).toBe('garden');
  });
});

describe('parseConfig values', () => {
  it('reads every key', () => {
    const config = parseConfig(
      [
        '[runtime]',
        'root = ".runtime"',
        '[garden]',
        'name = "orchard"',
        '[defaults]',
        'driver = "claude"',
        'model = "claude-opus-4-6"',
        'reasoning_effort = "high"',
        '[coordinator]',
        'interval_seconds = 5',
        'watchdog_seconds = 30',
        'run_timeout_seconds = 900',
        'max_concurrent_runs = 3',
        'tool_silence_seconds = 600',
        'result_grace_seconds = 0',
        'result_grace_cap_seconds = 120',
        'conversation_slots = 2',
        '[tend]',
        'run_failure = false',
        'queued_attention_needed = true',
        'priority = 40',
        'daily_cap = 5',
        '[guard]',
        'verify = "npm test"',
        'allowed_files = ["src/**"]',
        'forbidden_paths = [".env", ".git/**"]',
        'timeout_seconds = 120',
        'env_passthrough = ["NPM_TOKEN"]',
        'redact = false',
        '[routing.simple]',
        'tiers = [{ driver = "codex", model = "gpt-5-mini", effort = "low" }, { driver = "claude" }]',
        'budget_usd = 1.5',
        '[runners]',
        'lease_ttl_seconds = 90',
        '[webhooks]',
        'allow_link_local = true',
        '[worktree]',
        'setup = "npm ci"',
        'setup_timeout_seconds = 300',
        'copy = [".env"]',
        'keep_days = 3',
        '[merge]',
        'base = "trunk"',
        'mode = "review"',
        'verify = "npm test"',
        'verify_timeout_seconds = 120',
        'on_conflict = "fail"',
        '[budget]',
        'run_usd = 2',
        'goal_usd = 5',
        'plant_day_usd = 10',
        'garden_day_usd = 20',
        'garden_month_usd = 300',
        'timezone = "Europe/Berlin"',
        'warn_ratio = 0.9',
        'unknown_run_usd = 0.5',
        '[[schedule]]',
        'name = "nightly"',
        'cron = "0 3 * * *"',
        'timezone = "Europe/Paris"',
        'overlap = "allow"',
        'enabled = false',
        'type = "fix"',
        'plant = "gardener"',
        'body = "Tidy"',
        'priority = 70',
        'driver = "codex"',
        'model = "gpt-5-mini"',
        'guard = { verify = "npm test", allowed_files = ["src/**"] }',
        '[[schedule]]',
        'name = "weekly"',
        'cron = "0 9 * * MON"',
        'body = "Review the week"',
      ].join('\n'),
    );
    expect(config).toEqual({
      gardenName: 'orchard',
      runtimeRoot: '.runtime',
      defaults: { driver: 'claude', model: 'claude-opus-4-6', reasoning_effort: 'high' },
      coordinator: { intervalSeconds: 5, watchdogSeconds: 30, runTimeoutSeconds: 900, maxConcurrentRuns: 3, toolSilenceSeconds: 600, resultGraceSeconds: 0, resultGraceCapSeconds: 120, conversationSlots: 2 },
      tend: { triggers: { run_failure: false, queued_attention_needed: true }, priority: 40, dailyCap: 5 },
      drivers: {},
      guard: { verify: 'npm test', allowedFiles: ['src/**'], forbiddenPaths: ['.env', '.git/**'], timeoutSeconds: 120, envPassthrough: ['NPM_TOKEN'], redact: false },
      routing: { simple: { tiers: [{ driver: 'codex', model: 'gpt-5-mini', effort: 'low' }, { driver: 'claude' }], maxEscalations: 1, budgetUsd: 1.5 } },
      runners: { leaseTtlSeconds: 90 },
      webhooks: { allowLinkLocal: true },
      worktree: { setup: ['sh', '-c', 'npm ci'], setupTimeoutSeconds: 300, copy: ['.env'], keepDays: 3 },
      merge: { base: 'trunk', mode: 'review', verify: 'npm test', verifyTimeoutSeconds: 120, onConflict: 'fail' },
      budget: { runUsd: 2, goalUsd: 5, plantDayUsd: 10, gardenDayUsd: 20, gardenMonthUsd: 300, timezone: 'Europe/Berlin', warnRatio: 0.9, unknownRunUsd: 0.5 },
      schedules: [
        {
          name: 'nightly',
          cron: '0 3 * * *',
          timezone: 'Europe/Paris',
          overlap: 'allow',
          enabled: false,
          goal: { type: 'fix', plant: 'gardener', body: 'Tidy', priority: 70, driver: 'codex', model: 'gpt-5-mini', guard: { verify: 'npm test', allowed_files: ['src/**'] } },
        },
        { name: 'weekly', cron: '0 9 * * MON', timezone: 'UTC', overlap: 'skip', enabled: true, goal: { type: 'build', plant: 'gardener', body: 'Review the week' } },
      ],
    });
  });

  it('refuses bad [[schedule]] values with one line naming schedule[N] and the key', () => {
    const entry = (extra: string, base = 'name = "a"\ncron = "* * * * *"\nbody = "x"\n') => `[[schedule]]\n${base}${extra}`;
    const one = (text: string) => {
      try {
        parseConfig(text);
      } catch (error) {
        return (error as Error).message;
      }
      return 'loaded';
    };
    expect(one(entry('', 'name = "a"\ncron = "61 * * * *"\nbody = "x"\n'))).toBe('PAK2.toml: schedule[1].cron: INVALID_CONFIG_VALUE (must be a cron line such as "*/15 * * * *" (Invalid value for minute: 61); got "61 * * * *")');
    expect(one(entry('timezone = "Mars/Base"\n'))).toBe('PAK2.toml: schedule[1].timezone: INVALID_CONFIG_VALUE (must be an IANA timezone such as "UTC" or "Europe/Paris"; got "Mars/Base")');
    expect(one(entry('', 'name = "a"\nbody = "x"\n'))).toBe('PAK2.toml: schedule[1].cron: MISSING_REQUIRED_FIELD (required: a cron line such as "*/15 * * * *")');
    expect(one(entry('', 'cron = "* * * * *"\nbody = "x"\n'))).toMatch(/^PAK2\.toml: schedule\[1\]\.name: MISSING_REQUIRED_FIELD \(required: a name of lower-case letters/);
    expect(one(entry('', 'name = "a"\ncron = "* * * * *"\n'))).toBe('PAK2.toml: schedule[1].body: MISSING_REQUIRED_FIELD (required: the task, a non-empty string)');
    expect(one(entry('', 'name = "a"\ncron = "* * * * *"\nbody = "  "\n'))).toBe('PAK2.toml: schedule[1].body: INVALID_CONFIG_VALUE (must be the task, a non-empty string; got "  ")');
    expect(one(entry('overlap = "never"\n'))).toBe('PAK2.toml: schedule[1].overlap: INVALID_CONFIG_VALUE (must be "skip" (no new goal while the last one is open) or "allow"; got "never")');
    expect(one(entry('priority = 101\n'))).toBe('PAK2.toml: schedule[1].priority: INVALID_CONFIG_VALUE (must be a whole number from 0 to 100; got 101)');
    expect(one(entry('colour = "red"\n'))).toBe('PAK2.toml: schedule[1].colour: UNKNOWN_CONFIG_KEY (not a [[schedule]] key; got "red")');
    expect(one(entry('driver = "cluade"\n'))).toBe('PAK2.toml: schedule[1].driver: INVALID_CONFIG_VALUE (claude, codex, command or a [drivers.<name>] table; got "cluade")');
    expect(one(entry('guard = { verify = "" }\n'))).toMatch(/^PAK2\.toml: schedule\[1\]\.guard\.verify: INVALID_CONFIG_VALUE/);
    expect(one(`${entry('')}${entry('timezone = "Nowhere"\n', 'name = "a"\ncron = "* * * * *"\nbody = "x"\n')}`)).toBe(
      'PAK2.toml: 2 problems: schedule[2].name: INVALID_CONFIG_VALUE (schedule[1] has the same name; got "a"); schedule[2].timezone: INVALID_CONFIG_VALUE (must be an IANA timezone such as "UTC" or "Europe/Paris"; got "Nowhere")',
    );
    expect(one('schedule = "nightly"\n')).toBe('PAK2.toml: schedule: INVALID_CONFIG_VALUE (must be an array of [[schedule]] tables; got "nightly")');
    expect(parseConfig('').schedules).toEqual([]);
  });

  it('[budget]: defaults (UTC, 0.8, unknown runs count as the run cap, else $1); every bad value is one line naming its key', () => {
    expect(parseConfig('').budget).toEqual({ timezone: 'UTC', warnRatio: 0.8, unknownRunUsd: 1 });
    expect(parseConfig('[budget]\nrun_usd = 0.25\n').budget).toEqual({ runUsd: 0.25, timezone: 'UTC', warnRatio: 0.8, unknownRunUsd: 0.25 });
    expect(() => parseConfig('[budget]\ngarden_day_usd = -1\n')).toThrow('budget.garden_day_usd: INVALID_CONFIG_VALUE (must be an amount in USD greater than 0; got -1)');
    expect(() => parseConfig('[budget]\nrun_usd = "ten"\n')).toThrow('budget.run_usd: INVALID_CONFIG_VALUE (must be an amount in USD greater than 0; got "ten")');
    expect(() => parseConfig('[budget]\ntimezone = "Mars/Olympus"\n')).toThrow('budget.timezone: INVALID_CONFIG_VALUE (must be an IANA timezone such as "UTC" or "Europe/Paris"; got "Mars/Olympus")');
    expect(() => parseConfig('[budget]\nwarn_ratio = 1.5\n')).toThrow('budget.warn_ratio: INVALID_CONFIG_VALUE (must be a share of a cap between 0 and 1 (e.g. 0.8); got 1.5)');
    expect(() => parseConfig('[budget]\nday_usd = 3\n')).toThrow('budget.day_usd: UNKNOWN_CONFIG_KEY');
  });

  it('refuses bad [tend] and conversation_slots values with one line naming the key (docs/automatic-tend/level2.md)', () => {
    expect(() => parseConfig('[tend]\nrun_failure = "no"\n')).toThrow('PAK2.toml: tend.run_failure: INVALID_CONFIG_VALUE (must be true or false; got "no")');
    expect(() => parseConfig('[tend]\nqueued_attention_needed = 0\n')).toThrow('PAK2.toml: tend.queued_attention_needed: INVALID_CONFIG_VALUE (must be true or false; got 0)');
    expect(() => parseConfig('[tend]\npriority = 101\n')).toThrow('PAK2.toml: tend.priority: INVALID_CONFIG_VALUE (must be a whole number from 0 to 100; got 101)');
    expect(() => parseConfig('[tend]\ndaily_cap = -1\n')).toThrow('PAK2.toml: tend.daily_cap: INVALID_CONFIG_VALUE (must be a whole number of automatic tends a day, from 0 to 10000; got -1)');
    expect(() => parseConfig('[tend]\ndaily_cap = 2.5\n')).toThrow('PAK2.toml: tend.daily_cap: INVALID_CONFIG_VALUE');
    expect(() => parseConfig('[tend]\nrun_failures = false\n')).toThrow('PAK2.toml: tend.run_failures: UNKNOWN_CONFIG_KEY (not a PAK2.toml key; got false)');
    expect(() => parseConfig('[coordinator]\nconversation_slots = 65\n')).toThrow('PAK2.toml: coordinator.conversation_slots: INVALID_CONFIG_VALUE (must be a whole number from 0 to 64 (0: conversation replies share max_concurrent_runs); got 65)');
    expect(parseConfig('[tend]\ndaily_cap = 0\n').tend).toEqual({ triggers: { run_failure: true, queued_attention_needed: true }, priority: 70, dailyCap: 0 });
    expect(parseConfig('[coordinator]\nconversation_slots = 0\n').coordinator.conversationSlots).toBe(0);
  });

  it('refuses bad [coordinator] isolation, [worktree] and [merge] values, naming each key', () => {
    expect(() => parseConfig('[coordinator]\nisolation = "box"\n')).toThrow('coordinator.isolation: INVALID_CONFIG_VALUE (must be "worktree" (a git worktree per run) or "tree" (every run in the garden\'s own tree); got "box")');
    expect(() => parseConfig('[merge]\nmode = "yolo"\n')).toThrow(/merge\.mode: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[merge]\non_conflict = "merge"\n')).toThrow(/merge\.on_conflict: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[merge]\nbase = "../main"\n')).toThrow(/merge\.base: INVALID_CONFIG_VALUE \(a git branch name/);
    expect(() => parseConfig('[merge]\nverify = ["npm", "test"]\n')).toThrow(/merge\.verify: INVALID_CONFIG_VALUE \(must be a command line as one string, run by the shell in the merged result \(e\.g\. "npm test"\); got \["npm","test"\]\)/);
    expect(() => parseConfig('[defaults]\ndriver = "cluade"\n')).toThrow(/defaults\.driver: INVALID_CONFIG_VALUE \(claude, codex, command or a \[drivers\.<name>\] table; got "cluade"\)/);
    expect(parseConfig('[defaults]\ndriver = "mine"\n[drivers.mine]\ncommand = ["x"]\n').defaults.driver).toBe("mine");
    expect(() => parseConfig('[worktree]\ncopy = ["/etc/passwd"]\n')).toThrow(/worktree\.copy\.0: INVALID_CONFIG_VALUE \(an absolute path/);
    expect(() => parseConfig('[worktree]\nsetup = []\n')).toThrow(/worktree\.setup: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[worktree]\nkeep_days = -1\n')).toThrow(/worktree\.keep_days: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[merge]\nverfy = "x"\n')).toThrow(/merge\.verfy: UNKNOWN_CONFIG_KEY/);
    expect(parseConfig('').isolation).toBeUndefined();
    expect(parseConfig('').merge).toEqual({ mode: 'auto', verifyTimeoutSeconds: 600, onConflict: 'requeue' });
  });

  it('refuses bad [guard] and [routing] values, naming each key', () => {
    expect(() => parseConfig('[guard]\ntimeout_seconds = 0\n')).toThrow(/guard\.timeout_seconds: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[guard]\nenv_passthrough = ["BAD NAME"]\n')).toThrow(/guard\.env_passthrough\.0: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[guard]\nverifi = "x"\n')).toThrow(/UNKNOWN_CONFIG_KEY/);
    expect(() => parseConfig('[routing.simple]\ntiers = []\n')).toThrow(/routing\.simple\.tiers: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[routing.simple]\ntiers = [{ model = "x" }]\n')).toThrow(/routing\.simple\.tiers\.0\.driver/);
    expect(() => parseConfig('[routing.simple]\ntiers = [{ driver = "claude" }]\nbudget_usd = -1\n')).toThrow(/routing\.simple\.budget_usd: INVALID_CONFIG_VALUE/);
    expect(() => parseConfig('[guard]\nforbidden_paths = ["/etc", "../x"]\n')).toThrow(/2 problems: guard\.forbidden_paths\.0: INVALID_CONFIG_VALUE \(an absolute path.*guard\.forbidden_paths\.1: INVALID_CONFIG_VALUE \(a '\.\.' segment/);
    expect(() => parseConfig('[routing.bad]\ntiers = [{ driver = "nope" }]\n')).toThrow(/routing\.bad\.tiers\.0\.driver: INVALID_CONFIG_VALUE \(claude, codex, command or a \[drivers\.<name>\] table; got "nope"\)/);
    expect(parseConfig('[drivers.mine]\ncommand = "x"\n[routing.ok]\ntiers = [{ driver = "mine" }]\n').routing.ok!.tiers[0]!.driver).toBe('mine');
  });

  it('normalises [drivers.x].command to an array: a string, an array, absent', () => {
    const config = parseConfig(
      ['[drivers.one]', 'command = "my-agent"', '[drivers.two]', 'command = ["node", "agent.mjs", "--fast"]', '[drivers.three]'].join('\n'),
    );
    expect(config.drivers).toEqual({
      one: { command: ['my-agent'] },
      two: { command: ['node', 'agent.mjs', '--fast'] },
      three: {},
    });
  });

  it('a command string with spaces stays one argv element (it is not shell-split)', () => {
    expect(parseConfig('[drivers.x]\ncommand = "/opt/my agent/bin"\n').drivers.x).toEqual({ command: ['/opt/my agent/bin'] });
  });
});

describe('parseConfig errors', () => {
  it('a TOML syntax error is a one-line UserError naming the file and the line', () => {
    const file = '/gardens/g1/PAK2.toml';
    const error = userError(() => parseConfig('[coordinator]\ninterval_seconds = 60\nwatchdog_seconds = = 3\n', file));
    expect(error.message).not.toContain('\n');
    expect(error.message.startsWith(`${file}:`)).toBe(true);
    expect(error.message).toMatch(/\bline 3\b/);
  });

  it('an unterminated table header names its line', () => {
    const error = userError(() => parseConfig('[garden]\nname = "x"\n\n[coordinator\n', 'PAK2.toml'));
    expect(error.message).not.toContain('\n');
    expect(error.message).toMatch(/^PAK2\.toml: line 4\b/);
  });

  it('a duplicate key is a syntax error', () => {
    const error = userError(() => parseConfig('[garden]\nname = "a"\nname = "b"\n'));
    expect(error.message).toMatch(/^PAK2\.toml: line \d+/);
  });

  it('a negative watchdog_seconds names the key and INVALID_CONFIG_VALUE', () => {
    const error = userError(() => parseConfig('[coordinator]\nwatchdog_seconds = -5\n', 'my.toml'));
    expect(error.message).not.toContain('\n');
    expect(error.message).toContain('my.toml');
    expect(error.message).toContain('coordinator.watchdog_seconds');
    expect(error.message).toContain('INVALID_CONFIG_VALUE');
  });

  it('a string interval_seconds names the key and INVALID_CONFIG_VALUE', () => {
    const error = userError(() => parseConfig('[coordinator]\ninterval_seconds = "60"\n'));
    expect(error.message).toContain('coordinator.interval_seconds');
    expect(error.message).toContain('INVALID_CONFIG_VALUE');
  });

  it('a fractional run_timeout_seconds is refused', () => {
    const error = userError(() => parseConfig('[coordinator]\nrun_timeout_seconds = 1.5\n'));
    expect(error.message).toContain('coordinator.run_timeout_seconds');
    expect(error.message).toContain('INVALID_CONFIG_VALUE');
  });

  it('an unknown key is named with UNKNOWN_CONFIG_KEY', () => {
    const error = userError(() => parseConfig('[coordinator]\nintervall_seconds = 5\n'));
    expect(error.message).toContain('coordinator.intervall_seconds');
    expect(error.message).toContain('UNKNOWN_CONFIG_KEY');
  });

  it('an unknown table is named with UNKNOWN_CONFIG_KEY', () => {
    const error = userError(() => parseConfig('[coordinatr]\ninterval_seconds = 5\n'));
    expect(error.message).toContain('coordinatr');
    expect(error.message).toContain('UNKNOWN_CONFIG_KEY');
  });

  it('several issues: every one named at once, with the value given', () => {
    const error = userError(() => parseConfig('[garden]\nname = "Bad Name"\n[coordinator]\nwatchdog_seconds = 0\n'));
    expect(error.message).not.toContain('\n');
    expect(error.message).toContain('2 problems: ');
    expect(error.message).toContain('garden.name: INVALID_CONFIG_VALUE');
    expect(error.message).toContain('got "Bad Name"');
    expect(error.message).toContain('coordinator.watchdog_seconds: INVALID_CONFIG_VALUE (must be a whole number of seconds from 1 to 2147483; got 0)');
  });

  it('TOML inf and nan are named as written, not as JSON null', () => {
    expect(userError(() => parseConfig('[coordinator]\nresult_grace_cap_seconds = inf\n')).message).toContain('coordinator.result_grace_cap_seconds: INVALID_CONFIG_VALUE (must be a whole number of seconds from 1 to 2147483; got inf)');
    expect(userError(() => parseConfig('[coordinator]\nresult_grace_seconds = -inf\n')).message).toContain('got -inf)');
    expect(userError(() => parseConfig('[coordinator]\nresult_grace_cap_seconds = nan\n')).message).toContain('got nan)');
  });

  it('a bad garden name and an empty command are refused', () => {
    expect(userError(() => parseConfig('[garden]\nname = "../up"\n')).message).toContain('garden.name');
    expect(userError(() => parseConfig('[drivers.x]\ncommand = ""\n')).message).toContain('drivers.x.command');
  });
});

describe('gardenPaths', () => {
  it('legacy layout: no [runtime].root means runtime root == garden root, not split', () => {
    const paths = gardenPaths('/g');
    expect(paths.gardenRoot).toBe(path.resolve('/g'));
    expect(paths.runtimeRoot).toBe(paths.gardenRoot);
    expect(paths.split).toBe(false);
    expect(paths.goalsDir).toBe(path.join(paths.gardenRoot, 'goals'));
    expect(paths.runsDir).toBe(path.join(paths.gardenRoot, 'runs'));
    expect(paths.coordinatorLog).toBe(path.join(paths.gardenRoot, 'events', 'coordinator.jsonl'));
  });

  it('split layout: runtime paths move under [runtime].root, authored paths stay at the garden root', () => {
    const paths = gardenPaths('/g', '.runtime');
    const rt = path.join(path.resolve('/g'), '.runtime');
    expect(paths.runtimeRoot).toBe(rt);
    expect(paths.split).toBe(true);
    expect(paths.goalsDir).toBe(path.join(rt, 'goals'));
    expect(paths.runsDir).toBe(path.join(rt, 'runs'));
    expect(paths.eventsDir).toBe(path.join(rt, 'events'));
    expect(paths.coordinatorLog).toBe(path.join(rt, 'events', 'coordinator.jsonl'));
    expect(paths.historyDir).toBe(path.join(rt, 'history'));
    expect(paths.inboxDir).toBe(path.join(rt, 'inbox'));
    expect(paths.conversationsDir).toBe(path.join(rt, 'conversations'));
    expect(paths.dashboardDir).toBe(path.join(rt, 'dashboard'));
    expect(paths.configFile).toBe(path.join(path.resolve('/g'), 'PAK2.toml'));
    expect(paths.plantsDir).toBe(path.join(path.resolve('/g'), 'plants'));
    expect(paths.seedsDir).toBe(path.join(path.resolve('/g'), 'seeds'));
    expect(paths.motivationFile).toBe(path.join(path.resolve('/g'), 'MOTIVATION.md'));
    expect(runDir(paths, '1-a-r1')).toBe(path.join(rt, 'runs', '1-a-r1'));
  });

  it('a [runtime].root that resolves to the garden root is not split', () => {
    expect(gardenPaths('/g', '.').split).toBe(false);
    expect(gardenPaths('/g', './').split).toBe(false);
    expect(gardenPaths('/g', '/g').split).toBe(false);
  });

  it('an absolute [runtime].root is used as is', () => {
    const paths = gardenPaths('/g', '/var/pak2-runtime');
    expect(paths.runtimeRoot).toBe(path.resolve('/var/pak2-runtime'));
    expect(paths.split).toBe(true);
  });

  it('a relative garden root is made absolute', () => {
    const paths = gardenPaths('some/dir');
    expect(path.isAbsolute(paths.gardenRoot)).toBe(true);
    expect(paths.gardenRoot).toBe(path.resolve('some/dir'));
  });
});

describe('loadGarden', () => {
  it('loads a split garden', () => {
    const garden = makeGarden({ 'PAK2.toml': '[runtime]\nroot = ".runtime"\n[garden]\nname = "orchard"\n' });
    expect(garden.paths.gardenRoot).toBe(path.resolve(garden.root));
    expect(garden.paths.runtimeRoot).toBe(path.join(path.resolve(garden.root), '.runtime'));
    expect(garden.paths.split).toBe(true);
    expect(garden.config.gardenName).toBe('orchard');
    expect(garden.config.runtimeRoot).toBe('.runtime');
  });

  it('loads a legacy garden (runtime root == garden root)', () => {
    const garden = makeGarden({ 'PAK2.toml': '[garden]\nname = "legacy"\n' });
    expect(garden.paths.runtimeRoot).toBe(garden.paths.gardenRoot);
    expect(garden.paths.split).toBe(false);
    expect(garden.paths.goalsDir).toBe(path.join(garden.paths.gardenRoot, 'goals'));
    expect(garden.config.runtimeRoot).toBeUndefined();
  });

  it('a missing PAK2.toml is a UserError naming the directory', () => {
    const dir = makeTempDir({ 'README.md': 'not a garden' });
    const error = userError(() => loadGarden(dir));
    expect(error.message).toContain(dir);
    expect(error.message).toContain('PAK2.toml');
  });

  it('a missing directory is a UserError naming it', () => {
    const dir = path.join(makeTempDir(), 'does-not-exist');
    const error = userError(() => loadGarden(dir));
    expect(error.message).toContain(dir);
  });

  it('a syntax error names the full path of PAK2.toml and the line', () => {
    const dir = makeTempDir({ 'PAK2.toml': '[garden]\nname = "ok"\n\nbroken line here\n' });
    const error = userError(() => loadGarden(dir));
    expect(error.message).not.toContain('\n');
    expect(error.message).toContain(path.join(dir, 'PAK2.toml'));
    expect(error.message).toMatch(/line 4\b/);
  });

  it('a bad value names the file, the key and the code', () => {
    const dir = makeTempDir({ 'PAK2.toml': '[coordinator]\nwatchdog_seconds = -1\n' });
    const error = userError(() => loadGarden(dir));
    expect(error.message).toContain(path.join(dir, 'PAK2.toml'));
    expect(error.message).toContain('coordinator.watchdog_seconds');
    expect(error.message).toContain('INVALID_CONFIG_VALUE');
  });

  it('search: true finds the garden from a nested directory', () => {
    const garden = makeGarden({ 'src/deep/nested/file.txt': 'x' });
    const loaded = loadGarden(path.join(garden.root, 'src', 'deep', 'nested'), { search: true });
    expect(loaded.paths.gardenRoot).toBe(path.resolve(garden.root));
  });

  it('without search a nested directory is not a garden', () => {
    const garden = makeGarden({ 'src/file.txt': 'x' });
    expect(() => loadGarden(path.join(garden.root, 'src'))).toThrow(UserError);
  });
});

describe('findGardenRoot', () => {
  it('returns the directory itself when it holds PAK2.toml', () => {
    const dir = makeTempDir({ 'PAK2.toml': '' });
    expect(findGardenRoot(dir)).toBe(path.resolve(dir));
  });

  it('returns the nearest ancestor holding PAK2.toml', () => {
    const dir = makeTempDir({ 'PAK2.toml': '', 'a/PAK2.toml': '', 'a/b/c/x.txt': '' });
    expect(findGardenRoot(path.join(dir, 'a', 'b', 'c'))).toBe(path.join(path.resolve(dir), 'a'));
    expect(findGardenRoot(path.join(dir, 'a'))).toBe(path.join(path.resolve(dir), 'a'));
  });

  it('throws a UserError naming the start directory when no ancestor holds one', () => {
    const dir = makeTempDir({ 'x/y/z.txt': '' });
    const start = path.join(dir, 'x', 'y');
    let ancestorHasConfig = false;
    for (let d = start; ; d = path.dirname(d)) {
      if (fs.existsSync(path.join(d, 'PAK2.toml'))) ancestorHasConfig = true;
      if (path.dirname(d) === d) break;
    }
    expect(ancestorHasConfig, 'the temp directory must not sit inside a garden').toBe(false);
    const error = userError(() => findGardenRoot(start));
    expect(error.message).toContain(start);
  });
});

describe('resolveSettings override chain', () => {
  const plugins: Record<string, { model?: string; reasoningEffort?: string }> = {
    codex: { model: 'gpt-5.4', reasoningEffort: 'xhigh' },
    claude: { model: 'claude-opus-4-6' },
  };
  const pluginDefaults = (driver: string) => plugins[driver] ?? {};
  const noToml = { defaults: {} };
  const toml = { defaults: { driver: 'claude', model: 'toml-model', reasoning_effort: 'toml-effort' } };
  const env = { [ENV_DEFAULT_DRIVER]: 'envdriver', [ENV_DEFAULT_MODEL]: 'env-model', [ENV_DEFAULT_REASONING_EFFORT]: 'env-effort' };

  it('uses the documented env variable names and fallback driver', () => {
    expect([ENV_DEFAULT_DRIVER, ENV_DEFAULT_MODEL, ENV_DEFAULT_REASONING_EFFORT]).toEqual([
      'PAK2_DEFAULT_DRIVER',
      'PAK2_DEFAULT_MODEL',
      'PAK2_DEFAULT_REASONING_EFFORT',
    ]);
    expect(FALLBACK_DRIVER).toBe('codex');
  });

  it('the goal wins over env, toml and plugin', () => {
    const resolved = resolveSettings({ driver: 'goaldriver', model: 'goal-model', reasoning_effort: 'goal-effort' }, toml, env, pluginDefaults);
    expect(resolved).toEqual({
      driver: 'goaldriver',
      model: 'goal-model',
      reasoningEffort: 'goal-effort',
      sources: { driver: 'goal', model: 'goal', reasoningEffort: 'goal' },
    });
  });

  it('env wins over toml and plugin when the goal says nothing', () => {
    const resolved = resolveSettings({}, toml, env, pluginDefaults);
    expect(resolved).toEqual({
      driver: 'envdriver',
      model: 'env-model',
      reasoningEffort: 'env-effort',
      sources: { driver: 'env', model: 'env', reasoningEffort: 'env' },
    });
  });

  it('toml [defaults] wins over the plugin when goal and env say nothing', () => {
    const resolved = resolveSettings({}, toml, {}, pluginDefaults);
    expect(resolved).toEqual({
      driver: 'claude',
      model: 'toml-model',
      reasoningEffort: 'toml-effort',
      sources: { driver: 'toml', model: 'toml', reasoningEffort: 'toml' },
    });
  });

  it('falls back to codex and its plugin defaults', () => {
    const resolved = resolveSettings({}, noToml, {}, pluginDefaults);
    expect(resolved).toEqual({
      driver: 'codex',
      model: 'gpt-5.4',
      reasoningEffort: 'xhigh',
      sources: { driver: 'plugin', model: 'plugin', reasoningEffort: 'plugin' },
    });
  });

  it('model and effort come from the defaults of the driver that was chosen', () => {
    const spy = vi.fn(pluginDefaults);
    const resolved = resolveSettings({ driver: 'claude' }, noToml, {}, spy);
    expect(spy).toHaveBeenCalledWith('claude');
    expect(resolved.model).toBe('claude-opus-4-6');
    expect(resolved.sources.model).toBe('plugin');
    expect(resolved.reasoningEffort).toBeUndefined();
    expect(resolved.sources.reasoningEffort).toBe('none');
  });

  it('each setting walks the chain on its own', () => {
    const resolved = resolveSettings(
      { model: 'goal-model' },
      { defaults: { reasoning_effort: 'toml-effort' } },
      { [ENV_DEFAULT_DRIVER]: 'claude' },
      pluginDefaults,
    );
    expect(resolved).toEqual({
      driver: 'claude',
      model: 'goal-model',
      reasoningEffort: 'toml-effort',
      sources: { driver: 'env', model: 'goal', reasoningEffort: 'toml' },
    });
  });

  it('empty strings do not count as a setting', () => {
    const resolved = resolveSettings({ driver: '', model: '' }, toml, { [ENV_DEFAULT_DRIVER]: '', [ENV_DEFAULT_MODEL]: '' }, pluginDefaults);
    expect(resolved.driver).toBe('claude');
    expect(resolved.sources.driver).toBe('toml');
    expect(resolved.model).toBe('toml-model');
    expect(resolved.sources.model).toBe('toml');
  });

  it('an unknown driver with no defaults leaves model and effort unset', () => {
    const resolved = resolveSettings({ driver: 'mystery' }, noToml, {}, pluginDefaults);
    expect(resolved).toEqual({
      driver: 'mystery',
      model: undefined,
      reasoningEffort: undefined,
      sources: { driver: 'goal', model: 'none', reasoningEffort: 'none' },
    });
  });

  it('works with a config loaded from PAK2.toml', () => {
    const garden = makeGarden({ 'PAK2.toml': '[defaults]\ndriver = "claude"\nmodel = "m1"\n' });
    const resolved = resolveSettings({}, garden.config, {}, pluginDefaults);
    expect(resolved.driver).toBe('claude');
    expect(resolved.model).toBe('m1');
    expect(resolved.sources).toEqual({ driver: 'toml', model: 'toml', reasoningEffort: 'none' });
  });
});

describe('PAK2.toml.example', () => {
  it('parses with parseConfig when it exists at the repo root', () => {
    const file = path.join(REPO_ROOT, 'PAK2.toml.example');
    const exists = fs.existsSync(file);
    if (exists) {
      const config = parseConfig(fs.readFileSync(file, 'utf8'), file);
      expect(config.coordinator.intervalSeconds).toBeGreaterThan(0);
    }
    expect(typeof exists).toBe('boolean');
  });
});
