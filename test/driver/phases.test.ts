import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FRESH_SESSION_MARKER_TYPE, parseStreamLine, readPhases, REFLECTION_MARKER_TYPE } from '../../source/driver/index.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function streamFile(text: string): string {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-phases-'));
  const file = path.join(dir, 'events.jsonl');
  fs.writeFileSync(file, text);
  return file;
}

/** What the phases are, read the simple way: the whole file, split, every line parsed. */
function expected(text: string): { main: unknown[]; reflection: unknown[] } {
  const main: unknown[] = [];
  const reflection: unknown[] = [];
  let target = main;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const value = parseStreamLine(line) as { type?: unknown };
    if (value.type === FRESH_SESSION_MARKER_TYPE) {
      main.length = 0;
      continue;
    }
    if (value.type === REFLECTION_MARKER_TYPE) {
      target = reflection;
      continue;
    }
    target.push(value);
  }
  return { main, reflection };
}

function phasesOf(text: string) {
  const { main, reflection } = readPhases(streamFile(text));
  return { main: [...main], reflection: [...reflection] };
}

const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const fresh = line({ type: FRESH_SESSION_MARKER_TYPE, dropped_session: 's1' });
const reflect = line({ type: REFLECTION_MARKER_TYPE });

describe('readPhases: the main and reflection phases of a stream, read a line at a time', () => {
  it('splits at the reflection marker; a line that is not a JSON object reads as text', () => {
    const text = `${line({ type: 'a', n: 1 })}plain words\n[1,2]\n${reflect}${line({ type: 'b', n: 2 })}`;
    expect(phasesOf(text)).toEqual(expected(text));
    expect(phasesOf(text).main).toEqual([{ type: 'a', n: 1 }, { type: 'text', text: 'plain words' }, { type: 'text', text: '[1,2]' }]);
    expect(phasesOf(text).reflection).toEqual([{ type: 'b', n: 2 }]);
  });

  it('a fresh-session marker restarts the main phase; one after the reflection marker leaves no main phase', () => {
    const before = `${line({ type: 'old' })}${fresh}${line({ type: 'retry' })}${reflect}${line({ type: 'r' })}`;
    expect(phasesOf(before)).toEqual({ main: [{ type: 'retry' }], reflection: [{ type: 'r' }] });
    const after = `${line({ type: 'm' })}${reflect}${line({ type: 'r1' })}${fresh}${line({ type: 'r2' })}${reflect}${line({ type: 'r3' })}`;
    expect(phasesOf(after)).toEqual(expected(after));
    expect(phasesOf(after).main).toEqual([]);
  });

  it('a marker named inside an agent line is not a marker; no newline at the end; a missing file is empty', () => {
    const text = `${line({ type: 'assistant', text: `"type":"${REFLECTION_MARKER_TYPE}"` })}{"type":"last"}`;
    expect(phasesOf(text)).toEqual({ main: [{ type: 'assistant', text: `"type":"${REFLECTION_MARKER_TYPE}"` }, { type: 'last' }], reflection: [] });
    const gone = readPhases(path.join(os.tmpdir(), 'pak2-no-such-dir', 'events.jsonl'));
    expect([...gone.main, ...gone.reflection]).toEqual([]);
  });

  it('a stream of many megabytes, with lines longer than a read and multi-byte text across reads, reads as the whole file would', () => {
    const long = 'é✓ '.repeat(700_000); // ~3.5 MB of UTF-8 in one line: it spans several reads
    let text = '';
    for (let i = 0; i < 2000; i += 1) text += line({ type: 'assistant', i, text: `step ${i} ${'x'.repeat(i % 900)}` });
    text += line({ type: 'tool', text: long });
    text += reflect;
    for (let i = 0; i < 500; i += 1) text += line({ type: 'r', i });
    const got = phasesOf(text);
    const want = expected(text);
    expect(got.main.length).toBe(2001);
    expect(got.reflection.length).toBe(500);
    expect(got).toEqual(want);
  });
});
