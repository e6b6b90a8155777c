import { readBlocked } from '../coordinator/blocked.js';
import { readHolder } from '../coordinator/lock.js';
import { isConversationReply, replyWaitWords } from '../coordinator/slots.js';
import type { GoalRecord, RunRecord } from '../contracts/index.js';
import type { Garden } from '../garden/index.js';
import { isGuarded } from '../guard/index.js';
import { latestRun, OpenGoalScanner, readGoal } from '../store/index.js';

/** A goal and its latest run, as the queue has them. */
interface Row {
  goal: GoalRecord;
  run: RunRecord | undefined;
  waiting_for?: string[];
}

/**
 * Why the queued conversation reply `goalId` waits, from what the queue
 * shows (the snapshot's rows) and what the coordinator reported: the line
 * the chat shows (docs/conversation/level2.md, "Waiting for a reply");
 * undefined when the goal is no longer queued (its run is on the way).
 */
export function replyWaitOf(garden: Garden, goalId: string, rows: readonly Row[], blocked: Readonly<Record<string, string>>, coordinator: boolean): string | undefined {
  const row = rows.find((r) => r.goal.id === goalId);
  if (!row || row.goal.status !== 'queued') return undefined;
  const live = rows
    .filter((r) => r.run?.status === 'running' && !r.run.runner && (r.goal.status === 'running' || r.goal.status === 'blocked' || r.goal.status === 'dispatched'))
    .sort((a, b) => (a.run!.started_at < b.run!.started_at ? -1 : 1))
    .map((r) => ({ run: r.run!.id, reply: isConversationReply(r.goal), guarded: isGuarded(r.goal) }));
  const { coordinator: c } = garden.config;
  return replyWaitWords({
    coordinator,
    limits: { maxConcurrentRuns: c.maxConcurrentRuns, conversationSlots: c.conversationSlots ?? 0 },
    live,
    ...(blocked[goalId] ? { blocked: blocked[goalId] } : {}),
    ...(row.waiting_for?.length ? { waitingFor: row.waiting_for } : {}),
    tree: garden.config.isolation === 'tree',
  });
}

/**
 * The same line read from the garden for `pak2 chat`: the goal, the open
 * goals' latest runs, the blocked report and the coordinator lock's holder.
 */
export async function readReplyWait(garden: Garden, goalId: string): Promise<string | undefined> {
  const { paths } = garden;
  const goal = await readGoal(paths, goalId).catch(() => undefined);
  if (!goal || goal.status !== 'queued') return undefined;
  const { goals } = await new OpenGoalScanner(paths).scan();
  const rows: Row[] = await Promise.all(
    goals.filter((g) => g.status !== 'queued').map(async (g) => ({ goal: g, run: await latestRun(paths, g.id).catch(() => undefined) })),
  );
  rows.push({ goal, run: undefined });
  return replyWaitOf(garden, goalId, rows, await readBlocked(paths), readHolder(paths) !== undefined);
}
