import type { WorkbenchActions } from './app.js';
import type { WorkbenchControls, WorkbenchState } from './dispatch.js';
import { keyOf } from './keymap.js';
import { goalDetail, textLines } from './overlays/detail.js';
import { inboxItem } from './panes/inbox.js';
import { editState } from './text-edit.js';

/**
 * Enter (`open`): the selected goal's detail (its guard, landing, run,
 * reflection), the selected question or reply note in the inbox (a note is
 * then marked read), or the chat's input.
 */
export function openSelected(s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  if (s.focus === 'goals' || s.focus === 'tail') {
    const row = s.selectedGoal;
    if (!row) return;
    ui.setScroll(() => 0);
    return ui.setOverlay({ kind: 'detail', title: `Goal ${row.goal.id}`, sections: goalDetail(row.goal, row.run, row.provenance, s.snapshot.guard, row.landing), goalId: row.goal.id });
  }
  if (s.focus === 'inbox') {
    const item = inboxItem(s.snapshot.questions, s.snapshot.inbox, s.cursor.inbox);
    if (item?.kind === 'question') {
      const q = item.question;
      ui.setScroll(() => 0);
      return ui.setOverlay({ kind: 'detail', title: `Question on ${q.goal}`, sections: [{ heading: `${q.comment.author} · ${q.comment.created_at} · ${q.comment.id}`, lines: [...textLines(q.comment.body), '', `${keyOf('back')} closes; ${keyOf('question.answer')} in the inbox answers it`] }] });
    }
    const note = item?.note;
    if (!note) return;
    ui.setScroll(() => 0);
    if (note.unread && actions.markNoteRead) void Promise.resolve().then(() => actions.markNoteRead!(note.name)).catch(() => undefined);
    return ui.setOverlay({ kind: 'detail', title: `Note ${note.name}`, sections: [{ heading: note.title, lines: textLines(note.body) }] });
  }
  if (s.focus === 'chat' && actions.sendMessage) ui.setDraft(editState());
}
