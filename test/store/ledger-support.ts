/** What the closed-ledger tests share: the ledger's file and lines, and the notices a rebuild says. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { GardenPaths } from '../../source/garden/index.js';
import { CLOSED_LEDGER, parseClosedLine, setClosedLedgerNoticeListener } from '../../source/store/index.js';
import { cleanupFixtures } from '../helpers/fixtures.js';

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
