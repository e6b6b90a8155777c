import type { EventRecord } from '../../contracts/index.js';
import type { GardenPaths } from '../../garden/index.js';
import { matchesEvent, storeUnavailable, type EventFilter } from '../../store/index.js';
import { scanEvents, type LogTail, type TailedEvent } from '../log-tail.js';

/** Events read from the log per catch-up read, at most. */
const PAGE = 500;
/** How soon a catch-up that met an unreachable store reads again, ms (as the SSE stream). */
const STORE_RETRY_MS = 1000;
/** Live events held for a consumer that has not taken them, at most: past it, it is taken off the live batches and catches up from the log. */
const LIVE_QUEUE_MAX = 2000;

/** Options of an {@link EventFollower}. */
export interface EventFollowerOptions {
  paths: GardenPaths;
  tail: LogTail;
  /** Where in the log it starts: right after the client's cursor, or the tail's offset (the end of the log). An opaque log offset (bytes, or a store's seq). */
  offset: number;
  filter: EventFilter;
}

/**
 * The event log after an offset as an async iterator, for the GraphQL
 * `eventAdded` subscription (docs/server/level2.md, "GraphQL"): the same
 * walk as the SSE stream's ({@link SseConnection}, source/server/sse.ts),
 * pulled instead of pushed. It reads the log from its offset page by page
 * until it reaches the {@link LogTail}'s offset, then takes the tail's
 * batches, keeping only events whose line ends after its own offset: each
 * event after the cursor once, in log order, on the file store and on a
 * database store alike (offsets are the store's opaque cursors). A consumer
 * that falls {@link LIVE_QUEUE_MAX} events behind is taken off the live
 * batches and catches up from the log again: nothing piles up for it.
 * While the garden's store cannot be reached it waits and reads again from
 * where it was, as the SSE stream does. `return()` ends it at once, even
 * while it waits for the next event.
 */
export class EventFollower implements AsyncIterableIterator<EventRecord> {
  private offset: number;
  private readonly page: EventRecord[] = [];
  private readonly live: TailedEvent[] = [];
  private joined = false;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly options: EventFollowerOptions) {
    this.offset = options.offset;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<EventRecord>> {
    for (;;) {
      if (this.closed) return { done: true, value: undefined };
      const read = this.page.shift();
      if (read) return { done: false, value: read };
      if (!this.joined) {
        try {
          await this.catchUp();
        } catch (error) {
          if (!storeUnavailable(error)) throw error;
          await this.pause(STORE_RETRY_MS);
        }
        continue;
      }
      const taken = this.takeLive();
      if (taken) return { done: false, value: taken };
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<EventRecord>> {
    this.close();
    return { done: true, value: undefined };
  }

  async throw(error?: unknown): Promise<IteratorResult<EventRecord>> {
    this.close();
    throw error;
  }

  /** Stops following; a waiting `next()` answers done. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.leave();
    this.wake?.();
  }

  /** Waits `ms`, or less when closed meanwhile. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** One page of the log after the offset; joins the live batches once the offset reaches the tail's. */
  private async catchUp(): Promise<void> {
    const { paths, tail, filter } = this.options;
    // Kept only when the read ends well: a read the store broke off is done again from the same offset, nothing twice.
    const read: EventRecord[] = [];
    this.offset = await scanEvents(paths, this.offset, (event) => {
      if (!matchesEvent(event, filter)) return false;
      read.push(event);
      return read.length >= PAGE;
    });
    this.page.push(...read);
    // Synchronous from the check to subscribe: no batch can slip in between.
    if (!this.page.length && this.offset >= tail.offset && !this.closed) {
      this.joined = true;
      tail.subscribe(this.onBatch);
    }
  }

  /** The next live event after the offset that passes the filter, if one is held. */
  private takeLive(): EventRecord | undefined {
    for (let item = this.live.shift(); item; item = this.live.shift()) {
      if (item.end <= this.offset) continue;
      this.offset = item.end;
      if (matchesEvent(item.event, this.options.filter)) return item.event;
    }
    return undefined;
  }

  private onBatch = (batch: TailedEvent[]): void => {
    if (!this.joined || this.closed) return;
    this.live.push(...batch);
    // Too far behind for the live batches: off them, and read the log from the offset again.
    if (this.live.length > LIVE_QUEUE_MAX) this.leave();
    this.wake?.();
  };

  private leave(): void {
    if (this.joined) this.options.tail.unsubscribe(this.onBatch);
    this.joined = false;
    this.live.length = 0;
  }
}
