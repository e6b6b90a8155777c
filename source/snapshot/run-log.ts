/**
 * A run's whole stream for `pak2 logs` (docs/run/level2.md, "Reading a
 * run's stream"): its events.jsonl read from the start in bounded chunks
 * through the store functions (the file on a file garden, the store's copy
 * on PostgreSQL: a run on another machine too), line by line; with
 * `follow`, the lines it gains until the run closes. The run pane reads the
 * same stream ({@link RunTail}) and renders lines with the same function.
 */
import type { RunRecord } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readRun, readRunStream } from '../store/index.js';

/** Bytes read per chunk: memory stays bounded whatever the stream's size. */
export const RUN_LOG_CHUNK_BYTES = 256 * 1024;

/** Options of {@link readRunLog}. */
export interface RunLogOptions {
  /** Each whole line, in order, without its newline (a last line without one is given once the run closed, or at once when not following). */
  onLine: (raw: string) => void;
  /** Keep reading what the run adds until its record says it closed. */
  follow?: boolean;
  /** How often a followed run is looked at, ms. Default 250. */
  pollMs?: number;
  /** Ends a follow early (the operator's ctrl-c). */
  signal?: AbortSignal;
}

/** What {@link readRunLog} saw: the run's record as last read, and whether it stopped on `signal` before the run closed. */
export interface RunLogResult {
  run: RunRecord;
  lines: number;
  interrupted: boolean;
}

/**
 * Reads run `runId`'s events.jsonl from its start and gives each line to
 * `onLine`. Not following, it reads the stream as it is now. Following, it
 * reads what the run adds every `pollMs` until the run record is terminal;
 * the close may rewrite the stream (redaction), so it is then read once more
 * from its start and only the lines past those already given are given: no
 * line twice, none left out.
 *
 * @throws StoreError RUN_NOT_FOUND (no such run), INVALID_RECORD, IO_ERROR.
 */
export async function readRunLog(paths: GardenPaths, runId: string, options: RunLogOptions): Promise<RunLogResult> {
  let run = await readRun(paths, runId);
  let given = 0;
  const reader = new LineReader((raw) => {
    given += 1;
    options.onLine(raw);
  });
  if (!options.follow || run.status !== 'running') {
    await reader.readFrom(paths, runId);
    // A live run's last line may be half written: it is given once it ends.
    if (run.status !== 'running') reader.end();
    return { run, lines: given, interrupted: false };
  }
  const signal = options.signal;
  while (!signal?.aborted) {
    // The record first: a stream read after it said closed holds every byte of the run.
    run = await readRun(paths, runId);
    if (run.status !== 'running') break;
    await reader.readFrom(paths, runId);
    await pause(options.pollMs ?? 250, signal);
  }
  if (signal?.aborted) return { run, lines: given, interrupted: true };
  const seen = given;
  let counted = 0;
  const final = new LineReader((raw) => {
    counted += 1;
    if (counted > seen) {
      given += 1;
      options.onLine(raw);
    }
  });
  await final.readFrom(paths, runId);
  final.end();
  return { run, lines: given, interrupted: false };
}

/** Splits a stream's bytes into lines as they are read; decodes one line at a time. */
class LineReader {
  private offset = 0;
  private partial: Buffer = Buffer.alloc(0);

  constructor(private readonly onLine: (raw: string) => void) {}

  /** Reads from where it stopped to the stream's end as it is now. */
  async readFrom(paths: GardenPaths, runId: string): Promise<void> {
    for (;;) {
      const chunk = await readRunStream(paths, runId, 'events', this.offset, RUN_LOG_CHUNK_BYTES);
      if (chunk.length === 0) return;
      this.offset += chunk.length;
      const data = this.partial.length ? Buffer.concat([this.partial, chunk]) : chunk;
      let start = 0;
      for (let nl = data.indexOf(0x0a); nl !== -1; nl = data.indexOf(0x0a, start)) {
        this.onLine(data.toString('utf8', start, nl));
        start = nl + 1;
      }
      this.partial = Buffer.from(data.subarray(start));
    }
  }

  /** The last line, when the stream does not end with a newline. */
  end(): void {
    if (this.partial.length) this.onLine(this.partial.toString('utf8'));
    this.partial = Buffer.alloc(0);
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
