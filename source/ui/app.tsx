import { Box } from 'ink';
import React, { useEffect, useMemo, useRef, useState, type MutableRefObject } from 'react';
import type { GoalRecord } from '../contracts/index.js';
import type { ChatMessage } from '../store/index.js';
import { isTerminalLandingState } from '../contracts/index.js';
import { AGE_TICK_MS } from '../format.js';
import { landingWords } from '../landing-words.js';
import type { CommentInput, CommentResult, LandResult, RejectResult, RunDiff, SubmitGoalInput } from '../submit/index.js';
import type { QuestionView, Snapshot } from '../snapshot/types.js';
import { dispatchInput, type Overlay, type PaneName, type WorkbenchControls, type WorkbenchState } from './dispatch.js';
import type { ScrollLimits } from './scroll.js';
import { useClock } from './hooks/use-clock.js';
import { useKeys, type KeyHandler } from './hooks/use-keys.js';
import { useSnapshot, type SnapshotStore } from './hooks/use-snapshot.js';
import { useTerminalSize } from './hooks/use-terminal-size.js';
import { installInkRowCache } from './ink-rows.js';
import { Confirm } from './overlays/confirm.js';
import { ConfirmQuit } from './overlays/confirm-quit.js';
import { Detail, goalDetail } from './overlays/detail.js';
import { Diff } from './overlays/diff.js';
import { GoalForm } from './overlays/goal-form.js';
import type { FormChoices } from './overlays/goal-form-state.js';
import { Help } from './overlays/help.js';
import { Problems } from './overlays/problems.js';
import { Attention } from './overlays/attention.js';
import { TextPrompt } from './overlays/text-prompt.js';
import { Chat } from './panes/chat.js';
import { filterRows, GoalQueue } from './panes/goal-queue.js';
import { Inbox } from './panes/inbox.js';
import { Plants } from './panes/plants.js';
import { RunTail } from './panes/run-tail.js';
import { rejectAbout, rejectKeys } from './review.js';
import { attachmentNews, StatusLine, type StatusMessage } from './status-line.js';
import { editState, type EditState } from './text-edit.js';

// Ink draws only the screen rows that changed since it last drew them (issue 13; the frames are the same).
await installInkRowCache();

/**
 * What the workbench may do. The live workbench passes the same core
 * functions the CLI calls; the read-only dashboard leaves the writes out.
 */
export interface WorkbenchActions {
  submitGoal?: (input: SubmitGoalInput) => Promise<GoalRecord>;
  sendMessage?: (text: string) => Promise<unknown>;
  markNoteRead?: (name: string) => Promise<void>;
  /** Operator actions on the queue: cancel a goal, stop a live run, add a supplement to a goal. */
  cancelGoal?: (goalId: string) => Promise<unknown>;
  stopRun?: (runId: string, options?: { requeue?: boolean }) => Promise<unknown>;
  addSupplement?: (goalId: string, text: string) => Promise<unknown>;
  /** Queues a closed goal again as a new goal (`pak2 retry`; docs/goal/level2.md, "Retry"): the workbench's `r`. */
  retryGoal?: (goalId: string) => Promise<{ goal: GoalRecord; moved: string[] }>;
  /** Answers a goal's open question (`pak2 comment GOAL --answer`): the inbox's `a`, the chat's `/answer`. */
  answerQuestion?: (goalId: string, text: string, options?: { questionId?: string }) => Promise<CommentResult>;
  /** Review (docs/landing/level2.md, "Review"): a run's diff, accepting or rejecting its work, a comment on its goal (`pak2 diff`, `land`, `reject`, `comment`). */
  runDiff?: (runId: string) => Promise<RunDiff>;
  landRun?: (runId: string) => Promise<LandResult>;
  rejectRun?: (runId: string, options: { requeue?: boolean; comment?: string }) => Promise<RejectResult>;
  postComment?: (goalId: string, input: CommentInput) => Promise<CommentResult>;
  /** Acknowledges needs-you items (`pak2 ack`; docs/attention/level2.md): ids, or `'all'` listed now. */
  ackAttention?: (ids: readonly string[] | 'all') => Promise<unknown>;
  /** Pauses (`true`) or resumes automatic tends (`pak2 tend pause|resume`; docs/automatic-tend/level2.md, "Operator control"). */
  setTendsPaused?: (paused: boolean) => Promise<unknown>;
  /** Starts this workbench's own coordinator once the one it attached to has stopped (docs/workbench/level2.md, "Attached"); says what happened. */
  takeOver?: () => Promise<string>;
  /** Which run the tail follows (undefined: the running one). */
  follow: (runId: string | undefined) => void;
  /** The one quit path: stop the coordinator, unmount, exit. */
  quit: () => void;
}

/** Props of {@link App}. `size` and `now` fix the terminal and the clock (tests). */
export interface AppProps {
  store: SnapshotStore;
  actions: WorkbenchActions;
  size?: { columns: number; rows: number };
  now?: number;
  /** Whether keyboard input is read (false where stdin is not a terminal). */
  interactive?: boolean;
}

export { PANES, type PaneName } from './dispatch.js';

/** The narrowest pane: its corners, a cut title and a few characters of a line. */
const PANE_MIN_WIDTH = 10;
/** The goals pane keeps 30 columns beside the run pane; below 40 the run pane goes. */
const GOALS_MIN_WIDTH = 30;

/**
 * Pane rectangles for a terminal size: goals and tail on top, plants / inbox
 * / chat below, one status row. The whole frame is at most `rows - 1` high
 * at every size (`height`): a frame as high as the terminal makes Ink clear
 * the screen on every render. And no pane is wider than the terminal: a line
 * wider than the terminal wraps, and the wrapped rows push the frame's top
 * border off the screen (issue 28: a 30×8 terminal lost it). Short terminals
 * drop the bottom panes (fewer than 9 rows: the goals pane keeps room for
 * a goal under its header), then every pane (fewer than
 * 5), then the status line (1 row); narrow ones drop the run pane (fewer
 * than 40 columns: the goals pane takes the width), then the bottom panes
 * (fewer than 30), then every pane (fewer than 10).
 */
export function computeLayout(columns: number, rows: number) {
  const status = rows >= 2 ? 1 : 0;
  const room = columns >= PANE_MIN_WIDTH ? Math.max(0, rows - 2) : 0; // less the status line and the one row kept free
  const third = Math.floor(columns / 3);
  // Both rows of panes: the goals pane with a goal under its header (four rows), the bottom three.
  const split = room >= 7 && third >= PANE_MIN_WIDTH;
  const top = split ? Math.min(room - 3, Math.max(3, Math.round(room * 0.6))) : room >= 3 ? room : 0;
  const bottom = split ? room - top : 0;
  const beside = columns >= GOALS_MIN_WIDTH + PANE_MIN_WIDTH; // the run pane beside the goals
  const goalsWidth = beside ? Math.max(GOALS_MIN_WIDTH, Math.floor(columns * (columns >= 140 ? 0.5 : 0.55))) : columns;
  return {
    /** Rows of the panes or of an overlay (0: no room for a bordered pane). */
    area: top + bottom,
    /** Rows of the whole frame: the area and the status line, below the terminal's height. */
    height: top + bottom + status,
    status: status > 0,
    goals: { width: goalsWidth, height: top },
    /** Width 0: no room for the run pane beside the goals. */
    tail: { width: columns - goalsWidth, height: top },
    plants: { width: third, height: bottom },
    inbox: { width: third, height: bottom },
    chat: { width: columns - 2 * third, height: bottom },
  };
}

/**
 * The workbench (issue 3): the goal queue, the run tail, plants, inbox and
 * chat, and a status line, all from one snapshot store. One root input
 * hook routes keys through the keymap (`dispatch.ts`); components never
 * touch the file system.
 */
export function App({ store, actions, size, now: fixedNow, interactive = true }: AppProps): React.JSX.Element {
  const snapshot = useSnapshot(store);
  const terminal = useTerminalSize();
  const { columns, rows } = size ?? terminal;
  const now = useClock(fixedNow, snapshot.coordinator.liveRuns.length > 0);
  // The panes that print ages get the clock to the second they print (issue 28: a 10 s clock printed
  // ages to the second that stood still, then jumped); memoised, they skip the live clock's other ticks.
  const coarseNow = fixedNow ?? Math.floor(now / AGE_TICK_MS) * AGE_TICK_MS;

  const [focus, setFocus] = useState<PaneName>('goals');
  const [cursor, setCursor] = useState<Record<PaneName, number>>({ goals: 0, tail: 0, plants: 0, inbox: 0, chat: 0 });
  const [filter, setFilter] = useState<EditState>(editState());
  const [editingFilter, setEditingFilter] = useState(false);
  const [draft, setDraft] = useState<EditState | undefined>(undefined);
  const [overlay, setOverlay] = useState<Overlay>({ kind: 'none' });
  const [scroll, setScroll] = useState(0);
  // Written by the run pane and the overlays as they draw; read by the dispatcher.
  const scrollLimits = useRef<ScrollLimits>({ tail: Number.POSITIVE_INFINITY, overlay: Number.POSITIVE_INFINITY, overlayRows: 1 }).current;
  const [message, setMessage] = useState<StatusMessage | undefined>(undefined);
  const [narration, setNarration] = useState<ChatMessage[]>([]);

  const goals = useMemo(() => filterRows(snapshot.goals, filter.text), [snapshot.goals, filter.text]);
  const clamp = (pane: PaneName, value: number) => {
    const length = pane === 'goals' ? goals.length : pane === 'plants' ? snapshot.plants.length : pane === 'inbox' ? snapshot.questions.length + snapshot.inbox.length : Number.MAX_SAFE_INTEGER;
    return Math.max(0, Math.min(value, Math.max(0, length - 1)));
  };
  const selectedGoal = goals[clamp('goals', cursor.goals)];
  const followed = focus === 'goals' || focus === 'tail' ? selectedGoal?.run?.id : undefined;
  useFollow(actions, followed);
  const tailRow = useMemo(() => {
    const id = snapshot.tail?.runId;
    return id ? snapshot.goals.find((row) => row.run?.id === id) : undefined;
  }, [snapshot.tail?.runId, snapshot.goals]);
  const tailRun = tailRow?.run;

  const layout = computeLayout(columns, rows);
  const choices: FormChoices = useMemo(
    () => ({
      plants: snapshot.plants.filter((p) => p.plant.status === 'active').map((p) => p.plant.name),
      drivers: ['(default)', ...snapshot.garden.drivers],
      taskClasses: snapshot.garden.taskClasses ?? [],
    }),
    [snapshot.plants, snapshot.garden.drivers, snapshot.garden.taskClasses],
  );

  // Key handling reads the latest state through a ref, so the handler stays stable (ink re-subscribes otherwise).
  const state: WorkbenchState = { snapshot, focus, cursor, filter, editingFilter, draft, overlay, goals, selectedGoal, tailRun, choices, pageRows: layout.goals.height - 3, scrollLimits, attentionAt: scroll };
  const ref = useRef(state);
  ref.current = state;
  // Built outside the App's body (see workbenchControls), so the long-lived closures keep no snapshot alive.
  const controls = useMemo(() => workbenchControls(ref, { setFocus, setCursor, setFilter, setEditingFilter, setDraft, setOverlay, setScroll, setMessage, setNarration }), []);
  // The chat shows the workbench's own narration (an /answer's outcome) after the conversation's messages of its time.
  const chatMessages = useMemo(() => (narration.length ? [...snapshot.chat.messages, ...narration].sort((a, b) => a.ts.localeCompare(b.ts)) : snapshot.chat.messages), [snapshot.chat.messages, narration]);
  const handler = useMemo(() => keyHandler(ref, controls, actions, setMessage), [actions, controls]);
  useKeys(handler, { isActive: interactive });
  useAttachmentNews(snapshot.coordinator.attached, setMessage);

  // A detail view follows its goal as the snapshot changes (a run finishing while it is open).
  const shownOverlay = useMemo((): Overlay => {
    if (overlay.kind !== 'detail' || !overlay.goalId) return overlay;
    const row = snapshot.goals.find((r) => r.goal.id === overlay.goalId);
    return row ? { ...overlay, sections: goalDetail(row.goal, row.run, row.provenance, snapshot.guard, row.landing) } : overlay;
  }, [overlay, snapshot.goals, snapshot.guard]);

  const full = { width: columns, height: layout.area };
  const o = shownOverlay;
  let main: React.JSX.Element | null;
  if (layout.area < 3) main = null; // no room for a bordered pane: the status line alone
  else if (o.kind === 'help') main = <Help scroll={scroll} limits={scrollLimits} {...full} />;
  else if (o.kind === 'attention') main = <Attention items={snapshot.attention} selected={scroll} now={coarseNow} {...full} />;
  else if (o.kind === 'problems') main = <Problems problems={snapshot.problems} root={snapshot.garden.root} scroll={scroll} limits={scrollLimits} {...full} />;
  else if (o.kind === 'detail') main = <Detail title={o.title} sections={o.sections} scroll={scroll} limits={scrollLimits} {...full} />;
  else if (o.kind === 'form') main = <GoalForm state={o.form} choices={choices} {...full} />;
  else if (o.kind === 'confirm') main = <Confirm title={o.prompt.title} lines={o.prompt.lines} question={o.prompt.question} width={columns} maxHeight={layout.area} />;
  else if (o.kind === 'supplement') main = <TextPrompt title={`Supplement to ${o.goalId}`} lines={SUPPLEMENT_ABOUT} edit={o.edit} width={columns} maxHeight={layout.area} />;
  else if (o.kind === 'answer') main = <TextPrompt title={`Answer ${o.question.goal}`} lines={answerAbout(o.question)} edit={o.edit} width={columns} maxHeight={layout.area} oneLine />;
  else if (o.kind === 'diff') {
    const landing = snapshot.goals.find((r) => r.run?.id === o.runId)?.landing;
    main = <Diff runId={o.runId} landing={landing ? landingWords(landing) : ''} reviewable={Boolean(landing && !isTerminalLandingState(landing.state))} load={o.load} scroll={scroll} limits={scrollLimits} {...full} />;
  } else if (o.kind === 'reject') {
    const landing = snapshot.goals.find((r) => r.run?.id === o.runId)?.landing;
    main = <TextPrompt title={`Reject ${o.runId}`} lines={rejectAbout(o, landing)} edit={o.edit} width={columns} maxHeight={layout.area} oneLine keys={rejectKeys()} />;
  } else if (o.kind === 'comment') main = <TextPrompt title={`Comment on ${o.goalId}`} lines={COMMENT_ABOUT} edit={o.edit} width={columns} maxHeight={layout.area} />;
  else if (o.kind === 'quit' || o.kind === 'stopping') main = <ConfirmQuit live={snapshot.coordinator.liveRuns} width={columns} maxHeight={layout.area} stopping={o.kind === 'stopping'} />;
  else
    main = (
      <Box flexDirection="column" height={layout.area}>
        <Box>
          <GoalQueue rows={goals} cursor={clamp('goals', cursor.goals)} filter={editingFilter ? `${filter.text}█` : filter.text} focused={focus === 'goals'} now={coarseNow} unread={snapshot.unread} {...layout.goals} />
          {layout.tail.width > 0 ? (
            <RunTail tail={snapshot.tail} run={tailRun} landing={tailRow?.landing} guard={snapshot.guard} remote={snapshot.remote} scroll={cursor.tail} limits={scrollLimits} focused={focus === 'tail'} now={tailRun?.status === 'running' ? now : coarseNow} {...layout.tail} />
          ) : null}
        </Box>
        {layout.plants.height > 0 ? (
          <Box>
            <Plants plants={snapshot.plants} cursor={clamp('plants', cursor.plants)} focused={focus === 'plants'} {...layout.plants} />
            <Inbox notes={snapshot.inbox} questions={snapshot.questions} cursor={clamp('inbox', cursor.inbox)} focused={focus === 'inbox'} now={coarseNow} {...layout.inbox} />
            <Chat messages={chatMessages} {...(snapshot.chat.waiting ? { waiting: snapshot.chat.waiting } : {})} draft={draft} readOnly={!actions.sendMessage} focused={focus === 'chat'} {...layout.chat} />
          </Box>
        ) : null}
      </Box>
    );
  return (
    // Clipped to the rows only: no pane is wider than the terminal, and Ink cuts every line of a box
    // clipped horizontally (slice-ansi), the biggest part of a frame's cost.
    <Box flexDirection="column" width={columns} height={layout.height} overflowY="hidden">
      {main}
      {layout.status ? <StatusLine snapshot={snapshot} message={message} width={columns} /> : null}
    </Box>
  );
}

/** Says on the status line when the coordinator attached to stops, or another one is attached to (docs/workbench/level2.md, "Attached"). */
function useAttachmentNews(attached: Snapshot['coordinator']['attached'], setMessage: (message: StatusMessage) => void): void {
  const last = useRef(attached);
  useEffect(() => {
    const news = attachmentNews(last.current, attached);
    last.current = attached;
    if (news) setMessage(news);
  }, [attached, setMessage]);
}

/** Tells the source which run the tail follows (a hook of its own: see workbenchControls). */
function useFollow(actions: WorkbenchActions, runId: string | undefined): void {
  useEffect(() => actions.follow(runId), [actions, runId]);
}

type Setter<T> = (value: T) => void;

/**
 * The controls the key dispatch calls. They write the ref at once too: one
 * read from stdin can hold many keys (typing, a report, a paste), each
 * seeing the one before. Made here, not in the App's body: a closure made
 * there keeps that render's whole scope (the snapshot of 10,000 goals
 * included) alive as long as the closure, and these live as long as the App.
 */
function workbenchControls(
  ref: MutableRefObject<WorkbenchState>,
  set: {
    setFocus: Setter<PaneName>;
    setCursor: Setter<Record<PaneName, number>>;
    setFilter: Setter<EditState>;
    setEditingFilter: Setter<boolean>;
    setDraft: Setter<EditState | undefined>;
    setOverlay: Setter<Overlay>;
    setScroll: WorkbenchControls['setScroll'];
    setMessage: Setter<StatusMessage | undefined>;
    setNarration: React.Dispatch<React.SetStateAction<ChatMessage[]>>;
  },
): WorkbenchControls {
  const now = <K extends keyof WorkbenchState>(field: K, value: WorkbenchState[K]) => {
    const before = ref.current;
    const next = { ...before, [field]: value };
    // What the goals pane shows and selects follows the filter and the cursor at once, so the next key of a burst
    // (the filter's Enter, then x) acts on the goal it will show, not on the one selected before the filter.
    if (field === 'filter' || field === 'cursor') {
      const goals = next.filter === before.filter ? before.goals : filterRows(next.snapshot.goals, next.filter.text);
      next.goals = goals;
      next.selectedGoal = goals[Math.max(0, Math.min(next.cursor.goals, goals.length - 1))];
    }
    ref.current = next;
    return value;
  };
  return {
    setFocus: (value) => set.setFocus(now('focus', value)),
    setCursor: (update) => set.setCursor(now('cursor', update(ref.current.cursor))),
    setFilter: (value) => set.setFilter(now('filter', value)),
    setEditingFilter: (value) => set.setEditingFilter(now('editingFilter', value)),
    setDraft: (value) => set.setDraft(now('draft', value)),
    setOverlay: (value) => set.setOverlay(now('overlay', value)),
    updateOverlay: (update) => set.setOverlay(now('overlay', update(ref.current.overlay))),
    setScroll: set.setScroll,
    flash: set.setMessage,
    narrate: (text) => set.setNarration((lines) => [...lines, { ts: new Date().toISOString(), sender: 'system' as const, text }].slice(-NARRATION_KEPT)),
  };
}

/** The root key handler, stable while `actions` is (Ink re-subscribes otherwise); made outside the App's body (see workbenchControls). */
function keyHandler(ref: MutableRefObject<WorkbenchState>, controls: WorkbenchControls, actions: WorkbenchActions, setMessage: Setter<StatusMessage | undefined>): KeyHandler {
  return (input, key, event) => {
    setMessage(undefined);
    dispatchInput(() => ref.current, input, key, event, controls, actions);
  };
}

/** How many narration lines the chat keeps (the workbench's own, newest). */
const NARRATION_KEPT = 20;

/** What the answer prompt says above its field: who asks, and the question (its first lines). */
function answerAbout(q: QuestionView): string[] {
  const lines = q.comment.body.split('\n');
  return [`${q.comment.author} asks (${q.comment.id}):`, ...lines.slice(0, 6), ...(lines.length > 6 ? ['…'] : []), '', 'The answer is one line. Posting it sends the goal back to running (its run is still live) or queued.'];
}

/** What the comment prompt says above its field. */
const COMMENT_ABOUT = ["A comment goes on the goal's thread (pak2 comment): the next attempt's prompt carries it. It does not block the goal."];

/** What the supplement prompt says above its field. */
const SUPPLEMENT_ABOUT = ['A supplement adds to the goal before it is dispatched: the run reads it with the body (only a goal that came from the chat takes supplements).'];
