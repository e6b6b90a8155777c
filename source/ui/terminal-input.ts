/**
 * What the terminal sends that is not a key (issue 16, item 7): reports
 * and replies the terminal writes into stdin — focus in / out (`ESC[I`,
 * `ESC[O`), a cursor-position report (`ESC[24;80R`), mouse reports
 * (`ESC[<0;10;5M`, `ESC[M` and three bytes), device attributes
 * (`ESC[?1;2c`), OSC / DCS strings — and bracketed paste (`ESC[200~ …
 * ESC[201~`). Ink hands these to `useInput` as text with the ESC cut off
 * (`[I`), which a text field would insert. This filter sees each raw event
 * Ink's input parser emits, before Ink parses it as a key, and says what it
 * is. Pure: the hook (`hooks/use-keys.ts`) feeds it and acts.
 */

const ESC = '\u001b';
export const PASTE_START = `${ESC}[200~`;
export const PASTE_END = `${ESC}[201~`;
/** The legacy (X10) mouse report: `ESC[M` then three bytes (button, column, row, each + 32). */
const X10_MOUSE = `${ESC}[M`;
/** A CSI or SS3 sequence (one or two ESCs): a key only when Ink names it. */
const SEQUENCE = /^\u001b{1,2}(\[|O)/;
/** The kitty keyboard protocol's keys (`CSI code ; mods u`): Ink parses these itself. */
const KITTY_KEY = /^\u001b\[\d+(?:;[\d:]+)*u$/;
/** Starts of a string the terminal sends until ST (`ESC \`) or BEL: OSC, DCS, SOS, PM, APC. */
const STRING_START = new Set([`${ESC}]`, `${ESC}P`, `${ESC}X`, `${ESC}^`, `${ESC}_`]);
const STRING_END = `${ESC}\\`;
const BEL = '\u0007';

/**
 * What one raw input event is:
 * - `key`: pass it on as Ink parsed it (typed text, a control key);
 * - `sequence`: an escape sequence, a key only if Ink recognised one (an arrow, paging): drop it otherwise;
 * - `text`: plain text to pass on instead of the event (what was left after dropping a report's bytes);
 * - `paste`: text from a bracketed paste: its line breaks are text, not enter;
 * - `drop`: not input (a report, a paste bracket): nothing reaches the handler.
 */
export type Verdict = { kind: 'key' } | { kind: 'sequence' } | { kind: 'text'; text: string } | { kind: 'paste'; text: string } | { kind: 'drop' };

/** The filter's state between events: inside a paste, bytes of a mouse report still due, inside an OSC / DCS string. */
export interface InputFilter {
  push(raw: string): Verdict;
  /** Whether a report's tail is still expected (the hook calls {@link settle} on the next macrotask). */
  readonly expecting: boolean;
  /** Ends a report's expected tail: what comes in a later read is the operator's. A paste stays open until its end bracket. */
  settle(): void;
}

/** A fresh filter (one per input hook). */
export function createInputFilter(): InputFilter {
  let pasting = false;
  let mouseBytes = 0;
  let inString = false;
  const filter: InputFilter = {
    get expecting() {
      return mouseBytes > 0 || inString;
    },
    settle() {
      mouseBytes = 0;
      inString = false;
    },
    push(raw: string): Verdict {
      if (pasting) {
        if (raw === PASTE_END) {
          pasting = false;
          return { kind: 'drop' };
        }
        // Inside a paste everything is text; an escape sequence in it is not.
        return raw.startsWith(ESC) ? { kind: 'drop' } : { kind: 'paste', text: raw };
      }
      if (raw === PASTE_START) {
        pasting = true;
        return { kind: 'drop' };
      }
      if (raw === PASTE_END) return { kind: 'drop' };
      if (!raw.startsWith(ESC)) {
        if (inString) {
          const end = raw.indexOf(BEL);
          if (end < 0) return { kind: 'drop' };
          inString = false;
          const rest = raw.slice(end + 1);
          return rest ? { kind: 'text', text: rest } : { kind: 'drop' };
        }
        if (mouseBytes > 0) {
          const chars = [...raw];
          const taken = Math.min(mouseBytes, chars.length);
          mouseBytes -= taken;
          const rest = chars.slice(taken).join('');
          return rest ? { kind: 'text', text: rest } : { kind: 'drop' };
        }
        return { kind: 'key' };
      }
      // An escape event ends a string or a report that was cut short.
      const wasString = inString;
      inString = false;
      mouseBytes = 0;
      if (raw === STRING_END) return { kind: 'drop' };
      if (wasString && raw === ESC) return { kind: 'drop' };
      if (STRING_START.has(raw)) {
        inString = true;
        return { kind: 'drop' };
      }
      if (raw === X10_MOUSE) {
        mouseBytes = 3;
        return { kind: 'drop' };
      }
      if (KITTY_KEY.test(raw)) return { kind: 'key' };
      if (SEQUENCE.test(raw)) return { kind: 'sequence' };
      return { kind: 'key' };
    },
  };
  return filter;
}
