/**
 * A goal's acceptance criteria (seed 004, "The write-back contract" 5;
 * docs/goal/level2.md, "Acceptance criteria"): given to the agent in the
 * prompt, checked when its run ends, each reported verified (its command
 * exited 0), failed or unverified, with the evidence — on a local run as on
 * a runner's (test/runner/integration.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { reconcile } from '../../source/coordinator/index.js';
import { acceptancePromptBlock, checkAcceptance, closeFromStream, decideAcceptanceCheck, dispatch } from '../../source/driver/index.js';
import { validateRun } from '../../source/contracts/index.js';
import type { Garden } from '../../source/garden/index.js';
import { setRuntimeHistoryListener } from '../../source/history/index.js';
import { createGoal, openRun, readGoal, readRun, transitionGoal } from '../../source/store/index.js';
import { retryGoal } from '../../source/submit/index.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => void)[] = [];
// These gardens are not git repositories: their closes' runtime-history line is not what is tested.
const restore = setRuntimeHistoryListener(() => undefined);
afterAll(() => restore());
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

const CRITERIA = [
  { text: 'the agent left done.txt', verify: 'test -f done.txt' },
  { text: 'the changelog names the fix', verify: 'grep -q fix CHANGELOG.md' },
  { text: 'the code reads well' },
];

async function runGoal(garden: Garden, driver: string, criteria = CRITERIA) {
  const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'do it', driver, acceptance_criteria: criteria });
  await reconcile({ garden, dispatch: (g, runId) => dispatch(g, runId, { garden, onStderr: () => undefined }), awaitDispatch: true });
  const run = await readRun(garden.paths, `${goal.id}-r1`);
  expect(validateRun(run)).toEqual([]);
  return { goal: await readGoal(garden.paths, goal.id), run };
}

describe('acceptance criteria, decided and checked', () => {
  it('only a run closing success has its criteria checked; any other end says how it ended', () => {
    expect(decideAcceptanceCheck({ status: 'success' })).toEqual({ run: true });
    expect(decideAcceptanceCheck({ status: 'failure', failureReason: 'nonzero_exit' })).toEqual({ run: false, why: 'not checked: the run ended failure (nonzero_exit) before its criteria were checked' });
    expect(decideAcceptanceCheck({ status: 'killed', failureReason: 'operator_stopped' })).toMatchObject({ run: false, why: expect.stringContaining('killed (operator_stopped)') });
  });

  it('the prompt block lists each criterion and how it is checked; none for no criteria', () => {
    expect(acceptancePromptBlock(undefined)).toBe('');
    expect(acceptancePromptBlock([])).toBe('');
    const block = acceptancePromptBlock(CRITERIA);
    expect(block).toContain('1. the agent left done.txt\n   Checked after you finish by running `test -f done.txt` in your working directory; it must exit 0.');
    expect(block).toContain('3. the code reads well\n   No command checks this one: it is reported "not verified" whatever you say');
  });

  it('a command that exits 0 verifies, one that does not fails, one past its limit is stopped, one that cannot run says so; no command is unverified', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-acceptance-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.writeFileSync(path.join(dir, 'done.txt'), 'yes\n');
    const items = await checkAcceptance(
      [
        { text: 'done', verify: 'test -f done.txt && echo found it' },
        { text: 'says fix', verify: 'echo looking >&2; exit 3' },
        { text: 'quick', verify: 'sleep 30' },
        { text: 'tool', verify: 'no-such-tool-pak2 --check' },
        { text: 'nice' },
      ],
      { cwd: dir, env: { PATH: process.env.PATH }, timeoutSeconds: 1, runDir: dir },
    );
    expect(items).toEqual([
      { item: 'done', verified: true, criterion: true, result: 'verified', verify: 'test -f done.txt && echo found it', evidence: expect.stringMatching(/^`test -f done\.txt && echo found it` exited 0 in \d+\.\d s: found it$/) },
      { item: 'says fix', verified: false, criterion: true, result: 'failed', verify: 'echo looking >&2; exit 3', evidence: '`echo looking >&2; exit 3` exited 3: looking (output: acceptance/2/verify.*.log)' },
      { item: 'quick', verified: false, criterion: true, result: 'failed', verify: 'sleep 30', evidence: '`sleep 30` ran past its limit of 1 s and was stopped (output: acceptance/3/verify.*.log)' },
      { item: 'tool', verified: false, criterion: true, result: 'failed', verify: 'no-such-tool-pak2 --check', evidence: expect.stringMatching(/^`no-such-tool-pak2 --check` could not run \(exit 127\): .*not found/) },
      { item: 'nice', verified: false, criterion: true, result: 'unverified', evidence: expect.stringMatching(/^not verified: the criterion has no verify command/) },
    ]);
    expect(fs.readFileSync(path.join(dir, 'acceptance', '2', 'verify.stderr.log'), 'utf8')).toBe('looking\n');
  });
});

describe('acceptance criteria on a local run', () => {
  it('a successful run checks them in its working directory and records each with its evidence; the agent was told them', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    // The agent's work, as if it had done it: done.txt, and no changelog.
    fs.writeFileSync(path.join(garden.paths.gardenRoot, 'done.txt'), 'yes\n');
    const { run, goal } = await runGoal(garden, 'success');
    expect(run.status).toBe('success');
    expect(goal.closed_reason).toBe('success');
    expect(run.acceptance?.map((a) => [a.item, a.result, a.verified])).toEqual([
      ['the agent left done.txt', 'verified', true],
      ['the changelog names the fix', 'failed', false],
      ['the code reads well', 'unverified', false],
    ]);
    expect(run.acceptance?.[1]?.evidence).toMatch(/^`grep -q fix CHANGELOG\.md` exited 2: grep: CHANGELOG\.md: .* \(output: acceptance\/2\/verify\.\*\.log\)$/);
    expect(fs.readFileSync(path.join(garden.paths.runsDir, run.id, 'prompt.md'), 'utf8')).toMatch(/# Acceptance Criteria\n\n.*\n\n1\. the agent left done\.txt\n/);
  });

  it('a failed run leaves them unverified, saying how it ended: nothing is claimed', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    fs.writeFileSync(path.join(garden.paths.gardenRoot, 'done.txt'), 'yes\n');
    const { run } = await runGoal(garden, 'exit3');
    expect(run).toMatchObject({ status: 'failure', failure_reason: 'nonzero_exit' });
    expect(run.acceptance).toEqual(CRITERIA.map((c) => ({ item: c.text, verified: false, criterion: true, result: 'unverified', ...(c.verify ? { verify: c.verify } : {}), evidence: 'not checked: the run ended failure (nonzero_exit) before its criteria were checked' })));
    expect(fs.existsSync(path.join(garden.paths.runsDir, run.id, 'acceptance'))).toBe(false);
  });

  it('a run closed from its stream (a stop with no coordinator, a reclaim) records them unverified, saying by whom', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'do it', driver: 'success', acceptance_criteria: CRITERIA });
    await transitionGoal(garden.paths, goal.id, 'dispatched');
    const opened = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'success', model: 'scripted' });
    await transitionGoal(garden.paths, goal.id, 'running');
    const closed = await closeFromStream(garden, opened, goal.type, { status: 'killed', failureReason: 'operator_stopped', errorText: 'stopped', by: 'operator' });
    expect(closed?.acceptance?.map((a) => [a.result, a.evidence])).toEqual(CRITERIA.map(() => ['unverified', 'not checked: the run was closed killed (operator_stopped) from its stream by the operator, not by the run that would have checked them']));
  });

  it('pak2 retry keeps the criteria: the new attempt answers to the same ones', async () => {
    const garden = await makeTestGarden();
    cleanups.push(garden.cleanup);
    const { goal } = await runGoal(garden, 'exit3');
    expect(goal.closed_reason).toBe('failure');
    const retried = await retryGoal(garden, goal.id);
    expect((await readGoal(garden.paths, retried.goal.id)).acceptance_criteria).toEqual(CRITERIA);
  });
});
