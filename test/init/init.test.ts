import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../source/errors.js';
import { loadGarden, parseConfig } from '../../source/garden/index.js';
import { GARDEN_GITIGNORE, GARDEN_TEMPLATE_ENTRIES, initGarden, QUICKSTART_CHARTER } from '../../source/lifecycle/init.js';
import { PACKAGE_ROOT } from '../../source/package-root.js';
import { runCli } from '../support/cli.js';

/** Every file under `root`, relative, with its sha256. */
function readTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out[path.relative(root, full)] = crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex');
    }
  };
  walk(root);
  return out;
}

/** Writes an object map of relative path → content under `root`. */
function writeTree(root: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), content);
  }
}

/** One-line error: exactly one `pak2:` line on stderr (a `hint:` line may follow). */
function oneLineError(stderr: string): string {
  const lines = stderr.trim().split('\n').filter((l) => !l.startsWith('hint:'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

const WRITTEN = ['PAK2.toml', 'CHARTER.md', 'seeds/', 'docs/', 'schema/', 'examples/', 'MOTIVATION.md', 'GARDEN.md', 'DONE.md', 'PAK2.toml.example', 'CHARTER.md.example', '.gitignore'];

let base: string;
beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-init-'));
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

describe('initGarden: the authored template surface', () => {
  it('writes the full surface and returns the list of what it wrote', () => {
    const dir = path.join(base, 'my-garden');
    expect(initGarden(dir)).toEqual(WRITTEN);
    expect(fs.readdirSync(dir).sort()).toEqual(WRITTEN.map((w) => w.replace(/\/$/, '')).sort());
    expect(GARDEN_TEMPLATE_ENTRIES).toEqual(['seeds', 'docs', 'schema', 'examples', 'MOTIVATION.md', 'GARDEN.md', 'DONE.md', 'PAK2.toml.example', 'CHARTER.md.example']);
  });

  it('copies every template entry byte-for-byte from the installed package', () => {
    const dir = path.join(base, 'g');
    initGarden(dir);
    for (const entry of GARDEN_TEMPLATE_ENTRIES) {
      const from = path.join(PACKAGE_ROOT, entry);
      if (fs.statSync(from).isDirectory()) expect(readTree(path.join(dir, entry)), entry).toEqual(readTree(from));
      else expect(fs.readFileSync(path.join(dir, entry)), entry).toEqual(fs.readFileSync(from));
    }
    for (const file of ['seeds/gardener.md', 'examples/charter-quickstart.md', 'docs/garden/level2.md', 'docs/publish/level2.md', 'schema/goal.schema.json']) {
      expect(fs.existsSync(path.join(dir, file)), file).toBe(true);
    }
  });

  it('writes CHARTER.md ready to run, equal to examples/charter-quickstart.md, and keeps the example and the template', () => {
    const dir = path.join(base, 'g');
    initGarden(dir);
    const charter = fs.readFileSync(path.join(dir, 'CHARTER.md'), 'utf8');
    expect(charter).toBe(fs.readFileSync(path.join(PACKAGE_ROOT, QUICKSTART_CHARTER), 'utf8'));
    expect(charter).toBe(fs.readFileSync(path.join(dir, 'examples/charter-quickstart.md'), 'utf8'));
    expect(charter).not.toMatch(/<!--|<garden name>/); // ready to run: no placeholders left
    expect(fs.readFileSync(path.join(dir, 'CHARTER.md.example'), 'utf8')).toMatch(/## Mission[\s\S]*## Scope[\s\S]*## Constraints[\s\S]*## Who decides[\s\S]*## First goals/);
  });

  it('writes a PAK2.toml that parses, with the split runtime root, and a .gitignore for that root', () => {
    const dir = path.join(base, 'My Garden!');
    initGarden(dir, { driver: 'codex' });
    const config = parseConfig(fs.readFileSync(path.join(dir, 'PAK2.toml'), 'utf8'));
    expect(config).toMatchObject({ gardenName: 'my-garden', runtimeRoot: '.runtime', defaults: { driver: 'codex' } });
    const garden = loadGarden(dir);
    expect(garden.paths.runtimeRoot).toBe(path.join(dir, '.runtime'));
    expect(fs.readFileSync(path.join(dir, '.gitignore'), 'utf8')).toBe(GARDEN_GITIGNORE);
    expect(GARDEN_GITIGNORE.split('\n')).toContain('.runtime/');
  });

  it('MOTIVATION.md keeps the garden-neutral template text', () => {
    const dir = path.join(base, 'g');
    initGarden(dir);
    expect(fs.readFileSync(path.join(dir, 'MOTIVATION.md'), 'utf8')).toBe(`# Motivation

This garden exists to get real work done on this repository by coding agents,
with every step recorded so a person can see, steer and trust what happened.

Work in small, verifiable steps. Leave the repository better than you found it.
Say plainly what you did not do or could not verify.
`);
  });

  it('does not copy the code: it stays in the installed package', () => {
    const dir = path.join(base, 'g');
    initGarden(dir);
    for (const code of ['source', 'bin', 'test', 'dist', 'node_modules', 'package.json', 'tsconfig.json', '.ci', 'README.md', 'LICENSE', '.runtime', 'plants']) {
      expect(fs.existsSync(path.join(dir, code)), code).toBe(false);
    }
  });

  it('takes the template from the packageRoot option', () => {
    const pkg = path.join(base, 'pkg');
    const files = {
      'seeds/gardener.md': '# Seed\n',
      'docs/garden/level2.md': '# Garden\n',
      'schema/goal.schema.json': '{}\n',
      'examples/charter-quickstart.md': '# Charter: fake quickstart\n',
      'MOTIVATION.md': '# Fake motivation\n',
      'GARDEN.md': '# Fake garden\n',
      'DONE.md': '# Fake done\n',
      'PAK2.toml.example': '# fake\n',
      'CHARTER.md.example': '# Fake charter template\n',
    };
    writeTree(pkg, files);
    const template = readTree(pkg);
    writeTree(pkg, { 'source/main.ts': 'code\n', 'package.json': '{}\n' });
    const dir = path.join(base, 'g');
    initGarden(dir, { packageRoot: pkg });
    const { 'PAK2.toml': toml, '.gitignore': ignore, ...rest } = readTree(dir);
    expect(toml && ignore).toBeTruthy();
    expect(rest).toEqual({ ...template, 'CHARTER.md': template['examples/charter-quickstart.md'] });
  });

  it('refuses a package missing part of the template before creating anything', () => {
    const pkg = path.join(base, 'pkg');
    writeTree(pkg, { 'seeds/gardener.md': '# Seed\n' });
    const dir = path.join(base, 'g');
    expect(() => initGarden(dir, { packageRoot: pkg })).toThrow(`the pak2 package at ${pkg} lacks docs, schema, examples, MOTIVATION.md, GARDEN.md, DONE.md, PAK2.toml.example, CHARTER.md.example, examples/charter-quickstart.md; reinstall pak2`);
    expect(fs.existsSync(dir)).toBe(false);
  });
});

describe('initGarden: the checks it always made', () => {
  it('refuses a non-empty directory and leaves it as it was', () => {
    const dir = path.join(base, 'busy');
    writeTree(dir, { 'notes.md': 'mine\n' });
    expect(() => initGarden(dir)).toThrow(`DIR ${dir}: not empty and not a git repository; pak2 init creates a garden in a new or empty directory, or adopts a git repository (to adopt this one: git init, then pak2 init again)`);
    expect(fs.readdirSync(dir)).toEqual(['notes.md']);
  });

  it('refuses a directory inside an existing garden, naming the garden, and writes nothing', () => {
    const outer = path.join(base, 'outer');
    initGarden(outer);
    const inner = path.join(outer, 'src', 'inner');
    fs.mkdirSync(path.dirname(inner), { recursive: true });
    expect(() => initGarden(inner)).toThrow(`DIR ${inner}: inside the garden at ${outer} (it holds PAK2.toml); create the new garden outside it`);
    expect(fs.existsSync(inner)).toBe(false);
  });

  it('accepts a directory holding only .git, and leaves .git alone', () => {
    const dir = path.join(base, 'repo');
    writeTree(dir, { '.git/HEAD': 'ref: refs/heads/main\n' });
    initGarden(dir);
    expect(fs.readFileSync(path.join(dir, '.git/HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
    expect(fs.existsSync(path.join(dir, 'CHARTER.md'))).toBe(true);
  });

  it('refuses a missing parent and a file', () => {
    const deep = path.join(base, 'no', 'g');
    expect(() => initGarden(deep)).toThrow(`DIR ${deep}: its parent ${path.dirname(deep)} is not an existing directory`);
    const file = path.join(base, 'file');
    fs.writeFileSync(file, 'x');
    expect(() => initGarden(file)).toThrow(`DIR ${file}: exists and is not a directory`);
  });

  it.each([
    [{ name: 'Bad Name' }, '--name "Bad Name": INVALID_GARDEN_NAME (a garden name is lower-case letters'],
    [{ driver: 'gpt' }, '--driver gpt: must be claude, codex or command'],
  ])('refuses %j and creates nothing', (options, message) => {
    const dir = path.join(base, 'g');
    expect(() => initGarden(dir, options)).toThrow(UserError);
    expect(() => initGarden(dir, options)).toThrow(message);
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('--driver command writes the [drivers.command] stub', () => {
    const dir = path.join(base, 'g');
    initGarden(dir, { driver: 'command' });
    const toml = fs.readFileSync(path.join(dir, 'PAK2.toml'), 'utf8');
    expect(toml).toContain('[drivers.command]\n# command = ["node", "tools/my-agent.mjs"]');
    expect(parseConfig(toml).defaults.driver).toBe('command');
  });
});

describe('pak2 init, then pak2 genesis', () => {
  it('init . in an empty directory says next: pak2 genesis (no cd into where you are)', async () => {
    const dir = path.join(base, 'here');
    fs.mkdirSync(dir);
    const r = await runCli(['init', '.', '--driver', 'command'], { cwd: dir });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim().split('\n').at(-1)).toBe('next: pak2 genesis');
  });

  it('init prints what it wrote; genesis works on the result', async () => {
    const r = await runCli(['init', 'my-garden', '--driver', 'command'], { cwd: base });
    const dir = path.join(base, 'my-garden');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout.trim().split('\n')).toEqual([`created garden in ${dir}: ${WRITTEN.join(', ')}`, 'next: cd my-garden && pak2 genesis']);
    const toml = path.join(dir, 'PAK2.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace('# command = ["node", "tools/my-agent.mjs"]', 'command = "true"'));
    const genesis = await runCli(['genesis'], { cwd: dir });
    expect(genesis.code).toBe(0);
    expect(genesis.stdout).toContain('commissioned plant gardener');
    expect(genesis.stdout).toContain('queued goal 1-survey-the-garden');
    expect(fs.existsSync(path.join(dir, 'plants/gardener/meta.json'))).toBe(true);
    expect(fs.existsSync(path.join(dir, '.runtime/goals/1-survey-the-garden.json'))).toBe(true);
    // Genesis leaves the authored surface as init wrote it.
    expect(fs.readFileSync(path.join(dir, 'CHARTER.md'), 'utf8')).toBe(fs.readFileSync(path.join(PACKAGE_ROOT, QUICKSTART_CHARTER), 'utf8'));
    const goals = await runCli(['goals', '--json'], { cwd: dir });
    expect(JSON.parse(goals.stdout)).toEqual([expect.objectContaining({ id: '1-survey-the-garden', status: 'queued', assigned_to: 'gardener' })]);
  });

  it.each([
    ['my garden', "'my garden'"],
    ["it's", "'it'\\''s'"],
    ['-dash', './-dash'],
    ['a$b`c`;rm', "'a$b`c`;rm'"],
    ['bidi\u202eevil', "$'bidi\\342\\200\\256evil'"],
  ])('init of case %# prints cd %s, which the shell takes as that directory (issue 28)', async (name, word) => {
    const r = await runCli(['init', '--driver', 'command', '--', name], { cwd: base });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const next = r.stdout.trim().split('\n').at(-1)!;
    expect(next).toBe(`next: cd ${word} && pak2 genesis`);
    // The printed command, pasted into a shell, lands in the garden.
    const cd = next.replace(/^next: /, '').replace(/ && pak2 genesis$/, '');
    const landed = execFileSync('bash', ['-c', `${cd} && pwd -P`], { cwd: base, encoding: 'utf8' }).replace(/\n$/, '');
    expect(landed).toBe(fs.realpathSync(path.join(base, name)));
  });

  it.each([['My Garden'], ['../up'], ['a/b'], ['.hidden'], ['trailing-']])('init --name %j: INVALID_GARDEN_NAME (seed 002, set_garden_name), one line, exit 2, nothing written', async (name) => {
    const r = await runCli(['init', 'named', '--name', name], { cwd: base });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toBe(`pak2: --name ${JSON.stringify(name)}: INVALID_GARDEN_NAME (a garden name is lower-case letters, digits, '.', '_' and '-', at most 64, starting and ending with a letter or digit: it names the reply directory <runtime-root>/inbox/<name>/)`);
    expect(fs.existsSync(path.join(base, 'named'))).toBe(false);
  });

  it('init into a non-empty directory: one-line error, exit 2', async () => {
    writeTree(path.join(base, 'busy'), { 'x.md': 'x' });
    const r = await runCli(['init', 'busy'], { cwd: base });
    expect(r.code).toBe(2);
    expect(oneLineError(r.stderr)).toContain('not empty');
  });
});
