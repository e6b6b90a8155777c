import { sanitize } from './sanitize.js';

/** Characters a POSIX shell (sh, bash, zsh, fish) takes literally in a word; `=` not first (zsh expands `=cmd`). */
const BARE = /^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$/;

/**
 * `text` as one shell word a person can paste into a shell and get exactly
 * `text` back: as it is when every character is literal
 * (`my-garden`, `../g/x`); else in single quotes, a `'` inside written
 * `'\''` (`'my garden'`, `'it'\''s'`; a line feed or tab stays as it is
 * inside them); and text holding a character pak2 would not print as it
 * is (a control character, a bidi override: {@link sanitize}) in
 * dollar-single quotes (bash, zsh, ksh, POSIX.1-2024 sh; not dash) with each such character as its UTF-8 bytes in
 * three octal digits, `$'a\001b'`, `$'\342\200\256'` (three digits always:
 * a digit after one is never read into it), so the printed command
 * survives being printed. The empty string is `''`. A word that starts with `-` is an
 * option to most commands: the caller writes `./-x` or `--` before it.
 */
export function shellWord(text: string): string {
  if (BARE.test(text)) return text;
  if (sanitize(text) === text) return `'${text.replace(/'/g, `'\\''`)}'`;
  let out = '';
  for (const ch of text) {
    if (ch === '\\' || ch === "'") out += `\\${ch}`;
    else if (sanitize(ch) !== ch) out += [...Buffer.from(ch, 'utf8')].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
    else out += ch;
  }
  return `$'${out}'`;
}
