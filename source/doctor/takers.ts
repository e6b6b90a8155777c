import type { GoalRecord } from '../contracts/index.js';
import { nobodyTakes } from '../coordinator/index.js';
import { goalFile, storeOf, storedWhere } from '../store/index.js';
import type { DoctorContext, Problem } from './types.js';

/**
 * Queued goals no one can take (source/coordinator/takers.ts;
 * docs/runners/level2.md, "Who runs what"): in a garden whose coordinator
 * runs no goals (`max_concurrent_runs = 0`), a conversation reply or a
 * post-reply hop that no runner takes. One finding each, under the `goals`
 * check, with the reason; no automatic fix (cancel the goal, or give the
 * coordinator slots).
 */
export function checkTakers(ctx: DoctorContext, goals: Iterable<GoalRecord>): Problem[] {
  const { paths, config } = ctx.garden;
  const store = storeOf(paths);
  const problems: Problem[] = [];
  for (const goal of goals) {
    if (goal.status !== 'queued') continue;
    const why = nobodyTakes(goal, config);
    if (!why) continue;
    problems.push({
      check: 'goals',
      file: store ? storedWhere(store.where, `goal ${goal.id}`) : goalFile(paths, goal.id),
      field: 'status',
      message: `queued ${goal.type} goal, waits forever: ${why} and restart the coordinator, or \`pak2 cancel ${goal.id}\``,
    });
  }
  return problems;
}
