/**
 * Captures that wait together commit together (docs/runtime-history/level2.md,
 * "Closes that wait together"), and a runtime repo found ready is not asked
 * again until what was checked changes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { captureRuntimeHistory, historyCommitsDir, historyRecordFile, runGit, runtimeCommits, RUNTIME_IDENTITY, type GitRunner } from '../../source/history/index.js';
import { readRun } from '../../source/store/index.js';
import { cleanupFixtures } from '../helpers/fixtures.js';
import { closeOneRun, git, makeGitGarden, recordOutcomes } from './support.js';

let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  cleanupFixtures();
});

/** Closes `n` runs whose captures cannot write their records (history/commits is a file meanwhile): closed, not yet in the history. */
async function closedWithoutHistory(garden: Awaited<ReturnType<typeof makeGitGarden>>, n: number): Promise<string[]> {
  const dir = historyCommitsDir(garden.paths);
  fs.renameSync(dir, `${dir}.aside`);
  fs.writeFileSync(dir, 'not a directory\n');
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) ids.push(await closeOneRun(garden, `later ${i}`));
  fs.rmSync(dir);
  fs.renameSync(`${dir}.aside`, dir);
  return ids;
}

describe('runtime-history captures of one runtime root', () => {
  it('captures that waited behind another run as one: one probe, each run its own record, one commit adding them all, each result naming it', async () => {
    const garden = await makeGitGarden();
    const rec = recordOutcomes();
    restore = rec.restore;
    await closeOneRun(garden, 'first');
    const [a, b, c] = await closedWithoutHistory(garden, 3);
    const rt = garden.paths.runtimeRoot;
    const before = Number(git(rt, 'rev-list', '--count', 'HEAD').trim());

    // The first capture is held at its first git command until the other two have asked.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const probes: string[] = [];
    const gated: GitRunner = async (args, cwd, env) => {
      if (env.GIT_DIR === undefined && args.includes('status')) probes.push(args[0]!);
      await gate;
      return runGit(args, cwd, env);
    };
    const first = captureRuntimeHistory(garden.paths, await readRun(garden.paths, a!), { runGit: gated });
    const waited = [captureRuntimeHistory(garden.paths, await readRun(garden.paths, b!), { runGit: gated }), captureRuntimeHistory(garden.paths, await readRun(garden.paths, c!), { runGit: gated })];
    open();
    const [ra, rb, rc] = await Promise.all([first, ...waited]);

    expect([ra!.outcome, rb!.outcome, rc!.outcome]).toEqual(['committed', 'committed', 'committed']);
    expect(ra!.commit).not.toBe(rb!.commit);
    expect(rc!.commit).toBe(rb!.commit);
    expect([ra!.record, rb!.record, rc!.record]).toEqual([a, b, c].map((id) => historyRecordFile(garden.paths, id!)));
    // Two commits: the first run's, then one for the two that waited (one authored probe each).
    expect(Number(git(rt, 'rev-list', '--count', 'HEAD').trim())).toBe(before + 2);
    expect(probes).toHaveLength(2);
    expect(git(rt, 'rev-parse', 'HEAD').trim()).toBe(rb!.commit);
    expect(git(rt, 'log', '-1', '--format=%s').trim()).toBe(`pak2 runs closed: ${b} (success), ${c} (success)`);
    expect(git(rt, 'log', '-1', '--format=%(trailers:key=Run,valueonly)').trim().split('\n')).toEqual([b, c]);
    expect(git(rt, 'log', '-1', '--format=%(trailers:key=Authored-Head,valueonly)').trim()).toBe(git(garden.root, 'rev-parse', 'HEAD').trim());
    // `pak2 history` finds each record's commit: the one that added it.
    const commits = await runtimeCommits(garden.paths);
    expect([a, b, c].map((id) => commits.get(id!)?.commit)).toEqual([ra!.commit, rb!.commit, rc!.commit]);
    expect(git(rt, 'show', '--name-only', '--format=', rb!.commit!).split('\n')).toEqual(expect.arrayContaining([`history/commits/${b}.json`, `history/commits/${c}.json`]));
  });

  it('a runtime repo found ready is checked again once what was checked changes: an identity removed between closes is set again', async () => {
    const garden = await makeGitGarden();
    const rec = recordOutcomes();
    restore = rec.restore;
    await closeOneRun(garden, 'one');
    const rt = garden.paths.runtimeRoot;
    git(rt, 'config', '--local', '--unset', 'user.email');
    await closeOneRun(garden, 'two');
    expect(rec.results.map((r) => r.result.outcome)).toEqual(['committed', 'committed']);
    expect(git(rt, 'config', '--local', 'user.email').trim()).toBe(RUNTIME_IDENTITY.email);
    // A .git replaced by a gitfile between closes is refused, not used.
    fs.rmSync(path.join(rt, '.git'), { recursive: true });
    fs.writeFileSync(path.join(rt, '.git'), `gitdir: ${path.join(garden.root, '.git')}\n`);
    await closeOneRun(garden, 'three');
    expect(rec.results[2]!.result.outcome).toBe('runtime_repo_init_failed');
  });

  it('the capture after the first runs no rev-parse or config of its own on a repo it found ready', async () => {
    const garden = await makeGitGarden();
    restore = recordOutcomes().restore;
    await closeOneRun(garden, 'makes the runtime repo');
    const [first, second] = await closedWithoutHistory(garden, 2);
    const asked: string[] = [];
    const counting: GitRunner = (args, cwd, env) => {
      if (env.GIT_DIR !== undefined) asked.push(args.filter((a) => !a.startsWith('-'))[0]!);
      return runGit(args, cwd, env);
    };
    expect((await captureRuntimeHistory(garden.paths, await readRun(garden.paths, first!), { runGit: counting })).outcome).toBe('committed');
    // A runner that never saw this repo checks it (where its git dir is, its identity) and drops webhooks/ from its index.
    expect(asked).toEqual(['rev-parse', 'config', 'rm', 'add', 'diff', 'commit', 'rev-parse']);
    asked.length = 0;
    expect((await captureRuntimeHistory(garden.paths, await readRun(garden.paths, second!), { runGit: counting })).outcome).toBe('committed');
    expect(asked).toEqual(['add', 'diff', 'commit', 'rev-parse']);
  });
});
