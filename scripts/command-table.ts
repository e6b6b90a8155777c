/**
 * Prints the README's command table, generated from the commander program
 * (source/cli/command-table.ts: each command's synopsis from the arguments
 * and options it registers, its description from source/cli/command-docs.ts,
 * the text `pak2 COMMAND --help` prints), as README.md shows it under
 * "## Commands". `--write` puts it into README.md in place of the table
 * there. test/cli/command-table.test.ts fails when the two differ.
 *
 *   npm run commands:readme            # print
 *   npm run commands:readme -- --write # update README.md
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandTableMarkdown, readmeTableUnder } from '../source/cli/command-table.js';
import { buildProgram } from '../source/cli/main.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'README.md');

const program = await buildProgram({ out: () => undefined, err: () => undefined, env: {}, cwd: process.cwd(), isTTY: false }, ['node', 'pak2'], { all: true });
const table = commandTableMarkdown(program);
if (process.argv.includes('--write')) {
  const lines = fs.readFileSync(README, 'utf8').split('\n');
  const [start, end] = readmeTableUnder(lines, '## Commands');
  lines.splice(start, end - start, ...table.split('\n'));
  fs.writeFileSync(README, lines.join('\n'));
  process.stdout.write(`README.md: command table written (${table.split('\n').length - 2} rows)\n`);
} else {
  process.stdout.write(`${table}\n`);
}
