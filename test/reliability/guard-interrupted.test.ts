/**
 * kill -9 of the coordinator while a guarded run's verify runs (issue 25,
 * item 9; docs/guarded-runs/level2.md, "Interrupted runs"): at restart the
 * orphaned verify is ended and the agent's change — never accepted — is
 * undone to the run's baseline, the operator's own uncommitted edit kept;
 * so the retry's baseline is the operator's tree, not the rejected work.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadGarden, runDir } from '../../source/garden/index.js';
import { commissionPlant, createGoal, listRuns, readGoal } from '../../source/store/index.js';
import { PAK2_BIN, runCli } from '../support/cli.js';
import { isAlive, waitFor } from '../support/garden.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: gitEnv });

describe('kill -9 during a guarded run’s verify', () => {
  it('at restart the verify is ended and the rejected change undone; the operator’s edit stays; the retry’s baseline is the operator’s tree', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-guard-kill-'));
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-guard-hold-'));
    cleanups.push(() => fs.rmSync(root, { recursive: true, force: true }), () => fs.rmSync(outside, { recursive: true, force: true }));
    const hold = path.join(outside, 'hold');
    const verifyPid = path.join(outside, 'verify.pid');
    const result = JSON.stringify({ type: 'result', status: 'success', text: 'done', cost_usd: 0.01, session_id: 's1', num_turns: 1 });
    const agent = ['sh', '-c', `prompt=$(cat); if [ "$PAK2_PHASE" = reflection ]; then echo '{"type":"result","status":"success","text":"learned","cost_usd":0}'; exit 0; fi; case "$prompt" in *"# Guard"*) echo v2 > src/app.txt;; esac\necho '${result}'`];
    // Verify holds (its pid said) while the hold file is there, then checks the work.
    const verify = `if [ -f ${hold} ]; then echo $$ > ${verifyPid}.tmp && mv ${verifyPid}.tmp ${verifyPid}; exec sleep 1000; fi; grep -q v2 src/app.txt`;
    fs.writeFileSync(path.join(root, 'PAK2.toml'), ['[runtime]', 'root = ".runtime"', '[defaults]', 'driver = "edit"', '[coordinator]', 'interval_seconds = 3600', 'isolation = "tree"', `[drivers.edit]\ncommand = ${JSON.stringify(agent)}`].join('\n'));
    fs.writeFileSync(path.join(root, 'MOTIVATION.md'), '# m\n');
    fs.mkdirSync(path.join(root, 'seeds'));
    fs.writeFileSync(path.join(root, 'seeds', 'gardener.md'), '# Seed\n');
    fs.mkdirSync(path.join(root, 'src'));
    fs.writeFileSync(path.join(root, 'src', 'app.txt'), 'v1\n');
    fs.writeFileSync(path.join(root, 'notes.txt'), 'committed\n');
    fs.writeFileSync(path.join(root, '.gitignore'), '.runtime/\n');
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'start');
    const garden = loadGarden(root);
    await commissionPlant(garden.paths, 'gardener', 'gardener');
    // The operator's own uncommitted edit: it is theirs before, during and after.
    fs.writeFileSync(path.join(root, 'notes.txt'), 'the operator is editing this\n');
    fs.writeFileSync(hold, '');
    const goal = await createGoal(garden.paths, { type: 'fix', body: 'make it v2', plant: 'gardener', guard: { verify, allowed_files: ['src/**'] } } as Parameters<typeof createGoal>[1]);

    const coordinator = spawn(process.execPath, [PAK2_BIN, 'cycle', '--garden', root, '--no-ui'], { env: gitEnv, stdio: 'ignore' });
    const exited = new Promise((resolve) => coordinator.once('exit', resolve));
    cleanups.push(async () => {
      if (coordinator.exitCode === null && coordinator.signalCode === null) coordinator.kill('SIGKILL');
      await exited;
    });
    await waitFor(() => fs.existsSync(verifyPid), 30_000);
    const pid = Number(fs.readFileSync(verifyPid, 'utf8'));
    coordinator.kill('SIGKILL');
    await exited;
    cleanups.push(() => isAlive(pid) && process.kill(pid, 'SIGKILL'));
    // What the kill left: the verify still running, the agent's change in the tree.
    expect(isAlive(pid)).toBe(true);
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');

    fs.rmSync(hold);
    const restarted = await runCli(['cycle', '--garden', root, '--no-ui', '--until-idle'], { env: gitEnv });
    expect(restarted.code, restarted.stderr).toBe(0);
    // SIGKILLed by the restart; on a loaded machine its exit can lag the signal by a moment.
    await waitFor(() => !isAlive(pid), 10_000);
    const runs = (await listRuns(garden.paths)).runs.filter((r) => r.goal === goal.id).sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
    expect(runs.map((r) => [r.status, r.failure_reason ?? null])).toEqual([['killed', 'coordinator_stopped'], ['success', null]]);
    expect(runs[0]!.outputs?.error).toMatch(/its verify \(pid \d+\) was ended; the agent's change \(never accepted: verify did not finish\) was reverted to the run's baseline: 1 path\(s\)/);
    expect(fs.existsSync(path.join(runDir(garden.paths, runs[0]!.id), 'rejected.patch'))).toBe(true);
    // The interrupted run's guard state is gone too, as at a close the guard saw.
    expect(fs.readdirSync(runDir(garden.paths, runs[0]!.id)).filter((n) => n.startsWith('guard-') || n === 'verify.process.json')).toEqual([]);
    // The retry started from the operator's tree: only their edit was dirty, not the rejected work.
    const envelope = JSON.parse(fs.readFileSync(path.join(runDir(garden.paths, runs[1]!.id), 'execution_envelope.json'), 'utf8')) as { baseline: { dirty_paths: string[] } };
    expect(envelope.baseline.dirty_paths).toEqual(['notes.txt']);
    expect(fs.readFileSync(path.join(root, 'notes.txt'), 'utf8')).toBe('the operator is editing this\n');
    expect(fs.readFileSync(path.join(root, 'src', 'app.txt'), 'utf8')).toBe('v2\n');
    expect(await readGoal(garden.paths, goal.id)).toMatchObject({ status: 'closed', closed_reason: 'success' });
    // The guard's working state goes with its close.
    expect(fs.readdirSync(runDir(garden.paths, runs[1]!.id)).filter((n) => n.startsWith('guard-'))).toEqual([]);
  }, 180_000);
});
