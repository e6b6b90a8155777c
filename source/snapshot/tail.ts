import fs from 'node:fs';
import type { RunStreamReader } from '../store/index.js';
import { renderRawLine, type TailLine, type TailUsage } from './stream-lines.js';

/** How much of the file's end is read when a tail is opened (bytes). */
export const TAIL_OPEN_BYTES = 256 * 1024;
/** How many rendered lines a tail keeps. */
export const TAIL_MAX_LINES = 400;

/** What the run tail pane shows. Usage counts only what the tail has read. */
export interface TailState {
  runId: string;
  file: string;
  lines: TailLine[];
  usage: TailUsage;
  /** File size read so far (bytes). */
  bytes: number;
  /** True when the tail began part-way into a longer file. */
  truncated: boolean;
}

/**
 * Follows one run's events.jsonl. Opening reads only the last
 * {@link TAIL_OPEN_BYTES} of the file (a 100 MB stream opens as fast as a
 * small one); each `read()` then reads from the last offset. Keeps the last
 * {@link TAIL_MAX_LINES} rendered lines. Never throws: a missing file is an
 * empty tail. With a `stored` reader (a garden with a store: the run may be
 * another machine's), the stream is the store's copy, read by
 * {@link RunTail.refresh}; `read()` then reads nothing.
 */
export class RunTail {
  private offset = 0;
  /** Bytes of a line whose newline has not come yet. */
  private partial: Buffer = Buffer.alloc(0);
  private lines: TailLine[] = [];
  private usage: TailUsage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
  private truncated = false;
  private opened = false;
  /** True while the rest of an overlong line is being skipped. */
  private dropping = false;
  /** The stored read under way: refreshes do not overlap. */
  private refreshing: Promise<boolean> | undefined;

  constructor(
    readonly runId: string,
    readonly file: string,
    readonly stored?: RunStreamReader,
  ) {}

  /** Reads whatever is new in the file; returns true when something changed. */
  read(): boolean {
    if (this.stored) return false;
    let fd: number;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch {
      return false;
    }
    try {
      const from = this.plan(fs.fstatSync(fd).size);
      if (!from) return false;
      const buffer = Buffer.alloc(from.length);
      fs.readSync(fd, buffer, 0, buffer.length, from.offset);
      return this.take(buffer, from);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Reads whatever is new (the store's copy with a `stored` reader, else the file); true when something changed. Never rejects. */
  refresh(): Promise<boolean> {
    if (!this.stored) return Promise.resolve(this.read());
    this.refreshing ??= this.readStored(this.stored)
      .catch(() => false)
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async readStored(stored: RunStreamReader): Promise<boolean> {
    const from = this.plan(await stored.size());
    if (!from) return false;
    const buffer = await stored.read(from.offset, from.length);
    // Fewer bytes than asked: the copy was rewritten meanwhile (redacted at the close); the next refresh reads it again.
    if (buffer.length !== from.length) return false;
    return this.take(buffer, from);
  }

  /** Where the next read starts for a stream of `size` bytes, and how much it takes; undefined when nothing is new. */
  private plan(size: number): { offset: number; length: number; jumped: boolean } | undefined {
    if (!this.opened) {
      this.opened = true;
      if (size > TAIL_OPEN_BYTES) {
        this.offset = size - TAIL_OPEN_BYTES;
        this.truncated = true;
      }
    }
    if (size < this.offset) {
      // Rewritten from the start: follow the new file.
      this.offset = 0;
      this.partial = Buffer.alloc(0);
    }
    if (size === this.offset) return undefined;
    let jumped = false;
    if (size - this.offset > TAIL_OPEN_BYTES) {
      // More came since the last read than a tail ever shows (a burst, or a run followed late):
      // read only its end, as on opening, so memory stays bounded whatever the stream's size.
      this.offset = size - TAIL_OPEN_BYTES;
      this.partial = Buffer.alloc(0);
      this.dropping = false;
      this.truncated = true;
      jumped = true;
    }
    return { offset: this.offset, length: size - this.offset, jumped };
  }

  /** Takes the bytes read at `at.offset` into the lines; true when something changed. */
  private take(buffer: Buffer, at: { offset: number; length: number; jumped: boolean }): boolean {
    const skipFirst = at.jumped || (this.truncated && this.offset > 0 && this.lines.length === 0 && this.partial.length === 0);
    this.offset = at.offset + at.length;
    // Lines are found by their newline byte and decoded one at a time: no string of the whole read (up to
    // TAIL_OPEN_BYTES, twice that as a two-byte string, in V8's large-object space) is made each poll.
    const data = this.partial.length > 0 ? Buffer.concat([this.partial, buffer]) : buffer;
    const parts: string[] = [];
    let start = 0;
    for (let nl = data.indexOf(0x0a); nl !== -1; nl = data.indexOf(0x0a, start)) {
      // The first line of a mid-file start is cut; so is the rest of a dropped one: neither is decoded.
      if (start > 0 || !(skipFirst || this.dropping)) parts.push(data.toString('utf8', start, nl));
      start = nl + 1;
    }
    if (start > 0) this.dropping = false; // a newline came: a dropped line ends here
    this.partial = Buffer.from(data.subarray(start));
    // A line that never ends is not kept whole: past TAIL_OPEN_BYTES it is dropped, up to its newline.
    if (this.partial.length > TAIL_OPEN_BYTES) {
      this.partial = Buffer.alloc(0);
      this.dropping = true;
    }
    for (const raw of parts) this.lines.push(...renderRawLine(raw, this.usage));
    if (this.lines.length > TAIL_MAX_LINES) this.lines = this.lines.slice(-TAIL_MAX_LINES);
    return true;
  }

  /** An immutable copy of the tail for a snapshot. */
  state(): TailState {
    return { runId: this.runId, file: this.file, lines: [...this.lines], usage: { ...this.usage }, bytes: this.offset, truncated: this.truncated };
  }
}
