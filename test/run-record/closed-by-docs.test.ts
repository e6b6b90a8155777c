/**
 * The docs say who closes a run in the words its RunClosed event carries
 * (issue 28: the docs said a watchdog kill was "closed by driver" where the
 * event says "closed by watchdog"): docs/run/level2.md's "closed by" column
 * and docs/events/level2.md's RunClosed row use exactly the closers the code
 * writes (RUN_CLOSERS), and each stop path's row names the closer the driver
 * records for it (stoppedStatus).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { stoppedStatus } from '../../source/driver/dispatch.js';
import { RUN_CLOSERS } from '../../source/store/index.js';

const DOCS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs');

/** The rows of the table in "Terminal paths and the facts they keep": path cell → closed-by cell. */
function terminalPaths(): Map<string, string> {
  const text = fs.readFileSync(path.join(DOCS, 'run/level2.md'), 'utf8');
  const lines = text.slice(text.indexOf('## Terminal paths and the facts they keep')).split('\n');
  const start = lines.findIndex((l) => l.startsWith('| path | status / failure_reason | closed by |'));
  const table = new Map<string, string>();
  for (const row of lines.slice(start + 2)) {
    if (!row.startsWith('| ')) break;
    const cells = row.slice(2, -2).split(' | ');
    table.set(cells[0]!, cells[2]!);
  }
  return table;
}

/** The closers a closed-by cell names: its words that are closers, and any first word of a clause that is not. */
function closersIn(cell: string): string[] {
  const clauses = cell.replace(/\([^)]*\)/g, '').split(/;| or /).map((c) => c.trim()).filter(Boolean);
  return clauses.map((c) => c.split(/[\s,(`]/)[0]!);
}

describe('who closes a run: docs and code say the same', () => {
  it("docs/run/level2.md's closed-by column names only closers the code writes", () => {
    const table = terminalPaths();
    expect(table.size).toBeGreaterThan(15);
    const named = [...table].flatMap(([row, cell]) => closersIn(cell).map((c) => ({ row, closer: c })));
    expect(named.filter((n) => !(RUN_CLOSERS as readonly string[]).includes(n.closer))).toEqual([]);
  });

  it.each([
    ['watchdog, live here', 'killed'],
    ['`run_timeout_seconds`', 'timeout'],
    ['coordinator stop', 'coordinator_stopped'],
    ['operator stop', 'operator'],
    ['a budget cap crossed, live here', 'budget'],
  ] as const)('the row %s names the closer its RunClosed says', (row, stop) => {
    const cell = terminalPaths().get(row);
    expect(cell, `no row "${row}"`).toBeDefined();
    expect(closersIn(cell!)[0]).toBe(stoppedStatus(stop).by ?? 'driver');
  });

  it("docs/events/level2.md's RunClosed row lists every closer, and no other", () => {
    const text = fs.readFileSync(path.join(DOCS, 'events/level2.md'), 'utf8');
    const row = text.split('\n').find((l) => l.startsWith('| `RunClosed` |'))!;
    const listed = row.match(/`closed by` ([a-z /]+):/)?.[1]?.split(' / ');
    expect(listed).toEqual([...RUN_CLOSERS]);
  });
});
