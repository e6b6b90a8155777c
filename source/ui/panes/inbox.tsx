import React from 'react';
import { age } from '../../format.js';
import type { QuestionView } from '../../snapshot/types.js';
import type { InboxNote } from '../../store/index.js';
import { keyOf } from '../keymap.js';
import { fit, windowRange } from '../layout.js';
import { Lines, type StyledLine } from '../lines.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link Inbox}. The cursor runs over the questions first, then the notes. */
export interface InboxProps {
  notes: readonly InboxNote[];
  /** Open questions of blocked goals, oldest first (listed before the notes). */
  questions?: readonly QuestionView[];
  cursor: number;
  width: number;
  height: number;
  focused: boolean;
  now: number;
}

/** One inbox item: an open question or a reply note. */
export type InboxItem = { kind: 'question'; question: QuestionView } | { kind: 'note'; note: InboxNote };

/** The inbox's items in order, questions first; `index` picks the selected one (undefined when empty). */
export function inboxItem(questions: readonly QuestionView[], notes: readonly InboxNote[], index: number): InboxItem | undefined {
  if (index < questions.length) return questions[index] ? { kind: 'question', question: questions[index] } : undefined;
  const note = notes[index - questions.length];
  return note ? { kind: 'note', note } : undefined;
}

/**
 * A question's row: `? <age> <first line of the question> — <goal> <author>`:
 * the question first, so a narrow pane keeps it and cuts the rest; the
 * goal's own agent (`agent:<goal>-rN`) is said `agent`. Enter shows the whole question.
 */
export function questionRow(q: QuestionView, now: number): string {
  const first = q.comment.body.split('\n')[0] ?? '';
  const author = q.comment.author.startsWith(`agent:${q.goal}-r`) ? 'agent' : q.comment.author;
  return `? ${fit(age(q.comment.created_at, new Date(now)), 3)} ${first} — ${q.goal} ${author}`;
}

/** The inbox: open questions (marked ?, oldest first, answered with `a`), then reply notes newest first, unread marked with ●. */
export const Inbox = React.memo(function Inbox({ notes, questions = [], cursor, width, height, focused, now }: InboxProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const unread = notes.filter((n) => n.unread).length;
  const total = questions.length + notes.length;
  const [start, end] = windowRange(total, cursor, h);
  const counts = [questions.length ? `${questions.length} open` : '', unread ? `${unread} unread` : ''].filter(Boolean).join(' · ') || String(notes.length);
  const note = focused && inboxItem(questions, notes, cursor)?.kind === 'question' ? `${keyOf('question.answer')} answers` : counts;
  const rows: StyledLine[] = [];
  for (let i = start; i < end; i += 1) {
    const item = inboxItem(questions, notes, i)!;
    const selected = i === cursor && focused;
    rows.push(
      item.kind === 'question'
        ? { text: fit(questionRow(item.question, now), w), inverse: selected, color: 'magenta', bold: true }
        : { text: fit(`${item.note.unread ? '●' : ' '} ${fit(age(item.note.modifiedAt, new Date(now)), 3)} ${item.note.title}`, w), inverse: selected, bold: item.note.unread },
    );
  }
  return (
    <Pane title="Inbox" note={note} width={width} height={height} focused={focused}>
      <Lines lines={total === 0 ? [{ text: fit('no replies yet', w), dimColor: true }] : rows} />
    </Pane>
  );
});
