import type { GoalRecord } from '../contracts/index.js';
import type { GardenConfig } from '../garden/index.js';
import { runnerMayTake } from './remote.js';

/**
 * Who may take a queued goal (docs/runners/level2.md, "Who runs what"): the
 * garden's own coordinator when it has slots, or a remote runner. In a
 * garden whose coordinator runs no goals (`[coordinator]
 * max_concurrent_runs = 0`), a goal no runner takes — a conversation reply
 * (`converse`) or a post-reply hop, whose agent session lives on the
 * garden's machine — would wait forever. This names why, so the submit
 * refuses it, and the doctor, the attention list and the pass say so of
 * one already queued. Guarded and routed goals are runners' (their guard
 * runs in the runner's checkout), and an unassigned goal is reported as
 * such elsewhere.
 */

/** The reason code of a queued goal no one can take (the attention item `blocked:<goal>:nobody`, GoalBlocked's `reason`). */
export const NOBODY_TAKES = 'nobody';

/** The goal fields the decision reads. */
export type TakerFacts = Pick<GoalRecord, 'type' | 'post_reply_hop' | 'assigned_to' | 'guard' | 'task_class'>;

/**
 * Why no one can ever run `goal` under `config` (the clause after
 * `nobody can take it: `), or undefined when the coordinator or a runner
 * may. Pure.
 */
export function whyNobodyTakes(goal: TakerFacts, config: Pick<GardenConfig, 'coordinator'>): string | undefined {
  if (config.coordinator.maxConcurrentRuns > 0) return undefined;
  if (!goal.assigned_to || runnerMayTake(goal as GoalRecord, { guard: true })) return undefined;
  const what = goal.post_reply_hop ? 'a post-reply hop' : 'a conversation reply';
  return `this garden's coordinator runs no goals ([coordinator] max_concurrent_runs = 0 in PAK2.toml) and remote runners do not take ${what} (its agent session lives on the garden's machine); set max_concurrent_runs to 1 or more`;
}

/** {@link whyNobodyTakes} as the reason a pass, the doctor and the attention list give: `nobody can take it: …`. */
export function nobodyTakes(goal: TakerFacts, config: Pick<GardenConfig, 'coordinator'>): string | undefined {
  const why = whyNobodyTakes(goal, config);
  return why ? `nobody can take it: ${why}` : undefined;
}

/**
 * The queued goals of `goals` no one can take, goal id → reason
 * ({@link nobodyTakes}): what the attention list shows as
 * `blocked:<goal>:nobody` whether or not a coordinator pass reported them.
 */
export function untakeableGoals(goals: Iterable<GoalRecord>, config: Pick<GardenConfig, 'coordinator'>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const goal of goals) {
    if (goal.status !== 'queued') continue;
    const why = nobodyTakes(goal, config);
    if (why) out[goal.id] = why;
  }
  return out;
}
