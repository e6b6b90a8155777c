import fs from 'node:fs';
import { redactStoreUrl, runDir, storeUrlProblem } from '../garden/index.js';
import type { LeaseRecord } from '../contracts/index.js';
import { inspectStore, migrateStore, type StoreInspection } from '../store/postgres/inspect.js';
import { agentProcess } from './runs.js';
import type { DoctorContext, Problem } from './types.js';

/**
 * How long past its `expires_at` an active lease must be before doctor
 * calls it stuck while no leader is live: 60 s (leadership fails over
 * within the leader duty's 15 s TTL, and the leader's `pak2 serve` checks
 * leases at most 5 s apart). With a live leader, twice the coordinator's
 * pass interval too ({@link stuckAfterMs}): its coordinator expires leases
 * at each pass.
 */
export const STUCK_LEASE_GRACE_MS = 60_000;

/** How late a lease may be while a leader is live before it is stuck: {@link STUCK_LEASE_GRACE_MS}, or twice `[coordinator] interval_seconds` when longer. */
export function stuckAfterMs(intervalSeconds: number | undefined): number {
  return Math.max(STUCK_LEASE_GRACE_MS, 2 * (intervalSeconds ?? 0) * 1000);
}

/** What the orphaned-run check needs of doctor's context; without it (`pak2 store status --url` outside a garden) local runs are not judged. */
export type StoreCheckContext = Pick<DoctorContext, 'garden' | 'presence'>;

/** What the store check found, and whether the other checks may read the store (reachable, schema current). */
export interface StoreCheck {
  problems: Problem[];
  usable: boolean;
  /** What was found, when the store could be read. */
  inspection?: StoreInspection;
}

/**
 * A PostgreSQL garden's store (docs/doctor/level2.md, "store"; docs/store/level2.md):
 *
 * - it cannot be reached (or `PAK2_STORE_URL` holds no usable URL): no fix.
 * - its schema is older than this pak2's (0: never set up): every pak2
 *   command that opens it migrates it first; fix: migrate it now.
 * - its schema is newer: this pak2 refuses to open it; no fix (upgrade pak2).
 * - a stuck lease: active and past its `expires_at`, by more than
 *   {@link STUCK_LEASE_GRACE_MS} while no process holds the leader duty
 *   (nothing expires leases until a `pak2 cycle` or `pak2 serve` starts), or
 *   by more than {@link stuckAfterMs} while one does (the leader is not
 *   doing it). No fix: the leader closes its run abandoned.
 * - an orphaned run: one the store holds as `running` that nothing will
 *   close (see {@link orphanOf}). No fix: `pak2 stop RUN` closes it.
 *
 * `from` says where the URL came from (for a URL that is no URL). The
 * leases and runs are looked at only when the schema is current.
 * Nothing is read through the store functions and nothing is migrated
 * (except by the fix).
 */
export async function checkStore(ctx: StoreCheckContext | undefined, url: string, from: 'PAK2_STORE_URL' | 'store.url', now: number = Date.now()): Promise<StoreCheck> {
  const urlProblem = storeUrlProblem(url);
  if (urlProblem) return { usable: false, problems: [{ check: 'store', file: from, message: `${urlProblem}; pak2 cannot open this garden's store` }] };
  let inspection: StoreInspection;
  try {
    inspection = await inspectStore(url);
  } catch (error) {
    const where = redactStoreUrl(url);
    const message = (error as Error).message.replace(`store ${where}: `, '');
    return { usable: false, problems: [{ check: 'store', file: where, message: `${message}; every pak2 command that reads this garden's records fails until it can be reached` }] };
  }
  const { where, schema } = inspection;
  if (schema.state === 'older') {
    const what = schema.database === 0 ? 'has no pak2 schema yet' : `has schema version ${schema.database}, older than this pak2's ${schema.code}`;
    return {
      usable: false,
      inspection,
      problems: [
        {
          check: 'store',
          file: where,
          field: 'schema',
          message: `${what}: the next pak2 command that opens it migrates it to version ${schema.code} first (the leases and runs are checked once it is current)`,
          fix: `migrate it to version ${schema.code} now`,
          repair: async () => {
            const applied = await migrateStore(url);
            return applied.length > 0 ? `migrated it: applied version(s) ${applied.join(', ')}` : 'it was current already';
          },
        },
      ],
    };
  }
  if (schema.state === 'newer') {
    return {
      usable: false,
      inspection,
      problems: [{ check: 'store', file: where, field: 'schema', message: `has schema version ${schema.database}, newer than this pak2 knows (${schema.code}): this pak2 refuses to open it; upgrade pak2` }],
    };
  }
  const problems: Problem[] = [];
  const leader = inspection.leader;
  const patience = leader?.live ? stuckAfterMs(ctx?.garden.config.coordinator.intervalSeconds) : STUCK_LEASE_GRACE_MS;
  for (const lease of inspection.activeLeases) {
    const late = now - Date.parse(lease.expires_at);
    if (late <= patience) continue;
    const why = leader?.live
      ? `the leader ${leader.holder} (term ${leader.term}) has not expired it, though it expires leases at every pass`
      : `no leader expires it: no pak2 cycle or pak2 serve sharing this store holds the leader duty (${leader ? `${leader.holder}'s term ${leader.term} lapsed at ${leader.expires_at}` : 'none ever took it'}); the next one to start closes the run abandoned (lease_expired) and requeues its goal`;
    problems.push(stuckLease(where, lease, late, now, why));
  }
  for (const running of inspection.runningRuns) {
    const why = orphanOf(ctx, running);
    if (why) problems.push({ check: 'store', file: `${where} run ${running.run.id}`, field: 'status', message: `orphaned: running, but ${why}; \`pak2 stop ${running.run.id}\` closes it` });
  }
  return { usable: true, inspection, problems };
}

function stuckLease(where: string, lease: LeaseRecord, lateMs: number, now: number, why: string): Problem {
  const silent = Math.round((now - Date.parse(lease.renewed_at)) / 1000);
  return {
    check: 'store',
    file: `${where} lease of ${lease.run}`,
    field: 'expires_at',
    message: `stuck: active ${Math.round(lateMs / 1000)} s past its expires_at (${lease.expires_at}; held by ${lease.runner.name}@${lease.runner.host}, no heartbeat for ${silent} s, ttl ${lease.ttl_seconds} s) and ${why}`,
  };
}

/**
 * Why a `running` run is orphaned (nothing will close it), or undefined
 * when something will or doctor cannot tell from here:
 *
 * - a run with an active lease is its runner's (an expired one is a stuck lease);
 * - its goal is closed, or not in the store: reclaim and the lease reaper take open goals only;
 * - a remote run (`runner`) whose lease ended `finished`: the reaper closes
 *   only remote runs with no lease (after the TTL) or an `expired` one;
 * - a local run (no `runner`) opened on this machine (its run directory is
 *   under this machine's runtime root) while no coordinator holds the
 *   garden here, whose agent is gone: `process.json` names this host and
 *   neither its pid nor any process with its run mark is alive, or there is
 *   no readable `process.json`. A local run opened on another machine (no
 *   run directory here, or a process.json naming another host) is judged by
 *   doctor there.
 */
function orphanOf(ctx: StoreCheckContext | undefined, { run, goalStatus, lease }: StoreInspection['runningRuns'][number]): string | undefined {
  if (lease?.state === 'active') return undefined;
  if (goalStatus === 'closed') return `its goal ${run.goal} is closed (reclaim and the lease reaper take open goals only)`;
  if (goalStatus === undefined) return `the store has no goal ${run.goal}`;
  if (run.runner) {
    return lease && lease.state !== 'expired' ? `its lease ended ${lease.state}${lease.ended_at ? ` at ${lease.ended_at}` : ''} (the lease reaper closes a remote run only when its lease expired or is missing)` : undefined;
  }
  if (!ctx) return undefined;
  const dir = runDir(ctx.garden.paths, run.id);
  if (ctx.presence.held || !fs.existsSync(dir)) return undefined;
  const agent = agentProcess(dir);
  if (agent.alive !== false && (agent.alive === true || agent.elsewhere)) return undefined;
  return `no coordinator holds the garden on this machine, where it was opened, and ${agent.words} (\`pak2 cycle\` or \`pak2 serve\` started here reclaims it)`;
}
