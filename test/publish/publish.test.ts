import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../source/garden/index.js';
import { UserError } from '../../source/errors.js';
import { GARDEN_TEMPLATE_ENTRIES, initialConfig } from '../../source/lifecycle/init.js';
import { AUTHORED_EXPORT_ENTRIES, EXPORT_GITIGNORE, EXPORT_LOCAL_FILES, publishExport } from '../../source/lifecycle/publish.js';
import { PACKAGE_ROOT } from '../../source/package-root.js';
import { runCli } from '../support/cli.js';

/** Writes an object map of relative path → content under `root` (changesets-style fixtures). */
function writeTree(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), content);
  }
}

/** Every file under `root`, relative, sorted, with its sha256 (directories implied; empty directories end in `/`). */
function readTree(root: string, options: { skip?: string[] } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    const entries = fs.readdirSync(dir, { withFileTypes: true });
    if (!entries.length && dir !== root) out[`${path.relative(root, dir)}/`] = '';
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(root, full);
      if (options.skip?.includes(rel)) continue;
      if (entry.isDirectory()) walk(full);
      else out[rel] = crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex');
    }
  };
  walk(root);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** One file per authored entry: what a complete pak2 checkout holds, in miniature. */
const AUTHORED_FILES: Record<string, string> = {
  'source/cli/main.ts': 'export const main = 1;\n',
  'source/lifecycle/publish.ts': 'export {};\n',
  'bin/pak2.js': '#!/usr/bin/env node\n',
  'test/cli/cli.test.ts': 'test\n',
  'test/agent-clis/package.json': '{"private":true}\n',
  'scripts/demo.ts': 'demo\n',
  'bench/ui.mjs': 'bench\n',
  'test/fixtures/streams/a.jsonl': '{}\n',
  '.ci/run': '#!/usr/bin/env bash\nnpm test\n',
  'seeds/gardener.md': '# Seed: gardener\n',
  'seeds/gardener/skills/reporting.md': '# Reporting\n',
  'docs/events/level2.md': '# Events\n', // a directory named like a runtime dir, below the root: kept
  'docs/goal/level2.md': '# Goal\n',
  'docs/publish/level2.md': '# Publish\n',
  'schema/goal.schema.json': '{}\n',
  'examples/charter-quickstart.md': '# Charter: quickstart\n',
  'examples/README.md': '# Examples\n',
  'MOTIVATION.md': '# Motivation\n',
  'GARDEN.md': '# Garden\n',
  'DONE.md': '# Done\n',
  'PAK2.toml.example': '[runtime]\nroot = ".runtime"\n',
  'CHARTER.md.example': '# Charter: <name>\n',
  'README.md': '# pak2\n',
  LICENSE: 'MIT License\n',
  'package.json': '{"name":"pak2"}\n',
  'package-lock.json': '{"lockfileVersion":3}\n',
  'tsconfig.json': '{}\n',
  'tsconfig.build.json': '{}\n',
  'vitest.config.ts': 'export default {};\n',
};

/** Live, garden-local, generated and scratch paths a working checkout may hold: none is exported. */
const EXCLUDED_FILES: Record<string, string> = {
  '.git/HEAD': 'ref: refs/heads/main\n',
  '.gitignore': 'the package own .gitignore\n',
  'PAK2.toml': '[garden]\nname = "the-package-own-garden"\n',
  'CHARTER.md': '# the package own charter\n',
  '.runtime/goals/1-x.json': '{}\n',
  '.runtime/events/coordinator.jsonl': '{}\n',
  'goals/1-x.json': '{}\n',
  'runs/1-x-r1/meta.json': '{}\n',
  'events/coordinator.jsonl': '{}\n',
  'conversations/c1.json': '{}\n',
  'inbox/garden/note.md': 'hi\n',
  'dashboard/invocations/1.json': '{}\n',
  'plants/gardener/meta.json': '{}\n',
  'node_modules/commander/index.js': '\n',
  'dist/cli/main.js': '\n',
  'demo-garden/PAK2.toml': '\n',
  '.tmp/scratch.mts': '\n',
  // Nested inside exported directories:
  'source/node_modules/x/index.js': '\n',
  'test/fixtures/.runtime/goals/1-x.json': '{}\n',
  'test/fixtures/dist/out.js': '\n',
  'docs/.git/HEAD': '\n',
  // The agent CLIs' launchers an install writes (scripts/agent-clis.mjs), and their packages:
  'test/agent-clis/bin/claude': '#!/bin/sh\n',
  'test/agent-clis/node_modules/@openai/codex/bin/codex.js': '\n',
};

let base: string;
let pkg: string;
beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-publish-'));
  pkg = path.join(base, 'pak2');
  writeTree(pkg, { ...AUTHORED_FILES, ...EXCLUDED_FILES });
});
afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

/** The tree a clean export of the fake package must be: its authored files and the two export-local ones. */
function expectedExport(): Record<string, unknown> {
  const hash = (text: string) => crypto.createHash('sha256').update(text).digest('hex');
  return {
    ...Object.fromEntries(Object.entries(AUTHORED_FILES).map(([rel, text]) => [rel, hash(text)])),
    '.gitignore': hash(EXPORT_GITIGNORE),
    'PAK2.toml': expect.any(String),
  };
}

/** A fake `git` first on PATH that records every call; returns the log file and the PATH to use. */
function gitSpy(): { log: string; PATH: string } {
  const bin = path.join(base, 'spy-bin');
  const log = path.join(base, 'git-calls.log');
  writeTree(bin, { git: `#!/bin/sh\necho "git $*" >> ${JSON.stringify(log)}\nexit 1\n` });
  fs.chmodSync(path.join(bin, 'git'), 0o755);
  return { log, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
}

describe('publishExport: what is exported', () => {
  it('exports exactly the authored surface plus a fresh .gitignore and PAK2.toml', () => {
    const dest = path.join(base, 'out');
    const report = publishExport(dest, { packageRoot: pkg });
    expect(readTree(dest)).toEqual(expectedExport());
    expect(fs.readdirSync(dest).sort()).toEqual([...AUTHORED_EXPORT_ENTRIES, ...EXPORT_LOCAL_FILES].sort());
    expect(report).toEqual({
      destination: dest,
      exported: AUTHORED_EXPORT_ENTRIES.map((e) => (fs.statSync(path.join(pkg, e)).isDirectory() ? `${e}/` : e)),
      written: ['.gitignore', 'PAK2.toml'],
      keptGit: false,
      removed: [],
    });
  });

  it('the export carries the whole garden template pak2 init copies, plus the code', () => {
    expect(AUTHORED_EXPORT_ENTRIES).toEqual(expect.arrayContaining([...GARDEN_TEMPLATE_ENTRIES]));
    expect(AUTHORED_EXPORT_ENTRIES).toEqual(expect.arrayContaining(['source', 'bin', 'test', 'scripts', 'bench', '.ci', 'README.md', 'LICENSE', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'vitest.config.ts']));
    expect(AUTHORED_EXPORT_ENTRIES).toHaveLength(GARDEN_TEMPLATE_ENTRIES.length + 13);
  });

  it('writes an export-local .gitignore ignoring the runtime root, and a fresh PAK2.toml that parses', () => {
    const dest = path.join(base, 'My Export');
    publishExport(dest, { packageRoot: pkg });
    const gitignore = fs.readFileSync(path.join(dest, '.gitignore'), 'utf8');
    expect(gitignore).toBe(EXPORT_GITIGNORE);
    expect(gitignore.split('\n')).toEqual(expect.arrayContaining(['.runtime/', 'node_modules/', 'dist/']));
    const toml = fs.readFileSync(path.join(dest, 'PAK2.toml'), 'utf8');
    expect(toml).toBe(initialConfig('my-export', 'claude'));
    const config = parseConfig(toml, path.join(dest, 'PAK2.toml'));
    expect(config).toMatchObject({ gardenName: 'my-export', runtimeRoot: '.runtime', defaults: { driver: 'claude' } });
  });

  it('--name sets [garden].name of the export-local PAK2.toml; a bad one is refused before anything is written', () => {
    const dest = path.join(base, 'out');
    publishExport(dest, { packageRoot: pkg, name: 'pak2-release' });
    expect(parseConfig(fs.readFileSync(path.join(dest, 'PAK2.toml'), 'utf8')).gardenName).toBe('pak2-release');
    const other = path.join(base, 'other');
    expect(() => publishExport(other, { packageRoot: pkg, name: 'Bad Name' })).toThrow(expect.objectContaining({ code: 'INVALID_GARDEN_NAME', message: expect.stringContaining('--name "Bad Name": INVALID_GARDEN_NAME (') }));
    expect(fs.existsSync(other)).toBe(false);
  });

  it('keeps examples/charter-quickstart.md and writes no root CHARTER.md', () => {
    const dest = path.join(base, 'out');
    publishExport(dest, { packageRoot: pkg });
    expect(fs.readFileSync(path.join(dest, 'examples/charter-quickstart.md'), 'utf8')).toBe(AUTHORED_FILES['examples/charter-quickstart.md']);
    expect(fs.existsSync(path.join(dest, 'CHARTER.md.example'))).toBe(true);
    expect(fs.existsSync(path.join(dest, 'CHARTER.md'))).toBe(false);
  });

  it('leaves out live, garden-local and generated paths even when the package root holds them', () => {
    const dest = path.join(base, 'out');
    publishExport(dest, { packageRoot: pkg });
    for (const rel of Object.keys(EXCLUDED_FILES).filter((r) => !['.gitignore', 'PAK2.toml'].includes(r))) {
      expect(fs.existsSync(path.join(dest, rel)), rel).toBe(false);
    }
    for (const dir of ['.runtime', 'goals', 'runs', 'events', 'conversations', 'inbox', 'dashboard', 'plants', 'node_modules', 'dist', 'demo-garden', '.git', '.tmp']) {
      expect(fs.existsSync(path.join(dest, dir)), dir).toBe(false);
    }
    expect(fs.readFileSync(path.join(dest, '.gitignore'), 'utf8')).not.toContain('the package own');
    expect(fs.readFileSync(path.join(dest, 'PAK2.toml'), 'utf8')).not.toContain('the-package-own-garden');
    expect(fs.existsSync(path.join(dest, 'docs/events/level2.md'))).toBe(true);
  });
});

describe('publishExport: the destination', () => {
  it('writes into an existing empty directory', () => {
    const dest = path.join(base, 'empty');
    fs.mkdirSync(dest);
    const report = publishExport(dest, { packageRoot: pkg });
    expect(report.keptGit).toBe(false);
    expect(readTree(dest)).toEqual(expectedExport());
  });

  it('creates a destination that does not exist yet when its parent does', () => {
    const dest = path.join(base, 'new');
    publishExport(dest, { packageRoot: pkg });
    expect(readTree(dest)).toEqual(expectedExport());
  });

  it('refuses a destination whose parent does not exist, creating nothing', () => {
    const dest = path.join(base, 'no', 'such', 'dir');
    expect(() => publishExport(dest, { packageRoot: pkg })).toThrow(`DIR ${dest}: its parent ${path.dirname(dest)} is not an existing directory`);
    expect(fs.existsSync(path.join(base, 'no'))).toBe(false);
  });

  it('refuses a destination that is a file', () => {
    const dest = path.join(base, 'file');
    fs.writeFileSync(dest, 'x');
    expect(() => publishExport(dest, { packageRoot: pkg })).toThrow(`DIR ${dest}: exists and is not a directory`);
    expect(fs.readFileSync(dest, 'utf8')).toBe('x');
  });

  it('in an existing checkout keeps .git byte-for-byte and replaces everything else with the clean export', () => {
    const dest = path.join(base, 'checkout');
    writeTree(dest, {
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.git/config': '[core]\n\tbare = false\n',
      '.git/objects/ab/cdef': crypto.randomBytes(512),
      '.git/index': crypto.randomBytes(256),
      'stale.txt': 'from an old export\n',
      'old-dir/deep/file.md': 'gone\n',
      'source/removed-module.ts': 'export {};\n',
      'README.md': '# old readme\n',
      '.gitignore': 'old\n',
      '.runtime/goals/1-x.json': '{}\n',
    });
    fs.mkdirSync(path.join(dest, '.git', 'refs', 'tags'), { recursive: true });
    const gitBefore = readTree(path.join(dest, '.git'));
    const report = publishExport(dest, { packageRoot: pkg });
    expect(report.keptGit).toBe(true);
    expect(report.removed).toEqual(['.gitignore', '.runtime', 'README.md', 'old-dir', 'source', 'stale.txt']);
    expect(readTree(path.join(dest, '.git'))).toEqual(gitBefore);
    expect(readTree(dest, { skip: ['.git'] })).toEqual(expectedExport());
  });

  it('treats a .git file (a linked worktree) as a checkout too', () => {
    const dest = path.join(base, 'worktree');
    writeTree(dest, { '.git': 'gitdir: /somewhere/.git/worktrees/w\n', 'stale.txt': 'x' });
    publishExport(dest, { packageRoot: pkg });
    expect(fs.readFileSync(path.join(dest, '.git'), 'utf8')).toBe('gitdir: /somewhere/.git/worktrees/w\n');
    expect(fs.existsSync(path.join(dest, 'stale.txt'))).toBe(false);
  });

  it('refuses a non-empty destination without .git and touches nothing', () => {
    const dest = path.join(base, 'busy');
    writeTree(dest, { 'notes.md': 'mine\n', 'work/a.ts': 'export {};\n' });
    const before = readTree(dest);
    let error: unknown;
    try {
      publishExport(dest, { packageRoot: pkg });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).message).toBe(
      `DIR ${dest}: not empty and not a git checkout; pak2 publish writes into a new or empty directory, or replaces the worktree of a checkout (one holding .git)`,
    );
    expect((error as UserError).message).not.toContain('\n');
    expect(readTree(dest)).toEqual(before);
  });

  it('refuses a destination inside the package root, or the package root itself', () => {
    for (const dest of [pkg, path.join(pkg, 'export')]) {
      expect(() => publishExport(dest, { packageRoot: pkg })).toThrow(/overlaps the pak2 package/);
    }
    expect(fs.existsSync(path.join(pkg, 'export'))).toBe(false);
    expect(fs.readFileSync(path.join(pkg, 'README.md'), 'utf8')).toBe('# pak2\n');
  });

  it('refuses a checkout that contains the package root', () => {
    writeTree(base, { '.git/HEAD': 'ref: refs/heads/main\n' });
    expect(() => publishExport(base, { packageRoot: pkg })).toThrow(/overlaps the pak2 package/);
    expect(fs.existsSync(path.join(pkg, 'source/cli/main.ts'))).toBe(true);
  });

  it('refuses a package root that is not a complete checkout (an npm-installed package), naming what is missing', () => {
    fs.rmSync(path.join(pkg, 'source'), { recursive: true });
    fs.rmSync(path.join(pkg, 'test'), { recursive: true });
    const dest = path.join(base, 'out');
    expect(() => publishExport(dest, { packageRoot: pkg })).toThrow(`${pkg}: not a complete pak2 checkout; missing source, test`);
    expect(fs.existsSync(dest)).toBe(false);
  });
});

describe('publishExport runs no git command', () => {
  it('never calls git, in-process or through the CLI, for a fresh destination or an existing checkout', async () => {
    const spy = gitSpy();
    // The spy works: a git call through this PATH is recorded.
    expect(() => execFileSync('git', ['--version'], { env: { ...process.env, PATH: spy.PATH }, stdio: 'ignore' })).toThrow();
    expect(fs.readFileSync(spy.log, 'utf8')).toBe('git --version\n');
    fs.rmSync(spy.log);
    const savedPath = process.env.PATH;
    process.env.PATH = spy.PATH;
    try {
      publishExport(path.join(base, 'fresh'), { packageRoot: pkg });
      writeTree(path.join(base, 'checkout'), { '.git/HEAD': 'ref: refs/heads/main\n', 'old.txt': 'x' });
      publishExport(path.join(base, 'checkout'), { packageRoot: pkg });
    } finally {
      process.env.PATH = savedPath;
    }
    const viaCli = await runCli(['publish', path.join(base, 'cli-out')], { env: { PATH: spy.PATH } });
    expect(viaCli.code).toBe(0);
    writeTree(path.join(base, 'cli-checkout'), { '.git/HEAD': 'ref: refs/heads/main\n', 'old.txt': 'x' });
    const viaCliCheckout = await runCli(['publish', path.join(base, 'cli-checkout')], { env: { PATH: spy.PATH } });
    expect(viaCliCheckout.code).toBe(0);
    expect(fs.existsSync(spy.log)).toBe(false);
    expect(fs.existsSync(path.join(base, 'cli-out', '.git'))).toBe(false);
    expect(fs.readdirSync(path.join(base, 'cli-checkout', '.git'))).toEqual(['HEAD']);
  });
});

describe('pak2 publish (the CLI, from the installed package)', () => {
  it('exports this checkout and prints what it exported', async () => {
    const dest = path.join(base, 'export');
    const r = await runCli(['publish', 'export'], { cwd: base });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(`exported to ${dest}: ${AUTHORED_EXPORT_ENTRIES.map((e) => (fs.statSync(path.join(PACKAGE_ROOT, e)).isDirectory() ? `${e}/` : e)).join(', ')}`);
    expect(lines[1]).toBe('wrote .gitignore, PAK2.toml');
    expect(lines[2]).toBe('no git command was run; review, then commit and push yourself');
    expect(fs.readdirSync(dest).sort()).toEqual([...AUTHORED_EXPORT_ENTRIES, ...EXPORT_LOCAL_FILES].sort());
    for (const file of ['README.md', 'LICENSE', 'package.json', 'examples/charter-quickstart.md', 'source/lifecycle/publish.ts', 'test/publish/publish.test.ts']) {
      expect(fs.readFileSync(path.join(dest, file)), file).toEqual(fs.readFileSync(path.join(PACKAGE_ROOT, file)));
    }
    expect(fs.existsSync(path.join(dest, 'CHARTER.md'))).toBe(false);
    expect(parseConfig(fs.readFileSync(path.join(dest, 'PAK2.toml'), 'utf8')).gardenName).toBe('export');
  });

  it('--json prints the report; an existing checkout is reported as kept', async () => {
    const dest = path.join(base, 'checkout');
    writeTree(dest, { '.git/HEAD': 'ref: refs/heads/main\n', 'stale.md': 'x' });
    const r = await runCli(['publish', dest, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ destination: dest, keptGit: true, removed: ['stale.md'], written: ['.gitignore', 'PAK2.toml'] });
    const again = await runCli(['publish', dest]);
    expect(again.stdout.split('\n')[0]).toBe(`kept ${path.join(dest, '.git')}; removed ${[...AUTHORED_EXPORT_ENTRIES, ...EXPORT_LOCAL_FILES].sort().join(', ')}`);
  });

  it('a non-empty destination without .git: one-line error, exit 2, nothing touched', async () => {
    const dest = path.join(base, 'busy');
    writeTree(dest, { 'keep.md': 'mine\n' });
    const before = readTree(dest);
    const r = await runCli(['publish', dest]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([`pak2: DIR ${dest}: not empty and not a git checkout; pak2 publish writes into a new or empty directory, or replaces the worktree of a checkout (one holding .git)`]);
    expect(readTree(dest)).toEqual(before);
  });
});
