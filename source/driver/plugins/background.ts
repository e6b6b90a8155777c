import type { BackgroundTask } from '../../contracts/index.js';
import type { TaskSignal } from '../liveness.js';

/**
 * The background tasks of one phase's stream, as a plugin reads them in
 * order (docs/run/level2.md, "When a run has ended"): each task's start,
 * its end, and the agent's own turns, so that a task that ended badly can be
 * told apart from one the agent saw end. Call {@link line} once per stream
 * line, before the line's facts.
 */
export class BackgroundTaskLog {
  private seq = 0;
  private lastTurnSeq = -1;
  private readonly tasks = new Map<string, TaskSignal & { status: string; endSeq?: number; final?: boolean }>();

  /** The next stream line. */
  line(): void {
    this.seq += 1;
  }

  /** The agent took a turn of its own at this line (a main-thread assistant message, a command agent's text). */
  turn(): void {
    this.lastTurnSeq = this.seq;
  }

  started(task: TaskSignal): void {
    this.tasks.set(task.id, { ...task, status: 'running' });
  }

  /**
   * The task ended with `status`. A `final` end (claude's
   * `task_notification`) is the task's last word; a non-final one
   * (`task_updated`) only ends a task nothing final ended yet.
   */
  ended(id: string, status: string, final: boolean): void {
    const task = this.tasks.get(id);
    if (!task || (task.final && !final) || (task.endSeq !== undefined && !final && !task.final)) return;
    task.status = status;
    task.endSeq = this.seq;
    task.final = final;
  }

  /**
   * Every task with its final status; `unfinished` when it never ended
   * (`running`), or ended other than `completed` with no turn of the
   * agent's after it (it never saw the end: stopped at exit, failed unseen).
   */
  facts(): BackgroundTask[] {
    return [...this.tasks.values()].map(({ id, type, description, status, endSeq }) => {
      const unfinished = status === 'running' || (status !== 'completed' && (endSeq === undefined || this.lastTurnSeq < endSeq));
      return { id, type, description, status, ...(unfinished ? { unfinished: true } : {}) };
    });
  }
}
