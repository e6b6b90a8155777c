import type { ServerResponse } from 'node:http';
import type { EventRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { matchesEvent, storeUnavailable, streamEvents, type EventFilter } from '../store/index.js';
import { sseFrame, type LogTail, type TailedEvent } from './log-tail.js';

/** How soon a catch-up that met an unreachable store reads again, ms. */
const STORE_RETRY_MS = 1000;

class Closed extends Error {}

/**
 * An open stream the server holds (an SSE connection, a GraphQL
 * subscription): checked again by its token while it lasts, ended when the
 * token is revoked or the server stops.
 */
export interface OpenStream {
  /** The `Authorization` header it was opened with. */
  authorization: string | undefined;
  /** Ends it. Idempotent. */
  close(): void;
}

/** Options of one {@link SseConnection}. */
export interface SseConnectionOptions {
  paths: GardenPaths;
  tail: LogTail;
  /** Offset in the log where this stream starts: right after the client's cursor, or the end of the log. */
  offset: number;
  filter: EventFilter;
  /** A `: keep-alive` comment this often, ms. */
  keepAliveMs: number;
  /** A comment sent first (why the stream starts where it does), if any. */
  note?: string;
}

/**
 * One `GET /api/v1/events/stream` client (docs/server/level2.md). The stream
 * follows the log by byte offset, never by time: it starts just after the
 * client's cursor (`Last-Event-ID` or `?since=`), catches up by reading the
 * log from there, and then takes the {@link LogTail}'s batches, keeping only
 * events whose line ends after its own offset. So a reconnect with the last
 * id received gets each later event exactly once, in log order. A client
 * that reads slower than events come is taken off the live batches while its
 * socket drains and catches up from the file again: nothing is held for it
 * in memory beyond the socket's own buffer.
 */
export class SseConnection implements OpenStream {
  /** The `Authorization` header the stream was opened with: checked again while it lasts, so a revoked token's stream ends. */
  authorization: string | undefined;
  private offset: number;
  private live = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onClose = () => this.close();

  constructor(
    private readonly raw: ServerResponse,
    private readonly options: SseConnectionOptions,
  ) {
    this.offset = options.offset;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    raw.write(`retry: 1000\n${options.note ? `: ${options.note}\n` : ''}\n`);
    raw.on('close', this.onClose);
    this.timer = setInterval(() => {
      if (!this.closed) raw.write(': keep-alive\n\n');
    }, options.keepAliveMs);
    this.timer.unref();
    void this.catchUp();
  }

  /** Ends the stream (the server stops, or the client went away). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.options.tail.unsubscribe(this.onBatch);
    this.raw.off('close', this.onClose);
    if (!this.raw.writableEnded) this.raw.end();
  }

  /** Frames read during a catch-up, not written yet: written in pieces of ~64 KB, not one write per event. */
  private pending = '';

  /** Queues one event of a catch-up; writes when 64 KB are queued, waiting for the socket to drain when its buffer is full. */
  private send = async (event: EventRecord): Promise<void> => {
    if (this.closed) throw new Closed();
    this.pending += sseFrame(event);
    if (this.pending.length >= 64 * 1024) await this.flush();
  };

  private async flush(): Promise<void> {
    if (this.closed) throw new Closed();
    const out = this.pending;
    this.pending = '';
    if (!out || this.raw.write(out)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.raw.off('drain', done);
        this.raw.off('close', done);
        resolve();
      };
      this.raw.once('drain', done);
      this.raw.once('close', done);
    });
    if (this.closed) throw new Closed();
  }

  /** Reads the log from this stream's offset until it reaches the tail's, then joins the live batches. */
  private async catchUp(): Promise<void> {
    try {
      while (!this.closed) {
        this.offset = await streamEvents(this.options.paths, this.offset, this.send, this.options.filter);
        await this.flush();
        // Synchronous from here to subscribe: no batch can slip in between.
        if (this.offset >= this.options.tail.offset && !this.closed) {
          this.live = true;
          this.options.tail.subscribe(this.onBatch);
          return;
        }
      }
    } catch (error) {
      if (error instanceof Closed) return;
      // The store is down: the stream waits and reads again from where it was (the client keeps its place), never ends.
      if (storeUnavailable(error) && !this.closed) {
        setTimeout(() => void this.catchUp(), STORE_RETRY_MS).unref();
        return;
      }
      this.close();
    }
  }

  private onBatch = (batch: TailedEvent[]): void => {
    if (!this.live || this.closed) return;
    // One write per batch, not one per event: with many subscribers the writes are the cost.
    let out = '';
    for (const { event, end, frame } of batch) {
      if (end <= this.offset) continue;
      if (matchesEvent(event, this.options.filter)) out += frame;
      this.offset = end;
    }
    if (!out || this.raw.write(out)) return;
    // Too slow for the live batches: off them until the socket drains, then catch up from the file.
    this.live = false;
    this.options.tail.unsubscribe(this.onBatch);
    this.raw.once('drain', () => void this.catchUp());
  };
}
