/**
 * How pak2 prints text it did not write (an agent's output, a file's
 * contents) to a person: one rendering, {@link sanitize}, for the CLI, the
 * headless printer, the workbench and the logs meant to be read
 * (docs/run/level2.md, "Printed text"). Its own small module: the CLI's one
 * exit (cli/main.ts) applies it to everything it prints.
 */

/**
 * The invisible characters that change how text reads or where the terminal
 * puts what follows (Trojan Source): the bidi embeddings, overrides and
 * isolates (U+202A–U+202E, U+2066–U+2069) and marks (U+061C, U+200E,
 * U+200F), the zero-width space, word joiner and invisible operators
 * (U+200B, U+2060–U+2064), the byte order mark (U+FEFF), the line and
 * paragraph separators (U+2028, U+2029) and the interlinear annotation
 * marks (U+FFF9–U+FFFB). Joiners (U+200C, U+200D) and variation selectors
 * stay: emoji and scripts need them.
 */
const HIDDEN = '\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff\\ufff9-\\ufffb';
/** Any character {@link sanitize} changes: C0 controls but tab and line feed, DEL, C1 controls, the {@link HIDDEN} characters. */
const ANY_CONTROL = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${HIDDEN}]`);
/**
 * What {@link sanitize} rewrites, leftmost first: an SGR sequence (ESC [
 * digits ; : m, at most {@link SGR_PARAMS} of them: colour and style only),
 * a CR LF or lone CR, any other control or hidden character.
 */
const SGR_PARAMS = 64;
const PRINTED_CONTROLS = new RegExp(`\\x1b\\[[0-9;:]{0,${SGR_PARAMS}}m|\\r\\n?|[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${HIDDEN}]`, 'g');
/** `\u001b` for each control character, made once. */
const CONTROL_ESCAPES = Array.from({ length: 0xa0 }, (_, code) => `\\u${code.toString(16).padStart(4, '0')}`);

function printedControl(match: string): string {
  const code = match.charCodeAt(0);
  if (code === 0x0d) return '\n';
  if (match.length > 1) return ''; // an SGR sequence
  return CONTROL_ESCAPES[code] ?? `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Agent-originated (or file-originated) text as pak2 prints it to a
 * person: on a terminal, in the workbench, in a log meant to be read
 * (docs/run/level2.md, "Printed text"). Nothing in the result can move the
 * cursor, clear, retitle, reset or beep the operator's terminal, or reach
 * its clipboard:
 *
 * - every control character but tab and line feed (C0, DEL, the 8-bit C1
 *   controls U+0080–U+009F) is shown as its JSON / JavaScript escape,
 *   `\u001b`, in plain ASCII: `ESC ] 52 ; c ; … BEL` prints as
 *   `\u001b]52;c;…\u0007`, `ESC [ 2 J` as `\u001b[2J`, a C1 CSI as
 *   `\u009b`. With its ESC shown, what followed it (an OSC's payload, a
 *   DCS string, an unterminated OSC) is plain text: the terminal never
 *   starts the sequence.
 * - the invisible characters that reorder or hide text ({@link HIDDEN}:
 *   bidi overrides, embeddings, isolates and marks such as U+202E, zero-width
 *   spaces, a BOM, the line and paragraph separators) are shown the same
 *   way, `\u202e`: a terminal that reorders bidi text never reverses what
 *   follows, and what the operator reads is what the bytes say.
 * - SGR sequences (`ESC [ 31 m`, colour and style only) are dropped: they
 *   cannot act on the terminal, and shown they would bury the text.
 * - CR LF and a lone CR become a line feed: a progress bar's updates are
 *   lines of their own, never written over one another.
 *
 * Text without control or hidden characters comes back as it is (the same string).
 * The result holds no control character but tab and line feed, and no hidden one, so
 * `sanitize` of its own result changes nothing; and since the escapes are
 * JSON's own, `sanitize(JSON.stringify(v))` is JSON of the same value
 * (JSON.stringify escapes C0 itself, but leaves DEL, C1 and the hidden ones raw).
 */
export function sanitize(text: string): string {
  if (!ANY_CONTROL.test(text)) return text;
  return text.replace(PRINTED_CONTROLS, printedControl);
}

/** The longest tail a {@link SanitizeStream} holds back: ESC [ and the parameters of an SGR sequence. */
const HELD_MAX = 2 + SGR_PARAMS;
const SGR_PREFIX = new RegExp(`^\\x1b(?:\\[[0-9;:]{0,${SGR_PARAMS}})?$`);

/**
 * {@link sanitize} over a stream of chunks (an agent's stderr as it comes):
 * the pieces `push` returns, then `end`, join to exactly `sanitize` of the
 * chunks joined, wherever the chunks were cut. A chunk's tail that the next
 * chunk could change (a CR before a possible LF, an ESC or an SGR sequence
 * not yet ended) is held back until then; at most {@link HELD_MAX} characters.
 */
export class SanitizeStream {
  private held = '';

  /** The sanitized text of `chunk` (and what was held), less a tail it holds back. */
  push(chunk: string): string {
    const text = this.held + chunk;
    const cut = heldFrom(text);
    this.held = text.slice(cut);
    return sanitize(cut === text.length ? text : text.slice(0, cut));
  }

  /** The held tail, sanitized: the stream ended. */
  end(): string {
    const rest = this.held;
    this.held = '';
    return sanitize(rest);
  }

  /** Whether a tail is held back. */
  get holding(): boolean {
    return this.held.length > 0;
  }
}

/** Where the tail of `text` that more text could change starts (`text.length` when none). */
function heldFrom(text: string): number {
  for (let i = text.length - 1; i >= 0 && i >= text.length - HELD_MAX; i--) {
    if (text.charCodeAt(i) !== 0x1b) continue;
    if (SGR_PREFIX.test(text.slice(i))) return i;
    break; // the last ESC begins no SGR sequence: nothing after it is held
  }
  return text.endsWith('\r') ? text.length - 1 : text.length;
}
