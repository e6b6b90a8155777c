import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { listInbox, markNoteRead, type InboxNote } from '../store/index.js';

/** What {@link readInboxNote} gives: the note as it was (`unread` before this read), its whole text. */
export type ReadNote = InboxNote;

/**
 * Finds the reply note `id` names (its file name, the name without `.md`,
 * or a prefix of it only one note has), or with no `id` the oldest unread
 * one, and marks it read: the workbench's enter on a note, `pak2 inbox
 * read` (docs/workbench/level2.md, "Panes"). Marking goes through
 * `markNoteRead`, the operator action the workbench calls.
 *
 * @returns the note with its whole text, or undefined when `id` is absent
 *   and no note is unread.
 * @throws UserError naming `note`: no such note (exit 1), a prefix several
 *   notes have (exit 2, naming them).
 */
export async function readInboxNote(garden: Garden, id?: string): Promise<ReadNote | undefined> {
  const notes = await listInbox(garden.paths, garden.config, Number.POSITIVE_INFINITY);
  let note: InboxNote | undefined;
  if (id === undefined) {
    note = notes.filter((n) => n.unread).at(-1); // newest first: the last unread is the oldest
    if (!note) return undefined;
  } else {
    const exact = notes.find((n) => n.name === id || n.name === `${id}.md`);
    const matches = exact ? [exact] : notes.filter((n) => n.name.startsWith(id));
    if (matches.length === 0) throw new UserError(`note ${id}: no such note in the inbox (pak2 inbox lists them)`, { exitCode: 1 });
    if (matches.length > 1) throw new UserError(`note ${id}: ${matches.length} notes start so (${matches.slice(0, 5).map((n) => n.name).join(', ')}${matches.length > 5 ? ', …' : ''}); give more of the name`);
    note = matches[0]!;
  }
  if (note.unread) await markNoteRead(garden.paths, garden.config, note.name);
  return note;
}
