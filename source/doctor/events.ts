import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { formatIssue, validateEvent } from '../contracts/index.js';
import { NotFixed, type DoctorContext, type Problem } from './types.js';

/** What a pass over the event log found. */
export interface EventLogScan {
  /** Complete lines (ending in a newline), blank ones included. */
  lines: number;
  /** Complete non-blank lines that are not valid events. */
  bad: number;
  /** The first bad line: its number (from 1) and why. */
  firstBad?: { line: number; why: string };
  /** The unterminated tail (a writer that died mid-line): its line number, length and whether it parses. */
  torn?: { line: number; bytes: number; parses: boolean };
}

function judge(line: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'malformed JSON';
  }
  const issues = validateEvent(value);
  return issues.length > 0 ? formatIssue(issues[0]!) : undefined;
}

/**
 * Reads the event log once, streaming (a large log is never held whole), and
 * validates every complete line (validateEvent). Undefined when there is no
 * log.
 */
export async function scanEventLog(file: string): Promise<EventLogScan | undefined> {
  if (!fs.existsSync(file)) return undefined;
  const scan: EventLogScan = { lines: 0, bad: 0 };
  let carry = Buffer.alloc(0);
  const take = (line: string) => {
    scan.lines += 1;
    if (!line.trim()) return;
    const why = judge(line);
    if (why === undefined) return;
    scan.bad += 1;
    scan.firstBad ??= { line: scan.lines, why };
  };
  for await (const chunk of fs.createReadStream(file)) {
    let data = carry.length ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
    let newline: number;
    while ((newline = data.indexOf(0x0a)) >= 0) {
      take(data.subarray(0, newline).toString('utf8'));
      data = data.subarray(newline + 1);
    }
    carry = Buffer.from(data);
  }
  if (carry.length > 0) scan.torn = { line: scan.lines + 1, bytes: carry.length, parses: judge(carry.toString('utf8')) === undefined };
  return scan;
}

/** True when, a moment after the scan, the log ends in a newline: its tail was an append in flight. */
async function finishedMeanwhile(file: string): Promise<boolean> {
  await new Promise((resolve) => setTimeout(resolve, 100));
  try {
    const handle = await fsp.open(file, 'r');
    try {
      const { size } = await handle.stat();
      const last = Buffer.alloc(1);
      if (size > 0) await handle.read(last, 0, 1, size - 1);
      return size > 0 && last[0] === 0x0a;
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
}

/**
 * The event log `<runtime-root>/events/coordinator.jsonl`:
 *
 * - a torn last line (no newline: a writer died mid-line). Fix: append a
 *   newline, so the next event starts on a line of its own; the torn bytes
 *   stay (never delete data) and count as a bad line from then on.
 * - lines that are not valid events (a torn last line that does not parse
 *   included): their count and the first one's line number. No automatic
 *   fix: readers skip them, and the log is append-only.
 */
export async function checkEvents(ctx: DoctorContext): Promise<Problem[]> {
  const file = ctx.garden.paths.coordinatorLog;
  const scan = await scanEventLog(file);
  if (!scan) return [];
  if (scan.torn && (await finishedMeanwhile(file))) delete scan.torn; // a writer was mid-append, not dead
  const problems: Problem[] = [];
  if (scan.torn) {
    const torn = scan.torn;
    problems.push({
      check: 'events',
      file,
      field: `line ${torn.line}`,
      message: `torn last line: ${torn.bytes} byte(s) with no newline (${torn.parses ? 'it parses as an event, but' : 'not valid JSON;'} the next append would be written after it)`,
      fix: 'append a newline so the next event starts clean (the torn bytes stay)',
      repair: async () => {
        const handle = await fsp.open(file, 'a+');
        try {
          const { size } = await handle.stat();
          const last = Buffer.alloc(1);
          if (size > 0) await handle.read(last, 0, 1, size - 1);
          if (size === 0 || last[0] === 0x0a) throw new NotFixed('the last line ends in a newline now (a writer finished it)');
          await handle.write('\n');
          await handle.sync();
        } finally {
          await handle.close();
        }
        return `appended a newline; line ${torn.line} stays as it was and readers skip it`;
      },
    });
  }
  // A torn tail that does not parse is a bad line too, before and after its newline.
  const tornBad = scan.torn && !scan.torn.parses ? scan.torn : undefined;
  const bad = scan.bad + (tornBad ? 1 : 0);
  if (bad > 0) {
    const first = scan.firstBad ?? { line: tornBad!.line, why: 'malformed JSON' };
    const total = scan.lines + (scan.torn ? 1 : 0);
    problems.push({
      check: 'events',
      file,
      field: `line ${first.line}`,
      message: `${bad} bad line(s) of ${total}${tornBad ? ' (the torn last line included)' : ''}, first at line ${first.line} (${first.why}); readers skip them, and the log is append-only, so they stay`,
    });
  }
  return problems;
}
