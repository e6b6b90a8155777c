import { loadCron, type ScheduleOverlap } from '../contracts/index.js';

/**
 * The facts one firing decision reads (docs/schedules/level2.md, "Firing").
 * Times are Dates; `cron` and `timezone` are checked at config load.
 */
export interface FiringFacts {
  cron: string;
  timezone: string;
  /** When a coordinator first saw the schedule (`since` in schedules.json); undefined: never seen. */
  since: Date | undefined;
  /** The latest due time already handled (`last_due_at`); undefined: none yet. */
  lastDueAt: Date | undefined;
  now: Date;
  /** Whether the schedule's last goal is still open (not closed). */
  lastGoalOpen: boolean;
  overlap: ScheduleOverlap;
  enabled: boolean;
}

/**
 * What to do about one schedule now:
 * - `baseline`: first sight; record `since = now` and submit nothing (no catch-up from the epoch);
 * - `none`: no due time since the last one handled;
 * - `fire`: submit one goal for `dueAt`, the latest due time at or before now; `missed` earlier due times passed with no coordinator and are covered by this one goal;
 * - `skip`: `dueAt` came while the last goal is open and overlap is `skip`: submit nothing, record it once, move past it;
 * - `pass`: the schedule is disabled: move past `dueAt` silently, so enabling it later catches nothing up.
 *
 * `nextDueAt` is the first due time after now (undefined: the cron line fires no more).
 */
export type FiringDecision =
  | { action: 'baseline'; nextDueAt: Date | undefined }
  | { action: 'none'; nextDueAt: Date | undefined }
  | { action: 'fire' | 'skip'; dueAt: Date; missed: number; nextDueAt: Date | undefined }
  | { action: 'pass'; dueAt: Date; nextDueAt: Date | undefined };

/** Due times counted one by one at most; a gap longer than this (an every-second line left for a week) is counted as this many. */
export const MISSED_COUNT_CAP = 1_000;

/**
 * The firing decision (docs/schedules/level2.md, "Firing"), pure: the due
 * times of `cron` in `timezone` after max(`since`, `lastDueAt`) and at or
 * before `now` are the ones not yet handled. None: `none`. Some: one goal
 * (`fire`) for the latest, however many there are (the others are
 * `missed`, caught up by that one goal, never one goal each); with overlap
 * `skip` and the last goal open, `skip` instead.
 */
export function decideFiring(facts: FiringFacts): FiringDecision {
  const Cron = loadCron();
  const cron = new Cron(facts.cron, { timezone: facts.timezone, paused: true });
  // croner's nextRun is strictly after its reference; a due time at exactly `now` counts as due now.
  const nextDueAt = cron.nextRun(facts.now) ?? undefined;
  if (!facts.since) return { action: 'baseline', nextDueAt };
  const from = facts.lastDueAt && facts.lastDueAt > facts.since ? facts.lastDueAt : facts.since;
  let due = cron.nextRun(from);
  if (!due || due > facts.now) return { action: 'none', nextDueAt };
  let count = 1;
  for (let next = cron.nextRun(due); next && next <= facts.now; next = cron.nextRun(next)) {
    if (count >= MISSED_COUNT_CAP) {
      // Too many to walk: the latest one is found from now backwards.
      due = cron.previousRuns(1, new Date(facts.now.getTime() + 1))[0] ?? next;
      break;
    }
    due = next;
    count += 1;
  }
  if (!facts.enabled) return { action: 'pass', dueAt: due, nextDueAt };
  const missed = count - 1;
  if (facts.lastGoalOpen && facts.overlap === 'skip') return { action: 'skip', dueAt: due, missed, nextDueAt };
  return { action: 'fire', dueAt: due, missed, nextDueAt };
}
