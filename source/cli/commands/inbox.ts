import type { Command } from 'commander';
import { age, table } from '../../format.js';
import { loadInbox } from '../../snapshot/inbox.js';
import { readInboxNote } from '../../submit/inbox.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 inbox [--unread] [--json]` and `pak2 inbox read [NOTE] [--json]`
 * (docs/workbench/level2.md, "Panes"): what the workbench's inbox pane
 * lists, open questions first, then the reply notes (replies, startup
 * notes, retrospective reports) newest first; `read` prints one note whole
 * and marks it read, as enter on it in the pane does.
 */
export function registerInbox(program: Command, io: CliIO): void {
  const inbox = program
    .command('inbox')
    .description("the workbench's inbox: open questions a goal waits on, then reply notes (replies, startup notes, retrospective reports), newest first, unread ones marked ●; inbox read prints a note and marks it read")
    .option('--unread', 'only the unread notes (and the open questions)')
    .option('--json', 'print {questions, notes} as JSON (each note with its name, title, modified_at, unread and body)')
    .action(async (opts: { unread?: boolean; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const view = await loadInbox(garden.paths, garden.config);
      for (const problem of view.problems) io.err(`pak2: ${problem}`);
      const notes = opts.unread ? view.notes.filter((n) => n.unread) : view.notes;
      if (opts.json) {
        return printJson(io, {
          questions: view.questions,
          notes: notes.map((n) => ({ name: n.name, title: n.title, modified_at: n.modifiedAt, unread: n.unread, body: n.body })),
        });
      }
      const now = new Date();
      if (view.questions.length) {
        io.out(`open questions (answer with pak2 comment GOAL --answer TEXT):`);
        for (const q of view.questions) io.out(`? ${q.goal}  ${age(q.comment.created_at, now)}  ${q.comment.author}: ${q.comment.body.split('\n')[0] ?? ''}`);
        if (notes.length) io.out('');
      }
      if (notes.length) {
        io.out(table(['', 'NOTE', 'AGE', 'TITLE'], notes.map((n) => [n.unread ? '●' : ' ', n.name, age(n.modifiedAt, now), n.title])));
        io.out(`pak2 inbox read NOTE prints one and marks it read (a prefix of its name will do)`);
      } else if (!view.questions.length) io.out(opts.unread && view.notes.length ? 'no unread notes' : 'no replies yet');
    });
  inbox
    .command('read')
    .description('print a note whole and mark it read (the oldest unread one when no NOTE is given)')
    .argument('[note]', 'the note: its file name, without .md, or a prefix of it only one note has')
    .option('--json', 'print the note as JSON: name, title, modified_at, unread (before this read), body')
    .action(async (name: string | undefined, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      // `inbox read N --json`: commander gives the flag to `inbox`, which has one of the same name.
      const json = command.optsWithGlobals<{ json?: boolean }>().json;
      const note = await readInboxNote(garden, name);
      if (!note) return io.out('no unread notes');
      if (json) return printJson(io, { name: note.name, title: note.title, modified_at: note.modifiedAt, unread: note.unread, body: note.body });
      io.out(`${note.name} · ${note.modifiedAt}`);
      io.out('');
      io.out(note.body.replace(/\n$/, ''));
    });
}
