import fs from 'node:fs';
import { cutPoint, MAX_STREAM_CHUNK_BYTES } from '../store/index.js';
import { RunnerApiError, type LogStream, type RunnerClient } from './client.js';

/** The most `data` one log upload carries, bytes (docs/runners/level2.md, "Log upload"). */
export const MAX_UPLOAD_BYTES = MAX_STREAM_CHUNK_BYTES;

export { cutPoint };

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

function readRange(file: string, from: number, length: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const n = fs.readSync(fd, buffer, 0, length, from);
    return buffer.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Uploads one run's `events.jsonl` and `stderr.log` to the garden as they
 * grow (`POST /runs/:id/log`). The offset of each stream is what the garden
 * holds: it starts at 0 (unknown) and a `409 {size}` moves it to the
 * garden's size, so a restarted runner and a retried upload both resume
 * where the garden is; an upload is never sent twice or out of order. The
 * bytes go base64 (`encoding: "base64"`): the garden's copy is the same
 * bytes whatever the agent printed.
 */
export class LogUploader {
  /** The garden's size of each stream, as last told, bytes. */
  readonly offsets: Record<LogStream, number> = { events: 0, stderr: 0 };
  private busy: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: RunnerClient,
    private readonly runId: string,
    private readonly lease: string,
    private readonly files: Record<LogStream, string>,
  ) {}

  /**
   * Sends what each file gained beyond the garden's size, at most about
   * `maxBytes` per call. With `final`, every byte goes (a partial last line
   * too) and it loops until the garden holds the whole file. Calls are
   * serialised.
   *
   * @throws RunnerApiError for anything but a `409 {size}` (a lease that ended, an unreachable server).
   */
  flush(final = false, maxBytes = Number.POSITIVE_INFINITY): Promise<void> {
    const next = this.busy.catch(() => undefined).then(() => this.flushNow(final, maxBytes));
    this.busy = next;
    return next;
  }

  private async flushNow(final: boolean, maxBytes: number): Promise<void> {
    let sent = 0;
    for (const stream of ['events', 'stderr'] as const) {
      for (let rounds = 0; rounds < 10_000 && sent < maxBytes; rounds += 1) {
        const file = this.files[stream];
        const size = sizeOf(file);
        const offset = this.offsets[stream];
        if (offset >= size) break;
        const bytes = readRange(file, offset, Math.min(size - offset, MAX_UPLOAD_BYTES));
        const cut = cutPoint(bytes, final && offset + bytes.length >= size);
        if (cut === 0) break;
        try {
          this.offsets[stream] = await this.client.uploadLog(this.runId, { lease: this.lease, stream, offset, data: bytes.subarray(0, cut).toString('base64'), encoding: 'base64' });
          sent += cut;
        } catch (error) {
          if (error instanceof RunnerApiError && error.status === 409 && error.size !== undefined && !error.leaseEnded) {
            if (error.size === offset) throw error; // a 409 that moves nothing: not an offset problem
            this.offsets[stream] = error.size;
            continue;
          }
          throw error;
        }
      }
    }
  }

  /** The local size of each stream, bytes (what `stream_bytes` of the finish says). */
  localSizes(): Record<LogStream, number> {
    return { events: sizeOf(this.files.events), stderr: sizeOf(this.files.stderr) };
  }
}
