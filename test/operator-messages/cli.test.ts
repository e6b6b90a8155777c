import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../source/contracts/index.js';
import { closeRun, commissionPlant, createGoal, openRun, replyDir } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let run: RunRecord;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden();
  g = ['--garden', garden.paths.gardenRoot];
  const goal = await createGoal(garden.paths, { type: 'tend', plant: 'gardener', body: 'Survey the garden' });
  run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'success', model: 'fake' });
});
afterEach(() => garden.cleanup());

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

function write(name: string, text: string): string {
  const file = path.join(garden.paths.gardenRoot, name);
  fs.writeFileSync(file, text);
  return file;
}

function recordFile(runId = run.id): string {
  return path.join(garden.paths.runsDir, runId, 'operator-messages.jsonl');
}

/** Every file under the inbox, relative. */
function inboxFiles(): string[] {
  const dir = garden.paths.inboxDir;
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}

describe('pak2 operator-message', () => {
  it('emits a tend survey from a running run: prints the id, records it, delivers an operator note', async () => {
    const fields = write('survey.json', JSON.stringify({ findings: ['3-fix-login waits'], suggested_goals: [{ type: 'fix', body: 'Unblock 3-fix-login' }] }));
    const r = await runCli(['operator-message', ...g, '--run', run.id, '--kind', 'tend_survey', '--title', 'Tend survey', '--body', 'All calm but one.', '--json-file', fields]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const id = `om-${run.id}-1`;
    expect(r.stdout.trim()).toBe(id);

    const records = fs.readFileSync(recordFile(), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(records).toEqual([
      expect.objectContaining({ id, run: run.id, plant: 'gardener', kind: 'tend_survey', title: 'Tend survey', body: 'All calm but one.', findings: ['3-fix-login waits'] }),
    ]);
    const reply = replyDir(garden.paths, garden.config);
    expect(inboxFiles()).toEqual([path.join(garden.config.gardenName, 'operator', `${id}.md`)]);
    expect(fs.readdirSync(reply)).toEqual(['operator']);
    const note = fs.readFileSync(path.join(reply, 'operator', `${id}.md`), 'utf8');
    expect(note).toContain('# Tend survey');
    expect(note).toContain('- **fix**: Unblock 3-fix-login');
  });

  it('takes the run from PAK2_RUN_ID, the body from a file, and prints the record with --json', async () => {
    const body = write('digest.md', '## Digest\n\nTwo goals closed.\n');
    const fields = write('goals.json', JSON.stringify({ goals: ['3-fix-login', '5-write-docs'] }));
    const r = await runCli(['operator-message', ...g, '--kind', 'recently_concluded', '--title', 'Recently concluded', '--body-file', body, '--json-file', fields, '--json'], {
      env: { PAK2_RUN_ID: run.id },
    });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(r.stdout)).toMatchObject({ id: `om-${run.id}-1`, run: run.id, kind: 'recently_concluded', body: '## Digest\n\nTwo goals closed.\n', goals: ['3-fix-login', '5-write-docs'] });
    const again = await runCli(['operator-message', ...g, '--run', run.id, '--kind', 'recently_concluded', '--title', 'More', '--body-file', '-', '--json-file', fields], {
      env: { PAK2_RUN_ID: '1-ignored-r1' },
      input: 'From stdin',
    });
    expect(again.stdout.trim()).toBe(`om-${run.id}-2`);
    expect(fs.readFileSync(recordFile(), 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  });

  it.each([
    [['--kind', 'tend_survey', '--title', 't', '--body', 'b'], '--run: required (or set PAK2_RUN_ID)'],
    [['--run', 'RUN', '--kind', 'chat', '--title', 't', '--body', 'b'], "option '--kind <kind>' argument 'chat' is invalid"],
    [['--run', 'RUN', '--kind', 'tend_survey', '--body', 'b'], "required option '--title <text>' not specified"],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't'], 'give exactly one of --body TEXT or --body-file F'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--body-file', 'x.md'], 'give exactly one of --body TEXT or --body-file F'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 'two\nlines', '--body', 'b', '--json-file', 'FIELDS'], '--title: INVALID_TITLE'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 'x'.repeat(121), '--body', 'b', '--json-file', 'FIELDS'], '--title: MESSAGE_TOO_LARGE'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', ' ', '--json-file', 'FIELDS'], '--body: MISSING_REQUIRED_FIELD'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body-file', 'BIG', '--json-file', 'FIELDS'], 'big.md: MESSAGE_TOO_LARGE'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body-file', 'missing.md'], '--body-file missing.md: no such file'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'missing.json'], '--json-file missing.json: no such file'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'MALFORMED'], 'malformed.json: malformed JSON'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'ARRAY'], 'array.json: must hold a JSON object'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'EXTRA'], 'extra.json: key "title" is not a kind-specific field'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b'], 'findings: MISSING_REQUIRED_FIELD (a tend_survey message requires findings); give it in --json-file F'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'BADFINDING'], 'badfinding.json: findings.0: INVALID_FIELD_TYPE'],
    [['--run', 'RUN', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'BADTYPE'], 'badtype.json: suggested_goals.0.type: INVALID_GOAL_TYPE'],
    [['--run', 'RUN', '--kind', 'recently_concluded', '--title', 't', '--body', 'b', '--json-file', 'BADGOAL'], 'badgoal.json: goals.0: INVALID_GOAL_FORMAT'],
    [['--run', 'RUN', '--kind', 'recently_concluded', '--title', 't', '--body', 'b', '--json-file', 'MISMATCH'], 'mismatch.json: findings: KIND_FIELD_MISMATCH'],
    [['--run', '../x', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'FIELDS'], '--run ../x: INVALID_ID_FORMAT'],
    [['--run', '99-no-such-goal-r1', '--kind', 'tend_survey', '--title', 't', '--body', 'b', '--json-file', 'FIELDS'], '--run 99-no-such-goal-r1: no such run in this garden'],
  ])('refuses %j with a one-line error naming the argument, exit 2, writing nothing', async (args, message) => {
    const files: Record<string, string> = {
      FIELDS: write('fields.json', JSON.stringify({ findings: ['ok'] })),
      BIG: write('big.md', 'x'.repeat(16 * 1024 + 1)),
      MALFORMED: write('malformed.json', '{"findings": ['),
      ARRAY: write('array.json', '[]'),
      EXTRA: write('extra.json', JSON.stringify({ findings: [], title: 'sneaky' })),
      BADFINDING: write('badfinding.json', JSON.stringify({ findings: [7] })),
      BADTYPE: write('badtype.json', JSON.stringify({ findings: [], suggested_goals: [{ type: 'chore', body: 'x' }] })),
      BADGOAL: write('badgoal.json', JSON.stringify({ goals: ['fix-login'] })),
      MISMATCH: write('mismatch.json', JSON.stringify({ goals: ['3-fix-login'], findings: ['x'] })),
      RUN: run.id,
    };
    const argv = args.map((a) => files[a] ?? a);
    const r = await runCli(['operator-message', ...g, ...argv], { cwd: garden.paths.gardenRoot, env: { PAK2_RUN_ID: '' } });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain(message);
    expect(r.stdout).toBe('');
    expect(fs.existsSync(recordFile())).toBe(false);
    expect(inboxFiles()).toEqual([]);
  });

  it('refuses a closed run with exit 1, leaving its record set as it was', async () => {
    const fields = write('fields.json', JSON.stringify({ findings: [] }));
    const args = ['operator-message', ...g, '--run', run.id, '--kind', 'tend_survey', '--title', 'Survey', '--body', 'b', '--json-file', fields];
    expect((await runCli(args)).code).toBe(0);
    await closeRun(garden.paths, run.id, 'tend', { status: 'success', cost: { source: 'unknown' }, reflection: 'Surveyed.' });
    const before = fs.readFileSync(recordFile(), 'utf8');
    const inboxBefore = inboxFiles();
    const r = await runCli(args);
    expect(r.code).toBe(1);
    expect(oneLineError(r.stderr)).toBe(`pak2: --run ${run.id}: the run is success; only a running run may emit an operator message`);
    expect(r.stdout).toBe('');
    expect(fs.readFileSync(recordFile(), 'utf8')).toBe(before);
    expect(inboxFiles()).toEqual(inboxBefore);
  });

  it('refuses a run of a plant other than the gardener with exit 1, naming PAK2_RUN_ID when that gave the run', async () => {
    await commissionPlant(garden.paths, 'helper', 'gardener');
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'helper', body: 'Help' });
    const other = await openRun(garden.paths, goal, { plant: 'helper', driver: 'success', model: 'fake' });
    const fields = write('fields.json', JSON.stringify({ findings: [] }));
    const r = await runCli(['operator-message', ...g, '--kind', 'tend_survey', '--title', 'Survey', '--body', 'b', '--json-file', fields], { env: { PAK2_RUN_ID: other.id } });
    expect(r.code).toBe(1);
    expect(oneLineError(r.stderr)).toBe(`pak2: PAK2_RUN_ID ${other.id}: the run belongs to plant helper; operator messages are gardener-owned`);
    expect(fs.existsSync(recordFile(other.id))).toBe(false);
    expect(inboxFiles()).toEqual([]);
  });

  it('is listed in pak2 --help', async () => {
    const r = await runCli(['--help']);
    expect(r.stdout).toMatch(/operator-message\s+\[options\]/);
  });
});
