import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { launch } from '../../source/driver/launch.js';
import { RUN_MARK_ENV, scanForSweeps, secondsSinceBoot, sweepRun } from '../../source/driver/process-tree.js';
import { isAlive, waitFor } from '../support/garden.js';

// The sweep after a launch (docs/run/level2.md, "Lifecycle" 2): one scan of /proc finds a run's group, its
// marked processes and the holders of its output files, shared by the sweeps that ask together.

let dir: string;
const started: ChildProcess[] = [];
const pids: number[] = [];
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-sweep-'));
});
afterEach(() => {
  for (const pid of [...pids.splice(0), ...started.splice(0).map((c) => c.pid!)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Starts `sleep 1000` with stdout appended to `file` (when given) and `env`; kept for cleanup. */
function sleeper(file: string | undefined, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const out = file ? fs.openSync(file, 'a') : 'ignore';
  const child = spawn('sleep', ['1000'], { stdio: ['ignore', out, 'ignore'], env: { PATH: process.env.PATH, ...env }, detached: true });
  if (typeof out === 'number') fs.closeSync(out);
  started.push(child);
  return child;
}

/** Waits until /proc shows `pid` holding `file` (the spawn has opened its descriptors). */
async function holding(pid: number, file: string): Promise<void> {
  const real = fs.realpathSync(file);
  await waitFor(() => {
    try {
      return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === real);
    } catch {
      return false;
    }
  });
}

const query = (files: string[], extra: { pgid?: number; mark?: string; bornAfter?: number } = {}) => ({
  pgid: extra.pgid,
  needle: `${RUN_MARK_ENV}=${extra.mark ?? 'no-such-mark'}\0`,
  files: new Set(files.map((f) => fs.realpathSync(f))),
  ...(extra.bornAfter !== undefined ? { bornAfter: extra.bornAfter } : {}),
});

describe.runIf(fs.existsSync('/proc/self/stat'))('the sweep', () => {
  it('one scan answers several sweeps: each finds its own holder, marked process and group, never another run\'s', async () => {
    const files = ['a', 'b', 'c'].map((n) => path.join(dir, `${n}.jsonl`));
    for (const f of files) fs.writeFileSync(f, '');
    const holders = files.map((f) => sleeper(f));
    const marked = sleeper(undefined, { [RUN_MARK_ENV]: 'mark-b' });
    await Promise.all(holders.map((h, i) => holding(h.pid!, files[i]!)));
    await waitFor(() => fs.readFileSync(`/proc/${marked.pid}/environ`, 'latin1').includes('mark-b'));
    const found = scanForSweeps([query([files[0]!]), query([files[1]!], { mark: 'mark-b' }), query([files[2]!], { pgid: holders[2]!.pid })]);
    expect(found[0]).toEqual({ groupAlive: false, targets: [holders[0]!.pid] });
    expect(found[1]!.targets.sort()).toEqual([holders[1]!.pid, marked.pid].sort());
    expect(found[2]).toEqual({ groupAlive: true, targets: [holders[2]!.pid] });
  });

  it('a process that started before the run is not one of its processes (neither its mark nor its descriptors are read); one that started after is', async () => {
    const file = path.join(dir, 'events.jsonl');
    fs.writeFileSync(file, '');
    const marked = sleeper(undefined, { [RUN_MARK_ENV]: 'm' });
    const plain = sleeper(file);
    await holding(plain.pid!, file);
    await waitFor(() => fs.readFileSync(`/proc/${marked.pid}/environ`, 'latin1').includes('=m'));
    const now = secondsSinceBoot()!;
    // A run whose agent starts 10 s from now: both sleepers are older, so neither is its.
    expect(scanForSweeps([query([file], { mark: 'm', bornAfter: now + 10 })])[0]!.targets).toEqual([]);
    // A run whose agent started 10 s ago, or one of unknown start (an orphan of an earlier coordinator): both are.
    expect(scanForSweeps([query([file], { mark: 'm', bornAfter: now - 10 })])[0]!.targets.sort()).toEqual([marked.pid, plain.pid].sort());
    expect(scanForSweeps([query([file], { mark: 'm' })])[0]!.targets.sort()).toEqual([marked.pid, plain.pid].sort());
  });

  it('sweeps that end together still end each run\'s escaped `setsid env -i` descendant holding its stdout', async () => {
    const agent = path.join(dir, 'agent.mjs');
    fs.writeFileSync(
      agent,
      `import { spawn } from 'node:child_process';
       import fs from 'node:fs';
       // Not detached: setsid then needs no fork, and the pid is the sleep's own.
       const child = spawn('setsid', ['env', '-i', 'sleep', '1000'], { stdio: ['ignore', 'inherit', 'inherit'] });
       fs.writeFileSync(process.argv[2], String(child.pid));
       // Exit once the escapee holds stdout, so the sweep has something to find.
       const real = fs.realpathSync(process.argv[3]);
       const holds = () => { try { return fs.readdirSync('/proc/' + child.pid + '/fd').some((fd) => fs.readlinkSync('/proc/' + child.pid + '/fd/' + fd) === real); } catch { return false; } };
       const until = Date.now() + 15000; // never outlives the test
       const wait = () => (holds() && fs.readFileSync('/proc/' + child.pid + '/cmdline', 'latin1').startsWith('sleep') ? (console.log('{"type":"result","status":"success","text":"ok"}'), process.exit(0)) : Date.now() > until ? process.exit(1) : setTimeout(wait, 10));
       wait();`,
    );
    fs.writeFileSync(path.join(dir, 'prompt.md'), 'prompt\n');
    const runs = ['r1', 'r2', 'r3'].map((r) => ({ out: path.join(dir, `${r}.jsonl`), err: path.join(dir, `${r}.log`), pidfile: path.join(dir, `${r}.pid`) }));
    for (const r of runs) fs.writeFileSync(r.out, '');
    const results = await Promise.all(
      runs.map((r) => launch({ command: process.execPath, args: [agent, r.pidfile, r.out] }, { cwd: dir, stdinFile: path.join(dir, 'prompt.md'), stdoutFile: r.out, stderrFile: r.err, onStderr: () => undefined })),
    );
    const escaped = runs.map((r) => Number(fs.readFileSync(r.pidfile, 'utf8')));
    pids.push(...escaped);
    expect(results.map((r) => [r.exitCode, r.survivors])).toEqual(runs.map(() => [0, []]));
    await waitFor(() => escaped.every((pid) => !isAlive(pid)));
  });

  it('a sweep with nothing left finds nothing and ends none', async () => {
    const file = path.join(dir, 'quiet.jsonl');
    fs.writeFileSync(file, '');
    const bystander = sleeper(path.join(dir, 'other.jsonl'));
    expect(await sweepRun(undefined, 'nobody', [file], 2000, secondsSinceBoot())).toEqual([]);
    expect(isAlive(bystander.pid!)).toBe(true);
  });
});
