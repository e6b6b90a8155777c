import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { GardenPaths } from '../garden/index.js';
import { appendEvent, inStoreTransaction, storeOf, writeJsonAtomic } from '../store/index.js';

/**
 * One dashboard session's measured cost: wall time, in seconds
 * (`<runtime-root>/dashboard/invocations/<id>.json`; docs/dashboard/level2.md).
 */
export interface DashboardInvocation {
  id: string;
  command: string;
  pid: number;
  started_at: string;
  finished_at: string;
  cost: { source: 'estimated'; wall_seconds: number };
}

/**
 * Starts recording a dashboard session: appends DashboardStarted now, and
 * returns the function that appends DashboardFinished and writes the
 * invocation record when the session completes.
 */
export async function startDashboardInvocation(paths: GardenPaths, command = 'pak2 dashboard', now: () => Date = () => new Date()): Promise<() => Promise<DashboardInvocation>> {
  const started = now();
  const id = `${started.toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomUUID().slice(0, 8)}`;
  await appendEvent(paths, { type: 'DashboardStarted', detail: `invocation ${id}` }, started);
  return async () => {
    const finished = now();
    const record: DashboardInvocation = {
      id,
      command,
      pid: process.pid,
      started_at: started.toISOString(),
      finished_at: finished.toISOString(),
      cost: { source: 'estimated', wall_seconds: Math.round((finished.getTime() - started.getTime()) / 10) / 100 },
    };
    // On a store, the record and DashboardFinished commit together.
    await inStoreTransaction(paths, async () => {
      const store = storeOf(paths);
      if (store) await store.putDocument('dashboard-invocation', id, record);
      else await writeJsonAtomic(path.join(paths.dashboardDir, 'invocations', `${id}.json`), record);
      await appendEvent(paths, { type: 'DashboardFinished', detail: `invocation ${id}, ${record.cost.wall_seconds} s` }, finished);
    });
    return record;
  };
}
