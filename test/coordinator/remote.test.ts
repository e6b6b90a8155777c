/**
 * The garden side of the remote-runner lifecycle without HTTP
 * (source/coordinator/remote.ts; docs/runners/level2.md): which goals a
 * claim takes, a claim race between two processes, and how a coordinator
 * pass treats a leased run (no watchdog, no slot, expiry past its TTL).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { claimTask, finishRemoteRun, heartbeat, reconcile, RemoteRefusal, superviseRemoteRuns, type DispatchFn } from '../../source/coordinator/index.js';
import { archivePlant, closeRun, commissionPlant, createGoal, endLease, leaseFile, OpenGoalScanner, readGoal, readLease, readRun } from '../../source/store/index.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WHO = { name: 'r1', host: 'box-1' };

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function garden(options: Parameters<typeof makeTestGarden>[0] = {}) {
  const g = await makeTestGarden(options);
  cleanups.push(() => g.cleanup());
  return g;
}

describe('claimTask: what a runner may take', () => {
  it('skips conversation replies, guarded and routed goals, and goals of an archived plant', async () => {
    const g = await garden();
    await commissionPlant(g.paths, 'old', 'gardener');
    await archivePlant(g.paths, 'old');
    // Higher priorities first: each would be taken before the plain goal if it were a runner's.
    await createGoal(g.paths, { type: 'converse', plant: 'gardener', body: 'hello', conversation_id: 'c1', priority: 99 });
    await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'guarded', guard: { verify: 'true' }, priority: 98 });
    await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'routed', task_class: 'code', priority: 97 });
    await createGoal(g.paths, { type: 'fix', plant: 'old', body: 'archived plant', priority: 96 });
    await createGoal(g.paths, { type: 'fix', body: 'unassigned', priority: 95 });
    const plain = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'plain', priority: 10 });
    const claim = await claimTask(g, WHO);
    expect(claim?.goal.id).toBe(plain.id);
    expect(await claimTask(g, WHO)).toBeUndefined();
  });

  it('takes only the plants and drivers asked for', async () => {
    const g = await garden();
    await commissionPlant(g.paths, 'second', 'gardener');
    const a = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'a', priority: 90 });
    const b = await createGoal(g.paths, { type: 'fix', plant: 'second', body: 'b', driver: 'exit3', priority: 10 });
    expect(await claimTask(g, WHO, { plants: ['nobody'] })).toBeUndefined();
    expect((await claimTask(g, WHO, { plants: ['second'] }))?.goal.id).toBe(b.id);
    expect(await claimTask(g, WHO, { drivers: ['exit3'] })).toBeUndefined();
    const claim = await claimTask(g, WHO, { drivers: ['success'] });
    expect(claim?.goal.id).toBe(a.id);
    expect(claim?.run.driver).toBe('success');
  });

  it('two processes claiming one goal at once: exactly one gets it', async () => {
    const g = await garden();
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'contended' });
    const go = path.join(g.paths.gardenRoot, 'go');
    const code = [
      `import fs from 'node:fs';`,
      `const { loadGarden } = await import(${JSON.stringify(path.join(ROOT, 'source/garden/index.ts'))});`,
      `const { claimTask } = await import(${JSON.stringify(path.join(ROOT, 'source/coordinator/remote.ts'))});`,
      `const garden = loadGarden(process.env.GARDEN_ROOT);`,
      `process.stdout.write('ready\\n');`,
      `while (!fs.existsSync(process.env.GO_FILE)) await new Promise((r) => setTimeout(r, 2));`,
      `const claim = await claimTask(garden, { name: process.env.RUNNER_NAME, host: 'h' });`,
      `process.stdout.write(JSON.stringify({ run: claim?.run.id ?? null }) + '\\n');`,
    ].join('\n');
    const children = ['ra', 'rb'].map((name) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, env: { ...process.env, GARDEN_ROOT: g.paths.gardenRoot, GO_FILE: go, RUNNER_NAME: name }, stdio: ['ignore', 'pipe', 'pipe'] });
      cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const ready = new Promise<void>((resolve, reject) => {
        const timer = setInterval(() => {
          if (out.includes('ready\n')) {
            clearInterval(timer);
            resolve();
          }
        }, 5);
        child.once('exit', (code) => {
          clearInterval(timer);
          if (!out.includes('ready\n')) reject(new Error(`claimer ${name} exited ${code}: ${err}`));
        });
      });
      const done = new Promise<{ run: string | null }>((resolve, reject) =>
        child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as { run: string | null }) : reject(new Error(`claimer ${name} exited ${code}: ${err}`)))),
      );
      return { ready, done };
    });
    await Promise.all(children.map((c) => c.ready));
    fs.writeFileSync(go, '');
    const results = await Promise.all(children.map((c) => c.done));
    expect(results.filter((r) => r.run === null)).toHaveLength(1);
    expect(results.map((r) => r.run).filter(Boolean)).toEqual([`${goal.id}-r1`]);
    expect(readEventLog(g).filter((e) => e.type === 'LeaseClaimed')).toHaveLength(1);
    expect(fs.readdirSync(path.join(g.paths.runtimeRoot, 'runs')).filter((d) => !d.startsWith('.'))).toEqual([`${goal.id}-r1`]);
    expect((await readGoal(g.paths, goal.id)).status).toBe('running');
  }, 60_000);
});

describe('--until-idle in a garden only runners run', () => {
  it('with max_concurrent_runs = 0, a pass counts no queued goal as waiting for this coordinator (what --until-idle reads); a remote run in flight still counts', async () => {
    const g = await garden({ coordinator: { max_concurrent_runs: 0, interval_seconds: 1 } });
    await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'for a runner' });
    const pass = await reconcile({ garden: g, dispatch: async () => undefined });
    expect(pass).toMatchObject({ dispatched: [], queued: 0, inFlight: 0 });
    await claimTask(g, WHO);
    const busy = await reconcile({ garden: g, dispatch: async () => undefined });
    expect(busy.inFlight).toBe(1);
  });
});

describe('superviseRemoteRuns (the server reaper, no coordinator)', () => {
  it('settles a goal whose remote run closed but was never settled, and abandons a lease-less run after its TTL', async () => {
    const g = await garden();
    const t0 = new Date('2026-06-01T10:00:00Z');
    const a = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'finished, never settled' }, t0);
    const b = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'lease file lost' }, t0);
    const claimA = (await claimTask(g, WHO, {}, () => t0))!;
    const claimB = (await claimTask(g, WHO, {}, () => t0))!;
    // A's run closed as a finish would, then the process died before settling: the goal is still running.
    await closeRun(g.paths, claimA.run.id, 'spike', { status: 'success', cost: { source: 'unknown' }, by: 'runner' }, t0);
    fs.rmSync(leaseFile(g.paths, claimB.run.id));
    const scanner = new OpenGoalScanner(g.paths);
    const first = await superviseRemoteRuns(g, scanner, () => new Date(t0.getTime() + 1_000));
    expect(first).toEqual({ abandoned: [], settled: [a.id] });
    expect(await readGoal(g.paths, a.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    const later = await superviseRemoteRuns(g, scanner, () => new Date(t0.getTime() + 601_000));
    expect(later.abandoned).toEqual([claimB.run.id]);
    expect((await readGoal(g.paths, b.id)).status).toBe('queued');
  });
});

describe('claims racing a coordinator', () => {
  it('a runner process claiming while the coordinator passes: no claim is "repaired" half done, no goal gets two runs, no pass reports a problem', async () => {
    const g = await garden({ coordinator: { max_concurrent_runs: 0 } });
    const goals = [];
    for (let i = 0; i < 12; i += 1) goals.push(await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: `contended ${i}` }));
    const code = [
      `const { loadGarden } = await import(${JSON.stringify(path.join(ROOT, 'source/garden/index.ts'))});`,
      `const { claimTask } = await import(${JSON.stringify(path.join(ROOT, 'source/coordinator/remote.ts'))});`,
      `const garden = loadGarden(process.env.GARDEN_ROOT);`,
      `let n = 0;`,
      `while (await claimTask(garden, { name: 'racer', host: 'h' })) n += 1;`,
      `process.stdout.write(String(n) + '\\n');`,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, env: { ...process.env, GARDEN_ROOT: g.paths.gardenRoot }, stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const problems: string[] = [];
    let done = false;
    void exited.then(() => (done = true));
    const dispatch: DispatchFn = async () => undefined;
    while (!done) {
      const pass = await reconcile({ garden: g, dispatch });
      problems.push(...pass.problems.map((p) => p.message));
    }
    expect(await exited, err).toBe(0);
    expect(Number(out.trim())).toBe(12);
    expect(problems).toEqual([]);
    for (const goal of goals) {
      expect((await readGoal(g.paths, goal.id)).status).toBe('running');
      expect(fs.existsSync(path.join(g.paths.runsDir, `${goal.id}-r2`))).toBe(false);
      expect((await readLease(g.paths, `${goal.id}-r1`))?.state).toBe('active');
    }
  }, 120_000);
});

describe('reconcile and a leased run', () => {
  it('leaves a live leased run to its lease: no watchdog kill, no slot taken; expires it past its TTL', async () => {
    const g = await garden({ coordinator: { max_concurrent_runs: 1, watchdog_seconds: 300 } });
    const t0 = new Date('2026-06-01T10:00:00Z');
    const remote = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'remote work', priority: 90 }, t0);
    const claim = await claimTask(g, WHO, {}, () => t0);
    expect(claim?.goal.id).toBe(remote.id);
    const local = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'local work', priority: 10 }, t0);
    const dispatched: string[] = [];
    const dispatch: DispatchFn = async (goal) => {
      dispatched.push(goal.id);
    };

    // 400 s of silence: a local run would be killed by the watchdog (300 s); the lease (600 s) still holds.
    const first = await reconcile({ garden: g, dispatch, now: () => new Date(t0.getTime() + 400_000) });
    expect(first.killed).toEqual([]);
    expect(first.abandoned).toEqual([]);
    expect(first.dispatched).toEqual([`${local.id}-r1`]);
    expect(dispatched).toEqual([local.id]);
    expect((await readRun(g.paths, claim!.run.id)).status).toBe('running');

    // Past the TTL: the pass expires the lease, the run is abandoned and the goal requeued.
    const second = await reconcile({ garden: g, dispatch, now: () => new Date(t0.getTime() + 700_000) });
    expect(second.abandoned).toEqual([claim!.run.id]);
    expect(await readRun(g.paths, claim!.run.id)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect((await readLease(g.paths, claim!.run.id))?.state).toBe('expired');
    expect((await readGoal(g.paths, remote.id)).status).toBe('queued');
    expect(readEventLog(g).filter((e) => e.type === 'LeaseExpired')).toHaveLength(1);
  });

  it('a goal the operator cancelled while its runner was silent stays cancelled when the lease expires (requeue only when asked)', async () => {
    const g = await garden({ coordinator: { max_concurrent_runs: 0 } });
    const t0 = new Date('2026-06-01T10:00:00Z');
    const cancelled = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'to cancel', priority: 90 }, t0);
    const requeued = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'to stop and requeue', priority: 10 }, t0);
    const first = (await claimTask(g, WHO, {}, () => t0))!;
    const second = (await claimTask(g, { name: 'r2', host: 'box-2' }, {}, () => t0))!;
    expect([first.goal.id, second.goal.id]).toEqual([cancelled.id, requeued.id]);
    const { requestLeaseStop } = await import('../../source/coordinator/index.js');
    await requestLeaseStop(g, first.run.id, false, t0);
    await requestLeaseStop(g, second.run.id, true, t0);
    // Neither runner answers: the leases expire.
    const pass = await reconcile({ garden: g, dispatch: async () => undefined, now: () => new Date(t0.getTime() + 700_000) });
    expect(pass.abandoned.sort()).toEqual([first.run.id, second.run.id].sort());
    expect(await readRun(g.paths, first.run.id)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired', operator_stop: { requeue: false } });
    expect(await readGoal(g.paths, cancelled.id)).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
    expect(await readGoal(g.paths, requeued.id)).toMatchObject({ status: 'queued' });
    // Nothing claims the cancelled goal again.
    const next = await claimTask(g, WHO, {}, () => new Date(t0.getTime() + 701_000));
    expect(next?.goal.id).toBe(requeued.id);
  });

  it('a remote run whose lease file is gone (a crash after openRun) is abandoned once a TTL passed since it started; an interrupted expiry is finished', async () => {
    const g = await garden();
    const t0 = new Date('2026-06-01T10:00:00Z');
    await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'remote work' }, t0);
    const claim = (await claimTask(g, WHO, {}, () => t0))!;
    fs.rmSync(leaseFile(g.paths, claim.run.id));
    const dispatch: DispatchFn = async () => undefined;
    expect((await reconcile({ garden: g, dispatch, now: () => new Date(t0.getTime() + 100_000) })).abandoned).toEqual([]);
    expect((await readRun(g.paths, claim.run.id)).status).toBe('running');
    const late = await reconcile({ garden: g, dispatch, now: () => new Date(t0.getTime() + 601_000) });
    expect(late.abandoned).toEqual([claim.run.id]);
    expect(await readRun(g.paths, claim.run.id)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired', outputs: { error: expect.stringMatching(/has no lease file/) } });
    expect((await readGoal(g.paths, claim.goal.id)).status).toBe('queued');

    // The same goal claimed again; its lease ended expired but the run's close never came (a crash in between).
    const again = (await claimTask(g, WHO, {}, () => new Date(t0.getTime() + 602_000)))!;
    expect(again.run.id).toBe(`${claim.goal.id}-r2`);
    const lease = (await readLease(g.paths, again.run.id))!;
    await endLease(g.paths, lease, 'expired', new Date(t0.getTime() + 603_000));
    const pass = await reconcile({ garden: g, dispatch, now: () => new Date(t0.getTime() + 604_000) });
    expect(pass.abandoned).toEqual([again.run.id]);
    expect(await readRun(g.paths, again.run.id)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect((await readGoal(g.paths, claim.goal.id)).status).toBe('queued');
  });

  it('a late heartbeat that finds its lease past the TTL before any pass: refused, the run abandoned and the goal requeued', async () => {
    const g = await garden();
    const t0 = new Date('2026-06-01T10:00:00Z');
    const goal = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'remote work' }, t0);
    const claim = (await claimTask(g, WHO, {}, () => t0))!;
    const late = () => new Date(t0.getTime() + 601_000);
    const refused = await heartbeat(g, claim.run.id, { lease: claim.lease.id }, WHO, late).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RemoteRefusal);
    expect(refused).toMatchObject({ status: 409, field: '/lease', extra: { state: 'expired' } });
    expect(await readRun(g.paths, claim.run.id)).toMatchObject({ status: 'abandoned', failure_reason: 'lease_expired' });
    expect((await readGoal(g.paths, goal.id)).status).toBe('queued');
    expect(readEventLog(g).map((e) => e.type ?? '').filter((t) => t.startsWith('Lease'))).toEqual(['LeaseClaimed', 'LeaseExpired', 'LeaseRefused']);
  });
});

describe('lease locks', () => {
  it('operations on two leases at once in one process never share a lock: concurrent heartbeats and finishes all succeed', async () => {
    const g = await garden();
    for (let i = 0; i < 4; i += 1) await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: `remote ${i}` });
    const claims = [];
    for (let i = 0; i < 4; i += 1) claims.push((await claimTask(g, { name: `r${i}`, host: 'box' }))!);
    for (let round = 0; round < 5; round += 1) {
      await Promise.all(claims.map((c, i) => heartbeat(g, c.run.id, { lease: c.lease.id, progress: round * 10 }, { name: `r${i}`, host: 'box' })));
    }
    const finished = await Promise.all(claims.map((c, i) => finishRemoteRun(g, c.run.id, { lease: c.lease.id, status: 'success', exit_code: 0, cost: { source: 'provider', usd: 0.01 } }, { name: `r${i}`, host: 'box' })));
    expect(finished.map((f) => f.goal.status)).toEqual(['closed', 'closed', 'closed', 'closed']);
    expect(fs.readdirSync(path.join(g.paths.runtimeRoot, 'leases')).filter((n) => n.endsWith('.lock'))).toEqual([]);
  });
});

describe('finishRemoteRun', () => {
  it('a record that would not validate is refused 422 before anything is written (no reflection events, the run still running)', async () => {
    const g = await garden();
    await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'remote work' });
    const claim = (await claimTask(g, WHO))!;
    const before = readEventLog(g).length;
    const refused = await finishRemoteRun(g, claim.run.id, { lease: claim.lease.id, status: 'success', exit_code: 0, reflection: 'Learned: x.', cost: { source: 'bogus' } as never }, WHO).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 422, field: '/cost' });
    expect(readEventLog(g).slice(before)).toEqual([]);
    expect((await readRun(g.paths, claim.run.id)).status).toBe('running');
    expect((await readLease(g.paths, claim.run.id))?.state).toBe('active');
  });

  it('success with a non-zero exit code: refused 422, unless the agent lingered after its result (pak2 ended it; the result stands, as locally)', async () => {
    const g = await garden();
    await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'remote work' });
    const claim = (await claimTask(g, WHO))!;
    const refused = await finishRemoteRun(g, claim.run.id, { lease: claim.lease.id, status: 'success', exit_code: 130, cost: { source: 'provider', usd: 0.01 } }, WHO).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 422, field: '/exit_code' });
    expect((await readRun(g.paths, claim.run.id)).status).toBe('running');
    const { run, goal } = await finishRemoteRun(g, claim.run.id, { lease: claim.lease.id, status: 'success', exit_code: 130, lingered: true, cost: { source: 'provider', usd: 0.01 } }, WHO);
    expect(run).toMatchObject({ status: 'success', exit_code: 130, lingered: true });
    expect(goal).toMatchObject({ status: 'closed', closed_reason: 'success' });
  });
});

/** A guarded run's records as a runner's guard writes them, for run `runId` (seed 001 fields). */
function guardRecords(runId: string, state: 'ready' | 'degraded', routing?: Record<string, unknown>) {
  const kept = state === 'ready';
  return {
    envelope: {
      schema_version: '1.0',
      run_id: runId,
      guarded: true,
      contract_id: null,
      executor: { name: 'success', version: null, sandbox: false, model: 'default' },
      env_passthrough: [],
      timeout_seconds: 600,
      baseline: { head: null, branch: null },
      executor_exit_code: 0,
      ...(routing ? { routing } : {}),
    },
    outcome: {
      schema_version: '1.0',
      guarded: true,
      run_id: runId,
      state,
      status: kept ? 'success' : 'failed',
      diagnostic_code: kept ? 'ready' : 'verify_failed',
      next_command: kept ? null : `pak2 trace ${runId}`,
      verify_ok: kept,
      verify_exit_code: kept ? 0 : 1,
      verify_stdout: '',
      verify_stderr: '',
      failed_command: kept ? null : 'false',
      verifier_was_skipped: false,
      mutated_files: [],
      attempted_mutations: ['made.txt'],
      accepted_mutations: kept ? ['made.txt'] : [],
      blocked_mutations: [],
      unexpected_mutations: [],
      rollback_performed: !kept,
      rollback_stdout: '',
      rollback_stderr: '',
      contract_id: null,
      acceptance_state: 'raw_run_not_contract_accepted',
      allowed_files: [],
      forbidden_paths: [],
      executor: { name: 'success', version: null, exit_code: 0, timed_out: false, duration_seconds: 1, sandbox: false, self_status: 'success', cost_usd: 0.01, turns: 1 },
      wall_time_seconds: 2,
      scope_violations: [],
    },
    phases: `${JSON.stringify({ ts: new Date().toISOString(), run_id: runId, phase: 'baseline', outcome: 'ok' })}\n`,
    rejected_patch: kept ? null : 'diff --git a/made.txt b/made.txt\n',
    prompt_bundle: '# Prompt bundle (guarded run)\n',
  };
}

describe('guarded and routed goals on runners (docs/runners/level2.md, "Guarded and routed goals")', () => {
  const ROUTING = '[routing.code]\ntiers = [{ driver = "exit3" }, { driver = "success" }]\n';

  it('a runner that runs guards takes guarded and routed goals (a routed one on its tier), with the guard and the plan; one that does not, and a conversation reply, never', async () => {
    const g = await garden({ extraToml: `[guard]\nforbidden_paths = ["secrets/**"]\n${ROUTING}` });
    await createGoal(g.paths, { type: 'converse', plant: 'gardener', body: 'hello', conversation_id: 'c1', priority: 99 });
    const guarded = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'guarded', guard: { verify: 'npm test', allowed_files: ['src/**'] }, priority: 98 });
    const routed = await createGoal(g.paths, { type: 'fix', plant: 'gardener', body: 'routed', task_class: 'code', priority: 97 });
    expect(await claimTask(g, WHO)).toBeUndefined();
    const first = (await claimTask(g, WHO, { guard: true }))!;
    expect(first.goal.id).toBe(guarded.id);
    expect(first.context.guard).toEqual({ verify: 'npm test', allowed_files: ['src/**'], forbidden_paths: ['secrets/**'], timeout_seconds: 600, env_passthrough: [], contract_id: null, redact: true, routing: null });
    // A routed goal runs on its tier's driver: a runner asking only for another driver does not get it.
    expect(await claimTask(g, WHO, { guard: true, drivers: ['success'] })).toBeUndefined();
    const second = (await claimTask(g, WHO, { guard: true, drivers: ['exit3'] }))!;
    expect(second.goal.id).toBe(routed.id);
    expect(second.run.driver).toBe('exit3');
    expect(second.context.guard?.routing).toMatchObject({ task_class: 'code', tier_index: 0, tier: { driver: 'exit3' }, attempts: [], escalations: 0, pinned: false, max_escalations: 1, budget_usd: null });
    expect(await claimTask(g, WHO, { guard: true })).toBeUndefined();
  });

  it('finish: a guarded success needs the guard records (422 /guard), an unguarded run takes none (400 /guard), records must name the run (422)', async () => {
    const g = await garden();
    await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'guarded', guard: { verify: 'true' } });
    const claim = (await claimTask(g, WHO, { guard: true }))!;
    const base = { lease: claim.lease.id, status: 'success', exit_code: 0, cost: { source: 'provider' as const, usd: 0.01 } };
    expect(await finishRemoteRun(g, claim.run.id, base, WHO).catch((e: unknown) => e)).toMatchObject({ status: 422, field: '/guard' });
    expect(await finishRemoteRun(g, claim.run.id, { ...base, guard: guardRecords('9-other-r1', 'ready') }, WHO).catch((e: unknown) => e)).toMatchObject({ status: 422, field: '/guard/envelope/run_id' });
    expect(await finishRemoteRun(g, claim.run.id, { ...base, guard: guardRecords(claim.run.id, 'degraded') }, WHO).catch((e: unknown) => e)).toMatchObject({ status: 422, field: '/guard/outcome/state' });
    expect((await readRun(g.paths, claim.run.id)).status).toBe('running');
    const { run, goal } = await finishRemoteRun(g, claim.run.id, { ...base, guard: guardRecords(claim.run.id, 'ready') }, WHO);
    expect(run.status).toBe('success');
    expect(goal).toMatchObject({ status: 'closed', closed_reason: 'success' });
    const dir = path.join(g.paths.runsDir, claim.run.id);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'task_outcome.json'), 'utf8'))).toMatchObject({ run_id: claim.run.id, state: 'ready' });
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'execution_envelope.json'), 'utf8'))).toMatchObject({ run_id: claim.run.id, guarded: true });
    expect(fs.readFileSync(path.join(dir, 'prompt_bundle.md'), 'utf8')).toBe('# Prompt bundle (guarded run)\n');
    expect(fs.existsSync(path.join(dir, 'rejected.patch'))).toBe(false);

    await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'plain' });
    const plain = (await claimTask(g, WHO))!;
    expect(await finishRemoteRun(g, plain.run.id, { lease: plain.lease.id, status: 'success', exit_code: 0, cost: { source: 'unknown' }, guard: guardRecords(plain.run.id, 'ready') }, WHO).catch((e: unknown) => e)).toMatchObject({ status: 400, field: '/guard' });
  });

  it("a routed attempt's rejected work: the garden keeps its records, writes RunRolledBack and RoutingEscalated, and requeues the goal for the next tier", async () => {
    const g = await garden({ extraToml: ROUTING });
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'routed', task_class: 'code' });
    const claim = (await claimTask(g, WHO, { guard: true }))!;
    const routing = { task_class: 'code', tier_index: 0, escalations: 0, next_tier_index: 1, attempts: [{ run_id: claim.run.id, tier_index: 0, executor: 'exit3', model: 'default', diagnostic_code: 'verify_failed', cost_usd: 0.01 }] };
    const { goal: after } = await finishRemoteRun(g, claim.run.id, { lease: claim.lease.id, status: 'failure', failure_reason: 'verify_failed', exit_code: 0, cost: { source: 'provider', usd: 0.01 }, guard: guardRecords(claim.run.id, 'degraded', routing) }, WHO);
    expect(after.status).toBe('queued');
    expect(fs.readFileSync(path.join(g.paths.runsDir, claim.run.id, 'rejected.patch'), 'utf8')).toBe('diff --git a/made.txt b/made.txt\n');
    const events = readEventLog(g).filter((e) => e.run === claim.run.id).map((e) => [e.type, e.detail]);
    expect(events).toContainEqual(['RunRolledBack', 'verify_failed: 1 path(s) reverted on runner r1@box-1; rejected.patch']);
    expect(events).toContainEqual(['RoutingEscalated', 'code: escalating to tier 1 after verify_failed']);
    const next = (await claimTask(g, WHO, { guard: true }))!;
    expect(next.goal.id).toBe(goal.id);
    expect(next.run.driver).toBe('success');
    expect(next.context.guard?.routing).toMatchObject({ tier_index: 1, escalations: 1, attempts: [expect.objectContaining({ run_id: claim.run.id })] });
  });
});
