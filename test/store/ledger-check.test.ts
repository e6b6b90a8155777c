/**
 * The goal files win over the closed ledger (issue 13, scope 1): a ledger
 * line is checked against its goal file when a pak2 process first reads it;
 * a ledger that shrank, was rewritten in place, holds a torn line, or lists
 * a goal whose file says open is damaged, and rebuilt once, with a notice.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recoverInterruptedWrites } from '../../source/coordinator/recover.js';
import type { GardenPaths } from '../../source/garden/index.js';
import {
  closedEntriesNewestFirst,
  createGoal,
  forgetClosedLedgers,
  goalFile,
  ledgerRecordFile,
  OpenGoalScanner,
  recentClosedIds,
  transitionGoal,
} from '../../source/store/index.js';
import { makeGarden, readLog } from '../helpers/fixtures.js';
import { loadGarden } from '../../source/garden/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { writeClosedHistory } from '../scale/history.js';
import { SnapshotLoader } from '../../source/snapshot/index.js';
import { collectLedgerNotices, ledgerFile, ledgerIds, ledgerLines, ledgerGarden, openIds } from './ledger-support.js';

const notices = collectLedgerNotices();
const ids = ledgerIds;
/** The line pak2 would append for `id` had it closed (what a hand edit or a stray tool writes). */
const falseLine = (id: string) => `${JSON.stringify({ id, type: 'fix', priority: 50, closed_reason: 'success', closed_at: '2026-01-01T00:00:00.000Z', submitted_at: '2025-01-01T00:00:00.000Z' })}\n`;

const garden = ledgerGarden;

describe('a ledger line is checked against its goal file when first read', () => {
  it('a line appended for a goal whose file says queued: the goal is open, the ledger rebuilt once with a notice naming both', async () => {
    const { paths, closedGoals, openGoals } = await garden(2, 2);
    expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id).sort());
    forgetClosedLedgers(); // a later process
    fs.appendFileSync(ledgerFile(paths), falseLine(openGoals[0]!.id));

    expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id).sort());
    expect(notices).toEqual([expect.stringMatching(new RegExp(`\\.closed was damaged \\(line 3 lists ${openGoals[0]!.id} as closed; its goal file says queued\\): rebuilt it from 4 goal file\\(s\\), 2 closed$`))]);
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('a ledger pak2 created is recorded as its own; a line appended outside pak2 gets it checked whole, even before any process read it', async () => {
    const { paths, openGoals } = await garden(1, 1);
    expect(JSON.parse(fs.readFileSync(ledgerRecordFile(paths), 'utf8'))).toMatchObject({ size: fs.statSync(ledgerFile(paths)).size });
    fs.appendFileSync(ledgerFile(paths), falseLine(openGoals[0]!.id));
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual([openGoals[0]!.id]);
    // A small ledger is checked without a word; the damage it finds is said.
    expect(notices).toEqual([expect.stringMatching(/was damaged \(line 2 lists .* as closed; its goal file says queued\): rebuilt it/)]);
  });

  it('with no record (.cache/ removed, a copied garden): checked whole once, the open goal found, then believed without opening a closed goal file', async () => {
    const { paths, closedGoals, openGoals } = await garden(3, 2);
    fs.rmSync(path.join(paths.runtimeRoot, '.cache'), { recursive: true, force: true });
    fs.appendFileSync(ledgerFile(paths), falseLine(openGoals[0]!.id));
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id).sort());
    expect(notices).toHaveLength(1); // the rebuild
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
    // Recorded now: the next process opens no closed goal file.
    forgetClosedLedgers();
    const read = fs.readFileSync;
    const opened: string[] = [];
    (fs as { readFileSync: typeof fs.readFileSync }).readFileSync = ((file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      if (typeof file === 'string' && closedGoals.some((g) => file.endsWith(`${g.id}.json`))) opened.push(file);
      return (read as (...a: unknown[]) => unknown)(file, ...rest);
    }) as typeof fs.readFileSync;
    try {
      expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id).sort());
    } finally {
      (fs as { readFileSync: typeof fs.readFileSync }).readFileSync = read;
    }
    expect(opened).toEqual([]);
    expect(notices).toHaveLength(1);
  });

  it('a big ledger with no record is said before it is checked (the check reads a goal file a line), once', async () => {
    const { paths } = makeGarden();
    writeClosedHistory(paths, 7000);
    fs.rmSync(ledgerRecordFile(paths));
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual([]);
    expect(notices).toEqual([expect.stringMatching(/\.closed was changed outside pak2, or pak2 has no record of it \(a copied or restored garden, \.cache\/ removed\): checking each line against its goal file once$/)]);
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toHaveLength(1);
  });

  it('pak2\'s own appends during a whole check do not make the next process check again; an edit in place during it does', async () => {
    const { paths, openGoals } = await garden(3, 3);
    fs.rmSync(ledgerRecordFile(paths));
    forgetClosedLedgers();
    // A close by pak2 while this process checks the ledger whole (the close waits for the lock the check may hold).
    await Promise.all([openIds(paths), transitionGoal(paths, openGoals[0]!.id, 'closed', { closedReason: 'cancelled' })]);
    expect(JSON.parse(fs.readFileSync(ledgerRecordFile(paths), 'utf8'))).toMatchObject({ size: fs.statSync(ledgerFile(paths)).size });

    // Now an edit in place made while the check reads (the first goal file it opens): left unrecorded.
    fs.rmSync(ledgerRecordFile(paths));
    forgetClosedLedgers();
    const read = fs.readFileSync;
    let edited = false;
    (fs as { readFileSync: typeof fs.readFileSync }).readFileSync = ((file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      if (!edited && typeof file === 'string' && file.startsWith(paths.goalsDir) && file.endsWith('.json')) {
        edited = true;
        const fd = fs.openSync(ledgerFile(paths), 'r+');
        fs.writeSync(fd, '{', 0); // the same byte: the content is unchanged, the ctime is not
        fs.closeSync(fd);
      }
      return (read as (...a: unknown[]) => unknown)(file, ...rest);
    }) as typeof fs.readFileSync;
    try {
      await openIds(paths);
    } finally {
      (fs as { readFileSync: typeof fs.readFileSync }).readFileSync = read;
    }
    expect(edited).toBe(true);
    expect(fs.existsSync(ledgerRecordFile(paths))).toBe(false);
  });

  it('a same-size rewrite anywhere in the ledger (not only its end) is a change outside pak2: checked whole, and the false line found', async () => {
    const { paths, closedGoals, openGoals } = await garden(4, 1);
    await openIds(paths);
    // The first line made to name the open goal, padded to its length, in place.
    const text = fs.readFileSync(ledgerFile(paths), 'utf8');
    const first = text.slice(0, text.indexOf('\n'));
    const forged = JSON.stringify({ id: openGoals[0]!.id, type: 'fix', priority: 50, closed_reason: 'success' });
    expect(forged.length).toBeLessThan(first.length);
    const fd = fs.openSync(ledgerFile(paths), 'r+');
    fs.writeSync(fd, `${forged.slice(0, -1)}${' '.repeat(first.length - forged.length)}}`, 0);
    fs.closeSync(fd);
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual([openGoals[0]!.id]);
    expect(notices.at(-1)).toMatch(new RegExp(`lists ${openGoals[0]!.id} as closed; its goal file says queued\\): rebuilt it from 5 goal file\\(s\\), 4 closed$`));
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('in a running process, a false line appended after the one rebuild is skipped with a notice, and the next process checks it again', async () => {
    const { paths, closedGoals, openGoals } = await garden(1, 3);
    const scanner = new OpenGoalScanner(paths);
    await scanner.scan();
    fs.appendFileSync(ledgerFile(paths), falseLine(openGoals[0]!.id));
    expect((await scanner.scan()).goals.map((g) => g.id).sort()).toEqual(openGoals.map((g) => g.id).sort());
    expect(notices).toHaveLength(1); // the rebuild
    fs.appendFileSync(ledgerFile(paths), falseLine(openGoals[1]!.id));
    expect((await scanner.scan()).goals.map((g) => g.id).sort()).toEqual(openGoals.map((g) => g.id).sort());
    expect(notices[1]).toMatch(new RegExp(`lists ${openGoals[1]!.id} as closed, but its goal file says queued: the goal file wins`));
    await scanner.scan();
    expect(notices).toHaveLength(2); // once per goal
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual(openGoals.map((g) => g.id).sort());
    expect(notices[2]).toMatch(/was damaged .* rebuilt it/);
    expect(ids(paths)).toEqual([closedGoals[0]!.id]);
  });

  it('a close pak2 makes is believed (its goal file says closed) and a scan opens only that one goal file', async () => {
    const { paths, openGoals } = await garden(3, 2);
    const scanner = new OpenGoalScanner(paths);
    await scanner.scan();
    await transitionGoal(paths, openGoals[0]!.id, 'closed', { closedReason: 'cancelled' });
    const read = fs.readFileSync;
    const opened: string[] = [];
    (fs as { readFileSync: typeof fs.readFileSync }).readFileSync = ((file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      if (typeof file === 'string' && file.startsWith(paths.goalsDir)) opened.push(path.basename(file));
      return (read as (...a: unknown[]) => unknown)(file, ...rest);
    }) as typeof fs.readFileSync;
    try {
      expect((await scanner.scan()).goals.map((g) => g.id)).toEqual([openGoals[1]!.id]);
    } finally {
      (fs as { readFileSync: typeof fs.readFileSync }).readFileSync = read;
    }
    expect(opened).toEqual([`${openGoals[0]!.id}.json`]);
    expect(notices).toEqual([]);
  });

  it('recovery records no close from a ledger line whose goal file is open', async () => {
    const { paths, openGoals, ...rest } = await garden(1, 2);
    const scanner = new OpenGoalScanner(paths);
    // The one rebuild is spent on other damage first.
    fs.appendFileSync(ledgerFile(paths), 'garbage\n');
    await scanner.scan();
    fs.appendFileSync(ledgerFile(paths), falseLine(openGoals[0]!.id));
    const before = readLog(paths).length;
    await recoverInterruptedWrites({ paths, ...rest } as never, () => new Date(), scanner);
    const added = readLog(paths).slice(before);
    expect(added.filter((e) => e.goal === openGoals[0]!.id)).toEqual([]);
    expect(JSON.parse(fs.readFileSync(goalFile(paths, openGoals[0]!.id), 'utf8')).status).toBe('queued');
  });
});

describe('a damaged ledger is noticed and rebuilt once', () => {
  it('an older, shorter ledger put back (many closed goals missing from it): one rebuild with a notice, not a refill a line at a time', async () => {
    const { paths, closedGoals } = await garden(6, 1);
    const lines = ledgerLines(paths);
    fs.writeFileSync(`${ledgerFile(paths)}.old`, `${lines.slice(0, 2).join('\n')}\n`);
    fs.renameSync(`${ledgerFile(paths)}.old`, ledgerFile(paths));
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toEqual([expect.stringMatching(/was damaged \(it lacks 4 goals closed more than 10 s ago, \S+ among them\): rebuilt it from 7 goal file\(s\), 6 closed$/)]);
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('a line for a goal with no goal file, or with its id given twice, is damage (a goal made later with that id is not hidden)', async () => {
    const { paths, closedGoals, openGoals } = await garden(2, 1);
    fs.appendFileSync(ledgerFile(paths), falseLine('90-never-made'));
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toEqual([expect.stringMatching(/was damaged \(line 3 lists 90-never-made, which has no goal file\): rebuilt it/)]);
    // The id first and once, as pak2 writes it: JSON.parse would keep the last id, the fast path reads the first.
    fs.appendFileSync(ledgerFile(paths), `{"id":"${openGoals[0]!.id}",${ledgerLines(paths)[0]!.slice(1)}\n`);
    forgetClosedLedgers();
    expect(await openIds(paths)).toEqual([openGoals[0]!.id]);
    expect(notices[1]).toMatch(/was damaged \(line 3 is neither a whole entry nor a goal id: .*\): rebuilt it/);
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('a rebuild removes the scratch files of a rebuild killed with SIGKILL (its process gone), and leaves a live one\'s', async () => {
    const { paths, closedGoals } = await garden(2, 0);
    const dead = path.join(paths.goalsDir, '.closed.scratch-999999999-1700000000000');
    const deadTemp = path.join(paths.goalsDir, '.closed.rebuild-999999999-1700000000000');
    const live = path.join(paths.goalsDir, `.closed.scratch-${process.ppid}-1700000000000`);
    for (const f of [dead, deadTemp, live]) fs.writeFileSync(f, 'partial\n');
    fs.appendFileSync(ledgerFile(paths), 'junk\n');
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toEqual([expect.stringMatching(/was damaged \(line 3 is neither a whole entry nor a goal id: "junk"\): rebuilt it/)]);
    expect([fs.existsSync(dead), fs.existsSync(deadTemp), fs.existsSync(live)]).toEqual([false, false, true]);
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('truncated mid-line after a process read it: rebuilt, and the most recently closed are right again', async () => {
    const { paths, closedGoals } = await garden(6, 1);
    await openIds(paths); // a process read it (the mark)
    const size = fs.statSync(ledgerFile(paths)).size;
    fs.truncateSync(ledgerFile(paths), Math.floor(size / 2));
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toEqual([expect.stringMatching(new RegExp(`\\.closed was damaged \\(it shrank from ${size} to ${Math.floor(size / 2)} bytes\\): rebuilt it from 7 goal file\\(s\\), 6 closed$`))]);
    expect(await recentClosedIds(paths, 3)).toEqual(closedGoals.slice(-3).reverse().map((g) => g.id));
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('rewritten in place with the same size: a change outside pak2, checked whole; the entry that disagrees with its goal file gets it rebuilt', async () => {
    const { paths, closedGoals } = await garden(3, 0);
    await openIds(paths);
    // The last line's submitted_at altered in place (within the bytes the mark keeps of where it was read to).
    const text = fs.readFileSync(ledgerFile(paths), 'utf8');
    const at = text.lastIndexOf('Z"}') - 1;
    const fd = fs.openSync(ledgerFile(paths), 'r+');
    fs.writeSync(fd, text[at] === '1' ? '2' : '1', at);
    fs.closeSync(fd);
    forgetClosedLedgers();
    await openIds(paths);
    // A change outside pak2: checked whole against the goal files, which disagree with the altered entry.
    expect(notices).toEqual([expect.stringMatching(/\.closed was damaged \(line 3 says submitted_at \S+ for \S+; its goal file says \S+\): rebuilt it/)]);
    expect(ids(paths)).toEqual(closedGoals.map((g) => g.id));
  });

  it('a torn line in the middle whose id survives is damage: rebuilt, and pak2 goals --all lists that goal', async () => {
    const { paths, closedGoals } = await garden(3, 0);
    const lines = ledgerLines(paths);
    fs.writeFileSync(ledgerFile(paths), `${lines[0]}\n${lines[1]!.slice(0, lines[1]!.indexOf('"type"') + 7)}\n${lines[2]}\n`);
    fs.rmSync(ledgerRecordFile(paths)); // no record: checked whole, and a torn line is damage
    forgetClosedLedgers();
    await openIds(paths);
    expect(notices).toEqual([expect.stringMatching(/\.closed was damaged \(line 2 is neither a whole entry nor a goal id: "\{\\"id\\":\\"2-closed-1\\",\\"type\\":"\): rebuilt it from 3 goal file\(s\), 3 closed$/)]);
    const listed = [];
    for await (const entry of closedEntriesNewestFirst(paths)) listed.push(entry.id);
    expect(listed).toEqual(closedGoals.map((g) => g.id).reverse());
  });
});

describe('goal files changed outside pak2', () => {
  /** An editor's save of a closed goal back to queued: a temp file renamed over it. */
  const reopen = (paths: GardenPaths, id: string) => {
    const record = JSON.parse(fs.readFileSync(goalFile(paths, id), 'utf8')) as Record<string, unknown>;
    const { closed_at: _a, closed_reason: _r, ...queued } = { ...record, status: 'queued' } as Record<string, unknown>;
    fs.writeFileSync(`${goalFile(paths, id)}.tmp`, JSON.stringify(queued));
    fs.renameSync(`${goalFile(paths, id)}.tmp`, goalFile(paths, id));
  };

  it('in a garden copied with its .cache/ (cp -a), a closed goal saved back to open is found: the original\'s goals key says nothing of the copy', async () => {
    const made = await garden(1, 2);
    await openIds(made.paths);
    const root = `${made.root}-copy`;
    fs.cpSync(made.root, root, { recursive: true, preserveTimestamps: true });
    try {
      const copy = loadGarden(root);
      forgetClosedLedgers();
      await openIds(copy.paths);
      await transitionGoal(copy.paths, made.openGoals[0]!.id, 'closed', { closedReason: 'cancelled' });
      forgetClosedLedgers();
      await openIds(copy.paths);
      reopen(copy.paths, made.openGoals[0]!.id);
      forgetClosedLedgers();
      expect(await openIds(copy.paths)).toEqual(made.openGoals.map((g) => g.id).sort());
      expect(notices.at(-1)).toMatch(new RegExp(`it lists ${made.openGoals[0]!.id} as closed; its goal file says queued`));
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('recovery does not call a hand edit an interrupted transition: closed → queued is no transition pak2 makes', async () => {
    const made = await garden(1, 0);
    const id = made.closedGoals[0]!.id;
    reopen(made.paths, id);
    forgetClosedLedgers();
    const before = readLog(made.paths).length;
    await recoverInterruptedWrites(made as never);
    const added = readLog(made.paths).slice(before).filter((e) => e.goal === id);
    expect(added).toEqual([expect.objectContaining({ type: 'GoalTransitioned', from: 'closed', to: 'queued', detail: 'recovered: the goal file was changed outside pak2 (pak2 makes no closed → queued transition)' })]);
  });
});

describe('the workbench says it too', () => {
  it('a snapshot lists what was said of the ledger with its problems (the workbench has no stderr on screen)', async () => {
    const made = await garden(1, 1);
    fs.appendFileSync(ledgerFile(made.paths), falseLine(made.openGoals[0]!.id));
    forgetClosedLedgers();
    const snapshot = await new SnapshotLoader(made as never).load();
    expect(snapshot.goals.find((r) => r.goal.id === made.openGoals[0]!.id)?.goal.status).toBe('queued');
    expect(snapshot.problems).toEqual([expect.stringMatching(/^\S+\.closed was damaged \(line 2 lists .* as closed; its goal file says queued\): rebuilt it/)]);
  });
});

describe('through the CLI: a false ledger line hides no open work', () => {
  it('pak2 goals lists the goal as queued, and pak2 cycle dispatches it and records no close it did not make', async () => {
    const garden = await makeTestGarden();
    try {
      const { paths } = garden;
      const done = await createGoal(paths, { type: 'build', body: 'done before' });
      await transitionGoal(paths, done.id, 'closed', { closedReason: 'success' });
      const goal = await createGoal(paths, { type: 'fix', plant: 'gardener', body: 'still to do' });
      fs.appendFileSync(ledgerFile(paths), falseLine(goal.id));

      const goals = await runCli(['goals', '--garden', paths.gardenRoot]);
      expect(goals.code, goals.stderr).toBe(0);
      expect(goals.stdout.split('\n').find((l) => l.startsWith(goal.id))).toMatch(/\bqueued\b/);
      expect(goals.stdout.split('\n').filter((l) => l.startsWith(goal.id))).toHaveLength(1);
      expect(goals.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^pak2: .*\\.closed was damaged \\(line 2 lists ${goal.id} as closed; its goal file says queued\\): rebuilt it from 2 goal file\\(s\\), 1 closed$`))]);

      // The same garden, damaged again; the coordinator's first read finds it.
      fs.appendFileSync(ledgerFile(paths), falseLine(goal.id));
      const cycle = await runCli(['cycle', '--no-ui', '--until-idle', '--garden', paths.gardenRoot]);
      expect(cycle.code, cycle.stderr).toBe(0);
      const events = readLog(paths).filter((e) => e.goal === goal.id);
      expect(events.filter((e) => String(e.detail ?? '').startsWith('recovered'))).toEqual([]);
      expect(events.map((e) => e.type)).toContain('RunStarted');
      const record = JSON.parse(fs.readFileSync(goalFile(paths, goal.id), 'utf8')) as { status: string; closed_reason?: string };
      expect(record).toMatchObject({ status: 'closed', closed_reason: 'success' });
      // One close, made by the run: one GoalClosed, one ledger line.
      expect(events.filter((e) => e.type === 'GoalClosed')).toHaveLength(1);
      expect(ids(paths).filter((id) => id === goal.id)).toHaveLength(1);
    } finally {
      garden.cleanup();
    }
  });
});
