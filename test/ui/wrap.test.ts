/**
 * Wrapped lines in the chat and the dashboard do not start with a space
 * (issue 14, newcomer items): a wrap eats the spaces it breaks at, a line's
 * own indent stays.
 */
import { describe, expect, it } from 'vitest';
import { wrapColumns } from '../../source/format.js';
import { wrapLines } from '../../source/ui/layout.js';
import { chatRows } from '../../source/ui/panes/chat.js';

describe('wrapping', () => {
  it('a row a wrap began starts with the next word, whether the row before ended full or not', () => {
    expect(wrapColumns('aaaa bbbb', 4).rows).toEqual(['aaaa', 'bbbb']);
    expect(wrapColumns('aaa bbb ccc', 7).rows).toEqual(['aaa bbb', 'ccc']);
    expect(wrapColumns('aaaa  bbbb', 4).rows).toEqual(['aaaa', 'bbbb']);
    expect(wrapLines('✗ Invalid API key · Fix external API key · $0.0000 · 0 in / 0 out · 1 turns', 32)).toEqual([
      '✗ Invalid API key · Fix external',
      'API key · $0.0000 · 0 in / 0 out',
      '· 1 turns',
    ]);
  });

  it('no wrapped row of a text starts with a space, at any width; a line’s own indent stays', () => {
    const text = 'system: pak2 started the garden demo. The gardener surveys the garden, writes its memory, and answers in the inbox.';
    for (let width = 4; width <= 40; width++) {
      const rows = wrapLines(text, width);
      expect(rows.slice(1).filter((row) => row.startsWith(' '))).toEqual([]);
      if (width >= 9) expect(rows.map((row) => row.trimEnd()).join(' ')).toBe(text); // no word is longer than a row: rows break only at spaces
    }
    expect(wrapLines('  indented line of text', 10)[0]!.startsWith('  ')).toBe(true);
  });

  it('chat rows start at the left edge', () => {
    const rows = chatRows([{ sender: 'system', text: 'pak2 started the garden demo.', ts: '2026-11-29T12:00:00Z' } as never], 24, 5);
    expect(rows.map((r) => r.text)).toEqual(['system: pak2 started the', 'garden demo.']);
  });
});
