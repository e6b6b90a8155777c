import stringWidth from 'string-width';
/**
 * Removes terminal control sequences and control characters (ESC, BEL, C1…)
 * from text that came from agents or files, keeping newlines and tabs, so
 * printing it can never recolour, retitle or clear the operator's terminal.
 */
export function sanitize(text) {
    return text
        .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
        .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, '')
        .replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}
/** Pads `text` to `width` terminal columns (wide and emoji characters count as two). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const widthOf = (text) => (PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text));
export function padColumns(text, width) {
    return text + ' '.repeat(Math.max(0, width - widthOf(text)));
}
/** Cuts `text` to at most `width` columns, ending with `…` when cut. */
export function truncateColumns(text, width) {
    if (widthOf(text) <= width)
        return text;
    if (PRINTABLE_ASCII.test(text))
        return `${text.slice(0, Math.max(0, width - 1))}…`;
    let out = '';
    for (const char of text) {
        if (stringWidth(`${out}${char}…`) > width)
            break;
        out += char;
    }
    return `${out}…`;
}
/** A plain-text table: a header row and aligned columns separated by two spaces. */
export function table(headers, rows) {
    rows = rows.map((row) => row.map((cell) => sanitize(cell)));
    const widths = headers.map((h, i) => Math.max(stringWidth(h), ...rows.map((r) => stringWidth(r[i] ?? ''))));
    const line = (cells) => cells
        .map((cell, i) => (i === cells.length - 1 ? cell : padColumns(cell, widths[i])))
        .join('  ')
        .trimEnd();
    return [line(headers), ...rows.map(line)].join('\n');
}
/** `12s`, `4m`, `3h`, `2d`: the time since `iso` at `now`. */
export function age(iso, now = new Date()) {
    return duration(Math.max(0, now.getTime() - Date.parse(iso)) / 1000);
}
/** A duration in seconds as `45s`, `12m`, `3h`, `2d`. */
export function duration(seconds) {
    if (seconds < 60)
        return `${Math.round(seconds)}s`;
    if (seconds < 3600)
        return `${Math.floor(seconds / 60)}m`;
    if (seconds < 86400)
        return `${Math.floor(seconds / 3600)}h`;
    return `${Math.floor(seconds / 86400)}d`;
}
/** `$0.0123` (provider), `~$0.0123` (estimated), `?` (unknown). */
export function formatCost(cost) {
    if (!cost)
        return '';
    if (cost.source === 'unknown' || cost.usd === undefined)
        return '?';
    const amount = `$${cost.usd.toFixed(cost.usd < 1 ? 4 : 2)}`;
    return cost.source === 'estimated' ? `~${amount}` : amount;
}
//# sourceMappingURL=format.js.map