import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { authoredGitEnv, describeFailure, runGit } from '../../source/history/index.js';
import { cleanupFixtures, makeTempDir } from '../helpers/fixtures.js';

afterEach(() => cleanupFixtures());

describe('runGit', () => {
  it('gives stdout of a success, the exit code and stderr of a failure, exit 1 of a quiet diff included', async () => {
    const dir = makeTempDir({ 'a.txt': 'a\n' }, 'pak2-rungit-');
    const env = authoredGitEnv(process.env);
    expect(await runGit(['init', '-q'], dir, env)).toMatchObject({ ok: true, exitCode: 0 });
    expect(await runGit(['status', '--porcelain'], dir, env)).toMatchObject({ ok: true, stdout: '?? a.txt\n' });
    expect(await runGit(['add', 'a.txt'], dir, env)).toMatchObject({ ok: true, stdout: '' });
    expect(await runGit(['diff', '--cached', '--quiet', '--exit-code'], dir, env)).toMatchObject({ ok: false, exitCode: 1 });
    const bad = await runGit(['rev-parse', '--verify', 'HEAD'], dir, env);
    expect(bad).toMatchObject({ ok: false, exitCode: 128 });
    expect(describeFailure(['rev-parse', '--verify', 'HEAD'], bad)).toBe('git rev-parse: Needed a single revision');
  });

  it('never throws: no git on PATH, a missing directory and a GIT_* variable pak2 does not set are spawn errors', async () => {
    const dir = makeTempDir({}, 'pak2-rungit-');
    const noGit = await runGit(['status'], dir, { PATH: makeTempDir({}, 'pak2-nogit-') });
    expect(noGit).toMatchObject({ ok: false, exitCode: -1, spawnError: expect.stringMatching(/ENOENT/) });
    expect(await runGit(['status'], path.join(dir, 'gone'), authoredGitEnv(process.env))).toMatchObject({ ok: false, spawnError: expect.stringContaining('gone') });
    const hooked = await runGit(['status'], dir, { ...authoredGitEnv(process.env), GIT_EDITOR: 'touch owned' });
    expect(hooked).toMatchObject({ ok: false, spawnError: expect.stringContaining('GIT_EDITOR') });
    expect(fs.existsSync(path.join(dir, 'owned'))).toBe(false);
  });
});
