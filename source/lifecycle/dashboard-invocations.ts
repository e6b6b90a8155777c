import { randomUUID } from 'node:crypto';
import type { DashboardInvocation } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { appendEvent, inStoreTransaction, writeDashboardInvocation } from '../store/index.js';

export type { DashboardInvocation } from '../contracts/index.js';

/**
 * Starts recording a dashboard session: appends DashboardStarted now, and
 * returns the function that appends DashboardFinished and writes the
 * invocation record (validated: source/contracts/dashboard-invocation.ts)
 * when the session completes.
 *
 * @throws StoreError from the returned function when the record does not
 *   validate (INVALID_RECORD: nothing is written) or cannot be written.
 */
export async function startDashboardInvocation(paths: GardenPaths, command = 'pak2 dashboard', now: () => Date = () => new Date()): Promise<() => Promise<DashboardInvocation>> {
  const started = now();
  const id = `${started.toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomUUID().slice(0, 8)}`;
  await appendEvent(paths, { type: 'DashboardStarted', detail: `invocation ${id}` }, started);
  return async () => {
    const finished = now();
    const record = {
      id,
      command,
      pid: process.pid,
      started_at: started.toISOString(),
      finished_at: finished.toISOString(),
      cost: { source: 'estimated' as const, wall_seconds: Math.max(0, Math.round((finished.getTime() - started.getTime()) / 10) / 100) },
    } satisfies DashboardInvocation;
    // On a store, the record and DashboardFinished commit together.
    await inStoreTransaction(paths, async () => {
      await writeDashboardInvocation(paths, record);
      await appendEvent(paths, { type: 'DashboardFinished', detail: `invocation ${id}, ${record.cost.wall_seconds} s` }, finished);
    });
    return record;
  };
}
