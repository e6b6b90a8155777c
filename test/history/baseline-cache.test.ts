/**
 * The worktree baseline asks git where the garden root sits in its work tree
 * once, and again only when what git's discovery looks at has changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { captureWorktreeBaseline } from '../../source/history/index.js';
import { disableSpans, enableSpans, spanTotals } from '../../source/timing.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';
import { git } from './support.js';

afterEach(() => {
  disableSpans();
  cleanupFixtures();
});

/** How many git commands of each kind ran since the last call (source/timing.ts counts them). */
function gitCommands(): Record<string, number> {
  const counts = Object.fromEntries(Object.entries(spanTotals()).filter(([name]) => name.startsWith('git ')).map(([name, s]) => [name, s.count]));
  enableSpans();
  return counts;
}

describe('the worktree baseline of a garden in a subdirectory of its repository', () => {
  it('reads the prefix once; a repository made inside the garden later is found, and its paths are the garden\'s', async () => {
    const base = makeTempDir({ 'outside.txt': 'x\n', 'garden/src/app.ts': 'a\n' }, 'pak2-sub-');
    git(base, 'init', '-q');
    git(base, 'add', '-A');
    git(base, 'commit', '-qm', 'init');
    const root = path.join(base, 'garden');
    fs.writeFileSync(path.join(root, 'src/app.ts'), 'b\n');
    enableSpans();
    const expected = { tracked_dirty_paths: ['src/app.ts'], untracked_dirty_count: 0, untracked_dirty_roots: [] };
    expect(await captureWorktreeBaseline(root, path.join(root, '.runtime'))).toEqual(expected);
    expect(gitCommands()).toEqual({ 'git rev-parse': 1, 'git status': 1 });
    expect(await captureWorktreeBaseline(root, path.join(root, '.runtime'))).toEqual(expected);
    expect(gitCommands()).toEqual({ 'git status': 1 });

    // The garden becomes a repository of its own: everything in it is untracked there.
    git(root, 'init', '-q');
    expect(await captureWorktreeBaseline(root, path.join(root, '.runtime'))).toEqual({ tracked_dirty_paths: [], untracked_dirty_count: 1, untracked_dirty_roots: ['src'] });
    expect(gitCommands()).toEqual({ 'git rev-parse': 1, 'git status': 1 });
    // And when it is gone again, the outer repository's view comes back.
    fs.rmSync(path.join(root, '.git'), { recursive: true });
    expect(await captureWorktreeBaseline(root, path.join(root, '.runtime'))).toEqual(expected);
  });
});
