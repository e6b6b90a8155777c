import fsp from 'node:fs/promises';
import { formatIssue, validateEvent, type EventRecord, type EventType } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { monotonicFactory } from 'ulid';
import { appendJsonLine, StoreError } from './files.js';
import { span } from '../timing.js';
import { storeOf } from './backend.js';

/** Fields of an event other than its timestamp. */
export type EventInput = Omit<EventRecord, 'ts' | 'id'> & { type: EventType; ts?: string };

// Monotonic within this writer: two events in the same millisecond still sort in the order written.
const nextId = monotonicFactory();

/** Listener told of every event this process appends (the headless printer and TUI use it). */
export type EventListener = (event: EventRecord) => void;
const listeners = new Set<EventListener>();

/** Subscribes to events appended by this process; returns the unsubscribe function. */
export function onEvent(listener: EventListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Appends one validated event to `<runtime-root>/events/coordinator.jsonl`
 * (seed 002, events.py) with a ULID `id` (seed 004), monotonic within this
 * process and taken from `ts`'s time. `ts` defaults to now.
 *
 * @throws StoreError INVALID_RECORD for an event that fails validateEvent, IO_ERROR when the write fails.
 */
export async function appendEvent(paths: GardenPaths, input: EventInput, now: Date = new Date()): Promise<EventRecord> {
  const ts = input.ts ?? now.toISOString();
  const store = storeOf(paths);
  if (store) {
    // The store gives the id at commit (after every id committed before it); listeners hear of it once committed.
    const pending = { id: '', ...input, ts } as EventRecord;
    const event = await store.appendEvent(pending);
    store.afterCommit(() => {
      for (const listener of listeners) listener(event);
    });
    return event;
  }
  const event = { id: nextId(Date.parse(ts)), ...input, ts } as EventRecord;
  const issues = validateEvent(event);
  if (issues.length > 0) {
    throw new StoreError('INVALID_RECORD', `event ${input.type}: ${formatIssue(issues[0]!)}`, paths.coordinatorLog);
  }
  const end = span('appendEvent');
  await appendJsonLine(paths.coordinatorLog, event);
  end();
  for (const listener of listeners) listener(event);
  return event;
}

/** Events read from the log, plus lines that were not valid JSON events. */
export interface EventRead {
  events: EventRecord[];
  errors: string[];
  /** Byte offset after the last complete line read; pass it back as `fromOffset`. */
  offset: number;
}

/**
 * Reads the event log from a byte offset (0: the whole log). A partial last
 * line is left for the next read. Malformed lines are reported, not thrown.
 */
export async function readEvents(paths: GardenPaths, fromOffset = 0): Promise<EventRead> {
  const store = storeOf(paths);
  if (store) {
    // A store's offset is the `seq` of the last event read (commit order).
    const events: EventRecord[] = [];
    let offset = fromOffset;
    for (;;) {
      const page = await store.eventsAfter(offset, 5000);
      for (const { event, seq } of page) {
        events.push(event);
        offset = seq;
      }
      if (page.length < 5000) return { events, errors: [], offset };
    }
  }
  let buffer: Buffer;
  try {
    const handle = await fsp.open(paths.coordinatorLog, 'r');
    try {
      const { size } = await handle.stat();
      buffer = Buffer.alloc(Math.max(0, size - fromOffset));
      await handle.read(buffer, 0, buffer.length, fromOffset);
    } finally {
      await handle.close();
    }
  } catch {
    return { events: [], errors: [], offset: fromOffset };
  }
  const end = buffer.lastIndexOf(0x0a) + 1;
  const text = buffer.subarray(0, end).toString('utf8');
  const events: EventRecord[] = [];
  const errors: string[] = [];
  let lineNo = 0;
  for (const line of text.split('\n')) {
    lineNo += 1;
    // Line numbers count from where this read began.
    const where = `${paths.coordinatorLog}: line ${lineNo}${fromOffset ? ` after byte ${fromOffset}` : ''}`;
    if (!line.trim()) continue;
    try {
      const value: unknown = JSON.parse(line);
      const issues = validateEvent(value);
      if (issues.length > 0) errors.push(`${where}: ${formatIssue(issues[0]!)}`);
      else events.push(value as EventRecord);
    } catch {
      errors.push(`${where}: malformed JSON`);
    }
  }
  return { events, errors, offset: fromOffset + end };
}

/**
 * The offset of the first line that starts at or after `offset` in the event
 * log, so a read can begin part-way through a large log without a torn line.
 */
export async function eventLogLineStart(paths: GardenPaths, offset: number): Promise<number> {
  if (storeOf(paths)) return Math.max(0, offset);
  if (offset <= 0) return 0;
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(paths.coordinatorLog, 'r');
  } catch {
    return 0;
  }
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset - 1);
    const newline = buffer.subarray(0, bytesRead).indexOf(0x0a);
    return newline < 0 ? offset + bytesRead : offset + newline;
  } finally {
    await handle.close();
  }
}
