/**
 * Every document kind and line kind the source writes or reads on a store
 * is in the kind → file map (source/store/documents.ts), so an export can
 * write each back where the file store keeps it, and an import can find it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_FILES, LINE_FILES } from '../../source/store/documents.js';

const SOURCE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../source');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

describe('store document kinds', () => {
  it('every kind named in a documents or lines call is mapped to its file', () => {
    const documents = new Set<string>();
    const lines = new Set<string>();
    for (const file of sourceFiles(SOURCE)) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\b(documentRecords?|putDocument|deleteDocument|withDocumentLock|appendDocumentLine|documentLines)\(\s*'([a-z-]+)'/g)) {
        (m[1] === 'appendDocumentLine' || m[1] === 'documentLines' ? lines : documents).add(m[2]!);
      }
    }
    expect(documents.size).toBeGreaterThan(10);
    // withDocumentLock also guards the lines of a parent (an operator message's number).
    expect([...documents].filter((k) => !(k in DOCUMENT_FILES) && !(k in LINE_FILES))).toEqual([]);
    expect([...lines].filter((k) => !(k in LINE_FILES))).toEqual([]);
  });

  it('maps keys to the seeds\' file names', () => {
    expect(DOCUMENT_FILES['operator-note']('garden/om-1-a-r1-2')).toBe('inbox/garden/operator/om-1-a-r1-2.md');
    expect(DOCUMENT_FILES['artifact-content']('1-a-r1/diff.patch')).toBe('runs/1-a-r1/artifacts/diff.patch');
    expect(DOCUMENT_FILES['inbox-note']('garden/20260501T091200Z-startup.md')).toBe('inbox/garden/20260501T091200Z-startup.md');
    expect(LINE_FILES['conversation-message']('c-20260501T100000-0000abcd')).toBe('conversations/c-20260501T100000-0000abcd/messages.jsonl');
  });
});
