/**
 * An unexpected exception inside one capture step ends in that step's own
 * outcome code (seed 000: each code only from its real cause), never in
 * `record_write_failed`. The real git runner never throws, so the exception
 * is injected through `CaptureOptions.runGit`, which delegates to the real
 * runner except at the chosen command.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeHistoryOutcome } from '../../source/contracts/index.js';
import { captureRuntimeHistory, historyRecordFile, runGit, type GitRunner } from '../../source/history/index.js';
import { readRun } from '../../source/store/index.js';
import { cleanupFixtures } from '../helpers/fixtures.js';
import { closeOneRun, git, makeGitGarden, recordOutcomes } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

/** A runner that throws `injected <step>` at the first command `when` matches, and runs every other command for real. */
function throwingAt(step: string, when: (args: string[], env: Record<string, string>) => boolean): GitRunner {
  return (args, cwd, env) => {
    if (when(args, env)) throw new Error(`injected ${step}`);
    return runGit(args, cwd, env);
  };
}

/** True for a command on the runtime repo (its GIT_DIR is pinned), false for an authored probe. */
const runtime = (env: Record<string, string>) => env.GIT_DIR !== undefined;

const STEPS: Array<{ outcome: RuntimeHistoryOutcome; when: (args: string[], env: Record<string, string>) => boolean; recordWritten: boolean }> = [
  { outcome: 'authored_repo_unavailable', when: (args, env) => !runtime(env) && args.includes('status'), recordWritten: false },
  { outcome: 'runtime_repo_init_failed', when: (args, env) => runtime(env) && args.includes('--absolute-git-dir'), recordWritten: true },
  { outcome: 'runtime_repo_stage_failed', when: (args, env) => runtime(env) && args[0] === 'add', recordWritten: true },
  { outcome: 'runtime_repo_diff_failed', when: (args, env) => runtime(env) && args[0] === 'diff', recordWritten: true },
  { outcome: 'runtime_repo_commit_failed', when: (args, env) => runtime(env) && args[0] === 'commit', recordWritten: true },
  { outcome: 'runtime_repo_head_unavailable', when: (args, env) => runtime(env) && args.join(' ') === 'rev-parse --verify HEAD', recordWritten: true },
];

describe('an unexpected exception in a capture step ends in that step’s outcome code', () => {
  it.each(STEPS.map((s) => [s.outcome, s] as const))('%s: the step’s own code, the exception’s message in the detail, not record_write_failed', async (outcome, step) => {
    const garden = await makeGitGarden();
    const rec = recordOutcomes();
    restore = rec.restore;
    const runId = await closeOneRun(garden);
    expect(rec.results.map((r) => r.result.outcome)).toEqual(['committed']);
    // Something new in the runtime tree, so the capture reaches the commit and the HEAD read-back.
    fs.writeFileSync(path.join(garden.paths.runtimeRoot, 'runs', runId, 'note.txt'), 'new since the last capture\n');
    fs.rmSync(historyRecordFile(garden.paths, runId));

    const result = await captureRuntimeHistory(garden.paths, await readRun(garden.paths, runId), { runGit: throwingAt(outcome, step.when) });

    expect(result.outcome).toBe(outcome);
    expect(result.outcome).not.toBe('record_write_failed');
    expect(result.detail).toBe(`unexpected: injected ${outcome}`);
    expect(fs.existsSync(historyRecordFile(garden.paths, runId))).toBe(step.recordWritten);
    if (step.recordWritten) expect(result.record).toBe(historyRecordFile(garden.paths, runId));
    else expect(result.record).toBeUndefined();
    if (outcome === 'runtime_repo_head_unavailable') {
      // The commit itself happened before the read-back threw.
      expect(git(garden.paths.runtimeRoot, 'rev-list', '--count', 'HEAD').trim()).toBe('2');
    }
  });

  it('without an injected exception the same runner seam commits (the wrapper itself is transparent)', async () => {
    const garden = await makeGitGarden();
    const rec = recordOutcomes();
    restore = rec.restore;
    const runId = await closeOneRun(garden);
    fs.writeFileSync(path.join(garden.paths.runtimeRoot, 'runs', runId, 'note.txt'), 'new\n');
    const result = await captureRuntimeHistory(garden.paths, await readRun(garden.paths, runId), { runGit: throwingAt('never', () => false) });
    expect(result.outcome).toBe('committed');
  });
});
