import fs from 'node:fs';
import type { EventRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readEvents, storeOf } from '../store/index.js';

/**
 * Follows `<runtime-root>/events/coordinator.jsonl` from its end at
 * `start()`: every event appended after that, whoever wrote it (this
 * process, `pak2 submit` in another terminal, a second tool), in log order.
 * Polls every `pollMs` (default 200 ms); `flush()` reads what is there now.
 */
export class EventFollower {
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private starting: Promise<void> | undefined;
  private unwatch: (() => Promise<void>) | undefined;

  constructor(
    private readonly paths: GardenPaths,
    private readonly listener: (event: EventRecord) => void,
    private readonly pollMs = 200,
  ) {}

  /**
   * Starts following from the log's current end (a store's: its newest
   * event, then every commit wakes a read). Resolves once the starting point
   * is taken, so an event appended after it is followed.
   */
  start(): Promise<void> {
    const store = storeOf(this.paths);
    if (store) {
      this.starting = (async () => {
        this.offset = await store.lastEventSeq();
        this.unwatch = await store.watchEvents(() => void this.flush());
      })().catch(() => undefined);
      this.timer = setInterval(() => void this.flush(), this.pollMs);
      this.timer.unref();
      return this.starting;
    }
    try {
      this.offset = fs.statSync(this.paths.coordinatorLog).size;
    } catch {
      this.offset = 0;
    }
    this.timer = setInterval(() => void this.flush(), this.pollMs);
    this.timer.unref();
    return Promise.resolve();
  }

  /** Reads and delivers every complete event line appended since the last read (one read at a time). */
  flush(): Promise<void> {
    if (this.reading) return this.reading.then(() => this.flush());
    const reading = this.readNew();
    this.reading = reading;
    void reading.finally(() => {
      if (this.reading === reading) this.reading = undefined;
    });
    return reading;
  }

  private async readNew(): Promise<void> {
    if (storeOf(this.paths)) {
      await this.starting;
      // A store that cannot be read now (the server restarting) is read again on the next wake.
      const read = await readEvents(this.paths, this.offset).catch(() => undefined);
      if (!read) return;
      this.offset = read.offset;
      for (const event of read.events) this.listener(event);
      return;
    }
    let size = 0;
    try {
      size = (await fs.promises.stat(this.paths.coordinatorLog)).size;
    } catch {
      return;
    }
    if (size < this.offset) this.offset = 0; // the log was replaced
    if (size === this.offset) return;
    const read = await readEvents(this.paths, this.offset);
    this.offset = read.offset;
    for (const event of read.events) this.listener(event);
  }

  /** Stops following after one last read. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
    await this.unwatch?.().catch(() => undefined);
    this.unwatch = undefined;
  }
}
