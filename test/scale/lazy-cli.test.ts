/**
 * Commands load only what they use (issue 13): `pak2 --version` and
 * `--help` load neither zod nor execa nor Ink, and a read command loads no
 * driver code. The modules a real `node bin/pak2.js …` loads are recorded
 * by a module.register load hook (record-modules.mjs) and checked by name:
 * bin/pak2.js runs the bundle (scripts/bundle.mjs), so each chunk it loads
 * stands for the modules esbuild's metafile (dist/bundle/meta.json) puts in it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram, type CliIO } from '../../source/cli/main.js';
import { createGoal } from '../../source/store/index.js';
import { PAK2_BIN } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';
import { writeClosedHistory } from './history.js';

const RECORDER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'record-modules.mjs');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A loaded bundle chunk's URL as the URLs of the modules in it (dist/…, node_modules/…); other URLs as they are. */
function modulesOf(urls: string[]): string[] {
  const meta = JSON.parse(fs.readFileSync(path.join(ROOT, 'dist/bundle/meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
  return urls.flatMap((url) => {
    const at = url.indexOf('/dist/bundle/');
    const output = at >= 0 ? meta.outputs[url.slice(at + 1)] : undefined;
    return output ? [url, ...Object.keys(output.inputs).map((input) => `file://${path.join(ROOT, input)}`)] : [url];
  });
}
let dir: string;
let garden: Awaited<ReturnType<typeof makeTestGarden>>;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pak2-lazy-'));
  garden = await makeTestGarden();
  writeClosedHistory(garden.paths, 30);
  await createGoal(garden.paths, { type: 'build', body: 'open work' });
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  garden.cleanup();
});

/** Runs the real CLI under the recorder; the loaded module URLs, and how it ended. */
function loaded(args: string[], cwd = dir): Promise<{ code: number; stdout: string; stderr: string; modules: string[] }> {
  const out = path.join(dir, `loaded-${Math.random().toString(36).slice(2)}.txt`);
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', RECORDER, PAK2_BIN, ...args], { cwd, env: { ...process.env, PAK2_LOADED_OUT: out }, timeout: 60_000 }, (error, stdout, stderr) => {
      const modules = modulesOf(fs.existsSync(out) ? fs.readFileSync(out, 'utf8').split('\n').filter(Boolean) : []);
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr, modules });
    });
  });
}

const pkg = (name: string) => (url: string) => url.includes(`/node_modules/${name}/`);
const driverCode = (url: string) => /\/(dist|source)\/driver\//.test(url);

describe('pak2 loads only what a command uses', () => {
  it.each([[['--version']], [['-V']], [['--help']], [['-h']]])('%j loads neither zod nor execa nor Ink, nor any command module', async (args) => {
    const r = await loaded(args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.modules.some((u) => u.endsWith('/bin/pak2.js'))).toBe(true); // the recorder saw the CLI start
    expect(r.stdout).toMatch(args[0]!.startsWith('-V') || args[0] === '--version' ? /^\d+\.\d+\.\d+\n$/ : /Usage: pak2 \[options\] \[command\]/);
    for (const name of ['zod', 'execa', 'ink', 'react']) expect(r.modules.filter(pkg(name)), name).toEqual([]);
    expect(r.modules.filter((u) => u.includes('/dist/cli/commands/'))).toEqual([]);
    expect(r.modules.filter((u) => /\/dist\/(store|driver|coordinator|session|snapshot|ui)\//.test(u))).toEqual([]);
  });

  it('pak2 goals (a read command) loads no driver code and neither Ink nor execa', async () => {
    const r = await loaded(['goals', '--garden', garden.paths.gardenRoot]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('31-open-work');
    expect(r.modules.some((u) => u.endsWith('/dist/cli/commands/read.js'))).toBe(true);
    expect(r.modules.filter(driverCode)).toEqual([]);
    for (const name of ['execa', 'ink', 'react']) expect(r.modules.filter(pkg(name)), name).toEqual([]);
    expect(r.modules.filter((u) => u.includes('/dist/cli/commands/') && !u.endsWith('/read.js'))).toEqual([]);
  });

  it('pak2 goals --help loads its own command module only', async () => {
    const r = await loaded(['goals', '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('--all');
    expect(r.modules.filter((u) => u.includes('/dist/cli/commands/')).map((u) => path.basename(u))).toEqual(['read.js']);
  });
});

describe('the command list main.ts registers cheaply matches the command modules', () => {
  const io: CliIO = { out: () => undefined, err: () => undefined, env: {}, cwd: '/', isTTY: false };

  it('every command, its help term and description, as the modules register them', async () => {
    const full = await buildProgram(io, ['node', 'pak2'], { all: true });
    const cheap = await buildProgram(io, ['node', 'pak2', '--help']);
    expect(cheap.commands.map((c) => c.name())).toEqual(full.commands.map((c) => c.name()));
    expect(cheap.helpInformation()).toBe(full.helpInformation());
  });

  it('a command that stands in (its module not loaded) still runs: it loads the module and parses again', async () => {
    const lines: string[] = [];
    const mine: CliIO = { ...io, out: (t) => lines.push(t) };
    // Parse argv naming `goals` on a program built for `--help`: `goals` is a stand-in there.
    const program = await buildProgram(mine, ['node', 'pak2', '--help']);
    await program.parseAsync(['node', 'pak2', 'goals', '--garden', garden.paths.gardenRoot]);
    expect(lines.join('\n')).toContain('31-open-work');
  });
});
