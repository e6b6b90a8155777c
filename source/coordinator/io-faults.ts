import { errnoOf, isIoFault } from '../checked-write.js';
import { StoreError } from '../store/index.js';

/** Backoff after the first I/O fault of a key, ms; it doubles with each failure in a row. */
export const IO_BACKOFF_FIRST_MS = 2000;
/** The longest backoff, ms. */
export const IO_BACKOFF_MAX_MS = 60_000;

/**
 * How long to hold back after `failures` I/O faults in a row (1, 2, …):
 * 2 s, 4 s, 8 s, … at most 60 s (docs/coordinator/level2.md, "A full
 * disk"). Pure.
 */
export function ioBackoffMs(failures: number): number {
  return Math.min(IO_BACKOFF_MAX_MS, IO_BACKOFF_FIRST_MS * 2 ** Math.max(0, failures - 1));
}

/** Words for an errno of the file system, for the one-line notice. */
const ERRNO_WORDS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
  EFBIG: 'file too large',
};

/** `<file>: <ERRNO> (<words>)` for an I/O fault: the file pak2 could not write and why. */
export function faultWords(error: unknown): string {
  const code = errnoOf(error) ?? 'EIO';
  const cause = (error as { cause?: { path?: unknown } } | undefined)?.cause;
  const file = error instanceof StoreError && error.file ? error.file : typeof cause?.path === 'string' ? cause.path : undefined;
  return `${file ? `${file}: ` : ''}${code} (${ERRNO_WORDS[code] ?? (error as Error)?.message ?? 'write failed'})`;
}

/** One held-back piece of work: what failed, how often in a row, and until when it waits. */
export interface IoFaultEntry {
  /** What failed, e.g. `dispatch`, `run:<id>`, `settle:<goal>`. */
  key: string;
  /** {@link faultWords} of the last failure. */
  words: string;
  /** Failures in a row. */
  failures: number;
  /** Epoch ms before which the work is not tried again. */
  untilMs: number;
  /** What the retry needs (a stranded run: the facts its first closer had). */
  detail?: unknown;
}

/**
 * The coordinator's memory of work an I/O fault (ENOSPC, EDQUOT, EROFS,
 * EIO, EFBIG) held back: opening runs, closing a run, settling a goal. Each
 * key backs off ({@link ioBackoffMs}) so no pass retries it at once (a full
 * disk never spins the loop), and its fault is said in one line the first
 * time, and again only when it changes; a success clears it.
 */
export class IoFaults {
  private readonly entries = new Map<string, IoFaultEntry>();

  /** `say` gets each one-line notice (without the `pak2: ` the printer adds). */
  constructor(private readonly say: (line: string) => void = () => undefined) {}

  /**
   * Records a failure of `key`; false when `error` is no I/O fault (the
   * caller handles it as before). `what` says what failed and what is done
   * about it; the notice is `<what>: <file>: <ERRNO> (<words>)<then>`.
   * `detail` is kept for the retry (a later note without one keeps it).
   */
  note(key: string, error: unknown, nowMs: number, what: string, then = '', detail?: unknown): boolean {
    if (!isIoFault(error)) return false;
    const words = faultWords(error);
    const previous = this.entries.get(key);
    const failures = (previous?.failures ?? 0) + 1;
    const kept = detail ?? previous?.detail;
    this.entries.set(key, { key, words, failures, untilMs: nowMs + ioBackoffMs(failures), ...(kept !== undefined ? { detail: kept } : {}) });
    if (previous?.words !== words) this.say(`${what}: ${words}${then}`);
    return true;
  }

  /** True while `key` waits out its backoff. */
  holds(key: string, nowMs: number): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && nowMs < entry.untilMs;
  }

  /** The entry of `key`, if it failed and has not succeeded since. */
  get(key: string): IoFaultEntry | undefined {
    return this.entries.get(key);
  }

  /** `key` succeeded: forgotten (a later fault is said again). */
  clear(key: string): void {
    this.entries.delete(key);
  }

  /** True when nothing is held back. */
  get empty(): boolean {
    return this.entries.size === 0;
  }

  /** When the earliest backoff ends (epoch ms), for the coordinator's next wake; undefined when none waits. */
  nextRetryMs(): number | undefined {
    let next: number | undefined;
    for (const entry of this.entries.values()) if (next === undefined || entry.untilMs < next) next = entry.untilMs;
    return next;
  }
}
