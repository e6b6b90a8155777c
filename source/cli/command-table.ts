/**
 * The README's command table, generated from the commander program as the
 * key table is from the keymap (`npm run commands:readme -- --write`;
 * test/cli/command-table.test.ts fails when README.md differs). Each row is
 * a top-level command: its synopsis, built from the arguments and options
 * it registers (the same words `pak2 COMMAND --help` prints after
 * `Usage:`), and its description (COMMAND_DOCS, which `pak2 COMMAND --help`
 * prints too). Pure: reads the program, touches nothing.
 */
import type { Argument, Command, Option } from 'commander';
import { COMMAND_DOCS, WORKBENCH_ROW } from './command-docs.js';

/** `<goal>` → `GOAL`, `[dir]` → `[DIR]`, `<ids...>` → `IDS…`. */
function argumentWords(arg: Argument): string {
  const name = `${arg.name().toUpperCase()}${arg.variadic ? '…' : ''}`;
  return arg.required ? name : `[${name}]`;
}

/** The value an option takes, from its flags (`--plant <plant>` → `PLANT`, `--wait [seconds]` → `[SECONDS]`), or '' for a switch. */
function valueWords(option: Option): string {
  const m = /([<[])([^>\]]+?)(\.\.\.)?[>\]]/.exec(option.flags);
  if (!m) return '';
  const name = m[2]!.toUpperCase().replace(/[^A-Z0-9_-]+/g, '-');
  return m[1] === '[' ? `[${name}]` : name;
}

/** One option as a synopsis says it: the short flag when it has one (`-f`), else the long; a required option bare, the others in brackets; a repeatable one with `…`. */
function optionWords(option: Option, all: readonly Option[]): string | undefined {
  if (option.hidden || option.long === '--help') return undefined;
  const flag = option.short ?? option.long ?? option.flags;
  const value = valueWords(option);
  let words = value ? `${flag} ${value}` : flag;
  // `--color` and `--no-color`: one choice.
  if (option.long && !option.negate) {
    const negated = all.find((o) => o.negate && o.long === option.long!.replace(/^--/, '--no-'));
    if (negated) return `[${words} | ${negated.long}]`;
  } else if (option.negate && all.some((o) => !o.negate && o.long === option.long!.replace(/^--no-/, '--'))) return undefined;
  if (option.variadic) words = `${words}…`;
  return option.mandatory ? words : `[${words}]`;
}

/** A command's names from the program down: `pak2 plant commission`. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Whether a command does something itself (not only holds subcommands). */
function hasAction(cmd: Command): boolean {
  return Boolean((cmd as unknown as { _actionHandler?: unknown })._actionHandler);
}

/**
 * What follows the command's name in a synopsis: its arguments, then its
 * options (`GOAL [--driver DRIVER] [--model MODEL] [--json]`); `pak2
 * COMMAND --help` prints the same after `Usage: pak2 COMMAND`.
 */
export function commandArgsSynopsis(cmd: Command): string {
  return [...cmd.registeredArguments.map(argumentWords), ...cmd.options.map((o) => optionWords(o, cmd.options)).filter((w): w is string => Boolean(w))].join(' ');
}

/** The usage line of a command for `--help` (`pak2 retry GOAL [--json]`); a command holding only subcommands says `[command]`. */
export function commandUsage(cmd: Command): string {
  const tail = cmd.commands.length && !hasAction(cmd) ? '[command]' : commandArgsSynopsis(cmd);
  return `${commandPath(cmd)} ${tail}`.trim();
}

/**
 * The synopses of a top-level command for its README row: its own, then
 * each subcommand's, the first in full (`pak2 token create --role ROLE
 * --name NAME`) and the rest from the subcommand's name (`list`, `revoke
 * NAME`).
 */
export function commandSynopses(cmd: Command): string[] {
  const own = hasAction(cmd) || cmd.commands.length === 0 ? [commandUsage(cmd)] : [];
  const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden).map((c) => `${c.name()} ${commandArgsSynopsis(c)}`.trim());
  if (own.length === 0 && subs.length) return [`${commandPath(cmd)} ${subs[0]}`, ...subs.slice(1)];
  return [...own, ...subs];
}

/** Text for a Markdown table cell: `|` escaped, lines joined. */
function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}

/**
 * The README's command table: one row for bare `pak2` (the workbench), then
 * each top-level command in `pak2 --help` order, its synopses and its
 * description.
 */
export function commandTableMarkdown(program: Command): string {
  const rows = [
    `| ${WORKBENCH_ROW.synopsis.map((s) => `\`${cell(s)}\``).join(', ')} | ${cell(WORKBENCH_ROW.description)} |`,
    ...program.commands.map((cmd) => `| ${commandSynopses(cmd).map((s) => `\`${cell(s)}\``).join(', ')} | ${cell(cmd.description())} |`),
  ];
  return ['| command | what it does |', '|---|---|', ...rows].join('\n');
}

/**
 * Gives each top-level command its README description (COMMAND_DOCS) as
 * the one `pak2 COMMAND --help` prints, keeping the short one it
 * registered as the summary `pak2 --help` lists.
 */
export function applyCommandDocs(program: Command): void {
  for (const cmd of program.commands) {
    const doc = COMMAND_DOCS[cmd.name()];
    if (doc === undefined) continue;
    if (!cmd.summary()) cmd.summary(cmd.description());
    cmd.description(doc);
  }
}

/** A README description as the terminal shows it: Markdown's backticks left out. */
export function helpText(text: string): string {
  return text.replace(/`/g, '');
}

/**
 * The line range [start, end) of the first table under the `heading` line
 * of a README's lines.
 *
 * @throws Error when the heading, or a table under it before the next `## `, is missing.
 */
export function readmeTableUnder(lines: readonly string[], heading: string): [number, number] {
  const section = lines.findIndex((line) => line.trim() === heading);
  if (section < 0) throw new Error(`README.md has no "${heading}" section`);
  let start = section + 1;
  while (start < lines.length && !lines[start]!.startsWith('|')) {
    if (lines[start]!.startsWith('## ')) throw new Error(`no table under "${heading}"`);
    start += 1;
  }
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end += 1;
  return [start, end];
}
