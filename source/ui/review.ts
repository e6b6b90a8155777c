import { isTerminalLandingState, type LandingRecord } from '../contracts/index.js';
import { goalStatusText } from '../landing-words.js';
import type { GoalRow } from '../snapshot/types.js';
import type { WorkbenchActions } from './app.js';
import type { Overlay, WorkbenchControls, WorkbenchState } from './dispatch.js';
import { hint, keyOf, type CommandId } from './keymap.js';
import { acceptPrompt } from './operator-prompts.js';
import type { DiffLoad } from './overlays/diff.js';
import type { StatusMessage } from './status-line.js';
import { editState } from './text-edit.js';

/**
 * Review in the workbench (docs/workbench/level2.md, "Review"): `d` opens a
 * run's diff; `a` accepts its work, `r` rejects it (a comment and whether
 * the goal goes back to the queue), `c` comments on its goal. Each calls
 * the session's operator action (`runDiff`, `landRun`, `rejectRun`,
 * `postComment`: what `pak2 diff`, `land`, `reject`, `comment` call) and
 * says what happened in one line; a refusal from the core is that line, in red.
 */

const notice = (text: string): StatusMessage => ({ text, error: true });

function call<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work();
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The run a review key means, with its goal's row: the open diff's, else the run pane's (focused), else the selected goal's latest. */
export function reviewTarget(s: WorkbenchState): { runId: string; goalId: string; row: GoalRow | undefined } | undefined {
  const o = s.overlay.kind === 'diff' ? s.overlay : s.overlay.kind === 'reject' || s.overlay.kind === 'comment' ? s.overlay.back : s.overlay;
  if (o.kind === 'diff') return { runId: o.runId, goalId: o.goalId, row: s.snapshot.goals.find((r) => r.goal.id === o.goalId) };
  if (s.focus === 'tail' && s.tailRun) return { runId: s.tailRun.id, goalId: s.tailRun.goal, row: s.goals.find((r) => r.run?.id === s.tailRun!.id) };
  const row = s.selectedGoal;
  return row?.run ? { runId: row.run.id, goalId: row.goal.id, row } : undefined;
}

/** The landing of a run as the snapshot has it. */
function landingOf(s: WorkbenchState, runId: string): LandingRecord | undefined {
  return s.snapshot.goals.find((r) => r.run?.id === runId)?.landing;
}

/** Whether the review keys go first: in the diff overlay, and on a goal awaiting review in the goals pane. */
export function reviewKeysApply(s: WorkbenchState): boolean {
  if (s.overlay.kind === 'diff') return true;
  return s.overlay.kind === 'none' && s.focus === 'goals' && s.selectedGoal?.goal.status === 'completed' && s.selectedGoal.landing?.state === 'awaiting_review';
}

/** `o` with the diff of `runId` (itself, or the diff under a prompt) given `load`. */
function withLoad(o: Overlay, runId: string, load: DiffLoad): Overlay {
  if (o.kind === 'diff' && o.runId === runId) return { ...o, load };
  if ((o.kind === 'reject' || o.kind === 'comment') && o.back.kind === 'diff') return { ...o, back: withLoad(o.back, runId, load) };
  return o;
}

/** The `d` key: opens the diff of the selected goal's latest run (or the run pane's run) and asks the core for it. */
export function openDiff(s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  if (!actions.runDiff) return ui.flash(notice('read-only dashboard: see a run’s work with pak2 diff RUN'));
  if (s.focus !== 'goals' && s.focus !== 'tail') return ui.flash(notice('select a goal, or the run pane, first'));
  const target = reviewTarget(s);
  if (!target) return ui.flash(notice(s.selectedGoal ? `goal ${s.selectedGoal.goal.id} has no run yet: nothing to diff` : 'no goal selected'));
  const { runId } = target;
  ui.setScroll(() => 0);
  ui.setOverlay({ kind: 'diff', runId, goalId: target.goalId, load: { state: 'loading' } });
  call(() => actions.runDiff!(runId)).then(
    (diff) => ui.updateOverlay((o) => withLoad(o, runId, { state: 'ready', diff })),
    (error: unknown) => ui.updateOverlay((o) => withLoad(o, runId, { state: 'error', message: messageOf(error) })),
  );
}

/** A review key (`a`, `r`, `c`) in the diff overlay or on a goal awaiting review. */
export function reviewCommand(command: CommandId, s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const target = reviewTarget(s);
  if (!target) return ui.flash(notice('no run selected'));
  const inDiff = s.overlay.kind === 'diff';
  if (command === 'review.accept') {
    if (!actions.landRun) return ui.flash(notice('read-only dashboard: accept work with pak2 land RUN'));
    if (inDiff) return acceptRun(target.runId, target.goalId, s, ui, actions);
    const prompt = acceptPrompt(target.row);
    return 'refusal' in prompt ? ui.flash(notice(prompt.refusal)) : ui.setOverlay({ kind: 'confirm', prompt });
  }
  if (command === 'review.reject') {
    if (!actions.rejectRun) return ui.flash(notice('read-only dashboard: reject work with pak2 reject RUN'));
    const landing = landingOf(s, target.runId);
    if (!landing) return ui.flash(notice(`${target.runId} has no landing: nothing to reject (only a successful run's work in a worktree of its own lands)`));
    if (isTerminalLandingState(landing.state)) return ui.flash(notice(`${target.runId}: its landing is ${landing.state}; nothing to reject`));
    return ui.setOverlay({ kind: 'reject', runId: target.runId, goalId: target.goalId, edit: editState(), requeue: false, back: s.overlay });
  }
  if (command === 'review.comment') {
    if (!actions.postComment) return ui.flash(notice('read-only dashboard: comment with pak2 comment GOAL TEXT'));
    return ui.setOverlay({ kind: 'comment', goalId: target.goalId, edit: editState(), back: s.overlay });
  }
}

/**
 * Accepts a run's work (`landRun`, as `pak2 land`) and says what happened:
 * queued for the coordinator, or landed (no coordinator runs), or the
 * landing's state. The line then follows the goal as the snapshot shows it
 * (`landed 3-fix: main moved to …`) once its status moves on.
 */
export function acceptRun(runId: string, goalId: string, s: WorkbenchState, ui: WorkbenchControls, actions: WorkbenchActions): void {
  const row = s.snapshot.goals.find((r) => r.goal.id === goalId);
  if (s.overlay.kind === 'diff' || s.overlay.kind === 'confirm') ui.setOverlay({ kind: 'none' });
  ui.flash({ text: `accepting ${runId}…`, error: false });
  call(() => actions.landRun!(runId)).then(
    (result) => {
      // Said while the goal shows as it did at the key or as the answer left it (`awaiting review`, `landing`); then the status line follows it.
      const from = row ? [goalStatusText(row.goal, row.landing), goalStatusText(row.goal, result.landing)] : undefined;
      ui.flash({ text: `accepted ${runId}: ${result.detail}`, error: result.landing.state === 'conflict' || result.landing.state === 'failed', subject: { goal: goalId, ...(from ? { from } : {}) } });
    },
    (error: unknown) => ui.flash(notice(messageOf(error))),
  );
}

/** Rejects a run's work (`rejectRun`, as `pak2 reject [--requeue] [--comment]`) and says where its goal went. */
export function sendReject(o: Extract<Overlay, { kind: 'reject' }>, text: string, ui: WorkbenchControls, actions: WorkbenchActions): void {
  ui.setOverlay({ kind: 'none' });
  if (!actions.rejectRun) return;
  const comment = text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
  ui.flash({ text: `rejecting ${o.runId}…`, error: false });
  call(() => actions.rejectRun!(o.runId, { requeue: o.requeue, ...(comment ? { comment } : {}) })).then(
    (result) => {
      const where = result.goal === 'queued' ? 'back in the queue' : 'closed failure';
      ui.flash({ text: `rejected ${o.runId}: ${o.goalId} ${where}${comment ? ', the comment on its thread' : ''}`, error: false });
    },
    (error: unknown) => ui.flash(notice(messageOf(error))),
  );
}

/** Posts a comment on a goal (`postComment`, as `pak2 comment GOAL TEXT`); back to what was open (the diff). An empty comment posts nothing. */
export function sendComment(o: Extract<Overlay, { kind: 'comment' }>, text: string, ui: WorkbenchControls, actions: WorkbenchActions): void {
  ui.setOverlay(o.back);
  const body = text.trim();
  if (!body || !actions.postComment) return;
  call(() => actions.postComment!(o.goalId, { body })).then(
    () => ui.flash({ text: `comment posted on ${o.goalId}`, error: false }),
    (error: unknown) => ui.flash(notice(messageOf(error))),
  );
}

/** What the reject prompt says above its field: what rejecting does, and where the goal goes (tab switches). */
export function rejectAbout(o: Extract<Overlay, { kind: 'reject' }>, landing: LandingRecord | undefined): string[] {
  const tab = keyOf('reject.requeue');
  const choice = (on: boolean, text: string) => `${on ? '▸' : ' '} ${text}`;
  return [
    `Rejecting ${o.runId} discards its work: the landing ends rejected, the worktree is removed${landing ? ` (branch ${landing.branch} kept)` : ''}. A comment goes on ${o.goalId}'s thread, which the next attempt's prompt carries.`,
    '',
    `then (${tab} switches):`,
    choice(!o.requeue, `close ${o.goalId} (failure)`),
    choice(o.requeue, `put ${o.goalId} back in the queue for another attempt`),
    '',
  ];
}

/** The keys under the reject prompt's field. */
export function rejectKeys(): string {
  return `a comment below (one line, may be empty) · ${hint('input.send', 'rejects')} · ${hint('reject.requeue', 'switches')} · ${hint('input.cancel', 'cancels')}`;
}
