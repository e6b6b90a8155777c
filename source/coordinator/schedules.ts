import type { GoalRecord, ScheduleState, SchedulesState } from '../contracts/index.js';
import { reloadConfig, type Garden, type ScheduleConfig } from '../garden/index.js';
import { appendEvent, readGoal, readSchedulesState, StoreError, writeSchedulesState, type GoalProblem } from '../store/index.js';
import { decideFiring } from './schedule-policy.js';

/**
 * Submits the goal of one firing through the operator's submit path
 * (source/submit/, `submitScheduledGoal`): the session hands it to the
 * coordinator, which sits below submit. @throws what submit refuses with.
 */
export type ScheduledSubmit = (schedule: ScheduleConfig, now: Date) => Promise<GoalRecord>;

/**
 * What one schedule's due time came to in a pass (one ScheduleFired event
 * each): `submitted` (its goal), `skipped` (overlap `skip` and the last
 * goal, `goal`, still open), `refused` (submit said no: `reason`).
 */
export interface ScheduleFiring {
  schedule: string;
  /** The due time, ISO 8601 UTC. */
  dueAt: string;
  status: 'submitted' | 'skipped' | 'refused';
  goal?: string;
  /** Earlier due times this one covers (missed while no coordinator ran). */
  missed: number;
  reason?: string;
}

/**
 * The `[[schedule]]` entries as PAK2.toml says now: `pak2 schedule add` and
 * `remove` take effect at the next pass, without a restart. PAK2.toml is
 * read again when it changed ({@link reloadConfig}); a file that no longer
 * loads keeps the entries read last (its problem is said where the
 * configuration's is: docs/garden/level2.md, "Changing PAK2.toml while pak2 runs").
 */
export function currentSchedules(garden: Garden): { schedules: ScheduleConfig[] } {
  reloadConfig(garden);
  return { schedules: garden.config.schedules };
}

/**
 * The schedule step of a reconcile pass (docs/schedules/level2.md,
 * "Firing"): for each `[[schedule]]`, the pure {@link decideFiring} over
 * its state in schedules.json, the clock and whether its last goal is
 * open; then its effect: a goal through `submit`, the state written at
 * once (so a crash after the goal never makes it again), then ScheduleFired
 * (`submitted`, `skipped` or `refused`). A baseline, a disabled schedule's
 * due time and the entries of schedules no longer in PAK2.toml (dropped)
 * are written once at the end of the step.
 *
 * @returns the firings, the earliest next due time (ISO) of the enabled
 *   schedules, and problems (a damaged schedules.json fires nothing).
 */
export async function runSchedules(garden: Garden, submit: ScheduledSubmit, now: Date): Promise<{ firings: ScheduleFiring[]; nextAt?: string; problems: GoalProblem[] }> {
  const { paths } = garden;
  const { schedules } = currentSchedules(garden);
  const problems: GoalProblem[] = [];
  let state: SchedulesState;
  try {
    state = await readSchedulesState(paths);
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    return { firings: [], problems: [...problems, { file: error.file ?? 'schedules.json', message: error.message }] };
  }
  const firings: ScheduleFiring[] = [];
  const next: Record<string, ScheduleState> = { ...state.schedules };
  const stale = Object.keys(state.schedules).filter((name) => !schedules.some((s) => s.name === name));
  let changed = stale.length > 0;
  let nextAt: Date | undefined;
  for (const schedule of schedules) {
    const known = state.schedules[schedule.name];
    const facts = {
      cron: schedule.cron,
      timezone: schedule.timezone,
      since: known ? new Date(known.since) : undefined,
      lastDueAt: known?.last_due_at ? new Date(known.last_due_at) : undefined,
      now,
      lastGoalOpen: false,
      overlap: schedule.overlap,
      enabled: schedule.enabled,
    };
    let decision = decideFiring(facts);
    // Whether the last goal is open matters only to a firing under overlap skip: read it then, not every pass.
    if (decision.action === 'fire' && schedule.overlap === 'skip' && known?.last_goal && (await goalOpen(garden, known.last_goal))) {
      decision = decideFiring({ ...facts, lastGoalOpen: true });
    }
    if (schedule.enabled && decision.nextDueAt && (!nextAt || decision.nextDueAt < nextAt)) nextAt = decision.nextDueAt;
    let entry: ScheduleState = known ?? { since: now.toISOString() };
    if (decision.action === 'baseline') changed = true;
    else if (decision.action === 'pass') {
      entry = { ...entry, last_due_at: decision.dueAt.toISOString() };
      changed = true;
    } else if (decision.action === 'fire' || decision.action === 'skip') {
      const dueAt = decision.dueAt.toISOString();
      const firing: ScheduleFiring = { schedule: schedule.name, dueAt, status: 'skipped', missed: decision.missed };
      entry = { ...entry, last_due_at: dueAt };
      if (decision.action === 'skip') firing.goal = known!.last_goal!;
      else {
        try {
          const goal = await submit(schedule, now);
          firing.status = 'submitted';
          firing.goal = goal.id;
          entry = { ...entry, last_fired_at: now.toISOString(), last_goal: goal.id };
        } catch (error) {
          // Refused once for this due time, and moved past it: a broken entry does not retry every pass.
          if (error instanceof StoreError && error.code === 'IO_ERROR') throw error;
          firing.status = 'refused';
          firing.reason = (error as Error).message;
        }
      }
      firings.push(firing);
      next[schedule.name] = entry;
      // Written before the event, at once: a crash after the goal was made must not make it again at the next start.
      await writeSchedulesState(paths, { ...state, schedules: next });
      await appendEvent(
        paths,
        {
          type: 'ScheduleFired',
          status: firing.status,
          schedule: schedule.name,
          due_at: dueAt,
          missed: firing.missed,
          ...(firing.goal ? { goal: firing.goal } : {}),
          ...(firing.reason ? { reason: firing.reason } : {}),
          ...(firing.status === 'submitted' ? { plant: schedule.goal.plant } : {}),
          detail: describeFiring(firing),
        },
        now,
      );
    }
    next[schedule.name] = entry;
  }
  for (const name of stale) delete next[name];
  if (changed) await writeSchedulesState(paths, { ...state, schedules: next });
  return { firings, ...(nextAt ? { nextAt: nextAt.toISOString() } : {}), problems };
}

/** Whether a goal is open (not closed); a goal that cannot be found is not. */
async function goalOpen(garden: Garden, id: string): Promise<boolean> {
  try {
    return (await readGoal(garden.paths, id)).status !== 'closed';
  } catch (error) {
    if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') return false;
    // A damaged record: counted open, so no pile-up behind a goal nobody can read.
    return true;
  }
}

/** ScheduleFired's `detail`: the schedule, the due time and what came of it, in words. */
export function describeFiring(firing: ScheduleFiring): string {
  const caught = firing.missed > 0 ? `; caught up ${firing.missed} missed firing${firing.missed === 1 ? '' : 's'} in one goal` : '';
  const what =
    firing.status === 'submitted'
      ? `submitted ${firing.goal}`
      : firing.status === 'skipped'
        ? `skipped: its last goal ${firing.goal} is still open (overlap = "skip")`
        : `refused: ${firing.reason}`;
  return `schedule ${firing.schedule} due ${firing.dueAt}: ${what}${caught}`;
}
