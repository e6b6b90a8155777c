import fsp from 'node:fs/promises';
import { encodeTime } from 'ulid';
import { ULID_PATTERN, validateEvent, type EventRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { storeOf, type GardenStore } from './backend.js';

/** Bytes read per chunk when streaming the log. */
const CHUNK = 1024 * 1024;
/** How far before the seek position a catch-up looks for its cursor (clock skew between writers). */
const SKEW_WINDOW = 256 * 1024;

/**
 * The sort key of an event: its ULID, or for a line written before ids
 * existed, a ULID-shaped key made from its `ts` (the smallest id of that
 * millisecond), so old and new lines sort together by time.
 */
export function eventKey(event: Pick<EventRecord, 'id' | 'ts'>): string {
  if (event.id) return event.id;
  const ms = Date.parse(event.ts);
  return Number.isFinite(ms) ? `${encodeTime(Math.max(0, ms), 10)}0000000000000000` : '';
}

async function readLineAt(handle: fsp.FileHandle, start: number, size: number): Promise<{ line: string; next: number }> {
  let text = '';
  let at = start;
  const buffer = Buffer.alloc(16 * 1024);
  while (at < size) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
    if (bytesRead === 0) break;
    const newline = buffer.subarray(0, bytesRead).indexOf(0x0a);
    if (newline >= 0) {
      text += buffer.subarray(0, newline).toString('utf8');
      return { line: text, next: at + newline + 1 };
    }
    text += buffer.subarray(0, bytesRead).toString('utf8');
    at += bytesRead;
  }
  return { line: text, next: size };
}

/** The offset of the first line starting at or after `offset`. */
async function lineStartFrom(handle: fsp.FileHandle, offset: number, size: number): Promise<number> {
  if (offset <= 0) return 0;
  const { next } = await readLineAt(handle, offset - 1, size);
  return next;
}

function keyOfLine(line: string): string | undefined {
  try {
    const value = JSON.parse(line) as EventRecord;
    return eventKey(value) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The byte offset where the events after `since` begin (seed 004,
 * "Catch-up and resumption"): a binary search over byte offsets by event
 * key, so finding the cursor reads O(log size) lines, never the whole log;
 * then the exact line holding `since` is looked for near that point (writers
 * in different processes can be a few ms apart), and the offset just after
 * it returned. An id not in the log resumes at the first event with a
 * greater key.
 *
 * @returns the offset, and whether the exact cursor line was found.
 */
export async function findEventsAfter(paths: GardenPaths, since: string): Promise<{ offset: number; exact: boolean }> {
  const store = storeOf(paths);
  if (store) {
    // A store's offsets are seqs, and its ids grow with them: the cursor is the seq of the last id at or before it.
    const exact = await store.eventSeq(since);
    if (exact !== undefined) return { offset: exact, exact: true };
    return { offset: await store.eventSeqAtOrBefore(since), exact: false };
  }
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(paths.coordinatorLog, 'r');
  } catch {
    return { offset: 0, exact: false };
  }
  try {
    const { size } = await handle.stat();
    let lo = 0;
    let hi = size;
    // Invariant: every line starting before `lo` has a key <= since (as far as the search can tell).
    while (hi - lo > 4096) {
      const mid = await lineStartFrom(handle, Math.floor((lo + hi) / 2), size);
      if (mid >= hi) break;
      const { line, next } = await readLineAt(handle, mid, size);
      const key = keyOfLine(line);
      if (key !== undefined && key <= since) lo = next;
      else hi = mid;
    }
    // Look for the exact cursor a little before and after the search point: one read of the window, lines split in memory.
    const start = await lineStartFrom(handle, Math.max(0, lo - SKEW_WINDOW), size);
    const stop = Math.min(size, lo + SKEW_WINDOW);
    const window = Buffer.allocUnsafe(Math.max(0, Math.min(size, stop + 64 * 1024) - start));
    const { bytesRead } = await handle.read(window, 0, window.length, start);
    let firstGreater: number | undefined;
    for (let i = 0; start + i < stop && i < bytesRead; ) {
      const at = start + i;
      const newline = window.subarray(0, bytesRead).indexOf(0x0a, i);
      // A line running past the window is read on its own.
      const { line, next } = newline >= 0 ? { line: window.toString('utf8', i, newline), next: start + newline + 1 } : await readLineAt(handle, at, size);
      i = next - start;
      const key = keyOfLine(line);
      if (key === since) return { offset: next, exact: true };
      if (firstGreater === undefined && key !== undefined && key > since && at >= lo) firstGreater = at;
    }
    return { offset: firstGreater ?? Math.min(lo, size), exact: false };
  } finally {
    await handle.close();
  }
}

/** Filters of {@link streamEvents}. */
export interface EventFilter {
  types?: string[];
  goal?: string;
}

/** True when `event` passes `filter`. */
export function matchesEvent(event: EventRecord, filter: EventFilter): boolean {
  if (filter.types?.length && !filter.types.includes(event.type)) return false;
  if (filter.goal && event.goal !== filter.goal && !(event.run ?? '').startsWith(`${filter.goal}-r`)) return false;
  return true;
}

/** Events a store read returns at a time. */
const STORE_PAGE = 1000;

/**
 * A store's events after the cursor `fromSeq`, a page at a time, in commit
 * order; `visit` returning true stops after that event.
 *
 * @returns the seq of the last event visited (the cursor to go on from).
 */
export async function scanStoredEvents(store: GardenStore, fromSeq: number, visit: (event: EventRecord, seq: number) => boolean | void | Promise<boolean | void>): Promise<number> {
  let offset = fromSeq;
  for (;;) {
    const page = await store.eventsAfter(offset, STORE_PAGE);
    for (const { event, seq } of page) {
      offset = seq;
      if (await visit(event, seq)) return offset;
    }
    if (page.length < STORE_PAGE) return offset;
  }
}

/**
 * Streams the event log from `fromOffset` in 1 MB chunks (bounded memory,
 * whatever the log's size), calling `onEvent` for each valid event that
 * passes `filter`, in log order. A partial last line is left for later.
 *
 * @returns the offset after the last complete line read.
 */
export async function streamEvents(paths: GardenPaths, fromOffset: number, onEvent: (event: EventRecord) => void | Promise<void>, filter: EventFilter = {}): Promise<number> {
  const store = storeOf(paths);
  if (store) {
    return scanStoredEvents(store, fromOffset, async (event) => {
      if (matchesEvent(event, filter)) await onEvent(event);
    });
  }
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(paths.coordinatorLog, 'r');
  } catch {
    return fromOffset;
  }
  let offset = fromOffset;
  try {
    const { size } = await handle.stat();
    let carry = Buffer.alloc(0);
    const buffer = Buffer.alloc(CHUNK);
    let at = fromOffset;
    while (at < size) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK, size - at), at);
      if (bytesRead === 0) break;
      at += bytesRead;
      const data = Buffer.concat([carry, buffer.subarray(0, bytesRead)]);
      const end = data.lastIndexOf(0x0a) + 1;
      carry = Buffer.from(data.subarray(end));
      for (const line of data.subarray(0, end).toString('utf8').split('\n')) {
        const event = parseEventLine(line);
        if (event && matchesEvent(event, filter)) await onEvent(event);
      }
      offset = at - carry.length;
    }
  } finally {
    await handle.close();
  }
  return offset;
}

/** One line of the event log as a valid event, or undefined for a blank, torn or invalid line. */
export function parseEventLine(line: string): EventRecord | undefined {
  if (!line.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return validateEvent(value).length === 0 ? (value as EventRecord) : undefined;
}

/** True when `id` looks like an event id (a ULID). */
export function isEventId(id: string): boolean {
  return ULID_PATTERN.test(id);
}
