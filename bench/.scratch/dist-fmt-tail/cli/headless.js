/**
 * One line per lifecycle event for headless mode: `HH:MM:SS Type subject
 * detail`, or the event itself as JSON with `json`.
 */
export function formatEventLine(event, json = false) {
    if (json)
        return JSON.stringify(event);
    const time = event.ts.slice(11, 19);
    const subject = event.run ?? event.goal ?? event.plant ?? '';
    const parts = [time, event.type.padEnd(18), subject];
    if (event.from || event.to)
        parts.push(`${event.from ?? ''} → ${event.to ?? ''}`);
    if (event.status)
        parts.push(event.status);
    if (event.reason)
        parts.push(`(${event.reason})`);
    if (event.detail)
        parts.push(event.detail);
    return parts.filter(Boolean).join(' ');
}
//# sourceMappingURL=headless.js.map