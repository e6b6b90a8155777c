/**
 * `pak2 doctor` on remote runners' leases (`<runtime-root>/leases/`) and the
 * goals of remote runs, through the built CLI: each test builds the bad
 * state on disk, checks the text and `--json` findings, then `--fix` and a
 * second run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireCoordinatorLock, claimTask } from '../../source/coordinator/index.js';
import { gardenServeProcesses } from '../../source/doctor/index.js';
import { closeRun, createGoal, endedLeaseFile, goalFile, leaseFile, leasesDir, readGoal, readLease, transitionGoal } from '../../source/store/index.js';
import { isAlive, makeTestGarden, waitFor } from '../support/garden.js';
import { asideDir, doctor, doctorJson, expectClean, expectNothingLost, filesUnder, findingLines, quietHistory } from './support.js';

const WHO = { name: 'box', host: 'box.example' };

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function garden() {
  const g = await makeTestGarden();
  cleanups.push(g.cleanup, quietHistory());
  return g;
}

type TestGarden = Awaited<ReturnType<typeof garden>>;

/** A goal claimed by runner `box` at `at`: goal running, run running, lease active. */
async function claimed(g: TestGarden, at = new Date(), body = 'remote work') {
  await createGoal(g.paths, { type: 'spike', plant: 'gardener', body }, at);
  const claim = await claimTask(g, WHO, {}, () => at);
  expect(claim).toBeDefined();
  return claim!;
}

/** A remote run closed by its finish, which then died: run closed `success`, lease still active, goal still running. */
async function finishDied(g: TestGarden) {
  const claim = await claimed(g);
  await closeRun(g.paths, claim.run.id, 'spike', { status: 'success', cost: { source: 'unknown' }, by: 'runner' });
  return claim;
}

/** A remote run finished and settled properly (lease ended, goal closed). */
async function finishedRemote(g: TestGarden) {
  const claim = await finishDied(g);
  fs.mkdirSync(path.dirname(endedLeaseFile(g.paths, claim.run.id)), { recursive: true });
  fs.writeFileSync(endedLeaseFile(g.paths, claim.run.id), `${JSON.stringify({ ...claim.lease, state: 'finished', ended_at: new Date().toISOString() }, null, 2)}\n`);
  fs.rmSync(leaseFile(g.paths, claim.run.id));
  await transitionGoal(g.paths, claim.goal.id, 'completed');
  await transitionGoal(g.paths, claim.goal.id, 'closed', { closedReason: 'success' });
  return claim;
}

/** A long-lived process whose command line is `node <tmp>/pak2.js ...args`, as a `pak2 serve` looks in /proc. */
function fakePak2(args: string[], cwd?: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-fake-bin-'));
  const script = path.join(dir, 'pak2.js');
  fs.writeFileSync(script, 'setInterval(() => {}, 1000);\n');
  const child = spawn(process.execPath, [script, ...args], { stdio: 'ignore', ...(cwd ? { cwd } : {}) });
  cleanups.push(() => {
    if (child.pid && isAlive(child.pid)) child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return child;
}

describe('pak2 doctor: damaged lease files', () => {
  it('names a malformed active lease and an ended one failing validateLease with file and field; --fix moves them aside, deleting nothing', async () => {
    const g = await garden();
    const a = await finishedRemote(g);
    const b = await finishedRemote(g);
    const active = leaseFile(g.paths, a.run.id);
    fs.writeFileSync(active, '{"id": "01K');
    const ended = endedLeaseFile(g.paths, b.run.id);
    const endedText = fs.readFileSync(ended, 'utf8').replace('"heartbeats": 0', '"heartbeats": -1');
    fs.writeFileSync(ended, endedText);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    const lines = findingLines(text.stdout);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^leases: \\.runtime/leases/${a.run.id}\\.json: malformed JSON \\(.*\\); pak2 cannot read this lease: its runner is refused \\(409\\) on every call and no reaper closes its run; .* — fix: move it aside \\(the file is kept\\)$`));
    expect(lines[1]).toMatch(new RegExp(`^leases: \\.runtime/leases/ended/${b.run.id}\\.json: heartbeats: [A-Z_]+ \\(.*\\); pak2 cannot read this ended lease: .* — fix: move it aside \\(the file is kept\\)$`));

    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([
      { check: 'leases', file: active, message: expect.stringMatching(/^malformed JSON/), fix: 'move it aside (the file is kept)' },
      { check: 'leases', file: ended, field: 'heartbeats', message: expect.stringMatching(/^INVALID_FIELD_TYPE \(/), fix: 'move it aside (the file is kept)' },
    ]);

    const before = filesUnder(g.paths.gardenRoot);
    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    const aside = asideDir(g);
    expect(fixed.findings).toEqual([
      expect.objectContaining({ file: active, fixed: true, fix: `moved it aside to ${path.join(aside, 'leases', `${a.run.id}.json`)}` }),
      expect.objectContaining({ file: ended, fixed: true, fix: `moved it aside to ${path.join(aside, 'leases', 'ended', `${b.run.id}.json`)}` }),
    ]);
    expect(fs.existsSync(active)).toBe(false);
    expect(fs.existsSync(ended)).toBe(false);
    expect(fs.readFileSync(path.join(aside, 'leases', 'ended', `${b.run.id}.json`), 'utf8')).toBe(endedText);
    expectNothingLost(before, filesUnder(g.paths.gardenRoot));

    const again = await doctor(g.paths.gardenRoot);
    expectClean(again.stdout, g.paths.gardenRoot);
    expect(again.code).toBe(0);
  });

  it('calls a lease naming another run damaged (field run)', async () => {
    const g = await garden();
    const a = await finishedRemote(g);
    const stray = path.join(leasesDir(g.paths), 'ended', '99-elsewhere-r1.json');
    fs.copyFileSync(endedLeaseFile(g.paths, a.run.id), stray);
    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([expect.objectContaining({ check: 'leases', file: stray, field: 'run', message: expect.stringContaining(`run "${a.run.id}" does not match the file name`) })]);
  });
});

describe('pak2 doctor: a finish that died half way', () => {
  it('names the active lease of a closed run and its goal left running; --fix ends the lease finished and settles the goal', async () => {
    const g = await garden();
    const claim = await finishDied(g);
    const lease = leaseFile(g.paths, claim.run.id);
    const goal = goalFile(g.paths, claim.goal.id);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      expect.stringMatching(
        new RegExp(`^leases: \\.runtime/leases/${claim.run.id}\\.json: state: active, but its run ${claim.run.id} is closed \\(success at [^)]+\\): a finish died before ending the lease — fix: end it finished \\(moved to leases/ended/, as pak2 serve's lease reaper does\\)$`),
      ),
      `leases: .runtime/goals/${claim.goal.id}.json: status: running, but its latest run ${claim.run.id} finished on a runner but not settled (run success, runner box@box.example): the finish died before settling the goal — fix: settle it as the coordinator would (closed, or back to the queue when the run was abandoned or stopped with requeue)`,
    ]);

    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([
      expect.objectContaining({ check: 'leases', file: lease, field: 'state' }),
      expect.objectContaining({ check: 'leases', file: goal, field: 'status', message: expect.stringContaining('finished on a runner but not settled') }),
    ]);
    expect(json.findings.every((f) => f.fixed === undefined && f.fix)).toBe(true);

    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    expect(fixed.findings).toEqual([
      expect.objectContaining({ file: lease, fixed: true, fix: 'ended it finished (leases/ended/)' }),
      expect.objectContaining({ file: goal, fixed: true, fix: 'settled it: closed (success)' }),
    ]);
    expect(fs.existsSync(lease)).toBe(false);
    expect(await readLease(g.paths, claim.run.id)).toMatchObject({ id: claim.lease.id, state: 'finished', ended_at: expect.any(String) });
    expect(await readGoal(g.paths, claim.goal.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    // Nothing was moved aside: the lease was ended, not put away.
    expect(fs.existsSync(path.join(g.paths.runtimeRoot, 'doctor'))).toBe(false);

    const again = await doctor(g.paths.gardenRoot);
    expectClean(again.stdout, g.paths.gardenRoot);
    expect(again.code).toBe(0);
  });
});

describe('pak2 doctor: an expired lease nobody reaps', () => {
  it('reports it while no coordinator or pak2 serve runs, with no fix', async () => {
    const g = await garden();
    const claim = await claimed(g, new Date(Date.now() - 2 * 3600_000));
    const lease = leaseFile(g.paths, claim.run.id);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    // The remote run itself is the lease's to judge: the runs check says nothing about it.
    const stamp = claim.lease.expires_at.replace(/\./g, '\\.');
    expect(findingLines(text.stdout)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^leases: \\.runtime/leases/${claim.run.id}\\.json: expires_at: expired, not yet reaped: the next pak2 serve or pak2 cycle will close the run abandoned \\(lease_expired\\) and requeue its goal \\(expired at ${stamp}; runner box@box\\.example, no heartbeat for 72\\d\\d s, ttl 600 s; no coordinator holds the garden and no pak2 serve is running\\)$`,
        ),
      ),
    ]);

    const json = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(json.code).toBe(1);
    expect(json.findings).toEqual([{ check: 'leases', file: lease, field: 'expires_at', message: expect.stringMatching(/^expired, not yet reaped: the next pak2 serve or pak2 cycle will close the run abandoned/), fixed: false }]);
    // --fix leaves it to the reaper: the lease is still active, the run still running.
    expect((await readLease(g.paths, claim.run.id))?.state).toBe('active');
    expect((await readGoal(g.paths, claim.goal.id)).status).toBe('running');
  });

  it('says nothing while a coordinator holds the garden (its pass reaps it)', async () => {
    const g = await garden();
    await claimed(g, new Date(Date.now() - 2 * 3600_000));
    cleanups.push(await acquireCoordinatorLock(g.paths, 'pak2 cycle (test)'));
    const text = await doctor(g.paths.gardenRoot);
    expectClean(text.stdout, g.paths.gardenRoot);
    expect(text.code).toBe(0);
  });

  it('says nothing while a pak2 serve of this garden runs (--garden, or its working directory), and still reports it for a pak2 serve of another garden', async () => {
    const g = await garden();
    const other = await garden();
    await claimed(g, new Date(Date.now() - 2 * 3600_000));

    const elsewhere = fakePak2(['--garden', other.paths.gardenRoot, 'serve']);
    await waitFor(() => gardenServeProcesses(other.paths.gardenRoot).some((p) => p.pid === elsewhere.pid));
    expect(gardenServeProcesses(g.paths.gardenRoot)).toEqual([]);
    expect((await doctorJson(g.paths.gardenRoot)).findings).toEqual([expect.objectContaining({ check: 'leases', field: 'expires_at' })]);

    const byFlag = fakePak2(['--garden', g.paths.gardenRoot, 'serve', '--port', '0']);
    await waitFor(() => gardenServeProcesses(g.paths.gardenRoot).some((p) => p.pid === byFlag.pid));
    expect((await doctor(g.paths.gardenRoot)).code).toBe(0);
    byFlag.kill('SIGKILL');
    await waitFor(() => !isAlive(byFlag.pid!));

    const byCwd = fakePak2(['serve'], path.join(g.paths.gardenRoot, 'seeds'));
    await waitFor(() => gardenServeProcesses(g.paths.gardenRoot).some((p) => p.pid === byCwd.pid));
    const text = await doctor(g.paths.gardenRoot);
    expectClean(text.stdout, g.paths.gardenRoot);
  });
});

describe('pak2 doctor: lease lock directories', () => {
  it('calls a lease lock older than 30 s stale and --fix removes it; a fresh one is left alone', async () => {
    const g = await garden();
    const a = await finishedRemote(g);
    const b = await finishedRemote(g);
    const stale = path.join(leasesDir(g.paths), `${a.run.id}.lock`);
    const fresh = path.join(leasesDir(g.paths), `${b.run.id}.lock`);
    fs.mkdirSync(stale);
    fs.mkdirSync(fresh);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(stale, old, old);

    const text = await doctor(g.paths.gardenRoot);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^leases: \\.runtime/leases/${a.run.id}\\.lock: stale lease lock: last refreshed 6\\d s ago; a process holding it refreshes it every 5 s and proper-lockfile takes over a lock older than 10 s, so it is stale by definition and no coordinator, pak2 serve or pak2 command holds it — fix: remove it \\(a lock, not a record\\)$`,
        ),
      ),
    ]);
    const json = await doctorJson(g.paths.gardenRoot);
    expect(json.findings).toEqual([{ check: 'leases', file: stale, message: expect.stringContaining('stale by definition'), fix: 'remove it (a lock, not a record)' }]);

    const fixed = await doctorJson(g.paths.gardenRoot, '--fix');
    expect(fixed.code).toBe(0);
    expect(fixed.findings).toEqual([expect.objectContaining({ file: stale, fixed: true, fix: 'removed it' })]);
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(fresh)).toBe(true);

    fs.rmdirSync(fresh);
    const again = await doctor(g.paths.gardenRoot);
    expectClean(again.stdout, g.paths.gardenRoot);
    expect(again.code).toBe(0);
  });
});
