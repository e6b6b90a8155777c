import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../source/driver/dispatch.js';
import type { ClaimContext } from '../../source/runner/client.js';
import { acceptanceOf, finishBody } from '../../source/runner/finish.js';
import { isDocumentPath, scratchGarden, scratchPaths, writeClaim } from '../../source/runner/scratch.js';
import { changedDocuments, scratchRoot } from '../../source/runner/state.js';
import { readPlantDocuments } from '../../source/store/index.js';
import { snapshotTree, workdirDiff } from '../../source/runner/workdir-diff.js';
import { readRun, readRunChecked, runSealFile } from '../../source/store/index.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';
import { writeAgent } from './agent.js';

afterEach(() => cleanupFixtures());

const T = '2026-11-30T12:00:00.000Z';

function claimOf(type = 'fix') {
  const goal = { id: '3-fix-it', type, status: 'running', priority: 50, body: 'Fix the thing.', submitted_at: T, assigned_to: 'gardener', driver: 'agent' };
  const run = { id: '3-fix-it-r1', goal: '3-fix-it', plant: 'gardener', status: 'running', started_at: new Date().toISOString(), driver: 'agent', model: 'default', runner: { name: 'box', host: 'box.local', lease: '01KB0000000000000000000001' } };
  const context: ClaimContext = {
    prompt: '(the garden rendering)',
    motivation: '# Motivation\n\nThe remote garden.\n',
    plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: T },
    documents: [
      { path: 'memory/MEMORY.md', content: '# Memory\n\nOld memory.\n' },
      { path: 'skills/deploy.md', content: '# Deploy\n' },
      { path: '../escape.md', content: 'never written' },
    ],
    seed: { name: 'gardener', content: '# Seed\n\nYou tend.\n' },
    blocks: { supplements: '1. (operator, T) also update the docs' },
    comments: [],
    settings: { run_timeout_seconds: 120, watchdog_seconds: 60, tool_silence_seconds: 600, result_grace_seconds: 5 },
  };
  return { goal, run, context } as unknown as Parameters<typeof writeClaim>[1];
}

function gitInit(dir: string): void {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'start');
}

describe('the scratch garden', () => {
  it('has the workdir as garden root and everything it writes under the state directory', () => {
    const paths = scratchPaths('/w', '/s');
    expect(paths.gardenRoot).toBe('/w');
    expect(paths.runtimeRoot).toBe(scratchRoot('/s'));
    for (const p of [paths.runsDir, paths.goalsDir, paths.plantsDir, paths.seedsDir, paths.motivationFile, paths.eventsDir]) expect(p.startsWith('/s/')).toBe(true);
    expect(paths.split).toBe(false);
  });

  it("applies the garden's limits over the workdir's PAK2.toml, whose [drivers] it keeps", () => {
    const workdir = makeTempDir({ 'PAK2.toml': '[runtime]\nroot = ".runtime"\n[drivers.agent]\ncommand = ["/bin/true"]\n[coordinator]\nwatchdog_seconds = 999\n' });
    const garden = scratchGarden(workdir, makeTempDir(), { watchdog_seconds: 7, run_timeout_seconds: 70, tool_silence_seconds: 700, result_grace_seconds: 3 });
    expect(garden.config.drivers.agent).toEqual({ command: ['/bin/true'] });
    expect(garden.config.coordinator).toMatchObject({ watchdogSeconds: 7, runTimeoutSeconds: 70, toolSilenceSeconds: 700, resultGraceSeconds: 3 });
    // No PAK2.toml at all: every default.
    expect(scratchGarden(makeTempDir(), makeTempDir()).config.coordinator.watchdogSeconds).toBe(300);
  });

  it('writes the plant, its documents, the seed, the goal and the sealed run record; never a path outside the plant', async () => {
    const workdir = makeTempDir();
    const state = makeTempDir();
    const garden = scratchGarden(workdir, state);
    const claim = claimOf();
    await writeClaim(garden.paths, claim);
    const plant = path.join(garden.paths.plantsDir, 'gardener');
    expect(fs.readFileSync(path.join(plant, 'memory', 'MEMORY.md'), 'utf8')).toContain('Old memory');
    expect(readPlantDocuments(plant)).toEqual({ 'memory/MEMORY.md': '# Memory\n\nOld memory.\n', 'skills/deploy.md': '# Deploy\n' });
    expect(fs.existsSync(path.join(garden.paths.plantsDir, 'escape.md'))).toBe(false);
    expect(fs.readFileSync(path.join(garden.paths.seedsDir, 'gardener.md'), 'utf8')).toContain('You tend');
    const checked = await readRunChecked(garden.paths, '3-fix-it-r1');
    expect(checked.damage).toBeUndefined();
    expect(checked.run).toMatchObject({ id: '3-fix-it-r1', status: 'running', runner: { name: 'box' } });
    expect(fs.existsSync(runSealFile(garden.paths, '3-fix-it-r1'))).toBe(true);
    expect(fs.readdirSync(workdir)).toEqual([]); // the checkout is untouched
    expect(isDocumentPath('memory/MEMORY.md')).toBe(true);
    for (const bad of ['/etc/passwd', '../x.md', 'memory/../../x.md', 'other/x.md', 'memory']) expect(isDocumentPath(bad)).toBe(false);
  });

  it("runs a claimed goal with pak2's dispatch: the garden's blocks in the prompt, the runner's env, a sealed closed record", async () => {
    const workdir = makeTempDir({ 'README.md': 'hello\n' });
    const state = makeTempDir();
    const agent = writeAgent(makeTempDir());
    fs.writeFileSync(path.join(workdir, 'PAK2.toml'), `[drivers.agent]\ncommand = ["${agent}"]\n`);
    gitInit(workdir);
    const baseline = await snapshotTree(workdir);
    expect(baseline).toMatch(/^[0-9a-f]{40}/);
    const garden = scratchGarden(workdir, state, claimOf().context.settings);
    const claim = claimOf();
    await writeClaim(garden.paths, claim);
    const closed = await dispatch(claim.goal, claim.run.id, {
      garden,
      env: { ...process.env, PAK2_OUTBOX: path.join(state, 'outbox'), PAK2_INBOX: path.join(state, 'inbox'), PAK2_GOAL_ID: claim.goal.id },
      contextBlocks: claim.context.blocks ?? {},
      onStderr: () => undefined,
    });
    expect(closed).toMatchObject({ status: 'success', cost: { usd: expect.closeTo(0.0133, 6) }, session_id: 's-1', reflection: 'Learned: the runner ran me.', exit_code: 0 });
    const dir = path.join(garden.paths.runsDir, claim.run.id);
    const prompt = fs.readFileSync(path.join(dir, 'prompt.md'), 'utf8');
    expect(prompt).toContain('# Goal Supplements\n\n1. (operator, T) also update the docs');
    expect(prompt).toContain('The remote garden.');
    expect(prompt).toContain(`Your working directory is ${workdir}.`);
    expect(fs.existsSync(path.join(dir, 'dispatch-packet.json'))).toBe(false);
    const env = fs.readFileSync(path.join(dir, 'agent-env'), 'utf8');
    expect(env).toContain(`PAK2_OUTBOX=${path.join(state, 'outbox')}`);
    expect(env).toContain(`PAK2_INBOX=${path.join(state, 'inbox')}`);
    expect(env).toContain('PAK2_GOAL_ID=3-fix-it');
    expect(env).toContain('PAK2_RUN_ID=3-fix-it-r1');
    expect((await readRun(garden.paths, claim.run.id)).status).toBe('success');

    // The run's own diff, untracked files included; the memory the agent wrote in the checkout is a changed document.
    const diff = (await workdirDiff(workdir, baseline)).toString('utf8');
    expect(diff).toContain('+made by the agent');
    expect(diff).toContain('plants/gardener/memory/MEMORY.md');
    expect(diff).not.toContain('README.md');
    expect(changedDocuments({}, readPlantDocuments(path.join(workdir, 'plants', 'gardener')))).toEqual([{ path: 'memory/MEMORY.md', content: '# Memory\nRemote runs keep their memory.\n' }]);

    const acceptance = acceptanceOf(garden, closed!, 'fix', 'observed');
    expect(acceptance).toEqual([
      { item: 'agent process exited 0', verified: true, evidence: 'exit code 0' },
      { item: 'result event in the stream', verified: true, evidence: 'the agent reported success' },
      { item: 'reflection recorded', verified: true, evidence: expect.stringMatching(/characters/) },
    ]);
    const body = finishBody(closed!, 'LEASE', { events: 10, stderr: 0 }, acceptance);
    expect(body).toMatchObject({ lease: 'LEASE', status: 'success', failure_reason: null, exit_code: 0, session_id: 's-1', final_text: 'done', error: null, num_turns: 2, lingered: false, leftovers: [], watchdog: null, operator_stop: null });
  });

  it('a failing agent is finished as the local record says, its exit unverified', async () => {
    const workdir = makeTempDir();
    const state = makeTempDir();
    const agent = writeAgent(makeTempDir());
    fs.writeFileSync(path.join(workdir, 'PAK2.toml'), `[drivers.agent]\ncommand = ["${agent}"]\n`);
    const garden = scratchGarden(workdir, state);
    const claim = claimOf('spike');
    await writeClaim(garden.paths, claim);
    const closed = await dispatch(claim.goal, claim.run.id, { garden, env: { ...process.env, AGENT_FAIL: '1' }, contextBlocks: {}, onStderr: () => undefined });
    expect(closed).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit', exit_code: 4 });
    const acceptance = acceptanceOf(garden, closed!, 'spike', 'observed');
    expect(acceptance).toEqual([
      { item: 'agent process exited 0', verified: false, evidence: 'exit code 4' },
      { item: 'result event in the stream', verified: false, evidence: 'events.jsonl holds no result event' },
    ]);
    expect((await workdirDiff(workdir, null)).length).toBe(0);
  });
});
