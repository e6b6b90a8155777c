import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GardenPaths } from '../../source/garden/index.js';
import {
  CLOSED_LEDGER,
  closedEntriesNewestFirst,
  compareGoalIds,
  createGoal,
  forgetClosedLedgers,
  goalFile,
  goalOfEntry,
  listingCacheFile,
  OpenGoalScanner,
  parseClosedLine,
  readGoal,
  recentClosed,
  recentClosedIds,
  transitionGoal,
} from '../../source/store/index.js';
import { makeGarden, writeJson } from '../helpers/fixtures.js';
import { postComment } from '../../source/submit/comments.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { collectLedgerNotices, ledgerFile, ledgerIds, ledgerLines } from './ledger-support.js';

const notices = collectLedgerNotices();
const ids = ledgerIds;

/** Writes a closed goal file directly (no ledger line), closed at `closedAt`. */
function writeClosedGoal(paths: GardenPaths, id: string, closedAt: string, extra: Record<string, unknown> = {}): void {
  fs.mkdirSync(paths.goalsDir, { recursive: true });
  writeJson(goalFile(paths, id), {
    id,
    type: 'fix',
    status: 'closed',
    priority: 50,
    assigned_to: 'gardener',
    body: `body of ${id}`,
    submitted_at: '2024-01-01T00:00:00.000Z',
    closed_at: closedAt,
    closed_reason: 'success',
    ...extra,
  });
}

describe('the closed ledger carries what a listing shows', () => {
  it('a close appends one JSON entry, id first: id, type, plant, priority, closed_reason, closed_at, submitted_at', async () => {
    const { paths } = makeGarden();
    const goal = await createGoal(paths, { type: 'fix', plant: 'gardener', body: 'mend it', priority: 70 });
    const closed = await transitionGoal(paths, goal.id, 'closed', { closedReason: 'cancelled', now: new Date('2024-06-01T10:00:00.000Z') });
    const lines = ledgerLines(paths);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.startsWith(`{"id":"${goal.id}"`)).toBe(true);
    expect(JSON.parse(lines[0]!)).toEqual({
      id: goal.id,
      type: 'fix',
      plant: 'gardener',
      priority: 70,
      closed_reason: 'cancelled',
      closed_at: '2024-06-01T10:00:00.000Z',
      submitted_at: goal.submitted_at,
    });
    // The listing's view of the goal equals the record but for the body.
    expect(goalOfEntry(parseClosedLine(lines[0]!)!)).toEqual({ ...closed, body: '', updated_at: undefined, closed_at: closed.closed_at });
  });

  it('reads bare-id lines of old ledgers beside entries; a line that is neither is damage (undefined)', () => {
    expect(parseClosedLine('12-fix-the-parser')).toEqual({ id: '12-fix-the-parser' });
    expect(parseClosedLine('{"id":"3-a","type":"build","priority":10,"plant":7}')).toEqual({ id: '3-a', type: 'build', priority: 10 });
    for (const bad of ['', 'not an id', '{"id":"../x"}', '{"type":"fix"}', '{"id":"3-a"', '12-Fix']) expect(parseClosedLine(bad), bad).toBeUndefined();
    expect(goalOfEntry({ id: '12-fix-the-parser' })).toBeUndefined();
  });

  it('recentClosed reads from the end: newest first, old and new lines mixed, a repeat once, a torn last line left out', async () => {
    const { paths } = makeGarden();
    fs.mkdirSync(paths.goalsDir, { recursive: true });
    const entry = (id: string) => JSON.stringify({ id, type: 'fix', priority: 50, closed_reason: 'success', closed_at: '2024-01-01T00:00:00.000Z', submitted_at: '2024-01-01T00:00:00.000Z' });
    fs.writeFileSync(ledgerFile(paths), ['1-old', '2-old', entry('3-new'), entry('2-old'), entry('4-new'), '{"id":"5-tor'].join('\n'));
    expect(await recentClosedIds(paths, 10)).toEqual(['4-new', '2-old', '3-new', '1-old']);
    expect((await recentClosed(paths, 2)).map((e) => e.id)).toEqual(['4-new', '2-old']);
    expect((await recentClosed(paths, 2))[1]).toMatchObject({ id: '2-old', type: 'fix' });
  });

  it('drops a repeat within the last 65,536 entries walked, and gives one from farther back again (the window moves as a ring)', async () => {
    const { paths } = makeGarden();
    fs.mkdirSync(paths.goalsDir, { recursive: true });
    const lines: string[] = ['1-far'];
    for (let n = 2; n <= 70_000; n += 1) lines.push(`${n}-g`);
    lines.push('1-far'); // 70,000 entries after its first line: outside the window
    lines.push('69000-g'); // 1,000 entries after its first line: inside it
    fs.writeFileSync(ledgerFile(paths), `${lines.join('\n')}\n`);
    const ids = (await recentClosedIds(paths, 200_000));
    expect(ids.length).toBe(70_001);
    expect(ids.slice(0, 3)).toEqual(['69000-g', '1-far', '70000-g']);
    expect(ids.filter((id) => id === '69000-g')).toHaveLength(1);
    expect(ids.filter((id) => id === '1-far')).toHaveLength(2);
    expect(ids.at(-1)).toBe('1-far');
  });

  it('streams a ledger much longer than one read backwards, every entry once, newest first', async () => {
    const { paths } = makeGarden();
    fs.mkdirSync(paths.goalsDir, { recursive: true });
    const count = 5000;
    const lines: string[] = [];
    for (let n = 1; n <= count; n += 1) lines.push(JSON.stringify({ id: `${n}-goal-number-${n}`, type: 'build', priority: 50, submitted_at: '2024-01-01T00:00:00.000Z' }));
    fs.writeFileSync(ledgerFile(paths), `${lines.join('\n')}\n`);
    const seen: number[] = [];
    for await (const e of closedEntriesNewestFirst(paths)) seen.push(Number.parseInt(e.id, 10));
    expect(seen).toEqual(Array.from({ length: count }, (_, i) => count - i));
  });

  it('compareGoalIds orders by N, never as strings', () => {
    expect(['50001-b', '9999-a', '10-c', '9999-0'].sort(compareGoalIds)).toEqual(['10-c', '9999-0', '9999-a', '50001-b']);
  });
});

describe('a missing or damaged ledger is rebuilt once, from the goal files', () => {
  it('missing: rebuilt streaming from the goal files in close order (closed_at, then N), open goals left out, with one notice', async () => {
    const { paths } = makeGarden();
    const open = await createGoal(paths, { type: 'build', body: 'still open' });
    writeClosedGoal(paths, '50001-late', '2024-03-01T00:00:00.000Z');
    writeClosedGoal(paths, '9999-early', '2024-02-01T00:00:00.000Z');
    writeClosedGoal(paths, '10000-tie', '2024-03-01T00:00:00.000Z');
    expect(fs.existsSync(ledgerFile(paths))).toBe(false);

    const scan = await new OpenGoalScanner(paths).scan();
    expect(scan.goals.map((g) => g.id)).toEqual([open.id]);
    expect(ids(paths)).toEqual(['9999-early', '10000-tie', '50001-late']);
    expect(JSON.parse(ledgerLines(paths)[0]!)).toMatchObject({ id: '9999-early', plant: 'gardener', closed_reason: 'success' });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/\.closed was missing: rebuilt it from 4 goal file\(s\), 3 closed$/);
    expect(fs.readdirSync(paths.goalsDir).filter((n) => n.startsWith(`${CLOSED_LEDGER}.`))).toEqual([]);

    // Once: a second scan (and a fresh scanner) reads it and says nothing more.
    await new OpenGoalScanner(paths).scan();
    expect(notices).toHaveLength(1);
  });

  it('missing, with no closed goal: nothing is written and nothing said', async () => {
    const { paths } = makeGarden();
    const open = await createGoal(paths, { type: 'build', body: 'only open' });
    expect((await new OpenGoalScanner(paths).scan()).goals.map((g) => g.id)).toEqual([open.id]);
    expect(fs.existsSync(ledgerFile(paths))).toBe(false);
    expect(notices).toEqual([]);
  });

  it('damaged: a line that is neither an entry nor an id gets the ledger rebuilt once; the goal files win', async () => {
    const { paths } = makeGarden();
    const a = await createGoal(paths, { type: 'build', body: 'a' });
    const b = await createGoal(paths, { type: 'build', body: 'b' });
    const open = await createGoal(paths, { type: 'build', body: 'open' });
    await transitionGoal(paths, a.id, 'closed', { closedReason: 'cancelled', now: new Date('2024-01-01T00:00:00.000Z') });
    await transitionGoal(paths, b.id, 'closed', { closedReason: 'cancelled', now: new Date('2024-01-02T00:00:00.000Z') });
    // Garbage in the middle, and an open goal listed by mistake.
    fs.writeFileSync(ledgerFile(paths), `${ledgerLines(paths)[0]}\n\u0000\u0000garbage\n${ledgerLines(paths)[1]}\n${open.id}\n`);

    const scan = await new OpenGoalScanner(paths).scan();
    expect(scan.goals.map((g) => g.id)).toEqual([open.id]);
    expect(ids(paths)).toEqual([a.id, b.id]);
    expect(notices).toEqual([expect.stringMatching(/\.closed was damaged \(line 2 is neither a whole entry nor a goal id: "\\u0000\\u0000garbage"\): rebuilt it from 3 goal file\(s\), 2 closed$/)]);
  });

  it('a ledger replaced by one of the same size is read again (no stale view): a change outside pak2, checked whole, and the goal file wins', async () => {
    const { paths } = makeGarden();
    const a = await createGoal(paths, { type: 'build', body: 'aaaa' });
    const b = await createGoal(paths, { type: 'build', body: 'bbbb' });
    await transitionGoal(paths, a.id, 'closed', { closedReason: 'cancelled' });
    const scanner = new OpenGoalScanner(paths);
    expect((await scanner.scan()).goals.map((g) => g.id)).toEqual([b.id]);
    // Another tool rewrites the ledger: same length, b instead of a (b's file still says queued; a's says closed).
    const line = ledgerLines(paths)[0]!;
    const swapped = line.replace(a.id, b.id);
    expect(swapped.length).toBe(line.length);
    fs.writeFileSync(`${ledgerFile(paths)}.new`, `${swapped}\n`);
    fs.renameSync(`${ledgerFile(paths)}.new`, ledgerFile(paths));
    await new Promise((r) => setTimeout(r, 5));
    const scan = await scanner.scan();
    // The goal files win: b, found open before, is checked and stays open; the ledger is rebuilt from the files.
    expect(scan.goals.map((g) => g.id)).toEqual([b.id]);
    expect(ids(paths)).toEqual([a.id]);
    expect(notices).toEqual([expect.stringMatching(new RegExp(`\\.closed was damaged \\(line 1 lists ${b.id} as closed; its goal file says queued\\): rebuilt it from 2 goal file\\(s\\), 1 closed$`))]);
  });

  it('a scan never opens the file of a goal the ledger lists (the file may be garbage)', async () => {
    const { paths } = makeGarden();
    const a = await createGoal(paths, { type: 'build', body: 'a' });
    await transitionGoal(paths, a.id, 'closed', { closedReason: 'cancelled' });
    fs.writeFileSync(goalFile(paths, a.id), '{{{ garbage');
    expect(await new OpenGoalScanner(paths).scan()).toEqual({ goals: [], problems: [] });
    await expect(readGoal(paths, a.id)).rejects.toThrow(/malformed JSON/);
  });
});

describe('the listing cache: a cold start lists goals/ only when it changed', () => {
  /** Dates the goals directory `seconds` back, as if nothing had changed in it since. */
  const settle = (paths: GardenPaths, seconds = 10) => {
    const then = new Date(Date.now() - seconds * 1000);
    fs.utimesSync(paths.goalsDir, then, then);
  };
  afterEach(() => vi.restoreAllMocks());

  async function gardenWithHistory() {
    const { paths } = makeGarden();
    const closed = await createGoal(paths, { type: 'build', body: 'closed one' });
    await transitionGoal(paths, closed.id, 'closed', { closedReason: 'cancelled' });
    const open = await createGoal(paths, { type: 'fix', body: 'open one' });
    return { paths, closed, open };
  }

  it('a settled listing is kept outside goals/; a cold start with goals/ as it saw it lists nothing and opens no closed goal file', async () => {
    const { paths, closed, open } = await gardenWithHistory();
    settle(paths);
    expect((await new OpenGoalScanner(paths).scan()).goals.map((g) => g.id)).toEqual([open.id]);
    const cache = JSON.parse(fs.readFileSync(listingCacheFile(paths), 'utf8')) as { candidates: string[] };
    expect(path.dirname(listingCacheFile(paths)).startsWith(paths.goalsDir)).toBe(false);
    expect(cache.candidates).toEqual([open.id]);

    forgetClosedLedgers(); // a new process
    fs.writeFileSync(goalFile(paths, closed.id), '{{{ garbage'); // a closed goal file is never opened
    const listed = vi.spyOn(fs, 'opendirSync');
    const scan = await new OpenGoalScanner(paths).scan();
    expect(scan).toEqual({ goals: [expect.objectContaining({ id: open.id, status: 'queued' })], problems: [] });
    expect(listed).not.toHaveBeenCalled();
  });

  it('is not believed for another mtime: a goal file written from outside while no pak2 runs is listed by the next cold start', async () => {
    const { paths, open } = await gardenWithHistory();
    settle(paths);
    await new OpenGoalScanner(paths).scan();
    expect(fs.existsSync(listingCacheFile(paths))).toBe(true);

    forgetClosedLedgers();
    const record = JSON.parse(fs.readFileSync(goalFile(paths, open.id), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(goalFile(paths, '9-from-outside'), JSON.stringify({ ...record, id: '9-from-outside' }));
    const listed = vi.spyOn(fs, 'opendirSync');
    expect((await new OpenGoalScanner(paths).scan()).goals.map((g) => g.id).sort()).toEqual([open.id, '9-from-outside']);
    expect(listed).toHaveBeenCalled();
  });

  it('a listing that began within 2 s of the directory\'s mtime is neither kept nor reused (a change in the same tick could hide behind it)', async () => {
    const { paths, open } = await gardenWithHistory();
    const scanner = new OpenGoalScanner(paths);
    expect((await scanner.scan()).goals.map((g) => g.id)).toEqual([open.id]);
    expect(fs.existsSync(listingCacheFile(paths))).toBe(false);
    const listed = vi.spyOn(fs, 'opendirSync');
    await scanner.scan();
    expect(listed).toHaveBeenCalledTimes(1); // listed again, not reused
  });

  it('a ledger rewritten in place (here shorter) since the cached listing is damage: rebuilt from the goal files once, with a notice, and goals/ listed', async () => {
    const { paths, closed, open } = await gardenWithHistory();
    settle(paths);
    await new OpenGoalScanner(paths).scan();
    forgetClosedLedgers();
    // The ledger rewritten in place (same inode, same directory mtime): the open goal listed as closed, the closed one gone.
    const line = ledgerLines(paths)[0]!;
    const key = fs.statSync(paths.goalsDir);
    fs.writeFileSync(ledgerFile(paths), `${line.replace(closed.id, open.id)}\n`);
    fs.utimesSync(paths.goalsDir, key.atime, key.mtime);
    const listed = vi.spyOn(fs, 'opendirSync');
    const scan = await new OpenGoalScanner(paths).scan();
    expect(listed).toHaveBeenCalled();
    // The goal files win: the open goal is open, and the ledger is what they say.
    expect(scan.goals.map((g) => g.id)).toEqual([open.id]);
    expect(ids(paths)).toEqual([closed.id]);
    expect(notices).toEqual([expect.stringMatching(/\.closed was damaged \(it shrank from 160 to 158 bytes\): rebuilt it from 2 goal file\(s\), 1 closed$/)]);
  });

  /** A new process's scan: the open goal ids, and whether it listed goals/. */
  async function coldScan(paths: GardenPaths): Promise<{ ids: string[]; listed: boolean }> {
    forgetClosedLedgers();
    const listed = vi.spyOn(fs, 'opendirSync');
    const scan = await new OpenGoalScanner(paths).scan();
    const was = listed.mock.calls.length > 0;
    listed.mockRestore();
    expect(scan.problems).toEqual([]);
    return { ids: scan.goals.map((g) => g.id).sort(compareGoalIds), listed: was };
  }

  it('kept current by pak2\'s own writes: after a submit, a close and a comment, a cold start lists nothing and sees each', async () => {
    const { paths, open } = await gardenWithHistory();
    settle(paths);
    expect(await coldScan(paths)).toEqual({ ids: [open.id], listed: true }); // the cache is written
    const added = await createGoal(paths, { type: 'build', body: 'submitted later' });
    expect(await coldScan(paths)).toEqual({ ids: [open.id, added.id], listed: false });
    await transitionGoal(paths, open.id, 'closed', { closedReason: 'cancelled' });
    expect(await coldScan(paths)).toEqual({ ids: [added.id], listed: false });
    await postComment({ paths } as never, added.id, { body: 'a blocking question', blocking: true });
    expect(await coldScan(paths)).toEqual({ ids: [added.id], listed: false });
    // No lock was made in goals/ (a goal's lock lives under .locks/).
    expect(fs.readdirSync(paths.goalsDir).filter((n) => n.endsWith('.lock'))).toEqual([]);
    // The cache was brought up to the ledger: the close left its candidates, and a cold start reads no older line.
    const cache = JSON.parse(fs.readFileSync(listingCacheFile(paths), 'utf8')) as { candidates: string[]; ledger: { offset: number } };
    expect(cache.candidates).toEqual([added.id]);
    expect(cache.ledger.offset).toBe(fs.statSync(ledgerFile(paths)).size);
  });

  it('a goal file put in goals/ by hand after a pak2 write is listed by the next cold start (only pak2\'s own write moves the key)', async () => {
    const { paths, open } = await gardenWithHistory();
    settle(paths);
    await coldScan(paths);
    const added = await createGoal(paths, { type: 'build', body: 'submitted later' });
    const record = JSON.parse(fs.readFileSync(goalFile(paths, open.id), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(goalFile(paths, '90-by-hand'), JSON.stringify({ ...record, id: '90-by-hand' }));
    expect(await coldScan(paths)).toEqual({ ids: [open.id, added.id, '90-by-hand'], listed: true });
  });

  it('a closed goal file written back to open by hand (a rename, as editors save) is open to the next cold start, and the ledger rebuilt', async () => {
    const { paths, closed, open } = await gardenWithHistory();
    settle(paths);
    await coldScan(paths);
    const record = JSON.parse(fs.readFileSync(goalFile(paths, closed.id), 'utf8')) as Record<string, unknown>;
    const { closed_at: _a, closed_reason: _r, ...reopened } = { ...record, status: 'queued' } as Record<string, unknown>;
    fs.writeFileSync(`${goalFile(paths, closed.id)}.edit`, JSON.stringify(reopened));
    fs.renameSync(`${goalFile(paths, closed.id)}.edit`, goalFile(paths, closed.id));
    expect(await coldScan(paths)).toEqual({ ids: [closed.id, open.id], listed: true });
    expect(notices).toEqual([expect.stringMatching(new RegExp(`was damaged \\(it lists ${closed.id} as closed; its goal file says queued\\): rebuilt it from 2 goal file\\(s\\), 0 closed$`))]);
    expect(fs.readFileSync(ledgerFile(paths), 'utf8')).toBe('');
  });

  it('with no listing kept yet (a new garden), a closed goal file saved back to open is found by the next scan: read against the key pak2 last left goals/ at', async () => {
    const { paths, closed, open } = await gardenWithHistory();
    expect(fs.existsSync(listingCacheFile(paths))).toBe(false);
    const record = JSON.parse(fs.readFileSync(goalFile(paths, closed.id), 'utf8')) as Record<string, unknown>;
    const { closed_at: _a, closed_reason: _r, ...reopened } = { ...record, status: 'queued' } as Record<string, unknown>;
    fs.writeFileSync(`${goalFile(paths, closed.id)}.edit`, JSON.stringify(reopened));
    fs.renameSync(`${goalFile(paths, closed.id)}.edit`, goalFile(paths, closed.id));
    expect((await coldScan(paths)).ids).toEqual([closed.id, open.id]);
    expect(notices).toEqual([expect.stringMatching(new RegExp(`it lists ${closed.id} as closed; its goal file says queued`))]);
  });

  it('many writers at once (creates and closes racing): the kept listing matches a fresh one', async () => {
    const { paths } = await gardenWithHistory();
    settle(paths);
    await coldScan(paths);
    const made = await Promise.all(Array.from({ length: 12 }, (_, i) => createGoal(paths, { type: 'build', body: `racer ${i}` })));
    await Promise.all(made.filter((_, i) => i % 3 === 0).map((g) => transitionGoal(paths, g.id, 'closed', { closedReason: 'cancelled' })));
    const kept = await coldScan(paths);
    expect(kept.listed).toBe(false);
    fs.rmSync(listingCacheFile(paths));
    const fresh = await coldScan(paths);
    expect(fresh.listed).toBe(true);
    expect(kept.ids).toEqual(fresh.ids);
    expect(kept.ids).toHaveLength(1 + 8);
  });

  it('a running process sees another process\'s submit through the kept cache, without listing goals/ again', async () => {
    const garden = await makeTestGarden();
    const { paths } = garden;
    const closed = await createGoal(paths, { type: 'build', body: 'closed one' });
    await transitionGoal(paths, closed.id, 'closed', { closedReason: 'cancelled' });
    const open = await createGoal(paths, { type: 'fix', body: 'open one' });
    settle(paths);
    const scanner = new OpenGoalScanner(paths);
    expect((await scanner.scan()).goals.map((g) => g.id)).toEqual([open.id]);
    const submit = await runCli(['submit', '--garden', paths.gardenRoot, '--plant', 'gardener', '--type', 'build', '--body', 'from another process']);
    expect(submit.code, submit.stderr).toBe(0);
    const listed = vi.spyOn(fs, 'opendirSync');
    const ids = (await scanner.scan()).goals.map((g) => g.id);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toMatch(/^3-from-another-process$/);
    expect(listed).not.toHaveBeenCalled();
    garden.cleanup();
  });
});
