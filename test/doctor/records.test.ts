/**
 * `pak2 doctor` on the garden's records, through the built CLI: each test
 * makes the real damage, checks the line, then `--fix` and the repaired
 * state, and that nothing was deleted.
 */
import fs from 'node:fs';
import { runCli } from '../support/cli.js';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLOSED_LEDGER, createGoal, readPlant, readRunChecked, runMetaFile, runSealFile } from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';
import { asideDir, closedRun, doctor, doctorJson, expectClean, expectNothingLost, filesUnder, findingLines, quietHistory, runningRun } from './support.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function garden(options: Parameters<typeof makeTestGarden>[0] = {}) {
  const g = await makeTestGarden(options);
  cleanups.push(g.cleanup, quietHistory());
  return g;
}

describe('pak2 doctor: a clean garden', () => {
  it('says "no problems" and exits 0, with --json giving no findings', async () => {
    const g = await garden();
    await closedRun(g);
    await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'queued work' });

    const text = await doctor(g.paths.gardenRoot);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expectClean(text.stdout, g.paths.gardenRoot);

    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.code).toBe(0);
    expect(json.findings).toEqual([]);

    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'doctor'))).toBe(false);
  });

  it('refuses a directory that is no garden with exit 2, not a finding', async () => {
    const g = await garden();
    const result = await doctor(path.join(g.paths.gardenRoot, 'seeds'));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no PAK2\.toml/);
  });
});

describe('pak2 doctor: config', () => {
  it('reports every PAK2.toml problem as one finding and stops there', async () => {
    const g = await garden();
    fs.writeFileSync(g.paths.configFile, '[runtime]\nroot = ".runtime"\n[coordinator]\nwatchdog_seconds = -5\nbogus = 1\n');
    fs.mkdirSync(g.paths.goalsDir, { recursive: true });
    fs.writeFileSync(path.join(g.paths.goalsDir, 'a b.json'), '{}'); // would be a goals finding, but doctor stops first

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    const lines = findingLines(text.stdout);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^config: PAK2\.toml: 2 problems: .*coordinator\.watchdog_seconds: INVALID_CONFIG_VALUE \(must be a whole number of seconds from 1 to 2147483; got -5\).*coordinator\.bogus: UNKNOWN_CONFIG_KEY \(not a PAK2\.toml key; got 1\).*doctor stops here/);

    const json = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([expect.objectContaining({ check: 'config', file: g.paths.configFile, fixed: false })]);
  });
});

describe('pak2 doctor: goals', () => {
  it('names a stray `a b.json` and --fix moves it aside', async () => {
    const g = await garden();
    const stray = path.join(g.paths.goalsDir, 'a b.json');
    fs.mkdirSync(g.paths.goalsDir, { recursive: true });
    fs.writeFileSync(stray, '{"not":"a goal"}\n');

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual(['goals: .runtime/goals/a b.json: not a goal file name (goal files are <N-slug>.json); pak2 never reads it — fix: move it aside']);
    expect(text.stdout).toMatch(/1 problem\(s\); pak2 doctor --fix makes the 1 safe fix\(es\)/);

    const before = filesUnder(g.paths.gardenRoot);
    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    const moved = path.join(asideDir(g), 'goals', 'a b.json');
    expect(findingLines(fixed.stdout)[0]).toBe(`goals: .runtime/goals/a b.json: not a goal file name (goal files are <N-slug>.json); pak2 never reads it — fixed: moved it aside to ${path.relative(g.paths.gardenRoot, moved)}`);
    expect(fs.existsSync(stray)).toBe(false);
    expect(fs.readFileSync(moved, 'utf8')).toBe('{"not":"a goal"}\n');
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));
    expect(JSON.parse(fs.readFileSync(path.join(asideDir(g), 'report.json'), 'utf8')).findings).toHaveLength(1);

    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
  });

  it('names the field of a goal file that fails validation and --fix moves it aside', async () => {
    const g = await garden();
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'a goal' });
    const file = path.join(g.paths.goalsDir, `${goal.id}.json`);
    const bad = `${JSON.stringify({ ...goal, priority: 500 }, null, 2)}\n`;
    fs.writeFileSync(file, bad);

    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([{ check: 'goals', file, field: 'priority', message: expect.stringMatching(/^priority: INVALID_PRIORITY .*pak2 cannot read this goal$/), fix: expect.stringMatching(/^move it aside/) }]);
    // The text line names the field once (it said `priority: priority: INVALID_PRIORITY`).
    expect(findingLines((await doctor(g.paths.gardenRoot)).stdout)).toEqual([expect.stringMatching(new RegExp(`^goals: \\.runtime/goals/${goal.id}\\.json: priority: INVALID_PRIORITY \\(`))]);
    // A goal whose id is not its file name's: `id "…" does not match`, named once.
    const other = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'another goal' });
    const otherFile = path.join(g.paths.goalsDir, `${other.id}.json`);
    fs.writeFileSync(otherFile, `${JSON.stringify({ ...other, id: '99-someone-else' }, null, 2)}\n`);
    expect(findingLines((await doctor(g.paths.gardenRoot)).stdout)).toContain(`goals: .runtime/goals/${other.id}.json: id "99-someone-else" does not match the file name; pak2 cannot read this goal — fix: move it aside (the goal leaves the queue; the file is kept)`);
    fs.rmSync(otherFile);

    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    const moved = path.join(asideDir(g), 'goals', `${goal.id}.json`);
    expect(fixed.findings[0]).toMatchObject({ fixed: true, fix: `moved it aside to ${moved}` });
    expect(fs.readFileSync(moved, 'utf8')).toBe(bad);
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe('pak2 doctor: the closed ledger', () => {
  it('names a closed goal missing from the ledger and --fix rewrites the ledger from the goal files, keeping the old one', async () => {
    const g = await garden();
    const first = await closedRun(g, 'first');
    const second = await closedRun(g, 'second');
    const open = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'still open' });
    const ledger = path.join(g.paths.goalsDir, CLOSED_LEDGER);
    // One entry line per closed goal (docs/goal/level2.md): `{"id":…,"type":…,…}`.
    const ledgerIds = () => fs.readFileSync(ledger, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ledgerIds()).toEqual([first.goal, second.goal]);
    // The second close never reached the ledger (an old bare-id line is still read); an open goal got in by mistake.
    fs.writeFileSync(ledger, `${first.goal}\n${open.id}\n`);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      `ledger: .runtime/goals/.closed: 1 closed goal(s) missing from the ledger: ${second.goal} — fix: rewrite the ledger from the goal files (the old one is copied aside)`,
      `ledger: .runtime/goals/.closed: 1 goal(s) listed as closed whose goal file is not closed, so reconcile never looks at them: ${open.id} (queued) — fix: rewrite the ledger from the goal files (the old one is copied aside)`,
    ]);

    const before = filesUnder(g.paths.gardenRoot);
    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    const copy = path.join(asideDir(g), 'goals', CLOSED_LEDGER);
    expect(findingLines(fixed.stdout)[0]).toContain(`— fixed: rewrote the ledger from the goal files (2 closed goal(s)); the old ledger is at ${path.relative(g.paths.gardenRoot, copy)}`);
    expect(ledgerIds()).toEqual([first.goal, second.goal]);
    expect(fs.readFileSync(copy, 'utf8')).toBe(`${first.goal}\n${open.id}\n`);
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));
    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
  });
});

describe('pak2 doctor: run records', () => {
  it('names a meta.json truncated to 50 bytes and --fix rewrites it from the seal, moving the torn file aside', async () => {
    const g = await garden();
    const { run } = await closedRun(g);
    const meta = runMetaFile(g.paths, run);
    const sealed = fs.readFileSync(runSealFile(g.paths, run), 'utf8');
    fs.truncateSync(meta, 50);
    const torn = fs.readFileSync(meta);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    const lines = findingLines(text.stdout);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^runs: \\.runtime/runs/${run}/meta\\.json: \\(unreadable\\): torn or missing \\(malformed JSON .*\\); readers use the seal \\.runtime/runs/\\.seals/${run}\\.json — fix: rewrite meta\\.json from the seal, copying the damaged file aside$`));

    const before = filesUnder(g.paths.gardenRoot);
    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    const moved = path.join(asideDir(g), 'runs', run, 'meta.json');
    expect(findingLines(fixed.stdout)[0]).toContain(`— fixed: rewrote meta.json from the seal; a copy of the damaged file is at ${path.relative(g.paths.gardenRoot, moved)}`);
    expect(fs.readFileSync(meta, 'utf8')).toBe(sealed);
    expect(fs.readFileSync(moved).equals(torn)).toBe(true);
    expect((await readRunChecked(g.paths, run)).damage).toBeUndefined();
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));
    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
  });

  it('--fix on a full disk (ENOSPC injected into the rewrite): not fixed, the file and errno named, exit 1; meta.json left as it was, no temp file', async () => {
    const g = await garden();
    const { run } = await closedRun(g);
    const meta = runMetaFile(g.paths, run);
    fs.truncateSync(meta, 50);
    const torn = fs.readFileSync(meta);

    const fixed = await runCli(['--garden', g.paths.gardenRoot, 'doctor', '--fix'], { env: { PAK2_FAULT_WRITE: `ENOSPC@/runs/${run}/meta.json` } });
    expect(fixed.code).toBe(1);
    expect(findingLines(fixed.stdout)[0]).toMatch(new RegExp(`— not done: failed: \\.runtime/runs/${run}/meta\\.json: write failed \\(ENOSPC: injected fault`));
    expect(fs.readFileSync(meta).equals(torn)).toBe(true);
    expect(fs.readdirSync(path.dirname(meta)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    // With room again the same fix lands.
    expect((await doctor(g.paths.gardenRoot, '--fix')).code).toBe(0);
    expect((await readRunChecked(g.paths, run)).damage).toBeUndefined();
  });

  it('names the fields of a meta.json rewritten by someone else (the seal is the truth)', async () => {
    const g = await garden();
    const { run } = await closedRun(g);
    const meta = runMetaFile(g.paths, run);
    const record = JSON.parse(fs.readFileSync(meta, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(meta, JSON.stringify({ ...record, status: 'failure', failure_reason: 'killed' }));

    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([expect.objectContaining({ check: 'runs', file: meta, field: 'failure_reason, status', message: expect.stringMatching(/^differs from the record pak2 sealed in failure_reason, status/) })]);
    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    expect(JSON.parse(fs.readFileSync(meta, 'utf8')).status).toBe('success');
  });

  it('names a torn meta.json with no seal as beyond repair here, and leaves it for reclaim to rebuild', async () => {
    const g = await garden();
    const { run } = await runningRun(g);
    fs.rmSync(runSealFile(g.paths, run)); // a record from before seals
    const meta = runMetaFile(g.paths, run);
    fs.truncateSync(meta, 50);
    const torn = fs.readFileSync(meta);

    const json = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([
      { check: 'runs', file: meta, message: expect.stringMatching(/^malformed JSON .*; there is no seal to rewrite it from; `pak2 cycle` rebuilds it from the goal and process record at start and closes it killed$/), fixed: false },
    ]);
    expect(fs.readFileSync(meta).equals(torn)).toBe(true);
  });

  it('names a torn seal; --fix moves it aside and meta.json is the record again', async () => {
    const g = await garden();
    const { run } = await closedRun(g);
    const seal = runSealFile(g.paths, run);
    fs.truncateSync(seal, 20);
    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([expect.objectContaining({ check: 'runs', file: seal, message: expect.stringMatching(/malformed JSON.*readers ignore this seal and believe meta\.json/), fix: 'move the seal aside' })]);
    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    expect(fs.existsSync(seal)).toBe(false);
    expect(fs.statSync(path.join(asideDir(g), 'runs', '.seals', `${run}.json`)).size).toBe(20);
  });
});

describe('pak2 doctor: plants', () => {
  it('names a torn plant record and --fix rebuilds it from the event log, moving the torn file aside', async () => {
    const g = await garden();
    const meta = path.join(g.paths.plantsDir, 'gardener', 'meta.json');
    const original = JSON.parse(fs.readFileSync(meta, 'utf8')) as Record<string, unknown>;
    fs.truncateSync(meta, 30);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      expect.stringMatching(/^plants: plants\/gardener\/meta\.json: malformed JSON .*; pak2 cannot read plant gardener, so goals assigned to it cannot dispatch — fix: rebuild it from the event log \(seed gardener, active, commissioned .*\), copying the damaged file aside$/),
    ]);

    const before = filesUnder(g.paths.gardenRoot);
    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    expect(await readPlant(g.paths, 'gardener')).toEqual(original);
    expect(fs.statSync(path.join(asideDir(g), 'plants', 'gardener', 'meta.json')).size).toBe(30);
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));
  });

  it('names the field of an invalid plant record with no commission in the log, and leaves it alone', async () => {
    const g = await garden();
    fs.mkdirSync(path.join(g.paths.plantsDir, 'scout'), { recursive: true });
    const meta = path.join(g.paths.plantsDir, 'scout', 'meta.json');
    const text = JSON.stringify({ name: 'scout', seed: 'gardener', status: 'sleeping', commissioned_at: '2026-01-01T00:00:00.000Z' });
    fs.writeFileSync(meta, text);
    const json = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([{ check: 'plants', file: meta, field: 'status', message: expect.stringMatching(/^status: INVALID_STATUS .*correct the record by hand/), fixed: false }]);
    expect(fs.readFileSync(meta, 'utf8')).toBe(text);
  });
});

describe('pak2 doctor: the event log', () => {
  it('names a torn last line; --fix appends a newline and keeps every byte; the torn line stays a bad line', async () => {
    const g = await garden();
    const log = g.paths.coordinatorLog;
    const lines = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
    fs.appendFileSync(log, '{"ts":"2026-11-29T09:00:00.000Z","type":"GoalSub');
    const torn = fs.readFileSync(log);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    const bad = `events: .runtime/events/coordinator.jsonl: line ${lines + 1}: 1 bad line(s) of ${lines + 1} (the torn last line included), first at line ${lines + 1} (malformed JSON); readers skip them, and the log is append-only, so they stay`;
    expect(findingLines(text.stdout)).toEqual([
      `events: .runtime/events/coordinator.jsonl: line ${lines + 1}: torn last line: 48 byte(s) with no newline (not valid JSON; the next append would be written after it) — fix: append a newline so the next event starts clean (the torn bytes stay)`,
      bad,
    ]);

    const fixed = await doctor(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(1); // the bad line stays: nothing is deleted
    expect(findingLines(fixed.stdout)).toEqual([
      expect.stringContaining(`— fixed: appended a newline; line ${lines + 1} stays as it was and readers skip it`),
      `${bad} — not fixed (no automatic fix)`,
    ]);
    expect(fs.readFileSync(log).equals(Buffer.concat([torn, Buffer.from('\n')]))).toBe(true);

    const after = await doctorJson(g.paths.gardenRoot);
    expect(after.code).toBe(1);
    expect(after.findings).toEqual([
      { check: 'events', file: log, field: `line ${lines + 1}`, message: `1 bad line(s) of ${lines + 1}, first at line ${lines + 1} (malformed JSON); readers skip them, and the log is append-only, so they stay` },
    ]);
  });

  it('counts lines that are not valid events and names the first', async () => {
    const g = await garden();
    const log = g.paths.coordinatorLog;
    const lines = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
    fs.appendFileSync(log, '{"ts":"2026-11-29T09:00:00.000Z","type":"NoSuchEvent"}\nnot json\n');
    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([expect.objectContaining({ check: 'events', field: `line ${lines + 1}`, message: expect.stringMatching(new RegExp(`^2 bad line\\(s\\) of ${lines + 2}, first at line ${lines + 1} \\(type: INVALID_EVENT_TYPE`)) })]);
    expect(json.findings[0]!.fix).toBeUndefined();
  });
});
