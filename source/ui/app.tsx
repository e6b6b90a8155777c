import { Box, useInput, type Key } from 'ink';
import React, { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { GoalRecord } from '../contracts/index.js';
import type { SubmitGoalInput } from '../submit/index.js';
import { useSnapshot, type SnapshotStore } from './hooks/use-snapshot.js';
import { useTerminalSize } from './hooks/use-terminal-size.js';
import { commandFor, type CommandId } from './keymap.js';
import { ConfirmQuit } from './overlays/confirm-quit.js';
import { Detail, goalDetail, textLines, type DetailSection } from './overlays/detail.js';
import { GoalForm } from './overlays/goal-form.js';
import { formKey, newGoalForm, type FormChoices, type GoalFormState } from './overlays/goal-form-state.js';
import { Help } from './overlays/help.js';
import { Chat } from './panes/chat.js';
import { GoalQueue, matchesFilter } from './panes/goal-queue.js';
import { Inbox } from './panes/inbox.js';
import { Plants } from './panes/plants.js';
import { RunTail } from './panes/run-tail.js';
import { StatusLine } from './status-line.js';
import { applyEditKey, editState, type EditState } from './text-edit.js';

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

/** The panes in tab order. */
export const PANES = ['goals', 'tail', 'plants', 'inbox', 'chat'] as const;
export type PaneName = (typeof PANES)[number];

type Overlay =
  | { kind: 'none' }
  | { kind: 'help' }
  | { kind: 'detail'; title: string; sections: DetailSection[]; goalId?: string }
  | { kind: 'form'; form: GoalFormState }
  | { kind: 'quit' }
  | { kind: 'stopping' };

/**
 * Pane rectangles for a terminal size: goals and tail on top, plants / inbox
 * / chat below, one status row. The whole frame is at most `rows - 1` high
 * at every size (`height`): a frame as high as the terminal makes Ink clear
 * the screen on every render. Short terminals drop the bottom panes (fewer
 * than 8 rows), then every pane (fewer than 5), then the status line (1 row).
 */
export function computeLayout(columns: number, rows: number) {
  const status = rows >= 2 ? 1 : 0;
  const area = Math.max(0, rows - 2); // less the status line and the one row kept free
  const split = area >= 6; // both rows of panes, three rows each at least
  const top = split ? Math.min(area - 3, Math.max(3, Math.round(area * 0.6))) : area >= 3 ? area : 0;
  const bottom = split ? area - top : 0;
  const goalsWidth = Math.max(30, Math.floor(columns * (columns >= 140 ? 0.5 : 0.55)));
  const third = Math.floor(columns / 3);
  return {
    /** Rows of the panes or of an overlay (0: no room for a bordered pane). */
    area: top + bottom,
    /** Rows of the whole frame: the area and the status line, below the terminal's height. */
    height: top + bottom + status,
    status: status > 0,
    goals: { width: goalsWidth, height: top },
    tail: { width: Math.max(10, columns - goalsWidth), height: top },
    plants: { width: third, height: bottom },
    inbox: { width: third, height: bottom },
    chat: { width: columns - 2 * third, height: bottom },
  };
}

/**
 * The workbench (issue 3): the goal queue, the run tail, plants, inbox and
 * chat, and a status line, all from one snapshot store. One root `useInput`
 * routes keys through the keymap; components never touch the file system.
 */
export function App({ store, actions, size, now: fixedNow, interactive = true }: AppProps): React.JSX.Element {
  const snapshot = useSnapshot(store);
  const terminal = useTerminalSize();
  const { columns, rows } = size ?? terminal;
  const [clock, setClock] = useState(() => fixedNow ?? Date.now());
  const live = snapshot.coordinator.liveRuns.length > 0;
  useEffect(() => {
    if (fixedNow !== undefined) return;
    const timer = setInterval(() => setClock(Date.now()), live ? 250 : 1000);
    return () => clearInterval(timer);
  }, [fixedNow, live]);
  const now = fixedNow ?? clock;
  // Ages change every few seconds at most: memoised panes skip the other ticks.
  const coarseNow = fixedNow ?? Math.floor(clock / 10_000) * 10_000;

  const [focus, setFocus] = useState<PaneName>('goals');
  const [cursor, setCursor] = useState<Record<PaneName, number>>({ goals: 0, tail: 0, plants: 0, inbox: 0, chat: 0 });
  const [filter, setFilter] = useState<EditState>(editState());
  const [editingFilter, setEditingFilter] = useState(false);
  const [draft, setDraft] = useState<EditState | undefined>(undefined);
  const [overlay, setOverlay] = useState<Overlay>({ kind: 'none' });
  const [detailScroll, setDetailScroll] = useState(0);
  const [message, setMessage] = useState<{ text: string; error: boolean } | undefined>(undefined);

  const goals = useMemo(() => snapshot.goals.filter((row) => matchesFilter(row, filter.text)), [snapshot.goals, filter.text]);
  const clamp = (pane: PaneName, value: number) => {
    const length = pane === 'goals' ? goals.length : pane === 'plants' ? snapshot.plants.length : pane === 'inbox' ? snapshot.inbox.length : Number.MAX_SAFE_INTEGER;
    return Math.max(0, Math.min(value, Math.max(0, length - 1)));
  };
  const selectedGoal = goals[clamp('goals', cursor.goals)];
  const followed = focus === 'goals' || focus === 'tail' ? selectedGoal?.run?.id : undefined;
  useEffect(() => actions.follow(followed), [actions, followed]);
  const tailRun = useMemo(() => {
    const id = snapshot.tail?.runId;
    return id ? snapshot.goals.find((row) => row.run?.id === id)?.run : undefined;
  }, [snapshot.tail?.runId, snapshot.goals]);

  const layout = computeLayout(columns, rows);
  const choices: FormChoices = useMemo(
    () => ({ plants: snapshot.plants.filter((p) => p.plant.status === 'active').map((p) => p.plant.name), drivers: ['(default)', ...snapshot.garden.drivers] }),
    [snapshot.plants, snapshot.garden.drivers],
  );

  const flash = useCallback((text: string, error = false) => setMessage({ text, error }), []);

  // Key handling reads the latest state through a ref, so the handler stays stable (ink re-subscribes otherwise).
  const state = { snapshot, focus, cursor, filter, editingFilter, draft, overlay, goals, selectedGoal, choices, layout, detailScroll };
  const ref = useRef(state);
  ref.current = state;

  const move = useCallback((command: CommandId) => {
    const s = ref.current;
    const page = Math.max(1, s.layout.goals.height - 3);
    const delta = command === 'cursor.up' ? -1 : command === 'cursor.down' ? 1 : command === 'cursor.pageUp' ? -page : command === 'cursor.pageDown' ? page : command === 'cursor.top' ? -1e9 : 1e9;
    if (s.overlay.kind === 'detail' || s.overlay.kind === 'help') {
      setDetailScroll((v) => Math.max(0, v + delta));
      return;
    }
    if (s.focus === 'tail') {
      setCursor((c) => ({ ...c, tail: Math.max(0, c.tail - delta) })); // up scrolls back
      return;
    }
    setCursor((c) => {
      const length = s.focus === 'goals' ? s.goals.length : s.focus === 'plants' ? s.snapshot.plants.length : s.focus === 'inbox' ? s.snapshot.inbox.length : 0;
      return { ...c, [s.focus]: Math.max(0, Math.min(c[s.focus] + delta, Math.max(0, length - 1))) };
    });
  }, []);

  const handler = useCallback(
    (input: string, key: Key) => {
      const s = ref.current;
      setMessage(undefined);
      if (s.overlay.kind === 'stopping') return;
      if (s.overlay.kind === 'quit') {
        if (input === 'y' || input === 'Y') {
          setOverlay({ kind: 'stopping' });
          actions.quit();
        }
        else if (input === 'n' || input === 'N' || key.escape) setOverlay({ kind: 'none' });
        return;
      }
      if (s.overlay.kind === 'form') {
        const outcome = formKey(s.overlay.form, input, key, s.choices);
        if (outcome.cancel) return setOverlay({ kind: 'none' });
        setOverlay({ kind: 'form', form: outcome.state });
        if (outcome.submit && actions.submitGoal) {
          const form = outcome.state;
          actions.submitGoal(outcome.submit).then(
            (goal) => {
              setOverlay({ kind: 'none' });
              setFocus('goals');
              flash(`queued ${goal.id}`);
            },
            (error: Error) => setOverlay({ kind: 'form', form: { ...form, error: error.message } }),
          );
        }
        return;
      }
      if (s.draft) {
        if (key.escape) return setDraft(undefined);
        if (key.return || (key.ctrl && input === 's')) {
          const text = s.draft.text;
          setDraft(undefined);
          if (text.trim() && actions.sendMessage) actions.sendMessage(text).then(() => flash('message sent'), (error: Error) => flash(error.message, true));
          return;
        }
        setDraft(applyEditKey(s.draft, input, key, false));
        return;
      }
      if (s.editingFilter) {
        if (key.escape) {
          setFilter(editState());
          setEditingFilter(false);
        } else if (key.return || key.tab) setEditingFilter(false);
        else {
          setFilter(applyEditKey(s.filter, input, key, false));
          setCursor((c) => ({ ...c, goals: 0 }));
        }
        return;
      }
      const command = commandFor(input, key, 'global');
      if (!command) return;
      switch (command) {
        case 'help':
          setDetailScroll(0);
          return setOverlay(s.overlay.kind === 'help' ? { kind: 'none' } : { kind: 'help' });
        case 'quit':
          if (s.snapshot.coordinator.liveRuns.length > 0) return setOverlay({ kind: 'quit' });
          return actions.quit();
        case 'back':
          if (s.overlay.kind !== 'none') return setOverlay({ kind: 'none' });
          if (s.filter.text) return setFilter(editState());
          return;
        case 'focus.next':
        case 'focus.prev': {
          if (s.overlay.kind !== 'none') return;
          const i = PANES.indexOf(s.focus);
          return setFocus(PANES[(i + (command === 'focus.next' ? 1 : PANES.length - 1)) % PANES.length]!);
        }
        case 'cursor.up':
        case 'cursor.down':
        case 'cursor.pageUp':
        case 'cursor.pageDown':
        case 'cursor.top':
        case 'cursor.bottom':
          return move(command);
        case 'goal.new':
          if (!actions.submitGoal) return flash('read-only dashboard: submit goals with pak2 submit or the workbench', true);
          if (s.choices.plants.length === 0) return flash('no plants yet: run pak2 genesis', true);
          return setOverlay({ kind: 'form', form: newGoalForm(s.choices) });
        case 'filter':
          setFocus('goals');
          return setEditingFilter(true);
        case 'chat.compose':
          if (!actions.sendMessage) return flash('read-only dashboard: chat is off', true);
          setFocus('chat');
          return setDraft(editState());
        case 'open': {
          if (s.overlay.kind !== 'none') return;
          if (s.focus === 'goals' || s.focus === 'tail') {
            if (!s.selectedGoal) return;
            setDetailScroll(0);
            return setOverlay({ kind: 'detail', title: `Goal ${s.selectedGoal.goal.id}`, sections: goalDetail(s.selectedGoal.goal, s.selectedGoal.run, s.selectedGoal.provenance), goalId: s.selectedGoal.goal.id });
          }
          if (s.focus === 'inbox') {
            const note = s.snapshot.inbox[Math.min(s.cursor.inbox, s.snapshot.inbox.length - 1)];
            if (!note) return;
            setDetailScroll(0);
            if (note.unread) void actions.markNoteRead?.(note.name);
            return setOverlay({ kind: 'detail', title: `Note ${note.name}`, sections: [{ heading: note.title, lines: textLines(note.body) }] });
          }
          if (s.focus === 'chat' && actions.sendMessage) return setDraft(editState());
          return;
        }
        default:
          return;
      }
    },
    [actions, flash, move],
  );
  useInput(handler, { isActive: interactive });

  // A detail view follows its goal as the snapshot changes (a run finishing while it is open).
  const shownOverlay = useMemo((): Overlay => {
    if (overlay.kind !== 'detail' || !overlay.goalId) return overlay;
    const row = snapshot.goals.find((r) => r.goal.id === overlay.goalId);
    return row ? { ...overlay, sections: goalDetail(row.goal, row.run, row.provenance) } : overlay;
  }, [overlay, snapshot.goals]);

  const full = { width: columns, height: layout.area };
  let main: React.JSX.Element | null;
  if (layout.area < 3) main = null; // no room for a bordered pane: the status line alone
  else if (shownOverlay.kind === 'help') main = <Help {...full} />;
  else if (shownOverlay.kind === 'detail') main = <Detail title={shownOverlay.title} sections={shownOverlay.sections} scroll={detailScroll} {...full} />;
  else if (shownOverlay.kind === 'form') main = <GoalForm state={shownOverlay.form} choices={choices} {...full} />;
  else if (shownOverlay.kind === 'quit' || shownOverlay.kind === 'stopping') main = <ConfirmQuit live={snapshot.coordinator.liveRuns} width={columns} maxHeight={layout.area} stopping={shownOverlay.kind === 'stopping'} />;
  else
    main = (
      <Box flexDirection="column" height={layout.area}>
        <Box>
          <GoalQueue rows={goals} cursor={clamp('goals', cursor.goals)} filter={editingFilter ? `${filter.text}█` : filter.text} focused={focus === 'goals'} now={coarseNow} {...layout.goals} />
          <RunTail tail={snapshot.tail} run={tailRun} scroll={cursor.tail} focused={focus === 'tail'} now={tailRun?.status === 'running' ? now : coarseNow} {...layout.tail} />
        </Box>
        {layout.plants.height > 0 ? (
          <Box>
            <Plants plants={snapshot.plants} cursor={clamp('plants', cursor.plants)} focused={focus === 'plants'} {...layout.plants} />
            <Inbox notes={snapshot.inbox} cursor={clamp('inbox', cursor.inbox)} focused={focus === 'inbox'} now={coarseNow} {...layout.inbox} />
            <Chat messages={snapshot.chat.messages} draft={draft} readOnly={!actions.sendMessage} focused={focus === 'chat'} {...layout.chat} />
          </Box>
        ) : null}
      </Box>
    );
  return (
    <Box flexDirection="column" width={columns} height={layout.height} overflow="hidden">
      {main}
      {layout.status ? <StatusLine snapshot={snapshot} message={message} width={columns} /> : null}
    </Box>
  );
}
