import { performance } from 'node:perf_hooks';

/**
 * Wall-time spans of pak2's own work per phase of a run (open, transitions,
 * prompt, spawn, sweep, close, runtime history, …), for `bench/fleet.mjs`.
 * Off unless {@link enableSpans} was called: then a span costs one test of a
 * variable. Spans of concurrent runs overlap; a total is wall time spent in
 * that phase summed over runs, not CPU time.
 */
let table: Map<string, { count: number; ms: number }> | undefined;

const noop = () => undefined;

/** Starts collecting spans (and forgets those collected so far). */
export function enableSpans(): void {
  table = new Map();
}

/** Stops collecting spans. */
export function disableSpans(): void {
  table = undefined;
}

/** The spans collected since {@link enableSpans}: name → how many and their total ms. */
export function spanTotals(): Record<string, { count: number; ms: number }> {
  return Object.fromEntries(table ?? []);
}

/** Opens a span named `name`; call what it returns when the work is done. */
export function span(name: string): () => void {
  if (!table) return noop;
  const started = performance.now();
  const into = table;
  return () => {
    const entry = into.get(name) ?? { count: 0, ms: 0 };
    entry.count += 1;
    entry.ms += performance.now() - started;
    into.set(name, entry);
  };
}

/** Runs `fn` inside a span named `name` (ended however `fn` ends). */
export async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (!table) return fn();
  const end = span(name);
  try {
    return await fn();
  } finally {
    end();
  }
}
