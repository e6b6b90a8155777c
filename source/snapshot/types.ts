import type { ArtifactRecord, AttentionItem, CommentRecord, GoalRecord, LandingRecord, LeaseRecord, PlantRecord, RunRecord, RuntimeHistoryRecord } from '../contracts/index.js';
import type { GuardRecord } from '../guard/read.js';
import type { BlockedOn } from '../coordinator/readiness.js';
import type { LockHolder } from '../coordinator/lock.js';
import type { ChatMessage, InboxNote } from '../store/index.js';
import type { TailState } from './tail.js';

/** A goal as the queue pane shows it, with its latest run when it has one. */
export interface GoalRow {
  goal: GoalRecord;
  run: RunRecord | undefined;
  /** The latest run's runtime provenance record (`history/commits/<run-id>.json`), once written. */
  provenance?: RuntimeHistoryRecord;
  /** The latest run's landing (`<runtime-root>/landings/<run-id>.json`, docs/landing/level2.md), when its work was queued to land. */
  landing?: LandingRecord;
  /** A queued goal's dependencies not yet closed (docs/goal/level2.md, "Dependencies"): it waits for them. */
  waiting_for?: string[];
  /** A queued goal held by a dependency that closed failure or cancelled (or is missing): the root of the chain. */
  blocked_on?: BlockedOn;
}

/** One entry of a plant's `memory/active-threads.json`, read leniently. */
export interface ThreadView {
  title: string;
  status: string | undefined;
  detail: string | undefined;
}

/** A plant with what the plants pane shows of it. */
export interface PlantView {
  plant: PlantRecord;
  /** memory/MEMORY.md, cut to 8 KB; empty when the plant has no memory yet. */
  memory: string;
  /** Index lines of skills/ and knowledge/ (file names and headings). */
  skills: string[];
  knowledge: string[];
  threads: ThreadView[];
}

/** Where the coordinator stands: `absent` for a read-only dashboard. */
export type CoordinatorView = 'absent' | 'stopped' | 'idle' | 'reconciling' | 'running' | 'stopping';

/**
 * The coordinator of another process a workbench is attached to
 * (docs/workbench/level2.md, "Attached"): its lock holder record (pid,
 * host, command, `started_at`), its state and live runs as it last
 * reported them, and `goneAt` once it stopped (the time this workbench saw
 * its socket close).
 */
export interface AttachedView {
  holder: LockHolder;
  /** Absent while it has not said (a holder that runs no loop: a start's recovery). */
  state?: Exclude<CoordinatorView, 'absent'>;
  liveRuns: string[];
  goneAt?: string;
}

/** `pak2 serve` (or `cycle --serve`) as the status line shows it: where it listens, and webhook health. */
export interface ServerView {
  url: string;
  /** Absent until the delivery worker reports; `running: false` when another process of the garden delivers. */
  webhooks?: { running: boolean; subscriptions: number; failing: number; retrying: number };
}

/**
 * The followed run's guard files (docs/guarded-runs/level2.md), read for
 * that one run only; `maxAttempts` is what its `[routing]` class allows.
 */
export interface GuardView extends GuardRecord {
  runId: string;
  maxAttempts?: number;
}

/** An open blocking question of a blocked goal (docs/runners/level2.md, "Comments"): the inbox lists them, the chat's `/answer` answers the oldest. */
export interface QuestionView {
  goal: string;
  /** The blocking comment no later comment answers. */
  comment: CommentRecord;
}

/**
 * The followed run when a runner runs it (docs/runners/level2.md): its lease
 * (the active one, else the ended one: `finished` or `expired`) and the
 * artifacts attached so far (`runs/<id>/artifacts.jsonl`).
 */
export interface RemoteView {
  runId: string;
  lease: LeaseRecord | undefined;
  artifacts: ArtifactRecord[];
}

/**
 * Everything the workbench shows, read from disk at one moment. Immutable:
 * a change produces a new snapshot. Views read only this.
 */
export interface Snapshot {
  /** Increases with every snapshot. */
  version: number;
  takenAt: string;
  /**
   * `drivers`: the driver names a goal may choose (built-ins and `[drivers.<name>]` entries); `taskClasses`: the `[routing.<class>]` names;
   * `configFile`: PAK2.toml on disk as this process last read it, when it is not all in force (docs/garden/level2.md, "Changing PAK2.toml
   * while pak2 runs"): `invalid`, where the file does not load (the configuration read last stays in force; the problems list has the
   * line); `restart`, keys changed that apply at the next start.
   */
  garden: { name: string; root: string; runtimeRoot: string; readOnly: boolean; drivers: string[]; taskClasses?: string[]; configFile?: { invalid?: string[]; restart?: string[] } };
  /**
   * This process's coordinator: its state and live runs (`absent`, none, for the dashboard; `stopped` while attached).
   * `attached`: the other process's coordinator this workbench is attached to.
   */
  coordinator: { state: CoordinatorView; liveRuns: string[]; attached?: AttachedView };
  /** Open goals (running first, then queued in dispatch order), then recently closed ones, newest first. */
  goals: GoalRow[];
  /**
   * `blocked`: open goals waiting on an answer (absent: none; not counted in `inFlight`);
   * `awaitingReview`: goals whose run's landing waits for the operator (`[merge] mode = "review"`; absent: none).
   */
  counts: { queued: number; inFlight: number; closedShown: number; blocked?: number; awaitingReview?: number };
  plants: PlantView[];
  /** Reply notes, newest first. */
  inbox: InboxNote[];
  chat: { conversationId: string | undefined; messages: ChatMessage[] };
  /** Cost of runs closed since local midnight, from RunClosed events: USD total, runs counted, runs with unknown cost. */
  /** Closed runs' cost today (USD), how many, how many of unknown cost, and the day's cap when one is set (docs/budget/level2.md). */
  costToday: { usd: number; runs: number; unknown: number; capUsd?: number };
  /** The followed run's tail: the selected run, else the running one. */
  tail: TailState | undefined;
  /** The followed run's guard files, when it is a guarded run. */
  guard?: GuardView;
  /** Active leases (`<runtime-root>/leases/*.json`) by run id: the remote runs going on now. */
  leases: Readonly<Record<string, LeaseRecord>>;
  /** Open questions of the blocked goals, oldest first (only blocked goals' threads are read: the cost follows open work). */
  questions: readonly QuestionView[];
  /** The followed run's runner and artifacts, when a runner runs it. */
  remote?: RemoteView;
  /** The "needs you" items not acknowledged, newest first (docs/attention/level2.md); the status line counts them. */
  attention: readonly AttentionItem[];
  /** Files that could not be read, named; reported, never repaired. */
  problems: string[];
  /**
   * Set when the last read of the garden failed as a whole (a closed ledger
   * that is a directory): why, in one line. The goals are then the ones the
   * read before found, or none; a view says so instead of "no goals yet".
   */
  unread?: string;
  /** The HTTP server when this session runs one (`cycle --serve`). */
  server?: ServerView;
}
