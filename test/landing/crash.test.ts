/**
 * Nothing half done (docs/landing/level2.md, "Nothing left behind"):
 * `pak2 cycle` is killed with SIGKILL at every step of making a run's
 * worktree and of landing its work, then restarted: the work lands once,
 * the base branch is either before or after the landing (never between),
 * every landing state has its event, the operator's dirty file is
 * untouched, and after `pak2 doctor --fix` no worktree is left.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readGoal, readLanding, readRun } from '../../source/store/index.js';
import { PAK2_BIN } from '../support/cli.js';
import { readEventLog } from '../support/garden.js';
import { git, makeGitGarden, submitWork, type GitGarden } from './support.js';

let garden: GitGarden | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

const POINTS = ['worktree:after-add', 'landing:after-commit', 'landing:after-queued', 'landing:after-verified', 'landing:after-move', 'landing:after-landed', 'worktree:after-remove'];

function pak2(root: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [PAK2_BIN, ...args, '--garden', root], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
}

describe('kill -9 at every step of a worktree and its landing, then a restart', () => {
  it.each(POINTS.map((p) => [p]))('%s: the work lands once, nothing half moved, nothing left behind', async (point) => {
    const g = (garden = await makeGitGarden({ toml: '[merge]\nverify = "test -f src/feature.txt"\n' }));
    fs.writeFileSync(path.join(g.root, 'README.md'), '# Project\n\nThe operator is editing this.\n');
    const dirty = fs.readFileSync(path.join(g.root, 'README.md'));
    const before = git(g.root, 'rev-parse', 'main');
    const goal = await submitWork(g, ['write src/feature.txt the feature']);
    const crashed = pak2(g.root, ['cycle', '--no-ui', '--until-idle'], { PAK2_CRASH_AT: point });
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    // Between the kill and the restart the base branch is where it was, or where the landing takes it: never elsewhere.
    const between = git(g.root, 'rev-parse', 'main');
    if (between !== before) expect(git(g.root, 'show', 'main:src/feature.txt')).toBe('the feature');
    const restarted = pak2(g.root, ['cycle', '--no-ui', '--until-idle']);
    expect(restarted.status, restarted.stderr).toBe(0);

    const runs = fs.readdirSync(g.paths.runsDir).filter((n) => n.startsWith(goal.id));
    const closing = await readGoal(g.paths, goal.id);
    expect(closing).toMatchObject({ status: 'closed', closed_reason: 'success' });
    // Landed exactly once: main holds the file, and one landing is `landed`.
    expect(git(g.root, 'show', 'main:src/feature.txt')).toBe('the feature');
    const landed: string[] = [];
    for (const run of runs) if ((await readLanding(g.paths, run))?.state === 'landed') landed.push(run);
    expect(landed).toHaveLength(1);
    const history = git(g.root, 'log', '--format=%s', 'main');
    expect(history.split('\n').filter((s) => s.startsWith(`pak2: ${goal.id}`))).toHaveLength(1);
    // The operator's uncommitted edit is byte-identical; their checkout followed main.
    expect(fs.readFileSync(path.join(g.root, 'README.md')).equals(dirty)).toBe(true);
    expect(fs.readFileSync(path.join(g.root, 'src/feature.txt'), 'utf8')).toBe('the feature\n');
    // Every landing state has its event.
    const events = readEventLog(g).filter((e) => e.run === landed[0]);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['LandingQueued', 'Landed']));
    // Nothing left behind once doctor has fixed what is safe.
    pak2(g.root, ['doctor', '--fix']);
    const doctor = pak2(g.root, ['doctor']);
    expect(doctor.stdout + doctor.stderr).not.toMatch(/worktrees:/);
    expect(git(g.root, 'worktree', 'list').split('\n').filter((l) => !l.includes('/.pool/')).length).toBe(1); // the main checkout; parked (clean, detached) worktrees wait for the next run
    const worktrees = path.join(g.paths.runtimeRoot, 'worktrees');
    expect(fs.existsSync(worktrees) ? fs.readdirSync(worktrees).filter((n) => !n.startsWith('.')) : []).toEqual([]);
    expect((await readRun(g.paths, landed[0]!)).status).toBe('success');
  }, 120_000);
});
