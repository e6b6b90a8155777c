/**
 * README.md's command table is generated from the commander program
 * (source/cli/command-table.ts; `npm run commands:readme -- --write`), as
 * the key table is from the keymap: each row's synopsis from the arguments
 * and options the command registers, its description the text `pak2
 * COMMAND --help` prints. The test fails when README differs, when a command
 * has no description of its own (source/cli/command-docs.ts), or when
 * `--help` and the README say different things.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMAND_DOCS } from '../../source/cli/command-docs.js';
import { commandSynopses, commandTableMarkdown, commandUsage, helpText, readmeTableUnder } from '../../source/cli/command-table.js';
import { buildProgram, type CliIO } from '../../source/cli/main.js';
import { runCli } from '../support/cli.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md');
const io: CliIO = { out: () => undefined, err: () => undefined, env: {}, cwd: '/', isTTY: false };
const program = () => buildProgram(io, ['node', 'pak2'], { all: true });
/** Words as a reader compares them: whitespace (commander's wrapping) as one space. */
const words = (text: string) => text.replace(/\s+/g, ' ').trim();

describe("README.md's command table", () => {
  it('is the table generated from the commander program (npm run commands:readme -- --write)', async () => {
    const lines = fs.readFileSync(README, 'utf8').split('\n');
    const [start, end] = readmeTableUnder(lines, '## Commands');
    expect(lines.slice(start, end).join('\n')).toBe(commandTableMarkdown(await program()));
  });

  it('every command has its own description in command-docs.ts, and every description a command', async () => {
    const names = (await program()).commands.map((c) => c.name());
    expect(names.filter((n) => COMMAND_DOCS[n] === undefined), 'commands without a description').toEqual([]);
    expect(Object.keys(COMMAND_DOCS).filter((n) => !names.includes(n)), 'descriptions of no command').toEqual([]);
  });

  it('pak2 COMMAND --help says what the README row says: the same usage, the same description', async () => {
    for (const cmd of (await program()).commands) {
      const help = cmd.helpInformation();
      const first = commandSynopses(cmd)[0]!;
      // The row's first synopsis is the usage line of the command, or of its first subcommand when it only holds subcommands.
      const usageOf = commandUsage(cmd).endsWith('[command]') ? cmd.commands[0]!.helpInformation() : help;
      expect(usageOf.split('\n')[0], cmd.name()).toBe(`Usage: ${first}`);
      expect(words(help), cmd.name()).toContain(words(helpText(COMMAND_DOCS[cmd.name()]!)));
    }
  });

  it('through bin/pak2.js: pak2 retry --help and pak2 logs --help print the usage and the description of their README rows; pak2 --help keeps the short summaries', async () => {
    const readme = fs.readFileSync(README, 'utf8');
    for (const name of ['retry', 'logs']) {
      const help = await runCli([name, '--help']);
      expect(help.code).toBe(0);
      const usage = help.stdout.split('\n')[0]!.replace(/^Usage: /, '');
      const row = readme.split('\n').find((l) => l.startsWith(`| \`pak2 ${name} `))!;
      expect(row.startsWith(`| \`${usage.replace(/\|/g, '\\|')}\` | `)).toBe(true);
      expect(words(help.stdout)).toContain(words(helpText(COMMAND_DOCS[name]!)));
    }
    const top = await runCli(['--help']);
    expect(words(top.stdout)).toContain('retry [options] <goal> queue a goal that closed failure or cancelled again, as a new goal;');
    expect(top.stdout).not.toContain('retry_of');
  });
});
