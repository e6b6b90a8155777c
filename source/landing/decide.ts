import type { LandingRecord } from '../contracts/index.js';

/** Landing states the queue acts on (a `verifying` one was interrupted, and is taken up again). */
const ACTIONABLE = new Set(['queued', 'verifying', 'waiting']);

/**
 * The landing the merge queue takes next (pure; docs/landing/level2.md,
 * "The merge queue"): the oldest queued one (by `queued_at`, then run id)
 * among those it can act on — `queued` (accepted, or never held), an
 * interrupted `verifying`, a `waiting` one (its checkout may be clean now).
 * A landing held for review never holds back the ones behind it. One at a
 * time: the caller lands it before it asks again.
 */
export function nextLanding(landings: readonly LandingRecord[]): LandingRecord | undefined {
  let best: LandingRecord | undefined;
  for (const l of landings) {
    if (!ACTIONABLE.has(l.state)) continue;
    if (!best || l.queued_at < best.queued_at || (l.queued_at === best.queued_at && l.run < best.run)) best = l;
  }
  return best;
}

/** What the goal of a landed-or-not run does next. */
export type GoalAfterLanding = 'wait' | 'close_success' | 'close_failure' | 'requeue';

/**
 * What a `completed` goal does once its run's landing says where it is
 * (pure; docs/landing/level2.md, "The goal"): it waits while the landing is
 * open; closes `success` when it landed; goes back to the queue on a
 * conflict with `[merge] on_conflict = "requeue"` (the next attempt starts
 * from the new base, told of the conflict) or on a rejection with requeue;
 * else closes `failure` (a conflict under `fail`, verify failing on the
 * merged result, a rejection, git failing).
 */
export function goalAfterLanding(landing: Pick<LandingRecord, 'state' | 'review'> & { review?: { requeue?: boolean } }, onConflict: 'requeue' | 'fail'): GoalAfterLanding {
  switch (landing.state) {
    case 'landed':
      return 'close_success';
    case 'conflict':
      return onConflict === 'requeue' ? 'requeue' : 'close_failure';
    case 'rejected':
      return landing.review?.requeue ? 'requeue' : 'close_failure';
    case 'failed':
      return 'close_failure';
    default:
      return 'wait';
  }
}
