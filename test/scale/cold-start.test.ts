/**
 * A garden with a year of history starts as fast as a new one (issue 13):
 * a cold start — the coordinator's start and first pass, the snapshot's
 * first load, `pak2 goals`, `pak2 cycle --until-idle` — opens no closed goal
 * file. Not a timing: the closed goal files hold garbage, and every file
 * open or read in this process is trapped by a spy and checked against them.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Coordinator } from '../../source/coordinator/index.js';
import { CLOSED_SHOWN, SnapshotLoader, SnapshotSource, TAIL_MAX_LINES } from '../../source/snapshot/index.js';
import { createGoal, listingCacheFile } from '../../source/store/index.js';
import { buildStartupNote } from '../../source/session/startup.js';
import { RETROSPECTIVE_MAX_GOALS, submitRetrospectiveGoal } from '../../source/submit/retrospective.js';
import { api, serve } from '../server/support.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { writeClosedHistory } from './history.js';

const CLOSED = 3000;
let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let closedFiles: Set<string>;
let open: string[];

beforeEach(async () => {
  garden = await makeTestGarden();
  closedFiles = writeClosedHistory(garden.paths, CLOSED, { garbage: true });
  // Open work the listings must show: unassigned, so no pass dispatches it.
  open = [(await createGoal(garden.paths, { type: 'build', body: 'open work one' })).id, (await createGoal(garden.paths, { type: 'fix', body: 'open work two' })).id];
  // A garden with history has runs (so no startup window opens): one, of an old closed goal.
  fs.mkdirSync(path.join(garden.paths.runsDir, '1-closed-goal-1-r1'), { recursive: true });
});
afterEach(() => {
  vi.restoreAllMocks();
  garden.cleanup();
});

/** Records the path of every file this process opens or reads from now on (`clear()` starts the record anew). */
function trapReads(): { touched: () => string[]; clear: () => void } {
  const seen: string[] = [];
  const record = (file: unknown) => {
    if (typeof file === 'string') seen.push(path.resolve(file));
    else if (file instanceof URL) seen.push(file.pathname);
  };
  for (const name of ['readFile', 'open'] as const) {
    const real = fsp[name].bind(fsp) as (...args: unknown[]) => unknown;
    vi.spyOn(fsp, name).mockImplementation(((...args: unknown[]) => {
      record(args[0]);
      return real(...args);
    }) as never);
  }
  for (const name of ['readFileSync', 'openSync', 'createReadStream'] as const) {
    const real = (fs[name] as (...args: unknown[]) => unknown).bind(fs);
    vi.spyOn(fs, name).mockImplementation(((...args: unknown[]) => {
      record(args[0]);
      return real(...args);
    }) as never);
  }
  return { touched: () => [...seen], clear: () => seen.splice(0) };
}

describe('a cold start on a garden of many closed goals opens no closed goal file', () => {
  it('the coordinator (recovery, reclaim, first pass) and the snapshot\'s first load', async () => {
    const trap = trapReads();
    const coordinator = new Coordinator({ garden, command: 'cold-start test' });
    await coordinator.start();
    await coordinator.untilIdle();
    expect(coordinator.summary?.problems ?? []).toEqual([]);

    const loader = new SnapshotLoader(garden);
    const first = await loader.load();
    // What the workbench and the dashboard do: start a source (its first load), take a frame, stop.
    const source = new SnapshotSource({ garden, readOnly: true });
    await source.start();
    const frame = source.getSnapshot();
    await source.stop();
    await coordinator.stop();

    const opened = trap.touched().filter((f) => closedFiles.has(f));
    expect(opened).toEqual([]);
    expect(trap.touched().some((f) => f.startsWith(garden.paths.goalsDir))).toBe(true); // the trap saw the goal reads

    // The snapshot holds the open goals and a capped list of the most recent closed, from the ledger's entries.
    for (const snapshot of [first, frame]) {
      expect(snapshot.problems).toEqual([]);
      expect(snapshot.goals.slice(0, 2).map((r) => r.goal.id).sort()).toEqual([...open].sort());
      expect(snapshot.goals).toHaveLength(open.length + CLOSED_SHOWN);
      // Newest first (the first pass may have closed a tend goal of its own, listed before them).
      const history = snapshot.goals.filter((r) => r.goal.id.includes('-closed-goal-'));
      expect(history[0]!.goal).toMatchObject({ id: `${CLOSED}-closed-goal-${CLOSED}`, status: 'closed', closed_reason: 'success', type: 'build', assigned_to: 'gardener', body: '' });
      expect(history.map((r) => Number.parseInt(r.goal.id, 10))).toEqual(Array.from({ length: history.length }, (_, i) => CLOSED - i));
    }
    expect(frame.tail === undefined || frame.tail.lines.length <= TAIL_MAX_LINES).toBe(true);

    // The control: the next load reads the shown closed goals' files (for their bodies) — only those, and the trap sees it.
    trap.clear();
    const again = await loader.load();
    const read = trap.touched().filter((f) => closedFiles.has(f));
    const shown = first.goals.filter((r) => closedFiles.has(path.join(garden.paths.goalsDir, `${r.goal.id}.json`))).length;
    expect(shown).toBeGreaterThan(CLOSED_SHOWN - 5);
    expect(new Set(read).size).toBe(shown);
    expect(again.problems.length).toBe(shown); // garbage, as planted
  });

  it('pak2 goals: the open goals and the last 20 closed, from the ledger, exit 0, nothing skipped', async () => {
    const r = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = r.stdout.trim().split('\n').slice(1);
    expect(rows).toHaveLength(open.length + 20);
    expect(rows.slice(0, 2).map((l) => l.split(/\s+/)[0])).toEqual(open);
    expect(rows[2]).toMatch(new RegExp(`^${CLOSED}-closed-goal-${CLOSED}\\s+build\\s+gardener\\s+50\\s+closed:success\\s`));
    expect(rows.at(-1)!.split(/\s+/)[0]).toBe(`${CLOSED - 19}-closed-goal-${CLOSED - 19}`);
  });

  it('pak2 goals --all streams every closed goal from the ledger, newest first, without opening their files', async () => {
    const r = await runCli(['goals', '--all', '--garden', garden.paths.gardenRoot]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const ids = r.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0]!);
    expect(ids).toHaveLength(open.length + CLOSED);
    expect(ids.slice(open.length)).toEqual(Array.from({ length: CLOSED }, (_, i) => `${CLOSED - i}-closed-goal-${CLOSED - i}`));
  });

  it('a cold pak2 goals takes the listing of goals/ from the cache only for the mtime it was taken at: a goal file written from outside while no pak2 runs is listed', async () => {
    const then = new Date(Date.now() - 10_000); // goals/ unchanged for 10 s: the listing settles and is kept
    fs.utimesSync(garden.paths.goalsDir, then, then);
    const first = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(first.code, first.stderr).toBe(0);
    expect(fs.existsSync(listingCacheFile(garden.paths))).toBe(true);
    // Written by hand, with no pak2 running to see it.
    const record = JSON.parse(fs.readFileSync(path.join(garden.paths.goalsDir, `${open[0]}.json`), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(garden.paths.goalsDir, '9000-from-outside.json'), JSON.stringify({ ...record, id: '9000-from-outside', submitted_at: '2030-01-01T00:00:00.000Z' }));
    const second = await runCli(['goals', '--garden', garden.paths.gardenRoot]);
    expect(second.code, second.stderr).toBe(0);
    const ids = second.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0]);
    expect(ids.slice(0, 3)).toEqual([...open, '9000-from-outside']);
  });

  it('a garden where no run has started yet (its goals all cancelled): the startup note names the open goals and opens no closed goal file', async () => {
    fs.rmSync(garden.paths.runsDir, { recursive: true, force: true });
    const trap = trapReads();
    const note = await buildStartupNote(garden);
    expect(note).toContain(`- Queued: 2 goals — ${open[0]} (build, no plant); ${open[1]} (fix, no plant)`);
    expect(trap.touched().filter((f) => closedFiles.has(f))).toEqual([]);
    expect(trap.touched().some((f) => f.startsWith(garden.paths.goalsDir))).toBe(true);
  });

  it('a retrospective looks for an open one of its plant without opening a closed goal file', async () => {
    const trap = trapReads();
    const goal = await submitRetrospectiveGoal(garden, { since: '2024-01-01' });
    expect(goal.type).toBe('retrospective');
    // The facts it gathers read the recent closed goals it names (a bounded number), no others.
    const read = new Set(trap.touched().filter((f) => closedFiles.has(f)));
    expect(read.size).toBeLessThanOrEqual(RETROSPECTIVE_MAX_GOALS);
  });

  it('GET /api/v1/goals reads the files of the closed goals it shows and no others; total counts them all from the ledger', async () => {
    const cleanups: (() => unknown)[] = [];
    try {
      const server = await serve(garden, cleanups, { webhooks: false });
      const trap = trapReads();
      const queued = (await (await api(server, '/goals?status=queued')).json()) as { goals: Array<{ id: string }>; total: number };
      expect(queued.goals.map((g) => g.id)).toEqual(open);
      expect(queued.total).toBe(2);
      expect(trap.touched().filter((f) => closedFiles.has(f))).toEqual([]);

      const page = (await (await api(server, '/goals?limit=5')).json()) as { goals: Array<{ id: string }>; total: number; problems: string[] };
      expect(page.total).toBe(open.length + CLOSED);
      expect(page.goals.map((g) => g.id)).toEqual(open);
      // The three newest closed goals are read (garbage, as planted: named in problems), no others.
      const newest = [CLOSED, CLOSED - 1, CLOSED - 2].map((n) => path.join(garden.paths.goalsDir, `${n}-closed-goal-${n}.json`));
      expect(new Set(trap.touched().filter((f) => closedFiles.has(f)))).toEqual(new Set(newest));
      expect(page.problems).toHaveLength(3);
    } finally {
      for (const c of cleanups.reverse()) await c();
    }
  });

  it('pak2 cycle --no-ui --until-idle with nothing to dispatch: exit 0, nothing skipped', async () => {
    const r = await runCli(['cycle', '--no-ui', '--until-idle', '--garden', garden.paths.gardenRoot]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/skipped|malformed/);
    expect(r.stdout).toContain('CoordinatorStarted');
  });
});
