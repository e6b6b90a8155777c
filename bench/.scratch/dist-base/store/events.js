import fsp from 'node:fs/promises';
import { formatIssue, validateEvent } from '../contracts/index.js';
import { appendJsonLine, StoreError } from './files.js';
const listeners = new Set();
/** Subscribes to events appended by this process; returns the unsubscribe function. */
export function onEvent(listener) {
    listeners.add(listener);
    return () => listeners.delete(listener);
}
/**
 * Appends one validated event to `<runtime-root>/events/coordinator.jsonl`
 * (seed 002, events.py). `ts` defaults to now.
 *
 * @throws StoreError INVALID_RECORD for an event that fails validateEvent, IO_ERROR when the write fails.
 */
export async function appendEvent(paths, input, now = new Date()) {
    const event = { ...input, ts: input.ts ?? now.toISOString() };
    const issues = validateEvent(event);
    if (issues.length > 0) {
        throw new StoreError('INVALID_RECORD', `event ${input.type}: ${formatIssue(issues[0])}`, paths.coordinatorLog);
    }
    await appendJsonLine(paths.coordinatorLog, event);
    for (const listener of listeners)
        listener(event);
    return event;
}
/**
 * Reads the event log from a byte offset (0: the whole log). A partial last
 * line is left for the next read. Malformed lines are reported, not thrown.
 */
export async function readEvents(paths, fromOffset = 0) {
    let buffer;
    try {
        const handle = await fsp.open(paths.coordinatorLog, 'r');
        try {
            const { size } = await handle.stat();
            buffer = Buffer.alloc(Math.max(0, size - fromOffset));
            await handle.read(buffer, 0, buffer.length, fromOffset);
        }
        finally {
            await handle.close();
        }
    }
    catch {
        return { events: [], errors: [], offset: fromOffset };
    }
    const end = buffer.lastIndexOf(0x0a) + 1;
    const text = buffer.subarray(0, end).toString('utf8');
    const events = [];
    const errors = [];
    let lineNo = 0;
    for (const line of text.split('\n')) {
        lineNo += 1;
        // Line numbers count from where this read began.
        const where = `${paths.coordinatorLog}: line ${lineNo}${fromOffset ? ` after byte ${fromOffset}` : ''}`;
        if (!line.trim())
            continue;
        try {
            const value = JSON.parse(line);
            const issues = validateEvent(value);
            if (issues.length > 0)
                errors.push(`${where}: ${formatIssue(issues[0])}`);
            else
                events.push(value);
        }
        catch {
            errors.push(`${where}: malformed JSON`);
        }
    }
    return { events, errors, offset: fromOffset + end };
}
/**
 * The offset of the first line that starts at or after `offset` in the event
 * log, so a read can begin part-way through a large log without a torn line.
 */
export async function eventLogLineStart(paths, offset) {
    if (offset <= 0)
        return 0;
    let handle;
    try {
        handle = await fsp.open(paths.coordinatorLog, 'r');
    }
    catch {
        return 0;
    }
    try {
        const buffer = Buffer.alloc(64 * 1024);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset - 1);
        const newline = buffer.subarray(0, bytesRead).indexOf(0x0a);
        return newline < 0 ? offset + bytesRead : offset + newline;
    }
    finally {
        await handle.close();
    }
}
//# sourceMappingURL=events.js.map