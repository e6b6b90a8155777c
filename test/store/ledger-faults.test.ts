/**
 * Faults of the closed ledger and of the caches beside it (issue 13, scope
 * 1; docs/goal/level2.md): a ledger that is a directory is named in one
 * line and stops nothing silently; a torn last line is cut by the next
 * append, said, and leaves no junk line; a listing cache changed outside
 * pak2 is not believed, and one that hides an open goal is found by
 * `pak2 doctor`.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lockPaths } from '../../source/coordinator/lock.js';
import type { GardenPaths } from '../../source/garden/index.js';
import {
  commissionPlant,
  createGoal,
  forgetClosedLedgers,
  ledgerRecordFile,
  listingCacheFile,
  OpenGoalScanner,
  parseClosedLine,
  recentClosedIds,
  StoreError,
  transitionGoal,
} from '../../source/store/index.js';
import { sealCache, unsealCache } from '../../source/store/cache-seal.js';
import { readLog } from '../helpers/fixtures.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden, waitFor } from '../support/garden.js';
import { SnapshotSource } from '../../source/snapshot/index.js';
import { collectLedgerNotices, ledgerFile, ledgerIds, ledgerGarden, openIds } from './ledger-support.js';

const notices = collectLedgerNotices();

const garden = ledgerGarden;

/** goals/ unchanged for 10 s, so the next listing settles and is kept in the cache. */
function settle(paths: GardenPaths): void {
  const then = new Date(Date.now() - 10_000);
  fs.utimesSync(paths.goalsDir, then, then);
}

describe('a ledger that is a directory', () => {
  it('a scan fails with one StoreError naming the ledger; nothing is moved or removed', async () => {
    const { paths } = await garden(2, 1);
    fs.rmSync(ledgerFile(paths));
    fs.mkdirSync(ledgerFile(paths));
    forgetClosedLedgers();
    const error = await new OpenGoalScanner(paths).scan().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toBe(`${ledgerFile(paths)}: the closed ledger is a directory; move it aside and pak2 rebuilds the ledger from the goal files`);
    expect(fs.statSync(ledgerFile(paths)).isDirectory()).toBe(true);
    // The reads from the end say the same, not a bare EISDIR.
    await expect(recentClosedIds(paths, 3)).rejects.toThrow(`${ledgerFile(paths)}: the closed ledger is a directory`);
  });

  it('the workbench\'s snapshot says the goals were not read (not an empty garden), and reads them again once it is a file', async () => {
    const { paths, ...g } = await garden(1, 2);
    await commissionPlant(paths, 'gardener', 'gardener');
    const saved = fs.readFileSync(ledgerFile(paths));
    fs.rmSync(ledgerFile(paths));
    fs.mkdirSync(ledgerFile(paths));
    forgetClosedLedgers();
    const source = new SnapshotSource({ garden: { paths, ...g }, readOnly: true, coalesceMs: 10 });
    await source.start();
    try {
      const said = `${ledgerFile(paths)}: the closed ledger is a directory; move it aside and pak2 rebuilds the ledger from the goal files`;
      const first = source.getSnapshot();
      expect(first.unread).toBe(said);
      expect(first.problems).toContain(`goals not read: ${said}`);
      // The rest of the garden is read as it is, not shown as a garden with nothing in it.
      expect(first.garden.name).toBe(g.config.gardenName);
      expect(first.garden.name).not.toBe('');
      expect(first.plants.map((p) => p.plant.name)).toEqual(['gardener']);
      fs.rmdirSync(ledgerFile(paths));
      fs.writeFileSync(ledgerFile(paths), saved);
      source.schedule(0);
      await waitFor(() => source.getSnapshot().unread === undefined && source.getSnapshot().counts.queued === 2);
      expect(source.getSnapshot().goals).toHaveLength(3);
    } finally {
      await source.stop();
    }
  });

  it('through the CLI: goals and cycle exit 1 naming it, cycle leaves no holder behind; doctor --fix moves it aside and writes the ledger', async () => {
    const g = await makeTestGarden();
    try {
      const { paths } = g;
      const done = await createGoal(paths, { type: 'build', body: 'done' });
      await transitionGoal(paths, done.id, 'closed', { closedReason: 'success' });
      const open = await createGoal(paths, { type: 'fix', body: 'still to do' });
      fs.rmSync(ledgerFile(paths));
      fs.mkdirSync(ledgerFile(paths));
      const said = `pak2: ${ledgerFile(paths)}: the closed ledger is a directory; move it aside and pak2 rebuilds the ledger from the goal files`;

      const goals = await runCli(['goals', '--garden', paths.gardenRoot]);
      expect(goals.code).toBe(1);
      expect(goals.stderr.trim()).toBe(said);

      const cycle = await runCli(['cycle', '--no-ui', '--until-idle', '--garden', paths.gardenRoot]);
      expect(cycle.code).toBe(1);
      expect(cycle.stderr).toContain(said);
      expect(fs.existsSync(lockPaths(paths).holder)).toBe(false);
      const stopped = readLog(paths).filter((e) => e.type === 'CoordinatorStopped');
      expect(stopped.at(-1)?.detail).toMatch(/the start failed: .*the closed ledger is a directory/);

      const doctor = await runCli(['doctor', '--garden', paths.gardenRoot]);
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toContain('the closed ledger is a directory; pak2 cannot read it');
      const fixed = await runCli(['doctor', '--fix', '--garden', paths.gardenRoot]);
      expect(fixed.code, fixed.stdout + fixed.stderr).toBe(0);
      expect(fs.statSync(ledgerFile(paths)).isFile()).toBe(true);
      expect(ledgerIds(paths)).toEqual([done.id]);
      const after = await runCli(['goals', '--garden', paths.gardenRoot]);
      expect(after.code, after.stderr).toBe(0);
      expect(after.stdout).toMatch(new RegExp(`${open.id}\\s.*queued`));
      expect(after.stdout).toMatch(new RegExp(`${done.id}\\s.*closed:success`));
    } finally {
      g.cleanup();
    }
  });
});

describe('a torn last line', () => {
  it('with no record of the ledger (.cache/ removed): the append that re-adds its goal cuts it with a notice, and every line is whole after', async () => {
    const { paths, closedGoals } = await garden(3, 1);
    const size = fs.statSync(ledgerFile(paths)).size;
    fs.truncateSync(ledgerFile(paths), size - 37);
    fs.rmSync(ledgerRecordFile(paths));
    forgetClosedLedgers();
    expect((await openIds(paths)).length).toBe(1);
    expect(notices).toEqual([expect.stringMatching(new RegExp(`\\.closed was damaged \\(its last line is torn: "\\{\\\\"id\\\\":\\\\"${closedGoals[2]!.id}\\\\".*"…\\): cut it; a closed goal it named is listed again from its goal file$`))]);
    const lines = fs.readFileSync(ledgerFile(paths), 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => parseClosedLine(l)?.id)).toEqual(closedGoals.map((g) => g.id));
    expect(await recentClosedIds(paths, 3)).toEqual(closedGoals.map((g) => g.id).reverse());
    // The next process finds nothing more to say.
    notices.length = 0;
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toEqual([]);
  });

  it('a close appended after a torn line (a writer killed mid-line) does not join it', async () => {
    const { paths, closedGoals, openGoals } = await garden(2, 1);
    fs.appendFileSync(ledgerFile(paths), '{"id":"9-torn-wri');
    forgetClosedLedgers();
    const closed = await transitionGoal(paths, openGoals[0]!.id, 'closed', { closedReason: 'success' });
    expect(notices).toEqual([expect.stringMatching(/its last line is torn: "\{\\"id\\":\\"9-torn-wri"\): cut it/)]);
    expect(ledgerIds(paths)).toEqual([...closedGoals.map((g) => g.id), closed.id]);
  });
});

describe('the listing cache', () => {
  it('changed outside pak2 (its digest does not match): not used, said once, removed; the goal it hid is listed', async () => {
    const { paths, openGoals } = await garden(2, 2);
    settle(paths);
    await openIds(paths);
    const file = listingCacheFile(paths);
    const value = JSON.parse(fs.readFileSync(file, 'utf8')) as { candidates: string[] };
    expect(value.candidates.sort()).toEqual(openGoals.map((g) => g.id).sort());
    fs.writeFileSync(file, JSON.stringify({ ...value, candidates: [] }));
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id).sort());
    expect(notices).toEqual([`pak2: ${file} was damaged (its digest does not match its content: changed outside pak2): not used; goals/ is listed instead`]);
  });

  it('garbage, or with no digest: not used, and said', async () => {
    const { paths, openGoals } = await garden(1, 1);
    const file = listingCacheFile(paths);
    for (const [text, why] of [
      ['not json', 'not JSON'],
      ['[]', 'not a JSON object'],
      ['{"version":1,"candidates":[]}', 'it has no digest'],
    ] as const) {
      fs.mkdirSync(paths.runtimeRoot + '/.cache', { recursive: true });
      fs.writeFileSync(file, text);
      notices.length = 0;
      forgetClosedLedgers();
      expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id));
      expect(notices).toEqual([`pak2: ${file} was damaged (${why}): not used; goals/ is listed instead`]);
    }
  });

  it('sealed but leaving out an open goal: pak2 doctor names the goal, and --fix removes the cache', async () => {
    const g = await makeTestGarden();
    try {
      const { paths } = g;
      const hidden = await createGoal(paths, { type: 'fix', body: 'hidden by the cache' });
      const seen = await createGoal(paths, { type: 'fix', body: 'seen' });
      settle(paths);
      expect((await runCli(['goals', '--garden', paths.gardenRoot])).code).toBe(0);
      const file = listingCacheFile(paths);
      const read = unsealCache(fs.readFileSync(file, 'utf8'));
      if (!('value' in read)) throw new Error(`cache did not read: ${read.damaged}`);
      read.value.candidates = (read.value.candidates as string[]).filter((id) => id !== hidden.id);
      fs.writeFileSync(file, sealCache(read.value));

      const doctor = await runCli(['doctor', '--garden', paths.gardenRoot]);
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toContain(`the listing cache leaves out 1 goal(s) the ledger does not list, so no listing or pass sees them: ${hidden.id}`);
      const fixed = await runCli(['doctor', '--fix', '--garden', paths.gardenRoot]);
      expect(fixed.code, fixed.stdout).toBe(0);
      expect(fs.existsSync(file)).toBe(false);
      const goals = await runCli(['goals', '--garden', paths.gardenRoot]);
      expect(goals.stdout).toContain(hidden.id);
      expect(goals.stdout).toContain(seen.id);
    } finally {
      g.cleanup();
    }
  });

  it('a cache as pak2 wrote it is no problem to doctor', async () => {
    const g = await makeTestGarden();
    try {
      await createGoal(g.paths, { type: 'fix', body: 'open' });
      settle(g.paths);
      await runCli(['goals', '--garden', g.paths.gardenRoot]);
      expect(fs.existsSync(listingCacheFile(g.paths))).toBe(true);
      const doctor = await runCli(['doctor', '--garden', g.paths.gardenRoot]);
      expect(doctor.stdout).not.toContain('listing cache');
    } finally {
      g.cleanup();
    }
  });
});

describe('the seal of a cache file', () => {
  it('reads back what it wrote; any change to the body is found', () => {
    const text = sealCache({ a: 1, b: ['x', 'y'], c: { d: 'é' } });
    expect(unsealCache(text)).toEqual({ value: { a: 1, b: ['x', 'y'], c: { d: 'é' } } });
    expect(unsealCache(text.replace('"x"', '"z"'))).toEqual({ damaged: 'its digest does not match its content: changed outside pak2' });
    expect(unsealCache(sealCache({}))).toEqual({ value: {} });
  });
});
