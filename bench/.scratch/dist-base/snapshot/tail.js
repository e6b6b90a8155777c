import fs from 'node:fs';
import { renderRawLine } from './stream-lines.js';
/** How much of the file's end is read when a tail is opened (bytes). */
export const TAIL_OPEN_BYTES = 256 * 1024;
/** How many rendered lines a tail keeps. */
export const TAIL_MAX_LINES = 400;
/**
 * Follows one run's events.jsonl. Opening reads only the last
 * {@link TAIL_OPEN_BYTES} of the file (a 100 MB stream opens as fast as a
 * small one); each `read()` then reads from the last offset. Keeps the last
 * {@link TAIL_MAX_LINES} rendered lines. Never throws: a missing file is an
 * empty tail.
 */
export class RunTail {
    runId;
    file;
    offset = 0;
    partial = '';
    lines = [];
    usage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
    truncated = false;
    opened = false;
    constructor(runId, file) {
        this.runId = runId;
        this.file = file;
    }
    /** Reads whatever is new; returns true when something changed. */
    read() {
        let fd;
        try {
            fd = fs.openSync(this.file, 'r');
        }
        catch {
            return false;
        }
        try {
            const size = fs.fstatSync(fd).size;
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
                this.partial = '';
            }
            if (size === this.offset)
                return false;
            const buffer = Buffer.alloc(size - this.offset);
            fs.readSync(fd, buffer, 0, buffer.length, this.offset);
            const skipFirst = this.truncated && this.offset > 0 && this.lines.length === 0 && this.partial === '';
            this.offset = size;
            const text = this.partial + buffer.toString('utf8');
            const parts = text.split('\n');
            this.partial = parts.pop() ?? '';
            if (skipFirst)
                parts.shift(); // the first line of a mid-file start is cut
            for (const raw of parts)
                this.lines.push(...renderRawLine(raw, this.usage));
            if (this.lines.length > TAIL_MAX_LINES)
                this.lines = this.lines.slice(-TAIL_MAX_LINES);
            return true;
        }
        finally {
            fs.closeSync(fd);
        }
    }
    /** An immutable copy of the tail for a snapshot. */
    state() {
        return { runId: this.runId, file: this.file, lines: [...this.lines], usage: { ...this.usage }, bytes: this.offset, truncated: this.truncated };
    }
}
//# sourceMappingURL=tail.js.map