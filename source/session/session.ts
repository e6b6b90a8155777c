import fs from 'node:fs';
import path from 'node:path';
import type { EventRecord, GoalRecord } from '../contracts/index.js';
import { Coordinator, CoordinatorHeld, type ReconcileSummary } from '../coordinator/index.js';
import { UserError } from '../errors.js';
import { RUN_STDERR_FILE, type DriverContext } from '../driver/index.js';
import { reloadConfig, runDir, type ConfigStatus, type Garden } from '../garden/index.js';
import { historyNotice, setRuntimeHistoryListener } from '../history/index.js';
import { SnapshotSource, type ServerView } from '../snapshot/index.js';
import { markNoteRead, type GoalSupplement } from '../store/index.js';
import {
  ackAttention,
  type AckResult,
  appendGoalSupplement,
  cancelGoal,
  changeDependencies,
  retryGoal,
  type DependencyChange,
  type RetryOptions,
  type RetryResult,
  landRun,
  rejectRun,
  runDiff,
  type LandResult,
  type RejectResult,
  type RunDiff,
  postComment,
  answerQuestion,
  type CommentInput,
  type CommentResult,
  sendOperatorMessage,
  stopRun,
  submitGoal,
  submitScheduledGoal,
  type CancelResult,
  type OperatorMessageResult,
  type StopRunResult,
  type SubmitGoalInput,
  setBudgetCap,
  type SetCapResult,
  setTendsPaused,
  type TendPauseResult,
} from '../submit/index.js';
import { Attachment } from './attachment.js';
import { EventFollower } from './event-follower.js';
import { StartupWindow } from './startup.js';

/**
 * The operator actions, one set for every mode (docs/session/level2.md):
 * the CLI's commands, the workbench's keys and, later, the HTTP server call
 * these and nothing else. Each is the `source/submit/` function of the same
 * name, bound to the session's garden.
 */
export interface OperatorActions {
  submitGoal(input: SubmitGoalInput): Promise<GoalRecord>;
  sendMessage(text: string): Promise<OperatorMessageResult>;
  addSupplement(goalId: string, text: string): Promise<GoalSupplement>;
  cancelGoal(goalId: string): Promise<CancelResult>;
  stopRun(runId: string, options?: { requeue?: boolean }): Promise<StopRunResult>;
  /** Marks a reply note in the inbox read (the operator has answered it or seen it). */
  markNoteRead(name: string): Promise<void>;
  /** Posts a comment on a goal; a blocking one holds the goal `blocked` until answered. */
  postComment(goalId: string, input: CommentInput): Promise<CommentResult>;
  /** Answers the goal's open question (`questionId`, else the oldest); the last answer unblocks the goal. */
  answerQuestion(goalId: string, text: string, options?: { questionId?: string; author?: string }): Promise<CommentResult>;
  /** Accepts a run's landing (review mode); the coordinator lands it, or this call does when none runs (docs/landing/level2.md, "Review"). */
  landRun(runId: string, options?: { by?: string }): Promise<LandResult>;
  /** Rejects a run's work: the goal back to the queue (`requeue`) or closed failure; the comment goes to the goal's thread. */
  rejectRun(runId: string, options?: { requeue?: boolean; comment?: string; by?: string }): Promise<RejectResult>;
  /** A run's diff for review (files and the patch, capped). */
  runDiff(runId: string): Promise<RunDiff>;
  /** Sets (USD as text) or lifts (`off`) a budget cap over PAK2.toml; the coordinator looks again (docs/budget/level2.md). */
  setBudgetCap(key: string, value: string, by?: string): Promise<SetCapResult>;
  /** Adds or drops edges of a queued goal's `depends_on` (docs/goal/level2.md, "Dependencies"). */
  changeDependencies(goalId: string, change: DependencyChange): Promise<GoalRecord>;
  /** Queues a goal that closed failure or cancelled again, as a new goal (`retry_of`), on another driver or model if asked; its dependents follow to the new goal. */
  retryGoal(goalId: string, options?: RetryOptions): Promise<RetryResult>;
  /** Acknowledges "needs you" items (ids, or `'all'` listed now); docs/attention/level2.md, "Acknowledging". */
  ackAttention(ids: readonly string[] | 'all', by?: { name: string; role?: string }): Promise<AckResult>;
  /** Pauses (`true`) or resumes automatic tends; kept in tend.json across restarts (docs/automatic-tend/level2.md, "Operator control"). */
  setTendsPaused(paused: boolean, by?: string): Promise<TendPauseResult>;
}

/**
 * The actions bound to a garden. Each reads PAK2.toml again first when it
 * changed ({@link reloadConfig}): a driver just added to the file is one a
 * goal can name, in a process that has run for days (`pak2 serve`, the workbench).
 */
export function operatorActions(garden: Garden): OperatorActions {
  return withLiveConfig(garden, {
    submitGoal: (input) => submitGoal(garden, input),
    sendMessage: (text) => sendOperatorMessage(garden, text),
    addSupplement: (goalId, text) => appendGoalSupplement(garden, goalId, text),
    cancelGoal: (goalId) => cancelGoal(garden, goalId),
    stopRun: (runId, options) => stopRun(garden, runId, options),
    markNoteRead: (name) => markNoteRead(garden.paths, garden.config, name),
    postComment: (goalId, input) => postComment(garden, goalId, input),
    answerQuestion: (goalId, text, options) => answerQuestion(garden, goalId, text, options),
    landRun: (runId, options) => landRun(garden, runId, options ?? {}),
    rejectRun: (runId, options) => rejectRun(garden, runId, options ?? {}),
    runDiff: (runId) => runDiff(garden, runId),
    setBudgetCap: (key, value, by) => setBudgetCap(garden, key, value, by),
    changeDependencies: (goalId, change) => changeDependencies(garden, goalId, change),
    retryGoal: (goalId, options) => retryGoal(garden, goalId, options),
    ackAttention: (ids, by) => ackAttention(garden, ids, by),
    setTendsPaused: (paused, by) => setTendsPaused(garden, paused, by),
  });
}

/** `actions`, each calling {@link reloadConfig} before it acts. */
function withLiveConfig<T extends object>(garden: Garden, actions: T): T {
  return Object.fromEntries(
    Object.entries(actions).map(([name, action]) => [
      name,
      (...args: unknown[]) => {
        reloadConfig(garden);
        return (action as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as T;
}

/** Options of a {@link Session}. */
export interface SessionOptions {
  garden: Garden;
  /** The lock holder's label, e.g. `pak2 cycle --no-ui`. */
  command: string;
  /** The read-only dashboard: no coordinator, no writes, no actions that write. */
  readOnly?: boolean;
  /**
   * When another process's coordinator holds the garden, attach to it
   * instead of refusing (the workbench; docs/workbench/level2.md,
   * "Attached"): the actions work through it, the coordinator stays where
   * it is. Headless `pak2 cycle` leaves it off and refuses.
   */
  attach?: boolean;
  /** Whether views read this session (the snapshot source runs); headless prints events only. Default true. */
  snapshot?: boolean;
  /** Where agent stderr goes besides the run's stderr.log (the workbench drops it; headless forwards it, sanitized). */
  onStderr?: DriverContext['onStderr'];
  /**
   * Where pak2's one-line notices about a run (a runtime-history capture
   * that did not commit) go: the run's stderr.log (the workbench, whose
   * terminal belongs to Ink), else this process's stderr.
   */
  noticesToRunLog?: boolean;
  /** Told of coordinator errors and each pass (headless prints them; the workbench shows them as problems). */
  onError?: (error: Error) => void;
  onPass?: (summary: ReconcileSummary) => void;
  /** Told once per change of PAK2.toml the coordinator finds (headless prints it; the workbench reads it from the snapshot). */
  onConfig?: (status: ConfigStatus) => void;
  env?: NodeJS.ProcessEnv;
  now?: () => Date;
}

/**
 * One operator session (issue 14; docs/session/level2.md): the coordinator
 * (unless read-only), the startup window around its first pass, the
 * snapshot source the views read, the event stream (every event in the log,
 * whoever wrote it), the operator actions, signal handling and the one stop
 * path. The workbench and headless `pak2 cycle` open the same session and
 * attach their view to it.
 */
export class Session {
  readonly coordinator: Coordinator | undefined;
  /** The other process's coordinator this session attaches to when one holds the garden (`attach`); its `view` says whether it did. */
  readonly attachment: Attachment | undefined;
  /** The read model the views subscribe to; undefined for a session without views (headless). */
  readonly source: SnapshotSource | undefined;
  readonly actions: OperatorActions | undefined;
  /** What a read-only session may still do: read a run's diff (git reads; nothing written). */
  readonly reads: Pick<OperatorActions, 'runDiff'>;
  private readonly listeners = new Set<(event: EventRecord) => void>();
  private readonly follower: EventFollower;
  private startup: StartupWindow | undefined;
  private closing: Promise<void> | undefined;
  private opening: Promise<void> | undefined;
  private opened = false;
  private restoreNotices: (() => void) | undefined;
  private server: ServerView | undefined;
  /**
   * Events read while the coordinator takes the garden, held back until it
   * holds the lock; dropped, with every later one, when it is refused: a
   * session that loses a race to start prints nothing of the winner's (its
   * CoordinatorStarted) before it refuses.
   */
  private held: EventRecord[] | undefined;
  private refused = false;

  constructor(private readonly options: SessionOptions) {
    const { garden } = options;
    if (options.noticesToRunLog && !options.readOnly) {
      this.restoreNotices = setRuntimeHistoryListener((runId, result) => {
        const line = historyNotice(runId, result);
        if (!line) return;
        try {
          fs.appendFileSync(path.join(runDir(garden.paths, runId), RUN_STDERR_FILE), `${line}\n`);
        } catch {
          // the run directory is gone: nothing to keep
        }
      });
    }
    this.coordinator = options.readOnly
      ? undefined
      : new Coordinator({
          garden,
          command: options.command,
          ...(options.onStderr ? { onStderr: options.onStderr } : {}),
          onError: (error) => this.reportError(error),
          ...(options.onPass ? { onPass: options.onPass } : {}),
          ...(options.onConfig ? { onConfig: options.onConfig } : {}),
          ...(options.env ? { env: options.env } : {}),
          ...(options.now ? { now: options.now } : {}),
          // [[schedule]] firings queue their goals through the operator's submit path (docs/schedules/level2.md).
          submitScheduled: (schedule, now) => submitScheduledGoal(garden, schedule, now, options.env ?? process.env),
          hooks: {
            beforeFirstPass: () => this.openStartupWindow(),
            afterPass: async () => {
              await this.startup?.update().catch((error: Error) => this.reportError(new Error(`startup play-by-play: ${error.message}`)));
            },
          },
        });
    this.attachment = options.attach && this.coordinator ? new Attachment(garden.paths, options.now) : undefined;
    this.source =
      options.snapshot === false
        ? undefined
        : new SnapshotSource({ garden, ...(this.coordinator ? { coordinator: this.coordinator } : {}), ...(this.attachment ? { attachment: this.attachment } : {}), readOnly: Boolean(options.readOnly) });
    this.actions = options.readOnly ? undefined : operatorActions(garden);
    this.reads = { runDiff: (runId) => runDiff(garden, runId) };
    this.follower = new EventFollower(garden.paths, (event) => {
      if (this.refused) return;
      // The coordinator attached to went, and another one started (a restart under systemd): attach to it.
      if (event.type === 'CoordinatorStarted' && this.attachment?.view && !this.attachment.alive && this.coordinator?.state === 'stopped') void this.attachment.connect();
      if (this.held) this.held.push(event);
      else this.deliver(event);
    });
  }

  /**
   * A coordinator error: to `onError` (headless prints it), and to the
   * snapshot's problems where views read this session (the workbench's
   * status-line counter and problems list), one line, kept until the
   * session ends.
   */
  private reportError(error: Error): void {
    this.options.onError?.(error);
    this.source?.reportProblem(`coordinator: ${error.message.split('\n')[0]}`);
  }

  private async openStartupWindow(): Promise<void> {
    this.startup = new StartupWindow(this.options.garden, this.options.env);
    try {
      await this.startup.open();
    } catch (error) {
      this.reportError(new Error(`startup note not delivered: ${(error as Error).message}`));
    }
  }

  /** The HTTP server this session runs (`cycle --serve`): its URL and webhook health; undefined when none runs. */
  get serverStatus(): ServerView | undefined {
    return this.server;
  }

  /** The server (source/server) reports itself here; the snapshot carries it to the status line. */
  setServerStatus(view: ServerView | undefined): void {
    this.server = view;
    this.source?.setServer(view);
  }

  private deliver(event: EventRecord): void {
    for (const listener of this.listeners) listener(event);
  }

  /**
   * Listens to every event appended to the garden's log from `open()` on,
   * once this session's coordinator holds the garden (a refused session's
   * listeners hear nothing); returns the unsubscribe function.
   */
  onEvent(listener: (event: EventRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Opens the session: follows the event log, starts the coordinator (lock,
   * recovery, reclaim, startup note, first pass) — or, with `attach`, when
   * another process's coordinator holds the garden, attaches to it — and the
   * snapshot source.
   *
   * @throws CoordinatorHeld when another coordinator holds the garden (with `attach`: one that cannot be attached to, on another host).
   */
  open(): Promise<void> {
    this.opening ??= (async () => {
      if (this.coordinator) this.held = [];
      await this.follower.start();
      try {
        await this.startCoordinator();
      } catch (error) {
        // Refused (another coordinator holds the garden): what the log said meanwhile was the other process's.
        if (!this.coordinator?.tookLock) this.refused = true;
        this.releaseHeld();
        throw error;
      }
      this.releaseHeld();
      await this.source?.start();
      this.opened = true;
    })();
    return this.opening;
  }

  /**
   * Starts this session's coordinator; with `attach`, when another
   * process's coordinator holds the garden, attaches to it instead. A
   * holder that went between the refusal and the attach is tried again
   * (a few times); one that cannot be attached (on another host) refuses.
   */
  private async startCoordinator(): Promise<void> {
    for (let tries = 1; ; tries += 1) {
      try {
        await this.coordinator?.start();
        return;
      } catch (error) {
        if (!this.attachment || !(error instanceof CoordinatorHeld) || tries >= 3) throw error;
        if (await this.attachment.connect()) return;
      }
    }
  }

  /** True while this session is attached to another process's coordinator (it may have stopped since: `attachment.view.goneAt`). */
  get attached(): boolean {
    return this.attachment?.view !== undefined;
  }

  /**
   * Takes over once the coordinator this session attached to has stopped
   * (docs/workbench/level2.md, "Attached"): starts this session's own
   * coordinator (lock, recovery, reclaim, startup note, first pass) and
   * ends the attachment. One that another process started meanwhile is
   * attached to instead.
   *
   * @returns what happened, in one line.
   * @throws UserError (exit 1) when the coordinator attached to still runs, or this session is not attached.
   */
  async takeOver(): Promise<string> {
    const attachment = this.attachment;
    const view = attachment?.view;
    if (!attachment || !view || !this.coordinator) throw new UserError('this workbench runs its own coordinator: nothing to take over', { exitCode: 1 });
    if (attachment.alive) throw new UserError(`the coordinator of pid ${view.holder.pid} on ${view.holder.host} runs this garden: nothing to take over (it is yours to stop)`, { exitCode: 1 });
    try {
      await this.coordinator.start();
    } catch (error) {
      if (error instanceof CoordinatorHeld && (await attachment.connect())) {
        const holder = attachment.view!.holder;
        return `another coordinator started meanwhile: attached to pid ${holder.pid} on ${holder.host}`;
      }
      throw error;
    }
    attachment.close();
    return `this workbench runs the coordinator now (pid ${process.pid})`;
  }

  /** Delivers the events held back while the coordinator took the garden (none when it was refused), and stops holding. */
  private releaseHeld(): void {
    const held = this.held ?? [];
    this.held = undefined;
    if (!this.refused) for (const event of held) this.deliver(event);
  }

  /** Whether a stop has begun. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /**
   * The one stop path, idempotent: the coordinator stops (live runs get
   * SIGINT, then SIGKILL after 3 s, close coordinator_stopped, their goals
   * go back to the queue, the lock is released), then the snapshot source,
   * then the event stream after a last read, so every event of the session
   * reaches its listeners.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // A stop during open waits for it, so a signal in the middle of start still stops cleanly.
      await this.opening?.catch(() => undefined);
      // An attached session leaves the other process's coordinator as it is.
      this.attachment?.close();
      await this.coordinator?.stop();
      if (this.opened) await this.source?.stop();
      await this.follower.stop();
      this.restoreNotices?.();
    })();
    return this.closing;
  }

  /**
   * SIGINT, SIGTERM and SIGHUP (a closed terminal too) close the session.
   * `onSignal` is told each one with how many came so far (to say what
   * happens). Returns the function that removes the handlers.
   */
  handleSignals(onSignal?: (count: number, live: number) => void): () => void {
    let count = 0;
    const handler = () => {
      count += 1;
      onSignal?.(count, this.coordinator?.live.size ?? 0);
      void this.close();
    };
    const names = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    for (const name of names) process.on(name, handler);
    return () => {
      for (const name of names) process.off(name, handler);
    };
  }
}
