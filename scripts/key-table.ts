/**
 * Prints the workbench's key table, generated from the one keymap
 * (source/ui/keymap.ts), as README.md shows it under "## The workbench".
 * `--write` puts it into README.md in place of the table there.
 * test/ui/keymap.test.ts fails when the two differ.
 *
 *   npm run keys:readme            # print
 *   npm run keys:readme -- --write # update README.md
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyTableMarkdown } from '../source/ui/keymap.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'README.md');

/** The line range [start, end) of the first table under `## The workbench`. */
export function readmeKeyTable(lines: readonly string[]): [number, number] {
  const section = lines.findIndex((line) => line.trim() === '## The workbench');
  if (section < 0) throw new Error('README.md has no "## The workbench" section');
  let start = section + 1;
  while (start < lines.length && !lines[start]!.startsWith('|')) {
    if (lines[start]!.startsWith('## ')) throw new Error('no table under "## The workbench"');
    start += 1;
  }
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end += 1;
  return [start, end];
}

const table = keyTableMarkdown();
if (process.argv.includes('--write')) {
  const lines = fs.readFileSync(README, 'utf8').split('\n');
  const [start, end] = readmeKeyTable(lines);
  lines.splice(start, end - start, ...table.split('\n'));
  fs.writeFileSync(README, lines.join('\n'));
  process.stdout.write(`README.md: key table written (${table.split('\n').length - 2} keys)\n`);
} else {
  process.stdout.write(`${table}\n`);
}
