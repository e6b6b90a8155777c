/**
 * `pak2 doctor` on a PostgreSQL garden (docs/doctor/level2.md, "store";
 * docs/store/level2.md): the store's schema version (older: migrated by
 * --fix; newer: refused), stuck leases and orphaned runs, each one finding
 * line; the file checks of goals, runs, leases and events do not apply to
 * it. Through the built CLI, the store named by PAK2_STORE_URL.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { GoalRecord, LeaseRecord, RunRecord } from '../../source/contracts/index.js';
import { runDir } from '../../source/garden/index.js';
import { attachStore, createGoal, detachStore, endLease, openRun, transitionGoal, writeLease } from '../../source/store/index.js';
import { openPostgresStore } from '../../source/store/postgres/store.js';
import { SCHEMA_VERSION } from '../../source/store/postgres/migrations.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { testDatabase } from '../support/pg-test.js';
import type { JsonFinding } from './support.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup() {
  const garden = await makeTestGarden();
  cleanups.push(garden.cleanup);
  const db = await testDatabase('pak2_doctor');
  cleanups.push(() => db.drop());
  return { garden, url: db.url };
}

async function doctor(root: string, url: string, ...args: string[]): Promise<{ code: number; findings: JsonFinding[]; text: string }> {
  const json = await runCli(['--garden', root, 'doctor', '--json', ...args], { env: { PAK2_STORE_URL: url } });
  const text = args.includes('--fix') ? '' : (await runCli(['--garden', root, 'doctor'], { env: { PAK2_STORE_URL: url } })).stdout;
  return { code: json.code, findings: (JSON.parse(json.stdout) as { findings: JsonFinding[] }).findings, text };
}

const storeFindings = (findings: JsonFinding[]) => findings.filter((f) => f.check === 'store');

describe('pak2 doctor on a PostgreSQL garden', () => {
  it('an older schema (here: none yet) is a finding that --fix migrates; a current one is none', async () => {
    const { garden, url } = await setup();
    const before = await doctor(garden.paths.gardenRoot, url);
    expect(storeFindings(before.findings)).toEqual([
      { check: 'store', file: url, field: 'schema', message: `has no pak2 schema yet: the next pak2 command that opens it migrates it to version ${SCHEMA_VERSION} first (the leases and runs are checked once it is current)`, fix: `migrate it to version ${SCHEMA_VERSION} now` },
    ]);
    expect(before.code).toBe(1);
    expect(before.text).toContain(`store: ${url}: schema: has no pak2 schema yet`);
    const fixed = await doctor(garden.paths.gardenRoot, url, '--fix');
    expect(storeFindings(fixed.findings)).toMatchObject([{ field: 'schema', fixed: true, fix: `migrated it: applied version(s) ${Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1).join(', ')}` }]);
    expect(storeFindings((await doctor(garden.paths.gardenRoot, url)).findings)).toEqual([]);
  });

  it('a newer schema is a finding with no fix: this pak2 refuses the store', async () => {
    const { garden, url } = await setup();
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query("CREATE TABLE pak2_schema (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL); INSERT INTO pak2_schema (version, name, applied_by) VALUES (7, 'later', 'a newer pak2')");
    } finally {
      await client.end();
    }
    const { findings } = await doctor(garden.paths.gardenRoot, url, '--fix');
    expect(storeFindings(findings)).toEqual([
      { check: 'store', file: url, field: 'schema', message: `has schema version 7, newer than this pak2 knows (${SCHEMA_VERSION}): this pak2 refuses to open it; upgrade pak2`, fixed: false },
    ]);
  });

  it('a store that cannot be reached is one finding', async () => {
    const { garden } = await setup();
    const { findings } = await doctor(garden.paths.gardenRoot, 'postgres://postgres:sekrit@127.0.0.1:1/garden');
    expect(storeFindings(findings)).toMatchObject([{ check: 'store', file: 'postgres://postgres:***@127.0.0.1:1/garden', message: expect.stringMatching(/^cannot connect \(.*\); every pak2 command that reads this garden's records fails until it can be reached$/) }]);
    expect(JSON.stringify(findings)).not.toContain('sekrit');
  });

  it('names each stuck lease and each orphaned run, and nothing that something will still close', async () => {
    const { garden, url } = await setup();
    const { paths } = garden;
    const store = await openPostgresStore(url);
    attachStore(paths, store);
    const now = Date.now();
    const lease = (run: RunRecord, expiresAt: number): LeaseRecord => ({
      id: run.runner!.lease,
      run: run.id,
      goal: run.goal,
      plant: 'gardener',
      runner: { name: 'box', host: 'box.example' },
      state: 'active',
      ttl_seconds: 30,
      claimed_at: new Date(now - 300_000).toISOString(),
      renewed_at: new Date(expiresAt - 30_000).toISOString(),
      expires_at: new Date(expiresAt).toISOString(),
      heartbeats: 3,
    });
    const running = async (body: string, remote: boolean): Promise<{ goal: GoalRecord; run: RunRecord }> => {
      const goal = await createGoal(paths, { type: 'build', plant: 'gardener', body });
      await transitionGoal(paths, goal.id, 'dispatched');
      const run = await openRun(paths, goal, { plant: 'gardener', driver: 'success', model: 'default', ...(remote ? { runner: { name: 'box', host: 'box.example', lease: '01ARZ3NDEKTSV4RRFFQ69G5FAV' } } : {}) });
      await transitionGoal(paths, goal.id, 'running');
      return { goal, run };
    };
    const processFile = (run: RunRecord, pid: number) => fs.writeFileSync(path.join(runDir(paths, run.id), 'process.json'), JSON.stringify({ pid, mark: `mark-${run.id}`, host: os.hostname() }));
    try {
      const stuck = await running('lease expired long ago', true);
      await writeLease(paths, lease(stuck.run, now - 120_000));
      const live = await running('lease still good', true);
      await writeLease(paths, lease(live.run, now + 60_000));
      const justExpired = await running('lease just expired', true);
      await writeLease(paths, lease(justExpired.run, now - 5_000));
      const closedGoal = await running('goal closed under its run', false);
      await transitionGoal(paths, closedGoal.goal.id, 'completed');
      await transitionGoal(paths, closedGoal.goal.id, 'closed', { closedReason: 'success' });
      const dead = await running('agent gone', false);
      processFile(dead.run, spawnSync('true').pid!);
      const alive = await running('agent alive', false);
      processFile(alive.run, process.pid);
      const elsewhere = await running('opened on another machine', false);
      fs.rmSync(runDir(paths, elsewhere.run.id), { recursive: true });
      const ended = await running('lease ended finished', true);
      await endLease(paths, lease(ended.run, now + 60_000), 'finished', new Date(now - 10_000));
      await running('no lease yet', true);
    } finally {
      detachStore(paths);
      await store.close();
    }
    const { findings, text, code } = await doctor(paths.gardenRoot, url);
    expect(code).toBe(1);
    expect(storeFindings(findings).map((f) => [f.file, f.field, f.message.replace(/\b\d+ s\b/g, 'N s').replace(/\(\d{4}-[^;]+;/, '(T;')])).toEqual([
      [`${url} lease of 1-lease-expired-long-ago-r1`, 'expires_at', 'stuck: active N s past its expires_at (T; held by box@box.example, no heartbeat for N s, ttl N s) and no leader expires it: no pak2 cycle or pak2 serve sharing this store holds the leader duty (none ever took it); the next one to start closes the run abandoned (lease_expired) and requeues its goal'],
      [`${url} run 4-goal-closed-under-its-run-r1`, 'status', 'orphaned: running, but its goal 4-goal-closed-under-its-run is closed (reclaim and the lease reaper take open goals only); `pak2 stop 4-goal-closed-under-its-run-r1` closes it'],
      [`${url} run 5-agent-gone-r1`, 'status', expect.stringMatching(/^orphaned: running, but no coordinator holds the garden on this machine, where it was opened, and its agent process \(pid \d+\) is gone \(`pak2 cycle` or `pak2 serve` started here reclaims it\); `pak2 stop 5-agent-gone-r1` closes it$/)],
      [`${url} run 8-lease-ended-finished-r1`, 'status', expect.stringMatching(/^orphaned: running, but its lease ended finished at \S+ \(the lease reaper closes a remote run only when its lease expired or is missing\); `pak2 stop 8-lease-ended-finished-r1` closes it$/)],
    ]);
    // The file checks of records do not apply: the run directories here have no meta.json, and that is right.
    expect(findings.filter((f) => ['goals', 'ledger', 'runs', 'leases', 'events'].includes(f.check))).toEqual([]);
    expect(text).toContain(`store: ${url} lease of 1-lease-expired-long-ago-r1: expires_at: stuck: active`);
    expect(text).toContain(`store: ${url} run 5-agent-gone-r1: status: orphaned: running`);

    // A live leader expires leases at its passes (here an hour apart): a lease two minutes late is not stuck yet.
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query("INSERT INTO duties (duty, holder, term, expires_at) VALUES ('leader', 'coordinator@elsewhere#1-x', 3, now() + interval '1 minute')");
    } finally {
      await client.end();
    }
    const withLeader = await doctor(paths.gardenRoot, url);
    expect(storeFindings(withLeader.findings).map((f) => f.file)).toEqual([`${url} run 4-goal-closed-under-its-run-r1`, `${url} run 5-agent-gone-r1`, `${url} run 8-lease-ended-finished-r1`]);
  });
});
