import fs from 'node:fs';
import path from 'node:path';
import { CLOSED_LEDGER, goalFile, recordLedgerWritten } from '../../source/store/index.js';
import type { GardenPaths } from '../../source/garden/index.js';

/**
 * Writes a year of history straight to disk, fast: `count` closed goals
 * (`1-closed-goal-1` …), each a goal file and a ledger entry, closed a
 * minute apart, the counter, and the ledger record pak2 keeps of the
 * ledger it wrote. With `garbage`, each closed goal file
 * holds garbage instead of its record, so any reader that opens one fails
 * loudly (or is caught by a spy).
 *
 * @returns the closed goal files.
 */
export function writeClosedHistory(paths: GardenPaths, count: number, options: { garbage?: boolean } = {}): Set<string> {
  fs.mkdirSync(paths.goalsDir, { recursive: true });
  const files = new Set<string>();
  const ledger: string[] = [];
  const t0 = Date.parse('2024-01-01T00:00:00.000Z');
  for (let n = 1; n <= count; n += 1) {
    const id = `${n}-closed-goal-${n}`;
    const submitted = new Date(t0 + n * 60_000).toISOString();
    const closed = new Date(t0 + n * 60_000 + 30_000).toISOString();
    const record = { id, type: 'build', status: 'closed', priority: 50, assigned_to: 'gardener', body: `closed goal ${n}`, submitted_at: submitted, closed_at: closed, closed_reason: 'success' };
    const file = goalFile(paths, id);
    fs.writeFileSync(file, options.garbage ? '{{{ a closed goal file: never to be opened on a cold start' : `${JSON.stringify(record, null, 2)}\n`);
    files.add(file);
    ledger.push(JSON.stringify({ id, type: 'build', plant: 'gardener', priority: 50, closed_reason: 'success', closed_at: closed, submitted_at: submitted }));
  }
  fs.writeFileSync(path.join(paths.goalsDir, CLOSED_LEDGER), ledger.length ? `${ledger.join('\n')}\n` : '');
  fs.writeFileSync(path.join(paths.goalsDir, '.counter'), `${count}\n`);
  // As pak2 leaves a ledger it wrote line by line at each close: recorded as its own (a garden pak2 has no
  // record of is checked whole once, which opens every closed goal file: test/store/ledger-check.test.ts).
  recordLedgerWritten(paths);
  return files;
}
