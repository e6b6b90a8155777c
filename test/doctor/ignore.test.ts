/**
 * `pak2 doctor` in a git garden whose runtime root git does not ignore: one
 * line with the fix; `--fix` ignores it as `pak2 init` does.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { doctor, doctorJson, findingLines } from './support.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

function tempDir(): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-doctor-ignore-')));
  dirs.push(dir);
  return dir;
}

describe('pak2 doctor: the runtime root ignored by git', () => {
  it('in an adopted repository: names an unignored .runtime/, and --fix adds /.runtime/ to .git/info/exclude', async () => {
    const repo = tempDir();
    git(repo, 'init', '-q');
    fs.writeFileSync(path.join(repo, 'app.js'), 'x\n');
    expect((await runCli(['init', '.', '--driver', 'command'], { cwd: repo })).code).toBe(0);
    const exclude = path.join(repo, '.git/info/exclude');
    expect(await doctorJson(repo)).toMatchObject({ code: 0, findings: [] });
    const original = fs.readFileSync(exclude, 'utf8').replace(/# pak2 runtime state[^\n]*\n\/\.runtime\/\n$/, '');
    fs.writeFileSync(exclude, original); // as in a fresh clone: the exclude file is not shared

    const text = await doctor(repo);
    expect(text.code).toBe(1);
    expect(findingLines(text.stdout)).toEqual([
      "ignore: .runtime: not ignored by git: git status lists the runtime's goals, runs and agent worktrees as untracked files — fix: add /.runtime/ to .git/info/exclude",
    ]);
    const fixed = await doctorJson(repo, '--fix');
    expect(fixed).toMatchObject({ code: 0, findings: [{ check: 'ignore', file: path.join(repo, '.runtime'), fix: `added /.runtime/ to ${exclude}`, fixed: true }] });
    expect(fs.readFileSync(exclude, 'utf8')).toBe(`${original}# pak2 runtime state: goals, runs, events, worktrees (not authored files)\n/.runtime/\n`);
    expect(git(repo, 'check-ignore', '--no-index', '.runtime/')).toBe('.runtime/');
    expect(await doctorJson(repo)).toMatchObject({ code: 0, findings: [] });
    expect(git(repo, 'status', '--porcelain', '--', 'app.js', '.gitignore')).toBe('?? app.js');
  });

  it("in a garden of its own: --fix appends .runtime/ to the garden's .gitignore, keeping its other lines", async () => {
    const root = tempDir();
    git(root, 'init', '-q');
    expect((await runCli(['init', '.', '--driver', 'command'], { cwd: root })).code).toBe(0);
    fs.writeFileSync(path.join(root, '.gitignore'), 'node_modules/');
    const [finding] = (await doctorJson(root)).findings;
    expect(finding).toMatchObject({ check: 'ignore', fix: `add .runtime/ to ${path.join(root, '.gitignore')}` });
    expect((await doctorJson(root, '--fix')).code).toBe(0);
    expect(fs.readFileSync(path.join(root, '.gitignore'), 'utf8')).toBe('node_modules/\n# pak2 runtime state: goals, runs, events, worktrees (not authored files)\n.runtime/\n');
  });

  it('says nothing in a garden that is not in a git repository', async () => {
    const root = path.join(tempDir(), 'g');
    expect((await runCli(['init', root, '--driver', 'command'])).code).toBe(0);
    fs.rmSync(path.join(root, '.gitignore'));
    expect(await doctorJson(root)).toMatchObject({ code: 0, findings: [] });
  });
});
