import type { CommentResult } from '../submit/index.js';
import type { QuestionView } from '../snapshot/types.js';
import type { WorkbenchActions } from './app.js';
import type { WorkbenchControls, WorkbenchState } from './dispatch.js';
import { inboxItem } from './panes/inbox.js';
import type { StatusMessage } from './status-line.js';
import { editState } from './text-edit.js';

/** The chat line that answers the oldest open question: `/answer TEXT`. */
export const ANSWER_COMMAND = '/answer';

/** Whether a chat line is an `/answer` command (the word alone, or followed by a space and text). */
export function isAnswerLine(text: string): boolean {
  return text === ANSWER_COMMAND || text.startsWith(`${ANSWER_COMMAND} `) || text.startsWith(`${ANSWER_COMMAND}\n`);
}

/** What an answer did, for the status line (until the next key): the goal is back to running or queued, or still blocked by another question. */
export function answeredMessage(question: QuestionView, result: CommentResult): StatusMessage {
  const status = result.goal.status;
  const where = status === 'blocked' ? 'still blocked: it has another open question' : `back to ${status}`;
  return { text: `answered ${question.goal}: ${where}`, error: false };
}

/** An answer is one line: the line breaks of a paste become spaces. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

function call<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work();
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

/** The `a` key in the inbox: opens the answer field for the selected question, or says why not. */
export function openAnswer(s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  if (!actions.answerQuestion) return ui.flash({ text: 'read-only dashboard: answer with pak2 comment GOAL --answer TEXT', error: true });
  const item = inboxItem(s.snapshot.questions, s.snapshot.inbox, s.cursor.inbox);
  if (item?.kind !== 'question') return ui.flash({ text: s.snapshot.questions.length ? 'select a question (the ? rows at the top of the inbox) first' : 'no open question to answer', error: true });
  ui.setOverlay({ kind: 'answer', question: item.question, edit: editState() });
}

/**
 * Posts an answer through the operator action (`answerQuestion`, as `pak2
 * comment --answer`) and reports it on the status line; an empty answer
 * sends nothing. `narrate` also says it in the chat.
 */
export function sendAnswer(question: QuestionView, text: string, ui: WorkbenchControls, actions: WorkbenchActions, narrate = false): void {
  const body = oneLine(text);
  if (!body || !actions.answerQuestion) return;
  ui.flash({ text: `answering ${question.goal}…`, error: false });
  call(() => actions.answerQuestion!(question.goal, body, { questionId: question.comment.id })).then(
    (result) => {
      const message = answeredMessage(question, result);
      ui.flash(message);
      if (narrate) ui.narrate(`answered ${question.comment.author}'s question on ${question.goal} ("${oneLine(question.comment.body)}"): ${message.text.replace(/^answered \S+: /, 'the goal is ')}`);
    },
    (error: Error) => {
      ui.flash({ text: error.message, error: true });
      if (narrate) ui.narrate(`the answer to ${question.goal} was not posted: ${error.message}`);
    },
  );
}

/**
 * A chat line `/answer TEXT`: answers the oldest open question of any goal
 * and says which goal in the chat's narration; with no open question (or
 * no text) it says so there and sends nothing.
 */
export function chatAnswer(s: WorkbenchState, line: string, ui: WorkbenchControls, actions: WorkbenchActions): void {
  if (!actions.answerQuestion) return ui.narrate('read-only dashboard: answer with pak2 comment GOAL --answer TEXT');
  const text = oneLine(line.slice(ANSWER_COMMAND.length));
  const oldest = s.snapshot.questions[0];
  if (!oldest) return ui.narrate('no open question to answer: nothing was sent');
  if (!text) return ui.narrate(`write the answer after ${ANSWER_COMMAND}: the oldest open question is ${oldest.goal}'s ("${oneLine(oldest.comment.body)}")`);
  sendAnswer(oldest, text, ui, actions, true);
}
