import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { runCli } from '../support/cli.js';
import { readGoal, writeSchedulesState } from '../../source/store/index.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
afterEach(() => garden?.cleanup());

/** An operator's own PAK2.toml lines: comments, odd spacing, a schedule of their own, a table after it. */
const OPERATOR_TOML = [
  '',
  '# my schedules',
  '[[schedule]]   # nightly tidy',
  'name = "nightly"',
  "cron = '0 3 * * *'",
  'body = """',
  'Tidy the garden.',
  '[not a header]',
  '"""',
  '',
  '# what follows is mine too',
  '[webhooks]',
  'allow_link_local   = false',
  '',
].join('\n');

describe('pak2 cycle fires schedules', () => {
  it('a schedule whose due time passed while no coordinator ran: pak2 cycle --until-idle submits one goal, runs it, and exits', async () => {
    garden = await makeTestGarden({ extraToml: '[[schedule]]\nname = "minutely"\ncron = "* * * * *"\ntype = "spike"\nbody = "Look around"\n' });
    const since = new Date(Date.now() - 5 * 60_000).toISOString();
    await writeSchedulesState(garden.paths, { schedules: { minutely: { since } } });
    const r = await runCli(['--garden', garden.paths.gardenRoot, 'cycle', '--no-ui', '--until-idle', '--json']);
    expect(r.code).toBe(0);
    const fired = readEventLog(garden).filter((e) => e.type === 'ScheduleFired');
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ status: 'submitted', schedule: 'minutely' });
    expect(Number(fired[0]!.missed)).toBeGreaterThanOrEqual(3);
    const goal = await readGoal(garden.paths, fired[0]!.goal!);
    expect(goal).toMatchObject({ schedule: 'minutely', status: 'closed', closed_reason: 'success' });
    const listed = JSON.parse((await runCli(['--garden', garden.paths.gardenRoot, 'schedule', 'list', '--json'])).stdout) as Array<Record<string, unknown>>;
    expect(listed[0]).toMatchObject({ name: 'minutely', last_goal: goal.id, last_goal_status: 'closed', last_goal_open: false });
  });
});

describe('pak2 schedule add / list / remove', () => {
  it('add appends one block, list shows it, remove takes exactly that block out: the rest of PAK2.toml is byte-identical', async () => {
    garden = await makeTestGarden({ extraToml: OPERATOR_TOML });
    const file = garden.paths.configFile;
    const original = fs.readFileSync(file, 'utf8');
    const root = garden.paths.gardenRoot;

    const added = await runCli(['--garden', root, 'schedule', 'add', '--name', 'morning', '--cron', '0 6 * * 1-5', '--timezone', 'Europe/Paris', '--body', 'Say "hello"\nand review', '--plant', 'gardener', '--type', 'evaluate', '--verify', 'npm test', '--overlap', 'allow']);
    expect(added.stderr).toMatch(/^pak2: schedule morning added to /);
    expect(added.code).toBe(0);
    const withBlock = fs.readFileSync(file, 'utf8');
    expect(withBlock.startsWith(original)).toBe(true);
    expect(withBlock.slice(original.length)).toBe(
      ['', '[[schedule]]', 'name = "morning"', 'cron = "0 6 * * 1-5"', 'timezone = "Europe/Paris"', 'overlap = "allow"', 'type = "evaluate"', 'plant = "gardener"', 'body = "Say \\"hello\\"\\nand review"', 'guard = { verify = "npm test" }', ''].join('\n'),
    );

    const listed = await runCli(['--garden', root, 'schedule', 'list', '--json']);
    expect(listed.code).toBe(0);
    const views = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    expect(views.map((v) => [v.name, v.cron, v.timezone, v.overlap, v.last_goal, v.last_goal_open])).toEqual([
      ['nightly', '0 3 * * *', 'UTC', 'skip', null, false],
      ['morning', '0 6 * * 1-5', 'Europe/Paris', 'allow', null, false],
    ]);
    expect(views[0]!.next_due_at).toMatch(/T03:00:00\.000Z$/);
    const text = await runCli(['--garden', root, 'schedule', 'list']);
    expect(text.stdout).toMatch(/^NAME +CRON +TIMEZONE +NEXT DUE \(UTC\) +LAST FIRED \(UTC\) +LAST GOAL +OVERLAP\n/);
    expect(text.stdout).toMatch(/\nmorning +0 6 \* \* 1-5 +Europe\/Paris /);

    const removed = await runCli(['--garden', root, 'schedule', 'remove', 'morning']);
    expect(removed.code).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe(original);

    // The operator's own block goes too, and nothing else of theirs: their comment before [webhooks] stays.
    const mine = await runCli(['--garden', root, 'schedule', 'remove', 'nightly']);
    expect(mine.code).toBe(0);
    const left = fs.readFileSync(file, 'utf8');
    expect(left).toBe(original.replace(['[[schedule]]   # nightly tidy', 'name = "nightly"', "cron = '0 3 * * *'", 'body = """', 'Tidy the garden.', '[not a header]', '"""', ''].join('\n'), ''));
    expect(left).toContain('# my schedules\n\n# what follows is mine too\n[webhooks]\nallow_link_local   = false\n');
  });

  it('a bad cron line, an unknown timezone, a taken name: one line naming the key, exit 1, nothing written', async () => {
    garden = await makeTestGarden({ extraToml: OPERATOR_TOML });
    const file = garden.paths.configFile;
    const original = fs.readFileSync(file, 'utf8');
    const root = garden.paths.gardenRoot;
    const cases: [string[], RegExp][] = [
      [['--name', 'bad', '--cron', '61 * * * *', '--body', 'x'], /^pak2: PAK2\.toml: schedule\[2\]\.cron: INVALID_CONFIG_VALUE \(must be a cron line such as "\*\/15 \* \* \* \*" \(Invalid value for minute: 61\); got "61 \* \* \* \*"\)$/],
      [['--name', 'bad', '--cron', '* * * * *', '--timezone', 'Mars/Olympus', '--body', 'x'], /^pak2: PAK2\.toml: schedule\[2\]\.timezone: INVALID_CONFIG_VALUE \(must be an IANA timezone such as "UTC" or "Europe\/Paris"; got "Mars\/Olympus"\)$/],
      [['--name', 'nightly', '--cron', '* * * * *', '--body', 'x'], /^pak2: PAK2\.toml: schedule\[2\]\.name: INVALID_CONFIG_VALUE \(schedule\[1\] has the same name; got "nightly"\)$/],
      [['--name', 'Bad Name', '--cron', '* * * * *', '--body', 'x'], /^pak2: PAK2\.toml: schedule\[2\]\.name: INVALID_CONFIG_VALUE \(must be a name of lower-case letters/],
      [['--name', 'bad', '--cron', '* * * * *', '--body', 'x', '--type', 'party'], /^pak2: PAK2\.toml: schedule\[2\]\.type: INVALID_CONFIG_VALUE \(must be one of build, /],
    ];
    for (const [args, line] of cases) {
      const r = await runCli(['--garden', root, 'schedule', 'add', ...args]);
      expect(r.stderr.split('\n').filter(Boolean)[0]).toMatch(line);
      expect(r.code).toBe(1);
      expect(fs.readFileSync(file, 'utf8')).toBe(original);
    }
    const unknown = await runCli(['--garden', root, 'schedule', 'remove', 'nope']);
    expect(unknown.stderr).toBe('pak2: schedule nope: no [[schedule]] in PAK2.toml has that name (schedules: nightly)\n');
    expect(unknown.code).toBe(1);
  });

  it('remove refuses, changing nothing, when the block cannot be found exactly', async () => {
    // An inline array of tables is no [[schedule]] block of its own.
    garden = await makeTestGarden();
    const file = garden.paths.configFile;
    fs.writeFileSync(file, `schedule = [{ name = "inline", cron = "* * * * *", body = "x" }]\n${fs.readFileSync(file, 'utf8')}`);
    const original = fs.readFileSync(file, 'utf8');
    const r = await runCli(['--garden', garden.paths.gardenRoot, 'schedule', 'remove', 'inline']);
    expect(r.stderr).toBe('pak2: schedule inline: its [[schedule]] block was not found exactly; edit PAK2.toml by hand\n');
    expect(r.code).toBe(1);
    expect(fs.readFileSync(file, 'utf8')).toBe(original);
  });

  it('loading a PAK2.toml with a bad [[schedule]] value fails with one line naming the key', async () => {
    garden = await makeTestGarden({ extraToml: OPERATOR_TOML });
    const root = garden.paths.gardenRoot;
    for (const [extra, line] of [
      ['[[schedule]]\nname = "two"\ncron = "* * * * *"\ntimezone = "Nowhere/Here"\nbody = "x"\n', /^pak2: \S+PAK2\.toml: schedule\[2\]\.timezone: INVALID_CONFIG_VALUE \(must be an IANA timezone/],
      ['[[schedule]]\nname = "two"\ncron = "every day"\nbody = "x"\n', /^pak2: \S+PAK2\.toml: schedule\[2\]\.cron: INVALID_CONFIG_VALUE \(must be a cron line/],
      ['[[schedule]]\nname = "two"\nbody = "x"\n', /^pak2: \S+PAK2\.toml: schedule\[2\]\.cron: MISSING_REQUIRED_FIELD \(required: a cron line/],
    ] as const) {
      fs.appendFileSync(garden.paths.configFile, extra);
      const r = await runCli(['--garden', root, 'schedule', 'list']);
      expect(r.stderr.split('\n').filter(Boolean)[0]).toMatch(line);
      expect(r.stderr.split('\n').filter((l) => l.startsWith('pak2:'))).toHaveLength(1);
      expect(r.code).not.toBe(0);
      fs.writeFileSync(garden.paths.configFile, fs.readFileSync(garden.paths.configFile, 'utf8').replace(extra, ''));
    }
  });
});
