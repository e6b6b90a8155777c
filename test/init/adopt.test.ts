/**
 * `pak2 init` in the operator's own repository (docs/startup/level2.md, "pak2
 * in your own repository"): adopted, not filled with pak2's template; then
 * genesis, goals and a cycle work there, and the project's files stay
 * byte-identical throughout.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadGarden, parseConfig } from '../../source/garden/index.js';
import { ADOPT_TEMPLATE_ENTRIES, initOrAdopt } from '../../source/lifecycle/adopt.js';
import { PACKAGE_ROOT } from '../../source/package-root.js';
import { runCli } from '../support/cli.js';

const ENV = { GIT_AUTHOR_NAME: 'op', GIT_AUTHOR_EMAIL: 'op@example.com', GIT_COMMITTER_NAME: 'op', GIT_COMMITTER_EMAIL: 'op@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...ENV } }).replace(/\n$/, '');

/** Every file under `root` (relative → sha256), leaving out the top-level names in `skip`. */
function readTree(root: string, skip: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(root, full);
      if (skip.includes(rel.split(path.sep)[0]!)) continue;
      if (entry.isDirectory()) walk(full);
      else out[rel] = crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex');
    }
  };
  walk(root);
  return out;
}

function writeTree(root: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), content);
  }
}

/** One `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

/** pak2's own paths in an adopted repository: everything else is the project's. */
const PAK2_OWN = ['.git', '.pak2', 'PAK2.toml', '.runtime'];

let base: string;
beforeEach(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-adopt-')));
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

/**
 * The operator's repository: two commits, its own docs/ and schema/, a
 * .gitignore with lines of its own (and no final newline), a tracked file
 * changed and not staged, a staged new file, an untracked file.
 */
function operatorRepo(): string {
  const repo = path.join(base, 'project');
  fs.mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  writeTree(repo, {
    'README.md': '# project\n',
    'docs/guide.md': '# The project guide\n',
    'schema/thing.schema.json': '{"type":"object"}\n',
    'src/app.js': 'console.log("v1");\n',
    '.gitignore': 'node_modules/\n*.log',
  });
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'first');
  writeTree(repo, { 'src/lib.js': 'export const x = 1;\n' });
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'second');
  writeTree(repo, { 'src/app.js': 'console.log("v2, not committed");\n', 'staged.txt': 'staged by the operator\n', 'notes.txt': 'untracked notes\n' });
  git(repo, 'add', 'staged.txt');
  return repo;
}

/** The operator's state git sees: worktree and index changes, byte for byte. */
function operatorGitState(repo: string): { unstaged: string; staged: string } {
  return { unstaged: git(repo, 'diff', '--binary', '--', ':!.pak2', ':!PAK2.toml'), staged: git(repo, 'diff', '--cached', '--binary', '--', ':!.pak2', ':!PAK2.toml') };
}

/** A command agent that writes the gardener's memory where the run block says, and answers the reflection. */
function agentScript(): string {
  const file = path.join(base, 'agent.mjs');
  fs.writeFileSync(
    file,
    `import fs from 'node:fs';
const prompt = fs.readFileSync(0, 'utf8');
const say = (v) => process.stdout.write(JSON.stringify(v) + '\\n');
if (process.env.PAK2_PHASE === 'reflection') { say({ type: 'result', status: 'success', text: 'Learned: pak2 keeps to .pak2/ here.' }); process.exit(0); }
const dir = /^- Plant directory: (\\S+)\\/ /m.exec(prompt)[1];
fs.mkdirSync(dir + '/memory', { recursive: true });
fs.writeFileSync(dir + '/memory/MEMORY.md', '# Gardener memory\\n\\n- an adopted repository\\n');
say({ type: 'result', status: 'success', text: 'surveyed; memory in ' + dir, cost_usd: 0.01 });
`,
  );
  return file;
}

describe('pak2 init in an existing repository: adopt it', () => {
  it('adopts, genesis commits only pak2 files, goals and a cycle work; the project stays byte-identical', async () => {
    const repo = operatorRepo();
    const exclude = path.join(repo, '.git/info/exclude');
    const excludeBefore = fs.readFileSync(exclude, 'utf8');
    const files = readTree(repo, PAK2_OWN);
    const state = operatorGitState(repo);
    const head = git(repo, 'rev-parse', 'HEAD');

    const init = await runCli(['init', '.', '--driver', 'command'], { cwd: repo });
    expect(init).toMatchObject({ code: 0, stderr: '' });
    expect(init.stdout.trim().split('\n')).toEqual([
      `adopted the git repository ${repo}: wrote PAK2.toml, .pak2/CHARTER.md, .pak2/seeds/, .pak2/MOTIVATION.md, .pak2/GARDEN.md, .pak2/DONE.md, .pak2/CHARTER.md.example, .pak2/PAK2.toml.example`,
      'ignored .runtime/ with /.runtime/ in .git/info/exclude; no file git tracks was changed; your 2 uncommitted change(s) are as they were',
      'next: pak2 genesis',
    ]);
    // pak2's template stays out of the project's tree: no docs/, schema/ or examples/ of pak2's.
    expect(readTree(repo, PAK2_OWN)).toEqual(files);
    expect(fs.readdirSync(path.join(repo, '.pak2')).sort()).toEqual([...ADOPT_TEMPLATE_ENTRIES, 'CHARTER.md'].sort());
    expect(fs.readFileSync(path.join(repo, '.pak2/CHARTER.md'), 'utf8')).toBe(fs.readFileSync(path.join(PACKAGE_ROOT, 'examples/charter-quickstart.md'), 'utf8'));
    expect(fs.readFileSync(exclude, 'utf8')).toBe(`${excludeBefore}# pak2 runtime state: goals, runs, events, worktrees (not authored files)\n/.runtime/\n`);
    const config = parseConfig(fs.readFileSync(path.join(repo, 'PAK2.toml'), 'utf8'));
    expect(config).toMatchObject({ runtimeRoot: '.runtime', home: '.pak2', gardenName: 'project', defaults: { driver: 'command' } });
    expect(loadGarden(repo).paths).toMatchObject({ plantsDir: path.join(repo, '.pak2/plants'), seedsDir: path.join(repo, '.pak2/seeds'), motivationFile: path.join(repo, '.pak2/MOTIVATION.md') });
    expect(git(repo, 'status', '--porcelain')).toBe([' M src/app.js', 'A  staged.txt', '?? .pak2/', '?? PAK2.toml', '?? notes.txt'].join('\n'));
    expect(operatorGitState(repo)).toEqual(state);

    const toml = path.join(repo, 'PAK2.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('# command = ["node", "tools/my-agent.mjs"]', `command = ${JSON.stringify([process.execPath, agentScript()])}`));
    const genesis = await runCli(['genesis'], { cwd: repo });
    expect(genesis).toMatchObject({ code: 0, stderr: '' });
    expect(genesis.stdout).toContain('commissioned plant gardener');
    expect(genesis.stdout).toContain('queued goal 1-survey-the-garden');
    expect(genesis.stdout).toMatch(/^committed \.pak2\/ \(12 files\), PAK2\.toml as [0-9a-f]{12}$/m);
    // One commit on top of the operator's, holding pak2's files and nothing else.
    expect(git(repo, 'rev-parse', 'HEAD~1')).toBe(head);
    expect(git(repo, 'log', '-1', '--format=%s')).toBe('pak2 genesis: adopt this repository (PAK2.toml, .pak2/) and commission the gardener');
    const committed = git(repo, 'show', '--name-only', '--format=', 'HEAD').split('\n');
    expect(committed.every((p) => p === 'PAK2.toml' || p.startsWith('.pak2/'))).toBe(true);
    expect(committed).toEqual(expect.arrayContaining(['PAK2.toml', '.pak2/CHARTER.md', '.pak2/seeds/gardener.md', '.pak2/plants/gardener/meta.json']));
    // git status: the operator's own changes, exactly as before, and nothing of pak2's (.runtime/ is ignored).
    expect(git(repo, 'status', '--porcelain')).toBe([' M src/app.js', 'A  staged.txt', '?? notes.txt'].join('\n'));
    expect(readTree(repo, PAK2_OWN)).toEqual(files);
    expect(operatorGitState(repo)).toEqual(state);
    expect(fs.existsSync(path.join(repo, '.runtime/goals/1-survey-the-garden.json'))).toBe(true);
    expect(fs.existsSync(path.join(repo, 'plants'))).toBe(false);
    expect(JSON.parse(fs.readFileSync(path.join(repo, '.runtime/goals/1-survey-the-garden.json'), 'utf8')).body).toContain('Write .pak2/plants/gardener/memory/MEMORY.md');

    const goals = await runCli(['goals', '--json'], { cwd: path.join(repo, 'src') });
    expect(JSON.parse(goals.stdout)).toEqual([expect.objectContaining({ id: '1-survey-the-garden', status: 'queued', assigned_to: 'gardener' })]);

    const cycle = await runCli(['cycle', '--no-ui', '--until-idle'], { cwd: repo, timeoutMs: 60_000 });
    expect(cycle.code).toBe(0);
    const goal = JSON.parse(fs.readFileSync(path.join(repo, '.runtime/goals/1-survey-the-garden.json'), 'utf8'));
    expect(goal).toMatchObject({ status: 'closed', closed_reason: 'success' });
    const run = JSON.parse((await runCli(['show', '1-survey-the-garden-r1', '--json'], { cwd: repo })).stdout);
    expect(JSON.stringify(run)).toContain('surveyed; memory in .pak2/plants/gardener');
    expect(fs.readFileSync(path.join(repo, '.pak2/plants/gardener/memory/MEMORY.md'), 'utf8')).toContain('an adopted repository');
    // After the run: the operator's changes as they were. The run worked in a worktree of its own, and its one new
    // file, the gardener's memory, landed on the branch as a commit of pak2's (their checkout fast-forwarded around their changes).
    expect(git(repo, 'status', '--porcelain', '--untracked-files=all')).toBe([' M src/app.js', 'A  staged.txt', '?? notes.txt'].join('\n'));
    expect(git(repo, 'log', '-1', '--format=%s%n%an')).toBe('pak2: 1-survey-the-garden (1-survey-the-garden-r1)\npak2 gardener');
    expect(JSON.parse(fs.readFileSync(path.join(repo, '.runtime/landings/1-survey-the-garden-r1.json'), 'utf8'))).toMatchObject({ state: 'landed', files: [{ path: '.pak2/plants/gardener/memory/MEMORY.md', status: 'A' }] });
    expect(readTree(repo, PAK2_OWN)).toEqual(files);
    expect(operatorGitState(repo)).toEqual(state);
  }, 120_000);

  it('appends nothing when git ignores .runtime/ already, and says where', async () => {
    const repo = operatorRepo();
    fs.appendFileSync(path.join(repo, '.gitignore'), '\n.runtime/\n');
    const before = fs.readFileSync(path.join(repo, '.git/info/exclude'), 'utf8');
    const report = await initOrAdopt(repo, { driver: 'command' });
    expect(report).toMatchObject({ mode: 'adopt', ignore: { added: false, by: '.gitignore:3:.runtime/' } });
    expect(fs.readFileSync(path.join(repo, '.git/info/exclude'), 'utf8')).toBe(before);
  });

  it('a repository holding only .git still gets the whole fresh template', async () => {
    const repo = path.join(base, 'fresh');
    fs.mkdirSync(repo);
    git(repo, 'init', '-q');
    const report = await initOrAdopt(repo);
    expect(report.mode).toBe('fresh');
    expect(fs.existsSync(path.join(repo, 'docs/garden/level2.md'))).toBe(true);
    expect(fs.readFileSync(path.join(repo, '.gitignore'), 'utf8')).toContain('.runtime/');
    expect(parseConfig(fs.readFileSync(path.join(repo, 'PAK2.toml'), 'utf8')).home).toBeUndefined();
  });
});

describe('pak2 init refuses, in one line, writing nothing', () => {
  async function refused(cwd: string, args: string[], watched: string): Promise<string> {
    const before = readTree(watched);
    const r = await runCli(['init', ...args], { cwd });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(readTree(watched)).toEqual(before);
    return oneLineError(r.stderr);
  }

  it('a repository that holds PAK2.toml already, naming it', async () => {
    const repo = operatorRepo();
    fs.writeFileSync(path.join(repo, 'PAK2.toml'), '[garden]\nname = "mine"\n');
    expect(await refused(repo, ['.'], repo)).toBe(`pak2: ${path.join(repo, 'PAK2.toml')}: exists; this directory is a garden already (next: pak2 genesis, then pak2); pak2 init changed nothing`);
  });

  it('a repository that has a .pak2 of its own', async () => {
    const repo = operatorRepo();
    writeTree(repo, { '.pak2/mine.txt': 'not pak2\n' });
    expect(await refused(repo, [], repo)).toBe(`pak2: ${path.join(repo, '.pak2')}: exists; pak2 init keeps its own files there and writes over nothing (move it away, then pak2 init again)`);
  });

  it('a subdirectory of a repository, naming the top to adopt', async () => {
    const repo = operatorRepo();
    expect(await refused(path.join(repo, 'src'), ['.'], repo)).toBe(
      `pak2: DIR ${path.join(repo, 'src')}: inside the git repository at ${repo}, not its top; pak2 adopts a whole repository (pak2 init ${repo}), or make this directory a repository of its own (git init)`,
    );
  });

  it('a non-empty directory that is no git repository, saying how to adopt it', async () => {
    const dir = path.join(base, 'plain');
    writeTree(dir, { 'notes.md': 'mine\n' });
    expect(await refused(base, ['plain'], dir)).toBe(
      `pak2: DIR ${dir}: not empty and not a git repository; pak2 init creates a garden in a new or empty directory, or adopts a git repository (to adopt this one: git init, then pak2 init again)`,
    );
  });

  it('a bad --driver, before writing anything into the repository', async () => {
    const repo = operatorRepo();
    expect(await refused(repo, ['--driver', 'gpt'], repo)).toBe('pak2: --driver gpt: must be claude, codex or command');
  });
});

describe('[garden].home', () => {
  it.each([
    ['/abs', 'not an absolute one'],
    ['../out', "no '..' segment"],
    ['.', 'leave the key out'],
  ])('refuses %s', (home, why) => {
    expect(() => parseConfig(`[garden]\nhome = ${JSON.stringify(home)}\n`)).toThrow(why);
  });
});
