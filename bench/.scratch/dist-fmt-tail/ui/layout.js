import stringWidth from 'string-width';
import wrapAnsi from 'wrap-ansi';
import { padColumns, sanitize, truncateColumns } from '../format.js';
/** The rows `[start, end)` of a list of `total` to show in `height` rows so `cursor` stays visible, centred when possible. */
export function windowRange(total, cursor, height) {
    if (height <= 0)
        return [0, 0];
    if (total <= height)
        return [0, total];
    const start = Math.min(Math.max(0, cursor - Math.floor(height / 2)), total - height);
    return [start, start + height];
}
/** Fits `text` to exactly `width` columns: cut with `…`, or padded with spaces. */
export function fit(text, width) {
    if (width <= 0)
        return '';
    return padColumns(truncateColumns(sanitize(text).replace(/[\r\n\t]+/g, ' '), width), width);
}
/** Wraps `text` to `width` columns (hard-wrapping long words); wide characters count two. */
export function wrapLines(text, width) {
    if (width <= 0)
        return [];
    return wrapAnsi(sanitize(text).replace(/\t/g, '  '), width, { hard: true, trim: false }).split('\n');
}
/** Display width of `text`. */
export function widthOf(text) {
    return stringWidth(text);
}
/** Spinner frame for a moment in ms. */
export function spinner(ms) {
    const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
    return frames[Math.floor(ms / 250) % frames.length];
}
//# sourceMappingURL=layout.js.map