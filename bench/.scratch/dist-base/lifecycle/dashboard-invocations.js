import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { appendEvent, writeJsonAtomic } from '../store/index.js';
/**
 * Starts recording a dashboard session: appends DashboardStarted now, and
 * returns the function that appends DashboardFinished and writes the
 * invocation record when the session completes.
 */
export async function startDashboardInvocation(paths, command = 'pak2 dashboard', now = () => new Date()) {
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
            cost: { source: 'estimated', wall_seconds: Math.round((finished.getTime() - started.getTime()) / 10) / 100 },
        };
        await writeJsonAtomic(path.join(paths.dashboardDir, 'invocations', `${id}.json`), record);
        await appendEvent(paths, { type: 'DashboardFinished', detail: `invocation ${id}, ${record.cost.wall_seconds} s` }, finished);
        return record;
    };
}
//# sourceMappingURL=dashboard-invocations.js.map