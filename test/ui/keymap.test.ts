/**
 * The keymap is the only place keys are defined (issue 14, item 4): no raw
 * key check elsewhere in the UI, one binding per command, and README.md's
 * key table is the one generated from the keymap (`npm run keys:readme`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hint, KEYMAP, keyTableMarkdown, SCOPE_TITLES } from '../../source/ui/keymap.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const UI = path.join(ROOT, 'source', 'ui');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : []));
}

/** The first table under `## The workbench` in README.md. */
function readmeTable(): string {
  const lines = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n');
  const section = lines.findIndex((line) => line.trim() === '## The workbench');
  expect(section).toBeGreaterThanOrEqual(0);
  const start = lines.findIndex((line, i) => i > section && line.startsWith('|'));
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end += 1;
  return lines.slice(start, end).join('\n');
}

describe('the one keymap', () => {
  it('README.md’s key table is the table generated from the keymap (npm run keys:readme -- --write)', () => {
    expect(readmeTable()).toBe(keyTableMarkdown());
  });

  it('no key is checked outside keymap.ts: no `input ===`, no `key.<name>`', () => {
    const raw = /\binput\s*[!=]==|\bkey\.(upArrow|downArrow|leftArrow|rightArrow|pageUp|pageDown|home|end|return|escape|ctrl|shift|tab|backspace|delete|meta)\b/;
    const found = files(UI)
      .filter((file) => path.basename(file) !== 'keymap.ts')
      .flatMap((file) =>
        fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${path.relative(ROOT, file)}:${i + 1}` }))
          .filter(({ line }) => raw.test(line))
          .map(({ at, line }) => `${at}: ${line.trim()}`),
      );
    expect(found).toEqual([]);
  });

  it('one binding per command, each with keys, a description and a titled scope; hints name bound keys', () => {
    const commands = KEYMAP.map((b) => b.command);
    expect(new Set(commands).size).toBe(commands.length);
    for (const b of KEYMAP) {
      expect(b.keys.trim()).not.toBe('');
      expect(b.description.trim()).not.toBe('');
      expect(SCOPE_TITLES[b.scope]).toBeTruthy();
    }
    expect(hint(['cursor.up', 'cursor.down'], 'scroll')).toBe('↑↓ scroll');
    expect(hint('form.submit', 'submit')).toBe('ctrl-s submit');
  });
});
