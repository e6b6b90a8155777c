/**
 * A local run's agent streams copied into the garden's store as its driver
 * writes them (issue 27: every server of a PostgreSQL garden tails them).
 * The driver keeps writing its run directory's events.jsonl and stderr.log
 * (the watchdog and the driver read them there); this follows the files and
 * appends what they gain, whole lines only, from the store's size. The
 * close copies the rest and redacts the store's copy before the terminal
 * record (closeRun → sealRunStreams), so a stopped upload loses nothing.
 */
import type { GardenPaths } from '../garden/index.js';
import { LocalStreamCopier, storeOf } from '../store/index.js';

/** How often a live local run's stream files are looked at, ms. */
export const STREAM_UPLOAD_INTERVAL_MS = 500;

/** A running upload of one run's streams. */
export interface StreamUpload {
  /** Stops it, after the copy under way (if any) ends. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts copying run `runId`'s stream files into the store every
 * `intervalMs`; undefined on a garden without a store (the files are the
 * streams). A copy that fails (the database unreachable) is tried again at
 * the next tick: what it missed goes then, or at the close.
 */
export function uploadLocalStreams(paths: GardenPaths, runId: string, intervalMs = STREAM_UPLOAD_INTERVAL_MS): StreamUpload | undefined {
  if (!storeOf(paths)) return undefined;
  const copier = new LocalStreamCopier(paths, runId);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> = Promise.resolve();
  const tick = (): void => {
    current = copier
      .copy(false)
      .catch(() => undefined)
      .then(() => {
        if (!stopped) schedule();
      });
  };
  const schedule = (): void => {
    timer = setTimeout(tick, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
    },
  };
}
