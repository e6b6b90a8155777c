/** What the closed-ledger tests share: the ledger's file and lines, and the notices a rebuild says. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { GardenPaths } from '../../source/garden/index.js';
import { CLOSED_LEDGER, createGoal, OpenGoalScanner, parseClosedLine, setClosedLedgerNoticeListener, transitionGoal } from '../../source/store/index.js';
import { cleanupFixtures, makeGarden } from '../helpers/fixtures.js';

export const ledgerFile = (paths: GardenPaths) => path.join(paths.goalsDir, CLOSED_LEDGER);
export const ledgerLines = (paths: GardenPaths) => fs.readFileSync(ledgerFile(paths), 'utf8').split('\n').filter(Boolean);
/** The goal ids the ledger lists, in its order. */
export const ledgerIds = (paths: GardenPaths) => ledgerLines(paths).map((l) => parseClosedLine(l)!.id);

/**
 * Collects the ledger notices of each test (instead of stderr) and removes
 * the fixtures after it. The array returned is the same one for the file,
 * emptied before each test.
 */
export function collectLedgerNotices(): string[] {
  const notices: string[] = [];
  let restore: () => void = () => undefined;
  beforeEach(() => {
    notices.length = 0;
    restore = setClosedLedgerNoticeListener((line) => notices.push(line));
  });
  afterEach(() => {
    restore();
    cleanupFixtures();
  });
  return notices;
}

/** The open goal ids a fresh scan finds, sorted. */
export const openIds = async (paths: GardenPaths) => (await new OpenGoalScanner(paths).scan()).goals.map((g) => g.id).sort();

/** A garden made by pak2: `closed` goals closed a day apart (from 2025-01-01), then `open` queued ones. */
export async function ledgerGarden(closed: number, open: number) {
  const { paths, ...rest } = makeGarden();
  const closedGoals = [];
  for (let i = 0; i < closed; i += 1) {
    const g = await createGoal(paths, { type: 'build', body: `closed ${i}` });
    closedGoals.push(await transitionGoal(paths, g.id, 'closed', { closedReason: 'success', now: new Date(Date.UTC(2025, 0, 1 + i)) }));
  }
  const openGoals = [];
  for (let i = 0; i < open; i += 1) openGoals.push(await createGoal(paths, { type: 'fix', body: `open ${i}` }));
  return { paths, ...rest, closedGoals, openGoals };
}
