#!/usr/bin/env node
// The real agent CLIs that the end-to-end tests and the demo drive: test
// tooling, not pak2's dependencies. They live in the private package
// test/agent-clis/ (its own package.json and package-lock.json): Claude Code's
// native per-platform packages (npm installs only the one matching os, cpu
// and libc) and @openai/codex. The wrapper package @anthropic-ai/claude-code
// is left out on purpose: from 2.1.198 it declares engines node >= 22 (pak2
// runs on Node 20) and needs its postinstall script to put the binary in
// place; the platform packages declare no engines and need no script.
//
// This script (the root `prepare`, so `npm ci` at the root runs it):
// 1. runs `npm ci` in test/agent-clis when its node_modules is missing, older
//    than its lock file, or lacks a CLI;
// 2. makes test/agent-clis/bin/claude (the platform binary, chosen the way
//    Claude Code's own install.cjs does) and test/agent-clis/bin/codex
//    (codex's node_modules/.bin/codex): tiny sh scripts that exec them by a
//    relative path (.cmd files on Windows). test/support/agent-clis.ts names
//    them for the tests and the demo.
// Safe to run again; it changes nothing when all is in place. Plain Node, no
// dependencies. On failure: one line naming what is missing, exit 1.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'test', 'agent-clis');
const modules = path.join(dir, 'node_modules');
const lockFile = path.join(dir, 'package-lock.json');
const binDir = path.join(dir, 'bin');
const windows = process.platform === 'win32';
const rel = (p) => path.relative(root, p).split(path.sep).join('/');

function fail(message) {
  process.stderr.write(`agent-clis: ${message}\n`);
  process.exit(1);
}

/** Claude Code's platform key, as its install.cjs computes it: linux-<cpu>[-musl], darwin-<cpu> (arm64 under Rosetta 2), win32-<cpu>. */
function claudePlatform() {
  let cpu = os.arch();
  if (process.platform === 'linux') {
    // glibcVersionRuntime is absent on musl.
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
    const musl = report != null && report.header?.glibcVersionRuntime === undefined;
    return `linux-${cpu}${musl ? '-musl' : ''}`;
  }
  if (process.platform === 'darwin' && cpu === 'x64') {
    // An x64 Node under Rosetta 2: the x64 build needs AVX, which Rosetta lacks.
    const translated = spawnSync('sysctl', ['-n', 'sysctl.proc_translated'], { encoding: 'utf8' });
    if (translated.stdout?.trim() === '1') cpu = 'arm64';
  }
  return `${process.platform}-${cpu}`;
}

const platform = claudePlatform();
const claudePackage = `@anthropic-ai/claude-code-${platform}`;
const targets = {
  claude: path.join(modules, ...claudePackage.split('/'), windows ? 'claude.exe' : 'claude'),
  codex: path.join(modules, '.bin', windows ? 'codex.cmd' : 'codex'),
};

if (!fs.existsSync(path.join(dir, 'package.json')) || !fs.existsSync(lockFile)) {
  fail(`${rel(dir)}/package.json or package-lock.json is missing; this script runs in a pak2 checkout`);
}
const declared = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
if (!declared.optionalDependencies?.[claudePackage]) {
  fail(`no Claude Code package for this platform (${platform}) in ${rel(dir)}/package.json; known: ${Object.keys(declared.optionalDependencies ?? {}).join(', ')}`);
}

/** npm ci wrote node_modules/.package-lock.json at its end: installed, and not older than the lock file. */
function installed() {
  const hidden = fs.statSync(path.join(modules, '.package-lock.json'), { throwIfNoEntry: false });
  return hidden !== undefined && hidden.mtimeMs >= fs.statSync(lockFile).mtimeMs && Object.values(targets).every((t) => fs.existsSync(t));
}

if (!installed()) {
  // The npm running this script (npm_execpath under `npm ci` / `npm run`), else npm from PATH. Settings
  // that would send the nested install elsewhere (a global install's `npm install -g .`) are dropped;
  // the rest (registry, cache, proxy, userconfig) carry over.
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^npm_config_(global|location|prefix|workspaces?|include_workspace_root)$/i.test(key)) delete env[key];
  }
  const npmCli = process.env.npm_execpath && /npm-cli\.c?js$/.test(process.env.npm_execpath) ? process.env.npm_execpath : undefined;
  const [command, prefix] = npmCli ? [process.execPath, [npmCli]] : [windows ? 'npm.cmd' : 'npm', []];
  process.stderr.write(`agent-clis: npm ci in ${rel(dir)} (claude ${declared.optionalDependencies[claudePackage]} for ${platform}, codex ${declared.dependencies?.['@openai/codex']})\n`);
  const started = Date.now();
  const r = spawnSync(command, [...prefix, 'ci', '--no-audit', '--no-fund'], { cwd: dir, env, stdio: ['ignore', 'inherit', 'inherit'], shell: windows && !npmCli });
  if (r.error) fail(`could not run npm (${r.error.message}); npm is needed to install ${rel(dir)}`);
  if (r.status !== 0) fail(`npm ci in ${rel(dir)} failed (exit ${r.status ?? r.signal}); see npm's output above`);
  process.stderr.write(`agent-clis: installed in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

for (const [name, target] of Object.entries(targets)) {
  if (!fs.existsSync(target)) {
    const what = name === 'claude' ? `package ${claudePackage} (npm skips it when optional dependencies are omitted)` : 'package @openai/codex';
    fail(`${rel(target)} is missing after npm ci: ${what}`);
  }
}

/**
 * bin/<name> → target: a two-line sh script that execs the target by a path
 * relative to itself (a .cmd file on Windows), so a copy of the tree (pak2
 * publish copies test/) names no path of this machine; rewritten only when
 * it differs.
 */
function place(name, target) {
  fs.mkdirSync(binDir, { recursive: true });
  const link = path.join(binDir, windows ? `${name}.cmd` : name);
  const relative = path.relative(binDir, target);
  const text = windows
    ? `@"%~dp0${relative}" %*\r\n`
    : `#!/bin/sh\n# scripts/agent-clis.mjs: the ${name} that test/agent-clis installed\nexec "$(dirname "$0")/${relative.split(path.sep).join('/')}" "$@"\n`;
  const stat = fs.lstatSync(link, { throwIfNoEntry: false });
  if (stat?.isFile() && stat.size === Buffer.byteLength(text) && fs.readFileSync(link, 'utf8') === text && (windows || (stat.mode & 0o111) === 0o111)) return;
  const temp = `${link}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text, { mode: 0o755 });
  fs.chmodSync(temp, 0o755);
  fs.renameSync(temp, link);
}

for (const [name, target] of Object.entries(targets)) place(name, target);

const version = (pkg) => JSON.parse(fs.readFileSync(path.join(modules, ...pkg.split('/'), 'package.json'), 'utf8')).version;
process.stdout.write(`agent-clis: ${rel(binDir)}/claude (Claude Code ${version(claudePackage)}, ${platform}) and ${rel(binDir)}/codex (codex ${version('@openai/codex')})\n`);
