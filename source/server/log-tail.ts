import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { EventRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { eventKey, parseEventLine, scanStoredEvents, storeOf } from '../store/index.js';

/** One event read from the log with the byte offset just after its line. */
export interface LoggedEvent {
  event: EventRecord;
  /** Offset after the event's line: resuming there reads what came after it. */
  end: number;
}

/** Bytes read per chunk. */
const CHUNK = 256 * 1024;

/**
 * Reads the event log from `from` (a line start) line by line, calling
 * `visit` with each valid event and the offset after its line; `visit`
 * returning true stops the read after that event. Malformed lines are
 * passed over; a partial last line is left for a later read. Memory stays
 * bounded whatever the log's size.
 *
 * @returns the offset after the last line consumed (where the next read starts).
 */
export async function scanEvents(paths: GardenPaths, from: number, visit: (event: EventRecord, end: number) => boolean | void | Promise<boolean | void>): Promise<number> {
  const store = storeOf(paths);
  // A store's offsets are event seqs: the cursor after an event is its seq.
  if (store) return scanStoredEvents(store, from, visit);
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(paths.coordinatorLog, 'r');
  } catch {
    return from;
  }
  try {
    const { size } = await handle.stat();
    if (size <= from) return from;
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, size - from));
    let pending = Buffer.alloc(0);
    // File offset of pending[0].
    let base = from;
    let at = from;
    while (at < size) {
      const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, size - at), at);
      if (bytesRead === 0) break;
      at += bytesRead;
      const data = pending.length ? Buffer.concat([pending, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      let start = 0;
      for (let nl = data.indexOf(0x0a, start); nl >= 0; nl = data.indexOf(0x0a, start)) {
        const end = base + nl + 1;
        const line = data.toString('utf8', start, nl);
        start = nl + 1;
        const event = parseEventLine(line);
        if (event && (await visit(event, end))) return end;
      }
      base += start;
      pending = Buffer.from(data.subarray(start));
    }
    return base;
  } finally {
    await handle.close();
  }
}

/** The offset after the last complete line of the log (0 when there is none). */
export async function endOfLog(paths: GardenPaths): Promise<number> {
  const store = storeOf(paths);
  if (store) return store.lastEventSeq();
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(paths.coordinatorLog, 'r');
  } catch {
    return 0;
  }
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(64 * 1024);
    for (let end = size; end > 0; ) {
      const start = Math.max(0, end - buffer.length);
      const { bytesRead } = await handle.read(buffer, 0, end - start, start);
      const nl = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (nl >= 0) return start + nl + 1;
      end = start;
    }
    return 0;
  } finally {
    await handle.close();
  }
}

/** One SSE frame for an event: `id:` its ULID (or key), `event:` its type, `data:` the event as JSON. */
export function sseFrame(event: EventRecord): string {
  return `id: ${eventKey(event)}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** An event of a {@link LogTail} batch, with its SSE frame built once for every subscriber. */
export interface TailedEvent extends LoggedEvent {
  frame: string;
}

/** Options of {@link LogTail}. */
export interface LogTailOptions {
  /** How often the log is checked besides file-system notices, ms. Default 500. */
  pollMs?: number;
  /** Events per broadcast batch at most. Default 2000. */
  batch?: number;
  /**
   * A file-system notice waits this long before the read, so a burst of
   * appends is read and written to each subscriber as one batch (one write
   * per subscriber, not one per event). Default 5 ms.
   */
  coalesceMs?: number;
}

/**
 * Follows the garden's event log for the server (one reader, however many
 * subscribers): wakes on file-system notices of the events directory and on
 * a timer, reads what was appended after its offset, and hands each batch to
 * its subscribers with every event's end offset, so a subscriber that joins
 * at an offset takes exactly the events after it. `version` counts reads
 * that found something new; {@link changedSince} waits for the next one.
 */
export class LogTail {
  /** Offset after the last line handed to subscribers. */
  offset = 0;
  /** Increases each time new lines are read. */
  version = 0;
  private readonly subscribers = new Set<(batch: TailedEvent[]) => void>();
  private readonly waiters = new Set<() => void>();
  private watcher: fs.FSWatcher | undefined;
  private unwatch: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly paths: GardenPaths,
    private readonly options: LogTailOptions = {},
  ) {}

  /** Starts at the current end of the log. */
  async start(): Promise<void> {
    const store = storeOf(this.paths);
    if (store) {
      // Every commit on any server notifies (LISTEN/NOTIFY); the timer stays as the backstop.
      this.unwatch = await store.watchEvents(() => this.soon());
      this.offset = await endOfLog(this.paths);
      this.timer = setInterval(() => this.kick(), this.options.pollMs ?? 500);
      this.timer.unref();
      return;
    }
    await fsp.mkdir(this.paths.eventsDir, { recursive: true });
    this.offset = await endOfLog(this.paths);
    const name = path.basename(this.paths.coordinatorLog);
    try {
      this.watcher = fs.watch(this.paths.eventsDir, (_type, file) => {
        if (!file || file === name) this.soon();
      });
      this.watcher.on('error', () => undefined);
    } catch {
      // no file-system notices here: the timer still reads
    }
    this.timer = setInterval(() => this.kick(), this.options.pollMs ?? 500);
    this.timer.unref();
  }

  /** Stops following; waiters are released. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    await this.unwatch?.().catch(() => undefined);
    if (this.timer) clearInterval(this.timer);
    if (this.pending) clearTimeout(this.pending);
    await this.reading;
    this.wake();
    this.subscribers.clear();
  }

  /** Subscribes to batches of new events; returns the unsubscribe function. */
  subscribe(listener: (batch: TailedEvent[]) => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  /** Unsubscribes `listener`. */
  unsubscribe(listener: (batch: TailedEvent[]) => void): void {
    this.subscribers.delete(listener);
  }

  /**
   * Resolves once `version` differs from `since` (at once if it already
   * does), after `timeoutMs`, or when `signal` says stop.
   */
  changedSince(since: number, timeoutMs: number, signal?: { onWake: (wake: () => void) => void }): Promise<void> {
    if (this.version !== since || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
      signal?.onWake(done);
    });
  }

  private pending: NodeJS.Timeout | undefined;

  /** Asks for a read after the coalescing window (one read for the notices that come meanwhile). */
  private soon(): void {
    if (this.pending || this.stopped) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.kick();
    }, this.options.coalesceMs ?? 5);
  }

  /** Asks for a read now (coalesced with one in progress). */
  kick(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.read().finally(() => {
      this.reading = undefined;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  private async read(): Promise<void> {
    const limit = this.options.batch ?? 2000;
    for (;;) {
      const batch: TailedEvent[] = [];
      let end: number;
      try {
        end = await scanEvents(this.paths, this.offset, (event, at) => {
          batch.push({ event, end: at, frame: sseFrame(event) });
          return batch.length >= limit;
        });
      } catch {
        return;
      }
      if (end === this.offset) return;
      this.offset = end;
      this.version += 1;
      for (const subscriber of [...this.subscribers]) subscriber(batch);
      this.wake();
      if (batch.length < limit || this.stopped) return;
    }
  }
}
