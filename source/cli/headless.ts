import type { EventRecord } from '../contracts/index.js';
import { SanitizeStream, sanitize } from '../sanitize.js';

/**
 * One line per lifecycle event for headless mode: `HH:MM:SS Type subject
 * detail`, or the event itself as JSON with `json`. Either way sanitized
 * (docs/run/level2.md, "Printed text"): a field's control characters are
 * shown, never sent to the terminal, and a line break inside a field is a
 * space (one event, one line). JSON stays JSON of the same event.
 */
export function formatEventLine(event: EventRecord, json = false): string {
  if (json) return sanitize(JSON.stringify(event));
  const time = event.ts.slice(11, 19);
  const subject = event.run ?? event.goal ?? event.plant ?? '';
  const parts: string[] = [time, event.type.padEnd(18), subject];
  if (event.from || event.to) parts.push(`${event.from ?? ''} → ${event.to ?? ''}`);
  if (event.status) parts.push(event.status);
  if (event.reason) parts.push(`(${event.reason})`);
  if (event.detail) parts.push(event.detail);
  return sanitize(parts.filter(Boolean).join(' ')).replace(/\n+/g, ' ');
}

/** Characters of an agent's stderr line held back waiting for its end; a longer one is printed as it stands. */
const LINE_MAX = 64 * 1024;

/**
 * Agents' stderr as headless `pak2 cycle` forwards it to its own stderr
 * (issue 23): each run's chunks go through a {@link SanitizeStream} of
 * their own, so an escape sequence cut between two chunks (or between two
 * polls of stderr.log) is neutralised as if it had come whole, and are
 * printed whole lines at a time, so lines of two live runs never mix
 * within a line. The run's stderr.log keeps the raw bytes.
 */
export class StderrForward {
  private readonly runs = new Map<string, { stream: SanitizeStream; line: string }>();

  /** `print` writes text (ending in a line feed, or a whole line it should end). */
  constructor(private readonly print: (text: string) => void) {}

  /** A chunk of run `runId`'s stderr. */
  push(runId: string, chunk: string): void {
    let state = this.runs.get(runId);
    if (!state) {
      state = { stream: new SanitizeStream(), line: '' };
      this.runs.set(runId, state);
    }
    const text = state.line + state.stream.push(chunk);
    const end = text.lastIndexOf('\n');
    if (end >= 0) this.print(text.slice(0, end + 1));
    state.line = end >= 0 ? text.slice(end + 1) : text;
    if (state.line.length > LINE_MAX) {
      this.print(state.line);
      state.line = '';
    }
    if (!state.line && !state.stream.holding) this.runs.delete(runId);
  }

  /** Prints what every run still holds (the driver ends each run's last line itself; this is for a stop in between). */
  end(): void {
    for (const state of this.runs.values()) {
      const rest = state.line + state.stream.end();
      if (rest) this.print(rest);
    }
    this.runs.clear();
  }
}
