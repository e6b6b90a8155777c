import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const IDENTITY = { GIT_AUTHOR_NAME: 'op', GIT_AUTHOR_EMAIL: 'op@example.com', GIT_COMMITTER_NAME: 'op', GIT_COMMITTER_EMAIL: 'op@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...IDENTITY } }).trim();

/** The operator's own work in progress, as git sees it: unstaged and staged diffs, byte for byte, and the files themselves. */
function operatorState(dir: string, files: string[]): { unstaged: string; staged: string; bytes: string[] } {
  return {
    unstaged: git(dir, 'diff', '--binary', '--', ...files),
    staged: git(dir, 'diff', '--cached', '--binary', '--', ...files),
    bytes: files.map((f) => fs.readFileSync(path.join(dir, f)).toString('base64')),
  };
}

/** A commit of the operator's, then a dirty tracked file and a staged new file of theirs. */
function operatorWork(dir: string): string[] {
  fs.writeFileSync(path.join(dir, 'app.js'), 'console.log(1);\n');
  git(dir, 'add', 'app.js');
  git(dir, 'commit', '-q', '-m', 'the operator\'s first commit');
  fs.writeFileSync(path.join(dir, 'app.js'), 'console.log(2); // not committed\n');
  fs.writeFileSync(path.join(dir, 'staged.js'), 'export const staged = true;\n');
  git(dir, 'add', 'staged.js');
  return ['app.js', 'staged.js'];
}

async function gitGarden(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-genesis-git-'));
  dirs.push(dir);
  git(dir, 'init', '-q', '.');
  expect((await runCli(['init', dir, '--driver', 'command'])).code).toBe(0);
  const toml = path.join(dir, 'PAK2.toml');
  fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('# command = ["node", "tools/my-agent.mjs"]', 'command = "true"'));
  return dir;
}

describe('genesis in a garden that is a git repo', () => {
  it('commits the commissioned gardener and the untracked CHARTER.md, nothing else; a second genesis commits nothing', async () => {
    const dir = await gitGarden();
    fs.writeFileSync(path.join(dir, 'unrelated.txt'), 'operator work in progress\n');
    const first = await runCli(['genesis', '--garden', dir]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/committed CHARTER\.md, plants\/gardener\/.* as [0-9a-f]{12}/);
    expect(git(dir, 'log', '--format=%s')).toBe('pak2 genesis: commission the gardener');
    const committed = git(dir, 'show', '--name-only', '--format=', 'HEAD').split('\n').sort();
    expect(committed).toEqual(['CHARTER.md', 'plants/gardener/knowledge/pak2-garden-layout.md', 'plants/gardener/meta.json', 'plants/gardener/skills/reporting.md']);
    expect(git(dir, 'status', '--porcelain', '--', 'unrelated.txt')).toBe('?? unrelated.txt');
    const second = await runCli(['genesis', '--garden', dir]);
    expect(second.stdout.trim()).toBe(`genesis: nothing to do; ${dir} is already set up`);
    expect(git(dir, 'rev-list', '--count', 'HEAD')).toBe('1');
  });

  it('a garden that is not a git repo gets no commit and no git directory', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-genesis-plain-'));
    dirs.push(dir);
    const root = path.join(dir, 'g');
    await runCli(['init', root, '--driver', 'command']);
    const toml = path.join(root, 'PAK2.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('# command = ["node", "tools/my-agent.mjs"]', 'command = "true"'));
    const r = await runCli(['genesis', '--garden', root]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('committed');
    expect(fs.existsSync(path.join(root, '.git'))).toBe(false);
  });
});

describe('genesis commits only its own files', () => {
  it("leaves the operator's dirty and staged files byte-identical (and staged), and runs no pre-commit hook", async () => {
    const dir = await gitGarden();
    const files = operatorWork(dir);
    // A hook that would rewrite the operator's file and refuse the commit.
    fs.writeFileSync(path.join(dir, '.git/hooks/pre-commit'), '#!/bin/sh\necho hooked >> app.js\nexit 1\n', { mode: 0o755 });
    const before = operatorState(dir, files);
    const r = await runCli(['genesis', '--garden', dir]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(git(dir, 'log', '-1', '--format=%s')).toBe('pak2 genesis: commission the gardener');
    const committed = git(dir, 'show', '--name-only', '--format=', 'HEAD').split('\n');
    expect(committed.every((p) => p === 'CHARTER.md' || p.startsWith('plants/gardener/'))).toBe(true);
    expect(operatorState(dir, files)).toEqual(before);
    expect(git(dir, 'diff', '--name-only')).toBe('app.js');
    expect(git(dir, 'diff', '--cached', '--name-only')).toBe('staged.js');
  });

  it("in an adopted repository, commits PAK2.toml and .pak2/ but not a .pak2 file the operator staged", async () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-genesis-adopt-')));
    dirs.push(dir);
    git(dir, 'init', '-q', '.');
    const files = operatorWork(dir);
    expect((await runCli(['init', '.', '--driver', 'command'], { cwd: dir })).code).toBe(0);
    const toml = path.join(dir, 'PAK2.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('# command = ["node", "tools/my-agent.mjs"]', 'command = "true"'));
    fs.writeFileSync(path.join(dir, '.pak2/CHARTER.md'), '# Charter\n\nThe operator is still writing this.\n');
    git(dir, 'add', '.pak2/CHARTER.md');
    const before = operatorState(dir, [...files, '.pak2/CHARTER.md']);
    const r = await runCli(['genesis'], { cwd: dir });
    expect(r.code).toBe(0);
    const committed = git(dir, 'show', '--name-only', '--format=', 'HEAD').split('\n');
    expect(committed).toContain('PAK2.toml');
    expect(committed).toContain('.pak2/plants/gardener/meta.json');
    expect(committed).not.toContain('.pak2/CHARTER.md');
    expect(committed.every((p) => p === 'PAK2.toml' || p.startsWith('.pak2/'))).toBe(true);
    expect(operatorState(dir, [...files, '.pak2/CHARTER.md'])).toEqual(before);
    expect(git(dir, 'diff', '--name-only')).toBe('app.js');
    expect(git(dir, 'diff', '--cached', '--name-only')).toBe('.pak2/CHARTER.md\nstaged.js');
    expect(git(dir, 'status', '--porcelain', '--untracked-files=all', '--', '.pak2', 'PAK2.toml')).toBe('A  .pak2/CHARTER.md');
    const again = await runCli(['genesis'], { cwd: dir });
    expect(again.stdout.trim()).toBe(`genesis: nothing to do; ${dir} is already set up`);
    expect(git(dir, 'rev-list', '--count', 'HEAD')).toBe('2');
  });

  it('a commit that fails leaves its files untracked again and says so; the operator\'s work is untouched', async () => {
    const dir = await gitGarden();
    const files = operatorWork(dir);
    git(dir, 'config', 'commit.gpgsign', 'true');
    git(dir, 'config', 'gpg.program', 'false');
    const before = operatorState(dir, files);
    const r = await runCli(['genesis', '--garden', dir]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^warning: the garden is a git repo, but the scaffold was not committed: git commit: /);
    expect(git(dir, 'rev-list', '--count', 'HEAD')).toBe('1');
    expect(git(dir, 'status', '--porcelain', '--', 'CHARTER.md', 'plants')).toBe('?? CHARTER.md\n?? plants/');
    expect(operatorState(dir, files)).toEqual(before);
  });
});
