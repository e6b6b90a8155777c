/** `shellWord`: a word pak2 prints for a person to paste into a shell gives back exactly the text (issue 28). */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellWord } from '../../source/shell-word.js';

describe('shellWord', () => {
  it.each([
    ['my-garden', 'my-garden'],
    ['../g/x_1.2', '../g/x_1.2'],
    ['a=b', 'a=b'],
    ['=cmd', "'=cmd'"],
    ['', "''"],
    ['my garden', "'my garden'"],
    ["it's", "'it'\\''s'"],
    ['~/x', "'~/x'"],
    ['$HOME `id` $(id) ;& |*?[a]{b,c}!#', "'$HOME `id` $(id) ;& |*?[a]{b,c}!#'"],
    ['two\nlines\ttab', "'two\nlines\ttab'"],
    ['esc\x1b[2J', "$'esc\\033[2J'"],
    ['bidi\u202e1', "$'bidi\\342\\200\\2561'"],
    ["cr\r'\\", "$'cr\\015\\'\\\\'"],
  ])('%j is %s', (text, word) => {
    expect(shellWord(text)).toBe(word);
  });

  it('bash reads every word back as the text it came from', () => {
    const texts = ['my garden', "it's", '$HOME `id`', 'two\nlines', 'esc\x1b[2J', 'bidi\u202e1', "cr\r'\\", 'α β 漢字 😀', '=x', '-n'];
    for (const text of texts) {
      const echoed = execFileSync('bash', ['-c', `printf '%s' ${shellWord(text)}`], { encoding: 'utf8' });
      expect(echoed, JSON.stringify(text)).toBe(text);
    }
  });
});
