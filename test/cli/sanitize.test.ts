/**
 * How pak2 prints text it did not write (issue 23; docs/run/level2.md,
 * "Printed text"): `sanitize`, its stream form for an agent's stderr, the
 * headless stderr forward and the headless event lines.
 */
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../source/contracts/index.js';
import { formatEventLine, StderrForward } from '../../source/cli/headless.js';
import { sanitize, SanitizeStream } from '../../source/sanitize.js';

/** Any control character but tab and line feed. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
const OSC52 = 'copy \x1b]52;c;cHduZWQ=\x07 done\n';

describe('sanitize', () => {
  it.each([
    ['CSI: clear screen, cursor home', 'a\x1b[2J\x1b[Hb', 'a\\u001b[2J\\u001b[Hb'],
    ['CSI with a private marker (hide cursor) is not colour', '\x1b[?25l', '\\u001b[?25l'],
    ['CSI > … m (modifyOtherKeys) is not SGR', '\x1b[>4;2m', '\\u001b[>4;2m'],
    ['OSC 0 title ended by BEL', '\x1b]0;pwned\x07x', '\\u001b]0;pwned\\u0007x'],
    ['OSC 2 title ended by ST', '\x1b]2;pwned\x1b\\x', '\\u001b]2;pwned\\u001b\\x'],
    ['OSC 52 clipboard', '\x1b]52;c;cHduZWQ=\x07', '\\u001b]52;c;cHduZWQ=\\u0007'],
    ['an OSC left open', 'a\x1b]0;never ends', 'a\\u001b]0;never ends'],
    ['DCS, APC, PM, SOS strings', '\x1bPq#0\x1b\\\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\', '\\u001bPq#0\\u001b\\\\u001b_apc\\u001b\\\\u001b^pm\\u001b\\\\u001bXsos\\u001b\\'],
    ['single-character escapes', '\x1bc\x1b7\x1b8\x1b=\x1b>\x1bD\x1bE\x1bM', '\\u001bc\\u001b7\\u001b8\\u001b=\\u001b>\\u001bD\\u001bE\\u001bM'],
    ['8-bit C1: CSI, OSC, DCS, ST', '\u009b2J\u009d0;t\u0007\u0090x\u009c', '\\u009b2J\\u009d0;t\\u0007\\u0090x\\u009c'],
    ['C0 and DEL', 'a\x00b\x07c\x08d\x0be\x0cf\x7fg', 'a\\u0000b\\u0007c\\u0008d\\u000be\\u000cf\\u007fg'],
    ['SGR colour and style dropped', '\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m', 'red bold'],
    ['CR LF and lone CR are line feeds', 'a\r\nb\rc\r', 'a\nb\nc\n'],
    ['tab and line feed kept', 'a\tb\nc', 'a\tb\nc'],
    ['bidi override and its pop (Trojan Source)', 'if admin\u202e } \u2066{\u2069 \u202c', 'if admin\\u202e } \\u2066{\\u2069 \\u202c'],
    ['every embedding, override, isolate and mark', '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c', '\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c'],
    ['zero-width space, word joiner, BOM, line and paragraph separators, annotations', 'a\u200bb\u2060c\ufeffd\u2028e\u2029f\ufff9g', 'a\\u200bb\\u2060c\\ufeffd\\u2028e\\u2029f\\ufff9g'],
    ['joiners and variation selectors stay: emoji need them', '👨\u200d👩\u200d👧 ❤\ufe0f a\u200cb', '👨\u200d👩\u200d👧 ❤\ufe0f a\u200cb'],
  ])('%s', (_name, input, shown) => {
    expect(sanitize(input)).toBe(shown);
  });

  it('returns text without control characters as it is; its own output is a fixed point', () => {
    const plain = 'plain 調査 😀 ⚠ text\twith tab\n';
    expect(sanitize(plain)).toBe(plain);
    const all = Array.from({ length: 0xa0 }, (_, c) => String.fromCharCode(c)).join('') + '\u202e\u2066\u200b\ufeff\u2028';
    const once = sanitize(all);
    expect(CONTROL.test(once)).toBe(false);
    expect(/[\u202e\u2066\u200b\ufeff\u2028]/.test(once)).toBe(false);
    expect(sanitize(once)).toBe(once);
  });

  it('an SGR sequence with more parameters than a colour needs is shown, not dropped', () => {
    const long = `\x1b[${'1;'.repeat(40)}m`;
    expect(sanitize(long)).toBe(`\\u001b[${'1;'.repeat(40)}m`);
  });

  it('of JSON is JSON of the same value: DEL and C1, which JSON.stringify leaves raw, become \\u escapes', () => {
    const value = { every: Array.from({ length: 0xa0 }, (_, c) => String.fromCharCode(c)).join(''), bidi: 'a\u202eb\u2028c\ufeff', hostile: OSC52, nested: ['\u009b2J', { k: '\x1b[31mx' }] };
    for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      expect(text).toMatch(/[\u007f-\u009f]/); // raw in JSON.stringify's output
      const printed = sanitize(text);
      expect(CONTROL.test(printed)).toBe(false);
      expect(JSON.parse(printed)).toEqual(value);
    }
  });
});

/** `text` pushed through a SanitizeStream in pieces cut at `cuts`. */
function streamed(text: string, cuts: number[]): string {
  const stream = new SanitizeStream();
  let out = '';
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    out += stream.push(text.slice(from, cut));
    from = cut;
  }
  return out + stream.end();
}

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('SanitizeStream', () => {
  it('OSC 52 cut in two at every boundary, in three at every pair, and one character at a time: as sanitize of the whole', () => {
    const whole = sanitize(OSC52);
    for (let i = 0; i <= OSC52.length; i++) {
      expect(streamed(OSC52, [i]), `cut at ${i}`).toBe(whole);
      for (let j = i; j <= OSC52.length; j++) expect(streamed(OSC52, [i, j]), `cut at ${i}, ${j}`).toBe(whole);
    }
    expect(streamed(OSC52, Array.from({ length: OSC52.length }, (_, i) => i))).toBe(whole);
  });

  it('an SGR sequence and a CR LF cut anywhere: as sanitize of the whole', () => {
    const text = 'a\x1b[1;31mred\x1b[0m b\r\nc\r\x1b[2Jd\x1b\x1b[m';
    for (let i = 0; i <= text.length; i++) expect(streamed(text, [i]), `cut at ${i}`).toBe(sanitize(text));
  });

  it('random text of escapes, brackets, digits, CRs and LFs, cut at random: as sanitize of the whole', () => {
    const alphabet = ['\x1b', '[', ']', '3', '1', ';', ':', 'm', 'J', '\r', '\n', '\x07', '\u009b', 'a', '\\', '?'];
    const next = random(23);
    for (let round = 0; round < 2000; round++) {
      const text = Array.from({ length: Math.floor(next() * 40) }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
      const cuts = Array.from({ length: Math.floor(next() * 6) }, () => Math.floor(next() * (text.length + 1))).sort((a, b) => a - b);
      expect(streamed(text, cuts), JSON.stringify({ text, cuts })).toBe(sanitize(text));
    }
  });

  it('holds back only a possible tail: a CR, an ESC, an unfinished SGR', () => {
    const stream = new SanitizeStream();
    expect(stream.push('abc\r')).toBe('abc');
    expect(stream.holding).toBe(true);
    expect(stream.push('\n\x1b[3')).toBe('\n');
    expect(stream.push('1mred\x1b]0;t')).toBe('red\\u001b]0;t');
    expect(stream.holding).toBe(false);
    expect(stream.end()).toBe('');
  });
});

/** What a StderrForward prints, as one text, and the print calls. */
function forward(): { forward: StderrForward; printed: string[]; text: () => string } {
  const printed: string[] = [];
  // As CliIO.err writes it: a line feed added unless the text ends in one.
  return { forward: new StderrForward((t) => printed.push(t)), printed, text: () => printed.map((t) => (t.endsWith('\n') ? t : `${t}\n`)).join('') };
}

describe('StderrForward (headless pak2 cycle)', () => {
  it('OSC 52 cut across two chunks at every byte boundary prints the same inert line', () => {
    for (let i = 0; i <= OSC52.length; i++) {
      const f = forward();
      f.forward.push('run-1', OSC52.slice(0, i));
      f.forward.push('run-1', OSC52.slice(i));
      f.forward.end();
      expect(f.text(), `cut at ${i}`).toBe('copy \\u001b]52;c;cHduZWQ=\\u0007 done' + '\n');
      expect(f.printed.some((t) => CONTROL.test(t))).toBe(false);
    }
  });

  it('prints whole lines: two runs never mix within a line; empty lines and a CR progress bar are kept as lines', () => {
    const f = forward();
    f.forward.push('a', 'alpha one\nalpha ');
    f.forward.push('b', 'beta one\n\n');
    f.forward.push('a', 'two\rthree\r');
    f.forward.push('b', 'beta two');
    f.forward.push('a', '\n');
    f.forward.push('b', '\n');
    expect(f.text()).toBe('alpha one\nbeta one\n\nalpha two\nthree\nbeta two\n');
  });

  it('a line that never ends is printed once it is long; end() prints what a stopped run left open', () => {
    const f = forward();
    f.forward.push('a', 'x'.repeat(70 * 1024));
    expect(f.printed).toHaveLength(1);
    f.forward.push('b', 'open \x1b]0;title');
    f.forward.push('c', 'esc at the end \x1b');
    f.forward.end();
    expect(f.printed.slice(1)).toEqual(['open \\u001b]0;title', 'esc at the end \\u001b']);
  });
});

describe('formatEventLine (headless and pak2 events)', () => {
  const event = { id: '01J0000000000000000000000A', ts: '2026-12-01T10:00:00.000Z', type: 'RunLeftovers', run: '1-x-r1', goal: '1-x', detail: `left \x1b]52;c;cHduZWQ=\x07 \u009b2J\nline two` } as EventRecord;

  it('text: the detail shown inert, on one line', () => {
    const line = formatEventLine(event);
    expect(CONTROL.test(line)).toBe(false);
    expect(line).not.toContain('\n');
    expect(line).toBe('10:00:00 RunLeftovers       1-x-r1 left \\u001b]52;c;cHduZWQ=\\u0007 \\u009b2J line two');
  });

  it('JSON: no raw control character, and the same event when parsed', () => {
    const line = formatEventLine(event, true);
    expect(CONTROL.test(line)).toBe(false);
    expect(JSON.parse(line)).toEqual(event);
  });
});
