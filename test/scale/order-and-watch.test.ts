/**
 * Lists sort goals by their number N, never as strings (issue 13: goal 9999
 * was listed before 50001), and the workbench's snapshot source, which now
 * watches directories (one watch each, nothing stat'ed at start), still sees
 * a goal written by another process within a second.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { orderGoalsForDisplay } from '../../source/cli/commands/read.js';
import type { GoalRecord } from '../../source/contracts/index.js';
import { SnapshotLoader, SnapshotSource } from '../../source/snapshot/index.js';
import { dispatchOrder, goalFile } from '../../source/store/index.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
let source: SnapshotSource | undefined;
afterEach(async () => {
  await source?.stop();
  source = undefined;
  garden?.cleanup();
  garden = undefined;
});

const AT = '2024-05-01T12:00:00.000Z';
const goal = (id: string, extra: Partial<GoalRecord> = {}): GoalRecord => ({ id, type: 'build', status: 'queued', priority: 50, body: id, submitted_at: AT, ...extra });
const closed = (id: string) => goal(id, { status: 'closed', closed_reason: 'success', closed_at: AT });

describe('goals sort by N, never as strings', () => {
  it('orderGoalsForDisplay: open oldest N first on a tie, closed newest N first on a tie', () => {
    const goals = [closed('9999-c'), goal('50001-b'), closed('50002-d'), goal('9999-a'), goal('100000-e')];
    expect(orderGoalsForDisplay(goals).map((g) => g.id)).toEqual(['9999-a', '50001-b', '100000-e', '50002-d', '9999-c']);
    expect([goal('50001-b'), goal('9999-a')].sort(dispatchOrder).map((g) => g.id)).toEqual(['9999-a', '50001-b']);
  });

  it('pak2 goals and the snapshot list goal 9999 before 50001 (same priority, same age)', async () => {
    garden = await makeTestGarden();
    fs.mkdirSync(garden.paths.goalsDir, { recursive: true });
    for (const id of ['50001-later', '9999-earlier']) fs.writeFileSync(goalFile(garden.paths, id), JSON.stringify(goal(id)));
    const r = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['9999-earlier', '50001-later']);
    const snapshot = await new SnapshotLoader(garden).load();
    expect(snapshot.goals.map((row) => row.goal.id)).toEqual(['9999-earlier', '50001-later']);
  });
});

describe('the snapshot source watches directories', () => {
  it('sees a goal written by another process within a second, and one in a goals/ directory created after it started', async () => {
    garden = await makeTestGarden();
    expect(fs.existsSync(garden.paths.goalsDir)).toBe(false);
    source = new SnapshotSource({ garden, readOnly: true });
    await source.start();
    const seen = (id: string) => source!.getSnapshot().goals.some((row) => row.goal.id === id);
    const within = async (id: string, ms: number) => {
      const t0 = Date.now();
      while (!seen(id) && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 10));
      return Date.now() - t0;
    };

    // goals/ does not exist yet: created by another process, then a goal in it.
    const write = (id: string) =>
      execFileSync(process.execPath, ['-e', `const fs=require('fs');fs.mkdirSync(${JSON.stringify(garden!.paths.goalsDir)},{recursive:true});fs.writeFileSync(${JSON.stringify(goalFile(garden!.paths, id))}, process.argv[1])`, JSON.stringify(goal(id))]);
    write('1-first-from-outside');
    expect(await within('1-first-from-outside', 3000)).toBeLessThan(3000);

    write('2-second-from-outside');
    expect(await within('2-second-from-outside', 1000)).toBeLessThan(1000);

    // goals/ replaced under the watch (mv goals goals.old && mkdir goals): watched again.
    fs.renameSync(garden.paths.goalsDir, `${garden.paths.goalsDir}.old`);
    fs.mkdirSync(garden.paths.goalsDir);
    await new Promise((r) => setTimeout(r, 100));
    write('3-after-replace');
    expect(await within('3-after-replace', 2500)).toBeLessThan(2500);
    expect(path.basename(garden.paths.goalsDir)).toBe('goals');
  });
});

describe('the run tail stays bounded whatever the stream', () => {
  it('a burst larger than a tail shows is read from its end only; an endless line is dropped up to its newline', async () => {
    const { RunTail, TAIL_MAX_LINES, TAIL_OPEN_BYTES } = await import('../../source/snapshot/index.js');
    garden = await makeTestGarden();
    const file = path.join(garden.paths.gardenRoot, 'events.jsonl');
    fs.writeFileSync(file, 'first line\n');
    const tail = new RunTail('1-x-r1', file);
    expect(tail.read()).toBe(true);
    expect(tail.state().lines.map((l) => l.text)).toEqual(['first line']);

    // 8 MB in one burst: only its last TAIL_OPEN_BYTES are read, the cut first line skipped.
    const burst = Array.from({ length: 200_000 }, (_, i) => `burst line ${String(i).padStart(24, '0')}`).join('\n');
    fs.appendFileSync(file, `${burst}\n`);
    expect(tail.read()).toBe(true);
    const state = tail.state();
    expect(state.truncated).toBe(true);
    expect(state.bytes).toBe(fs.statSync(file).size);
    expect(state.lines.length).toBeLessThanOrEqual(TAIL_MAX_LINES);
    expect(state.lines.at(-1)!.text).toBe(`burst line ${String(199_999).padStart(24, '0')}`);
    expect(state.lines.every((l) => /^burst line \d{24}$|^first line$/.test(l.text))).toBe(true);

    // A line with no end, in pieces, longer than a tail: not kept; the line after it shows.
    const piece = 'x'.repeat(TAIL_OPEN_BYTES / 4);
    for (let i = 0; i < 6; i += 1) {
      fs.appendFileSync(file, piece);
      tail.read();
    }
    fs.appendFileSync(file, 'yyy end of the long line\nafter the long line\n');
    tail.read();
    const texts = tail.state().lines.map((l) => l.text);
    expect(texts.at(-1)).toBe('after the long line');
    expect(texts.some((t) => t.includes('yyy'))).toBe(false);
  });
});
