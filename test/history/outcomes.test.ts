/**
 * Each of the eleven runtime-history outcome codes (seed 000 / 002), produced
 * through a real cause: a broken or missing repository, a file where a
 * directory belongs, a stale lock, a PATH without git, a failing git binary.
 * Nothing here mocks the helper.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RUNTIME_HISTORY_OUTCOMES, validateRuntimeHistoryRecord } from '../../source/contracts/index.js';
import { captureRuntimeHistory, historyNotice, historyRecordFile, RUNTIME_IDENTITY, type RuntimeHistoryResult } from '../../source/history/index.js';
import { closeRun, readRun } from '../../source/store/index.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';
import { closeOneRun, git, gitEntriesUnder, gitWrapper, makeGitGarden, recordOutcomes, repoState } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

/** A live process holding `file` open (as a running git holds its lock); created if missing. */
function holdOpen(file: string): ChildProcess {
  const fd = fs.openSync(file, 'a');
  const child = spawn('sleep', ['60'], { stdio: ['ignore', fd, 'ignore'] });
  fs.closeSync(fd);
  return child;
}

function outcomes() {
  restore?.();
  const rec = recordOutcomes();
  restore = rec.restore;
  return rec.results;
}

/** Closes one run and returns what closeRun reported for it. */
async function closeAndReport(garden: Awaited<ReturnType<typeof makeGitGarden>>): Promise<{ runId: string; result: RuntimeHistoryResult }> {
  const results = outcomes();
  const runId = await closeOneRun(garden);
  expect(results).toHaveLength(1);
  expect(results[0]!.run).toBe(runId);
  // Whatever the outcome, the run stays closed with its terminal record.
  expect((await readRun(garden.paths, runId)).status).toBe('success');
  return { runId, result: results[0]!.result };
}

const seen = new Set<string>();
function saw(result: RuntimeHistoryResult): RuntimeHistoryResult {
  seen.add(result.outcome);
  return result;
}

describe('runtime history outcome codes, each from a real cause', () => {
  it('committed: record written, runtime repo created with its own identity, runtime tree committed, authored repo untouched', async () => {
    const garden = await makeGitGarden();
    const before = repoState(garden.root);
    const { runId, result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('committed');
    expect(result.commit).toMatch(/^[0-9a-f]{40}$/);

    const rt = garden.paths.runtimeRoot;
    expect(git(rt, 'rev-parse', 'HEAD').trim()).toBe(result.commit);
    expect(git(rt, 'rev-parse', '--absolute-git-dir').trim()).toBe(path.join(fs.realpathSync(rt), '.git'));
    expect(git(rt, 'config', '--local', 'user.name').trim()).toBe(RUNTIME_IDENTITY.name);
    expect(git(rt, 'config', '--local', 'user.email').trim()).toBe(RUNTIME_IDENTITY.email);
    expect(fs.readFileSync(path.join(rt, '.git/info/exclude'), 'utf8')).toContain('*.lock');
    const tracked = git(rt, 'ls-files').split('\n').filter(Boolean);
    expect(tracked).toEqual(expect.arrayContaining([`runs/${runId}/meta.json`, 'events/coordinator.jsonl', `history/commits/${runId}.json`]));
    expect(git(rt, 'status', '--porcelain')).toBe('');

    const record = JSON.parse(fs.readFileSync(historyRecordFile(garden.paths, runId), 'utf8'));
    expect(validateRuntimeHistoryRecord(record)).toEqual([]);
    expect(record).toMatchObject({ run_id: runId, status: 'success', authored_head: git(garden.root, 'rev-parse', 'HEAD').trim(), authored_tree: 'clean', runtime_root: '.runtime' });
    expect(git(rt, 'log', '-1', '--format=%s%n%(trailers:key=Authored-Head,valueonly)%(trailers:key=Authored-Tree,valueonly)').trim().split('\n')).toEqual([
      `pak2 run ${runId} closed: success`,
      record.authored_head,
      'clean',
    ]);
    // The record matches the terminal meta.json, which was not rewritten.
    const meta = await readRun(garden.paths, runId);
    expect(record.completed_at).toBe(meta.completed_at);
    expect(meta).not.toHaveProperty('runtime_history');
    expect(repoState(garden.root)).toEqual(before);
  });

  it('committed: lock files and lock directories stay out of the runtime commit; a dirty authored tree is recorded as dirty', async () => {
    const garden = await makeGitGarden();
    const rt = garden.paths.runtimeRoot;
    fs.mkdirSync(path.join(rt, 'coordinator.lock'), { recursive: true });
    fs.writeFileSync(path.join(rt, 'coordinator.lock', 'x'), 'held');
    fs.mkdirSync(path.join(rt, 'goals'), { recursive: true });
    fs.writeFileSync(path.join(rt, 'goals', '1-x.json.lock'), '');
    fs.writeFileSync(path.join(garden.root, 'MOTIVATION.md'), '# changed by the operator\n');
    const { runId, result } = await closeAndReport(garden);
    expect(result.outcome).toBe('committed');
    const tracked = git(rt, 'ls-files');
    expect(tracked).not.toMatch(/\.lock/);
    expect(JSON.parse(fs.readFileSync(historyRecordFile(garden.paths, runId), 'utf8')).authored_tree).toBe('dirty');
  });

  it('runtime_root_not_split: a runtime root that resolves to the garden root through a symlink attempts nothing', async () => {
    // `rt` is a link back to the garden root: split by name, not in fact.
    const garden = await makeGitGarden({
      toml: '[runtime]\nroot = "rt"\n',
      // pak2's runtime state in the garden root, all of it ignored (its caches, .cache/, included).
      files: { '.gitignore': 'rt\nruns/\ngoals/\nevents/\nplants/\n.cache/\n' },
      before: (root) => fs.symlinkSync('.', path.join(root, 'rt')),
    });
    const before = repoState(garden.root);
    const { result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('runtime_root_not_split');
    expect(historyNotice('x-r1', result)).toBeUndefined();
    expect(fs.existsSync(path.join(garden.root, 'history'))).toBe(false);
    expect(gitEntriesUnder(garden.root)).toEqual(['.git']);
    expect(repoState(garden.root)).toEqual(before);
  });

  it('runtime_root_outside_garden: [runtime].root = "../elsewhere" stops before any authored probe or write', async () => {
    const garden = await makeGitGarden({ toml: '[runtime]\nroot = "../elsewhere"\n', subdir: 'garden' });
    const elsewhere = path.join(garden.base, 'elsewhere');
    const { runId, result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('runtime_root_outside_garden');
    expect(result.detail).toContain('not under the garden root');
    expect(fs.existsSync(path.join(elsewhere, 'runs', runId, 'meta.json'))).toBe(true);
    expect(fs.existsSync(path.join(elsewhere, 'history'))).toBe(false);
    expect(gitEntriesUnder(elsewhere)).toEqual([]);
  });

  it('runtime_root_outside_garden: a runtime root that is a symlink leading out of the garden', async () => {
    const outside = makeTempDir({}, 'pak2-outside-');
    const garden = await makeGitGarden({ toml: '[runtime]\nroot = "state"\n', files: { '.gitignore': 'state\nplants/\n' }, before: (root) => fs.symlinkSync(outside, path.join(root, 'state')) });
    const { result } = await closeAndReport(garden);
    expect(result.outcome).toBe('runtime_root_outside_garden');
    expect(gitEntriesUnder(outside)).toEqual([]);
  });

  it('authored_repo_unavailable: the garden root is not in a git repository', async () => {
    const garden = await makeGitGarden({ init: false });
    const { runId, result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('authored_repo_unavailable');
    expect(result.detail).toMatch(/not a git repository/);
    expect(fs.existsSync(historyRecordFile(garden.paths, runId))).toBe(false);
    expect(gitEntriesUnder(garden.base)).toEqual([]);
    // One short stderr line.
    const line = historyNotice(runId, result)!;
    expect(line).toMatch(new RegExp(`^pak2: runtime history ${runId}: authored_repo_unavailable \\(git rev-parse: not a git repository`));
    expect(line).not.toContain('\n');
  });

  it('authored_repo_unavailable: the authored repo has no commit yet (unborn HEAD)', async () => {
    const garden = await makeGitGarden({ commit: false });
    const { runId, result } = await closeAndReport(garden);
    expect(result.outcome).toBe('authored_repo_unavailable');
    expect(fs.existsSync(historyRecordFile(garden.paths, runId))).toBe(false);
    expect(gitEntriesUnder(garden.root)).toEqual(['.git']);
  });

  it('authored_repo_unavailable: no git binary on PATH (the authored probe is the first git command)', async () => {
    const garden = await makeGitGarden();
    const emptyBin = makeTempDir({}, 'pak2-nogit-');
    const results = outcomes();
    const saved = process.env.PATH;
    process.env.PATH = emptyBin;
    let runId: string;
    try {
      runId = await closeOneRun(garden);
    } finally {
      process.env.PATH = saved;
    }
    const result = results[0]!.result;
    expect(result.outcome).toBe('authored_repo_unavailable');
    expect(result.detail).toMatch(/ENOENT/);
    expect((await readRun(garden.paths, runId)).status).toBe('success');
    expect(fs.existsSync(path.join(garden.paths.runtimeRoot, '.git'))).toBe(false);
  });

  it('record_write_failed: history/commits is a file, so the record cannot be written and no commit follows', async () => {
    const garden = await makeGitGarden();
    fs.mkdirSync(garden.paths.historyDir, { recursive: true });
    fs.writeFileSync(path.join(garden.paths.historyDir, 'commits'), 'not a directory\n');
    const { result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('record_write_failed');
    expect(result.detail).toContain(path.join('history', 'commits'));
    expect(fs.existsSync(path.join(garden.paths.runtimeRoot, '.git'))).toBe(false);
  });

  it('runtime_repo_init_failed: <runtime-root>/.git is a gitfile pointing at the authored repo; the authored repo is left alone', async () => {
    const garden = await makeGitGarden();
    fs.mkdirSync(garden.paths.runtimeRoot, { recursive: true });
    fs.writeFileSync(path.join(garden.paths.runtimeRoot, '.git'), `gitdir: ${path.join(garden.root, '.git')}\n`);
    const before = repoState(garden.root);
    const { runId, result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('runtime_repo_init_failed');
    expect(result.detail).toContain('not a directory');
    // The provenance record was written first (seed: "the provenance record was written, but …").
    expect(fs.existsSync(historyRecordFile(garden.paths, runId))).toBe(true);
    expect(repoState(garden.root)).toEqual(before);
  });

  it('runtime_repo_init_failed: <runtime-root>/.git is a symlink to the authored .git', async () => {
    const garden = await makeGitGarden();
    fs.mkdirSync(garden.paths.runtimeRoot, { recursive: true });
    fs.symlinkSync(path.join(garden.root, '.git'), path.join(garden.paths.runtimeRoot, '.git'));
    const before = repoState(garden.root);
    const { result } = await closeAndReport(garden);
    expect(result.outcome).toBe('runtime_repo_init_failed');
    expect(result.detail).toContain('symbolic link');
    expect(repoState(garden.root)).toEqual(before);
  });

  it('runtime_repo_init_failed: <runtime-root>/.git is a broken directory (not a repository); it is not repaired or replaced', async () => {
    const garden = await makeGitGarden();
    const gitDir = path.join(garden.paths.runtimeRoot, '.git');
    fs.mkdirSync(gitDir, { recursive: true });
    fs.writeFileSync(path.join(gitDir, 'junk'), 'not a repository\n');
    const before = repoState(garden.root);
    const { result } = await closeAndReport(garden);
    expect(result.outcome).toBe('runtime_repo_init_failed');
    expect(fs.readdirSync(gitDir)).toEqual(['junk']);
    expect(repoState(garden.root)).toEqual(before);
  });

  it('runtime_repo_stage_failed: an index.lock a live process holds; the detail names the holder and what to do', async () => {
    const garden = await makeGitGarden();
    expect((await closeAndReport(garden)).result.outcome).toBe('committed');
    const rt = garden.paths.runtimeRoot;
    const head = git(rt, 'rev-parse', 'HEAD');
    const lock = path.join(rt, '.git', 'index.lock');
    const holder = holdOpen(lock);
    try {
      const { runId, result } = await closeAndReport(garden);
      saw(result);
      expect(result.outcome).toBe('runtime_repo_stage_failed');
      expect(result.detail).toContain(`${lock} is held by pid ${holder.pid}`);
      expect(result.detail).toContain('it goes when that process ends');
      expect(fs.existsSync(historyRecordFile(garden.paths, runId))).toBe(true);
      expect(git(rt, 'rev-parse', 'HEAD')).toBe(head);
      // A lock a live process holds is never removed.
      expect(fs.existsSync(lock)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('committed: a stale index.lock a dead process left is recognised, removed and reported; every later close commits', async () => {
    const garden = await makeGitGarden();
    expect((await closeAndReport(garden)).result.outcome).toBe('committed');
    const rt = garden.paths.runtimeRoot;
    const lock = path.join(rt, '.git', 'index.lock');
    fs.writeFileSync(lock, '');
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(lock, old, old);
    const { result } = await closeAndReport(garden);
    expect(result).toMatchObject({ outcome: 'committed', cleared: [lock] });
    expect(historyNotice('r', result)).toContain('removed 1 stale git lock(s) a dead process left');
    expect(fs.existsSync(lock)).toBe(false);
    expect((await closeAndReport(garden)).result.outcome).toBe('committed');
  });

  it('no_runtime_changes: capturing the same closed run again with nothing new', async () => {
    const garden = await makeGitGarden();
    const { runId, result: first } = await closeAndReport(garden);
    expect(first.outcome).toBe('committed');
    const head = git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD');
    const again = saw(await captureRuntimeHistory(garden.paths, await readRun(garden.paths, runId)));
    expect(again.outcome).toBe('no_runtime_changes');
    expect(git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD')).toBe(head);
  });

  it('runtime_repo_diff_failed: the runtime HEAD tree object is missing, so the cached diff cannot run', async () => {
    const garden = await makeGitGarden();
    expect((await closeAndReport(garden)).result.outcome).toBe('committed');
    const rt = garden.paths.runtimeRoot;
    const tree = git(rt, 'rev-parse', 'HEAD^{tree}').trim();
    fs.rmSync(path.join(rt, '.git', 'objects', tree.slice(0, 2), tree.slice(2)));
    const { result } = await closeAndReport(garden);
    saw(result);
    expect(result.outcome).toBe('runtime_repo_diff_failed');
    expect(result.detail).toMatch(/^git diff: .*(bad tree|unable to read)/);
  });

  it('runtime_repo_diff_failed: a git binary whose diff fails', async () => {
    const garden = await makeGitGarden();
    const bin = gitWrapper('[ -n "$GIT_DIR" ] && [ "$1" = diff ]', 'simulated diff failure');
    const results = outcomes();
    const saved = process.env.PATH;
    process.env.PATH = `${bin}${path.delimiter}${saved}`;
    try {
      await closeOneRun(garden);
    } finally {
      process.env.PATH = saved;
    }
    expect(results[0]!.result).toMatchObject({ outcome: 'runtime_repo_diff_failed', detail: expect.stringContaining('simulated diff failure') });
  });

  it('runtime_repo_commit_failed: a branch ref lock a live process holds blocks the commit after staging found changes', async () => {
    const garden = await makeGitGarden();
    expect((await closeAndReport(garden)).result.outcome).toBe('committed');
    const rt = garden.paths.runtimeRoot;
    const branch = git(rt, 'symbolic-ref', 'HEAD').trim();
    const head = git(rt, 'rev-parse', 'HEAD');
    const holder = holdOpen(path.join(rt, '.git', `${branch}.lock`));
    try {
      const { result } = await closeAndReport(garden);
      saw(result);
      expect(result.outcome).toBe('runtime_repo_commit_failed');
      expect(result.detail).toMatch(/cannot lock ref/);
      expect(result.detail).toContain(`is held by pid ${holder.pid}`);
      expect(git(rt, 'rev-parse', 'HEAD')).toBe(head);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('runtime_repo_head_unavailable: a git binary that commits but cannot read the runtime HEAD back', async () => {
    const garden = await makeGitGarden();
    const bin = gitWrapper('[ -n "$GIT_DIR" ] && [ "$1" = rev-parse ] && [ "$2" = --verify ] && [ "$3" = HEAD ]', 'simulated unreadable HEAD');
    const results = outcomes();
    const saved = process.env.PATH;
    process.env.PATH = `${bin}${path.delimiter}${saved}`;
    try {
      await closeOneRun(garden);
    } finally {
      process.env.PATH = saved;
    }
    const result = saw(results[0]!.result);
    expect(result).toMatchObject({ outcome: 'runtime_repo_head_unavailable', detail: expect.stringContaining('simulated unreadable HEAD') });
    // The commit itself happened.
    expect(git(garden.paths.runtimeRoot, 'log', '--format=%s')).toMatch(/^pak2 run .* closed: success/);
  });

  it('reached all eleven outcome codes above (the legacy layout has its own test in legacy.test.ts)', () => {
    expect(RUNTIME_HISTORY_OUTCOMES).toHaveLength(11);
    expect([...RUNTIME_HISTORY_OUTCOMES].filter((code) => !seen.has(code))).toEqual([]);
  });
});

describe('the runtime repo is pinned to <runtime-root>/.git', () => {
  it('inherited GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE (as inside a git hook) never redirect it to the authored repo', async () => {
    const garden = await makeGitGarden();
    const before = repoState(garden.root);
    const results = outcomes();
    const saved = { ...process.env };
    Object.assign(process.env, { GIT_DIR: path.join(garden.root, '.git'), GIT_WORK_TREE: garden.root, GIT_INDEX_FILE: path.join(garden.root, '.git', 'index') });
    try {
      await closeOneRun(garden);
    } finally {
      for (const key of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']) {
        if (saved[key] === undefined) delete process.env[key];
        else process.env[key] = saved[key];
      }
    }
    expect(results[0]!.result.outcome).toBe('committed');
    expect(repoState(garden.root)).toEqual(before);
    expect(git(garden.paths.runtimeRoot, 'rev-parse', 'HEAD').trim()).toBe(results[0]!.result.commit);
  });

  it('a runtime repo deleted between closes is created afresh inside the runtime root, never found above it', async () => {
    const garden = await makeGitGarden();
    await closeAndReport(garden);
    fs.rmSync(path.join(garden.paths.runtimeRoot, '.git'), { recursive: true });
    const before = repoState(garden.root);
    const { result } = await closeAndReport(garden);
    expect(result.outcome).toBe('committed');
    expect(git(garden.paths.runtimeRoot, 'rev-list', '--count', 'HEAD').trim()).toBe('1');
    expect(repoState(garden.root)).toEqual(before);
  });

  it('a runtime root nested deeper than one level works the same', async () => {
    const garden = await makeGitGarden({ toml: '[runtime]\nroot = "var/pak2"\n', files: { '.gitignore': 'var/\nplants/\n' } });
    const { runId, result } = await closeAndReport(garden);
    expect(result.outcome).toBe('committed');
    expect(JSON.parse(fs.readFileSync(historyRecordFile(garden.paths, runId), 'utf8')).runtime_root).toBe('var/pak2');
    expect(gitEntriesUnder(garden.root)).toEqual(['.git', 'var/pak2/.git']);
  });

  it('two runs closing at once both land in the runtime history (captures are serialised)', async () => {
    const garden = await makeGitGarden();
    const results = outcomes();
    await Promise.all([closeOneRun(garden, 'one'), closeOneRun(garden, 'two')]);
    expect(results.map((r) => r.result.outcome)).toEqual(['committed', 'committed']);
    expect(git(garden.paths.runtimeRoot, 'rev-list', '--count', 'HEAD').trim()).toBe('2');
  });

  it('closing an already closed run still throws, and captures nothing more', async () => {
    const garden = await makeGitGarden();
    const { runId } = await closeAndReport(garden);
    const results = outcomes();
    await expect(closeRun(garden.paths, runId, 'spike', { status: 'failure', failureReason: 'agent_error', cost: { source: 'unknown' } })).rejects.toThrow(/already success/);
    expect(results).toEqual([]);
  });
});
