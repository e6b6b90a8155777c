import type { RunHandle, StopDetail, StopReason } from '../driver/launch.js';
import { decideWatchdog, describeOpenWork, watchdogKill } from '../driver/liveness.js';
import type { Garden } from '../garden/index.js';
import { appendEvent } from '../store/index.js';
import { RunnerApiError, type RunnerClient } from './client.js';
import type { OutboxRelay } from './outbox.js';
import type { LogUploader } from './uploader.js';

/**
 * Keeps a claimed run's lease while its agent runs (docs/runners/level2.md,
 * "Leases and their timings"; seed 004, "The write-back contract" 2–3): one
 * tick a second runs the watchdog over the agent's liveness with the
 * garden's limits (silence is not held against an agent waiting on its own
 * blocking question), relays the outbox, uploads the stream's growth and, when
 * due, heartbeats — every min(ttl / 3, 30 s), every 2 s while a question the
 * agent asked is unanswered. A heartbeat's `stop` stops the agent as the
 * operator (`operator_stopped`, with its requeue); its `answers` go to the
 * inbox. A lease the garden ended (409) stops the agent too
 * (`coordinator_stopped`: its work can no longer be reported).
 *
 * Progress, the runner's honest estimate: 0 until the agent's first stream
 * line, then 5 + 85 × (elapsed / run_timeout_seconds) up to 90, 95 during
 * the reflection turn; never 100 (the finish is the end).
 */

/** Bytes of stream a tick uploads at most while the agent runs (the rest goes on the next ticks, and all of it at the finish). */
export const TICK_UPLOAD_BYTES = 4 * 1024 * 1024;

/** Heartbeat period while a question of the goal is open, ms. */
export const QUESTION_HEARTBEAT_MS = 2000;
/** The longest heartbeat period, ms (the doc's ttl / 3 is the upper bound; this keeps the workbench fresh). */
export const MAX_HEARTBEAT_MS = 30_000;

/** How soon a heartbeat that was not delivered is tried again, ms. */
const HEARTBEAT_RETRY_MS = 1000;

/** The heartbeat period for a lease TTL (seconds): min(ttl / 3, 30 s), in ms; 2 s while a question waits. */

export function heartbeatPeriodMs(ttlSeconds: number, questionOpen: boolean): number {
  if (questionOpen) return Math.min(QUESTION_HEARTBEAT_MS, (ttlSeconds * 1000) / 3);
  return Math.max(500, Math.min((ttlSeconds * 1000) / 3, MAX_HEARTBEAT_MS));
}

/** The progress estimate (percent) from what the runner has seen; see the module comment. */
export function estimateProgress(input: { started: boolean; elapsedMs: number; timeoutSeconds: number; reflecting: boolean }): number {
  if (input.reflecting) return 95;
  if (!input.started) return 0;
  const share = Math.min(1, input.elapsedMs / Math.max(1, input.timeoutSeconds * 1000));
  return Math.min(90, Math.round(5 + 85 * share));
}

/** One line, at most 200 characters, no control characters. */
export function statusLine(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** What a keeper needs. Times in ms unless named seconds. */
export interface KeeperOptions {
  client: RunnerClient;
  garden: Garden;
  runId: string;
  goalId: string;
  plant: string;
  lease: string;
  ttlSeconds: number;
  uploader: LogUploader;
  relay: OutboxRelay;
  /** One stderr line per state change. */
  log: (line: string) => void;
  /** When the run started on this runner (epoch ms), for the progress estimate. */
  startedAt: number;
  /** True while the agent is in its reflection turn. */
  reflecting?: () => boolean;
  tickMs?: number;
  now?: () => number;
}

/** Keeps one run's lease; see the module comment. */
export class LeaseKeeper {
  private handle: RunHandle | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private lastHeartbeat = 0;
  /** The last trouble said, so a server that keeps failing the same way is said once until a call succeeds. */
  private lastSaid: string | undefined;
  private pendingStop: { reason: StopReason; detail?: StopDetail } | undefined;
  /** The last time (epoch ms) a question of the agent was seen open: the silence clock counts from it. */
  private questionOpenAt = 0;
  /** Set when the garden refused a call because the lease ended (409). */
  leaseLost: RunnerApiError | undefined;
  /** Set when a heartbeat carried the operator's stop. */
  operatorStop: { requeue: boolean } | undefined;
  /** True once the agent is done and the run is being finished (the status line says so). */
  finishing = false;

  private readonly now: () => number;

  constructor(private readonly options: KeeperOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The current launch's handle (main phase, then reflection); undefined between launches. A stop asked before it came is applied at once. */
  setHandle(handle: RunHandle | undefined): void {
    this.handle = handle;
    if (handle && this.pendingStop) handle.stop(this.pendingStop.reason, this.pendingStop.detail);
  }

  /** Stops the agent (now, or as soon as it starts); the first stop wins. */
  stopAgent(reason: StopReason, detail?: StopDetail): void {
    this.pendingStop ??= { reason, ...(detail ? { detail } : {}) };
    this.handle?.stop(reason, detail);
  }

  /** Starts the ticks (again after {@link stop}); the first goes at once. Does nothing while they run. */
  start(): void {
    if (this.timer) return;
    const tick = () => {
      this.running = this.tick().catch((error: unknown) => this.options.log(`run ${this.options.runId}: ${(error as Error).message}`));
      void this.running.then(() => {
        if (this.timer) this.timer = setTimeout(tick, this.options.tickMs ?? 1000);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Stops the ticks and waits for the one in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private lost(error: RunnerApiError): void {
    if (this.leaseLost) return;
    this.leaseLost = error;
    this.stopAgent('coordinator_stopped', { message: `the garden ended the lease: ${error.serverError ?? error.message}` });
  }

  /** Calls the garden; a lease that ended is noted, an unreachable server said once, anything else passed on. */
  private async guarded<T>(fn: () => Promise<T>): Promise<T | undefined> {
    try {
      const value = await fn();
      this.lastSaid = undefined;
      return value;
    } catch (error) {
      if (!(error instanceof RunnerApiError)) throw error;
      if (error.leaseEnded) this.lost(error);
      else {
        const line = `run ${this.options.runId}: ${error.message}${error.unreachable || error.status >= 500 ? '; retrying' : ''}`;
        if (line !== this.lastSaid) this.options.log(line);
        this.lastSaid = line;
      }
      return undefined;
    }
  }

  /**
   * The silence watchdog. While the agent waits on a question of its own
   * (the relay is {@link OutboxRelay.asking}), its silence is not held
   * against it: the watchdog skips, and the silence clock starts again from
   * the last tick at which the question was open (the answer's hand-over).
   * The wall-time limit (`run_timeout_seconds`) is the launcher's and
   * still applies.
   */
  private watchdog(): void {
    const handle = this.handle;
    if (!handle || handle.stopping) return;
    if (this.options.relay.asking()) {
      this.questionOpenAt = this.now();
      return;
    }
    const { watchdogSeconds, toolSilenceSeconds } = this.options.garden.config.coordinator;
    const lastActivityMs = Math.max(handle.liveness.lastProgressAt, this.questionOpenAt);
    const verdict = decideWatchdog({ nowMs: this.now(), lastActivityMs, toolOpen: handle.liveness.openWork > 0, watchdogSeconds, toolSilenceSeconds });
    if (!verdict.kill) return;
    const { watchdog, message } = watchdogKill(verdict, handle.liveness.lastEvent, describeOpenWork(handle.liveness));
    this.options.log(`run ${this.options.runId}: ${message}`);
    void appendEvent(this.options.garden.paths, { type: 'WatchdogKilled', run: this.options.runId, goal: this.options.goalId, plant: this.options.plant, detail: message }).catch(() => undefined);
    handle.stop('killed', { watchdog, message });
  }

  private status(): string {
    const handle = this.handle;
    if (this.finishing) return 'finishing: uploading the stream, the artifacts and the documents';
    const waiting = this.options.relay.waiting();
    if (waiting.length > 0) return statusLine(`waiting for an answer to comment ${waiting[0]!.comment}`);
    if (handle?.stopping) return statusLine(`stopping the agent (${handle.stopping})`);
    if (!handle) return 'between agent launches';
    const tools = handle.liveness.openTools.size;
    const tasks = handle.liveness.openTasks.size;
    const open = [tools ? `${tools} tool call(s)` : '', tasks ? `${tasks} background task(s)` : ''].filter(Boolean).join(', ');
    return statusLine(`${this.options.reflecting?.() ? 'reflection' : 'agent'} running; last event: ${handle.liveness.lastEvent}${open ? `; ${open} open` : ''}`);
  }

  /**
   * Posts what the agent left in its outbox. Called once more after the agent
   * ended, before the finish: a question written just before exiting is
   * still the agent's question (it blocks the goal, the finish then records the run).
   */
  async flushOutbox(): Promise<void> {
    if (this.leaseLost) return;
    const posted = await this.guarded(() => this.options.relay.post());
    for (const sent of posted?.posted ?? []) this.options.log(`run ${this.options.runId}: posted the agent's ${sent.blocking ? 'question' : 'comment'} ${sent.comment} (${sent.key})`);
    for (const rejected of posted?.rejected ?? []) this.options.log(`run ${this.options.runId}: outbox ${rejected.key} not posted: ${rejected.reason}`);
    for (const name of posted?.attached ?? []) this.options.log(`run ${this.options.runId}: attached the agent's artifact ${name}`);
  }

  /** One tick: watchdog, heartbeat when due (first: a burst of output never delays it), outbox, uploads (at most {@link TICK_UPLOAD_BYTES}). */
  async tick(): Promise<void> {
    this.watchdog();
    if (this.leaseLost) return;
    await this.heartbeatIfDue();
    if (this.leaseLost) return;
    const questions = this.options.relay.waiting().length;
    await this.flushOutbox();
    // A question just posted: the 2 s period applies from now on.
    if (this.options.relay.waiting().length > questions) await this.heartbeatIfDue();
    await this.guarded(() => this.options.uploader.flush(false, TICK_UPLOAD_BYTES));
  }

  private async heartbeatIfDue(): Promise<void> {
    const { relay, uploader, client } = this.options;
    const waiting = relay.waiting().length > 0;
    if (this.leaseLost || this.now() - this.lastHeartbeat < heartbeatPeriodMs(this.options.ttlSeconds, waiting)) return;
    this.lastHeartbeat = this.now();
    const handle = this.handle;
    const progress = estimateProgress({
      started: Boolean(handle && handle.liveness.lastEvent !== 'none') || uploader.localSizes().events > 0,
      elapsedMs: this.now() - this.options.startedAt,
      timeoutSeconds: this.options.garden.config.coordinator.runTimeoutSeconds,
      reflecting: Boolean(this.options.reflecting?.()),
    });
    const answer = await this.guarded(() => client.heartbeat(this.options.runId, { lease: this.options.lease, progress, status: this.status() }));
    if (!answer) {
      // Not delivered (server unreachable, or its store down: 503): tried again within a second, not a period later, so a
      // short outage does not cost the lease.
      if (!this.leaseLost) this.lastHeartbeat = this.now() - heartbeatPeriodMs(this.options.ttlSeconds, waiting) + HEARTBEAT_RETRY_MS;
      return;
    }
    const delivered = await relay.deliver(answer.answers);
    // The silence clock starts again at the hand-over (the agent was waiting, not stalled).
    if (delivered.length > 0) this.questionOpenAt = this.now();
    for (const d of delivered) this.options.log(`run ${this.options.runId}: answer ${d.answer.id} to ${d.key} handed to the agent`);
    if (answer.stop && !this.operatorStop) {
      this.operatorStop = answer.stop;
      this.options.log(`run ${this.options.runId}: the operator stopped it${answer.stop.requeue ? ' (requeue)' : ''}; stopping the agent`);
      this.stopAgent('operator', { requeue: answer.stop.requeue, message: 'stopped by the operator' });
    }
  }
}
