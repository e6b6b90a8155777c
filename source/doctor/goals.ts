import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import { writeFileAtomic } from '../atomic-write.js';
import { formatIssue, validateGoal, type GoalRecord } from '../contracts/index.js';
import { CLOSED_LEDGER, closedEntryOf, goalFile, inspectListingCache, listGoalIds, parseClosedLine, readJsonFile, recordLedgerWritten, withLock, type GoalProblem } from '../store/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** What the goal check learned, for the ledger and run checks. */
export interface GoalScan {
  /** Goals that read and validate, by id. */
  goals: Map<string, GoalRecord>;
  /** Ids whose goal file exists but could not be read or validated. */
  unreadable: Set<string>;
}

/** How many ids a ledger finding names before it says "and N more". */
const NAMED = 5;

function listIds(ids: string[]): string {
  return ids.length <= NAMED ? ids.join(', ') : `${ids.slice(0, NAMED).join(', ')} and ${ids.length - NAMED} more`;
}

/**
 * Every goal file `<runtime-root>/goals/*.json`: a `.json` name that is not a
 * goal id (listGoalIds' strays), and each goal file that does not read or
 * validate (validateGoal; its id must match the file name). Fix for both:
 * move the file aside (readers skip or stumble on it; it is kept, not read).
 */
export async function checkGoals(ctx: DoctorContext): Promise<{ problems: Problem[]; scan: GoalScan }> {
  const { paths } = ctx.garden;
  const problems: Problem[] = [];
  const scan: GoalScan = { goals: new Map(), unreadable: new Set() };
  const strays: GoalProblem[] = [];
  const ids = await listGoalIds(paths, strays);
  for (const stray of strays) {
    problems.push({
      check: 'goals',
      file: stray.file,
      message: 'not a goal file name (goal files are <N-slug>.json); pak2 never reads it',
      fix: 'move it aside',
      repair: async (c) => `moved it aside to ${await c.aside.move(stray.file)}`,
    });
  }
  const limit = pLimit(32);
  const reads = await Promise.all(ids.map((id) => limit(async () => ({ id, file: goalFile(paths, id), read: await readJsonFile(goalFile(paths, id)) }))));
  for (const { id, file, read } of reads.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }))) {
    let field: string | undefined;
    let message: string | undefined;
    if (!read.ok) {
      if (read.missing) continue; // removed since the listing
      message = read.message.startsWith(`${file}: `) ? read.message.slice(file.length + 2) : read.message;
    } else {
      const issues = validateGoal(read.value);
      if (issues.length > 0) {
        field = issues[0]!.field || undefined;
        message = issues.map(formatIssue).join('; ');
      } else if ((read.value as GoalRecord).id !== id) {
        field = 'id';
        message = `id ${JSON.stringify((read.value as GoalRecord).id)} does not match the file name`;
      } else {
        scan.goals.set(id, read.value as GoalRecord);
        continue;
      }
    }
    scan.unreadable.add(id);
    problems.push({
      check: 'goals',
      file,
      ...(field ? { field } : {}),
      message: `${message}; pak2 cannot read this goal`,
      fix: 'move it aside (the goal leaves the queue; the file is kept)',
      repair: async (c) => `moved it aside to ${await c.aside.move(file)}`,
    });
  }
  return { problems, scan };
}

/** The ledger's ids, in order, and the lines that are not goal ids. */
async function readLedger(file: string): Promise<{ exists: boolean; ids: string[]; junk: number[]; torn: boolean; notAFile?: string }> {
  let text: string;
  try {
    const stat = await fsp.stat(file);
    if (!stat.isFile()) return { exists: true, ids: [], junk: [], torn: false, notAFile: stat.isDirectory() ? 'a directory' : 'not a regular file' };
    text = await fsp.readFile(file, 'utf8');
  } catch {
    return { exists: false, ids: [], junk: [], torn: false };
  }
  const ids: string[] = [];
  const junk: number[] = [];
  const lines = text.split('\n');
  const torn = text.length > 0 && !text.endsWith('\n');
  if (!torn) lines.pop();
  lines.forEach((line, index) => {
    const entry = line === '' ? undefined : parseClosedLine(line);
    if (entry) ids.push(entry.id);
    else if (line !== '') junk.push(index + 1);
  });
  return { exists: true, ids, junk, torn };
}

function closedOrder(a: GoalRecord, b: GoalRecord): number {
  const at = (g: GoalRecord) => g.closed_at ?? g.updated_at ?? g.submitted_at;
  if (at(a) !== at(b)) return at(a) < at(b) ? -1 : 1;
  return a.id.localeCompare(b.id, 'en', { numeric: true });
}

/**
 * The closed-goal ledger `<runtime-root>/goals/.closed` against the goal
 * files: a closed goal missing from it (a reconcile pass re-adds it only
 * once it opens the file), an id listed whose goal file is not closed (the
 * pass then never dispatches it), an id with no goal file at all, and lines
 * that are not goal ids. One fix for all: copy the ledger aside and rewrite
 * it from the goal files (every closed goal, oldest close first; ids whose
 * goal file is unreadable are kept).
 */
export async function checkLedger(ctx: DoctorContext, scan: GoalScan): Promise<Problem[]> {
  const { paths } = ctx.garden;
  if (!fs.existsSync(paths.goalsDir)) return [];
  const file = path.join(paths.goalsDir, CLOSED_LEDGER);
  const ledger = await readLedger(file);
  const listed = new Set(ledger.ids);
  const closed = [...scan.goals.values()].filter((g) => g.status === 'closed');
  const missing = closed.filter((g) => !listed.has(g.id)).map((g) => g.id);
  const notClosed = [...listed].filter((id) => scan.goals.has(id) && scan.goals.get(id)!.status !== 'closed');
  const absent = [...listed].filter((id) => !scan.goals.has(id) && !scan.unreadable.has(id));

  let rewrite: Promise<string> | undefined;
  const repair = (c: DoctorContext): Promise<string> => {
    rewrite ??= (async () => {
      if (c.presence.held) throw new NotFixed(`a coordinator holds the garden (${c.presence.heldBy}) and appends to the ledger; stop it first`);
      const keep = ledger.ids.filter((id, index) => scan.unreadable.has(id) && ledger.ids.indexOf(id) === index);
      // Unreadable goals keep a bare-id line; every closed goal gets its entry (docs/goal/level2.md).
      const lines = [...keep.map((id) => `${id}\n`), ...[...closed].sort(closedOrder).map((g) => `${JSON.stringify(closedEntryOf(g))}\n`)];
      // A directory in the ledger's place is moved aside whole; a file is copied aside and rewritten.
      const copy = ledger.notAFile ? await c.aside.move(file) : ledger.exists ? await c.aside.copy(file) : undefined;
      // Written from the goal files: recorded as pak2's, so no later process checks it whole again.
      await withLock(paths.goalsDir, async () => {
        await writeFileAtomic(file, lines.join(''), { fsync: true });
        recordLedgerWritten(paths);
      });
      return `rewrote the ledger from the goal files (${lines.length} closed goal(s))${copy ? `; the old ledger is at ${copy}` : ''}`;
    })();
    return rewrite;
  };
  const fix = 'rewrite the ledger from the goal files (the old one is copied aside)';
  const problems: Problem[] = [];
  const add = (message: string, field?: string) => problems.push({ check: 'ledger', file, ...(field ? { field } : {}), message, fix, repair });
  if (ledger.notAFile) {
    problems.push({ check: 'ledger', file, message: `the closed ledger is ${ledger.notAFile}; pak2 cannot read it (listings and the coordinator stop with an error)`, fix: 'move it aside and write the ledger from the goal files', repair });
    return problems;
  }
  if (missing.length > 0) add(`${missing.length} closed goal(s) missing from the ledger: ${listIds(missing)}`);
  if (notClosed.length > 0) add(`${notClosed.length} goal(s) listed as closed whose goal file is not closed, so reconcile never looks at them: ${listIds(notClosed.map((id) => `${id} (${scan.goals.get(id)!.status})`))}`);
  if (absent.length > 0) add(`${absent.length} id(s) listed with no goal file: ${listIds(absent)}`);
  if (ledger.junk.length > 0) add(`${ledger.junk.length} line(s) that are not goal ids, first at line ${ledger.junk[0]}`, `line ${ledger.junk[0]}`);
  else if (ledger.torn) add('the last line has no newline (a torn append); the next append cuts it');
  problems.push(...(await checkListingCache(ctx, scan, listed)));
  return problems;
}

/**
 * The listing cache `<runtime-root>/.cache/goals-listing.json` (docs/goal/
 * level2.md, "The listing cache"): one a listing would believe must name
 * every goal in goals/ that the ledger does not list; a goal it leaves out
 * is never read, listed or dispatched. Also a cache that does not read (a
 * listing drops it and lists goals/). Fix: remove it (a cache; the next
 * listing lists goals/ and writes a new one).
 */
async function checkListingCache(ctx: DoctorContext, scan: GoalScan, listed: ReadonlySet<string>): Promise<Problem[]> {
  const cache = await inspectListingCache(ctx.garden.paths);
  if (!cache) return [];
  const fix = 'remove it (the next listing lists goals/ and writes it again)';
  const repair = async () => {
    await fsp.rm(cache.file, { force: true });
    return 'removed the listing cache';
  };
  if (cache.damaged) return [{ check: 'ledger', file: cache.file, message: `the listing cache does not read (${cache.damaged}); listings ignore it`, fix, repair }];
  if (!cache.current) return [];
  const held = new Set(cache.candidates);
  const omitted = [...scan.goals.keys(), ...scan.unreadable].filter((id) => !listed.has(id) && !held.has(id)).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  if (omitted.length === 0) return [];
  return [{ check: 'ledger', file: cache.file, message: `the listing cache leaves out ${omitted.length} goal(s) the ledger does not list, so no listing or pass sees them: ${listIds(omitted)}`, fix, repair }];
}
