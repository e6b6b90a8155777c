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

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

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
