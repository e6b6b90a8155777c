/**
 * pak2's own git calls obey no hook and no fsmonitor of the repository
 * (issue 25, item 6): a worktree made, the run's work committed, merged,
 * verified and landed, the runtime history captured — and not one of the
 * repository's programs ran.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readLanding } from '../../source/store/index.js';
import { git, makeGitGarden, runUntil, submitWork } from './support.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('the repository’s hooks and fsmonitor', () => {
  it('never run inside pak2’s git calls, from dispatch to landing', async () => {
    const g = await makeGitGarden({ toml: '[merge]\nverify = "test -f src/feature.txt"\n' });
    cleanups.push(() => g.cleanup());
    const marker = path.join(g.root, '..', `${path.basename(g.root)}-ran.txt`);
    cleanups.push(() => fs.rmSync(marker, { force: true }));
    const program = (name: string) => `#!/bin/sh\necho ${name} >> ${JSON.stringify(marker)}\n`;
    const hooks = path.join(g.root, '.git', 'hooks');
    for (const hook of ['post-checkout', 'post-commit', 'post-merge', 'pre-commit', 'commit-msg', 'reference-transaction', 'post-rewrite', 'pre-auto-gc']) {
      fs.writeFileSync(path.join(hooks, hook), program(hook));
      fs.chmodSync(path.join(hooks, hook), 0o755);
    }
    const fsmonitor = path.join(g.root, '..', `${path.basename(g.root)}-fsmonitor.sh`);
    fs.writeFileSync(fsmonitor, program('fsmonitor'));
    fs.chmodSync(fsmonitor, 0o755);
    cleanups.push(() => fs.rmSync(fsmonitor, { force: true }));
    git(g.root, 'config', 'core.fsmonitor', fsmonitor);
    // The programs are live: git itself runs them (the test's own call, then the marker is cleared).
    git(g.root, 'status', '--porcelain');
    expect(fs.readFileSync(marker, 'utf8')).toContain('fsmonitor');
    fs.rmSync(marker);

    const goal = await submitWork(g, ['write src/feature.txt the feature']);
    await runUntil(g, [goal.id], undefined, 60_000, { ...process.env, GIT_AUTHOR_NAME: 'o', GIT_AUTHOR_EMAIL: 'o@l', GIT_COMMITTER_NAME: 'o', GIT_COMMITTER_EMAIL: 'o@l' });
    expect(await readLanding(g.paths, `${goal.id}-r1`)).toMatchObject({ state: 'landed', verify: { ok: true } });
    // (The agent ran no git of its own: whatever ran, pak2's calls ran it.)
    expect(fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : '').toBe('');
  });
});

