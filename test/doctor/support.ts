/**
 * Helpers for the `pak2 doctor` tests: run the built CLI on a garden, read
 * its JSON, and prove that `--fix` lost nothing.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { Garden } from '../../source/garden/index.js';
import { setRuntimeHistoryListener } from '../../source/history/index.js';
import { closeRun, createGoal, openRun, transitionGoal } from '../../source/store/index.js';
import { runCli, type CliResult } from '../support/cli.js';

/** One finding as `pak2 doctor --json` prints it. */
export interface JsonFinding {
  check: string;
  file: string;
  field?: string;
  message: string;
  fix?: string;
  fixed?: boolean;
}

/** Runs `pak2 --garden ROOT doctor ...args`. */
export function doctor(root: string, ...args: string[]): Promise<CliResult> {
  return runCli(['--garden', root, 'doctor', ...args]);
}

/** Runs `pak2 doctor --json ...args` and parses its findings. */
export async function doctorJson(root: string, ...args: string[]): Promise<{ code: number; findings: JsonFinding[]; stderr: string }> {
  const result = await doctor(root, '--json', ...args);
  let parsed: { findings: JsonFinding[] };
  try {
    parsed = JSON.parse(result.stdout) as { findings: JsonFinding[] };
  } catch {
    throw new Error(`pak2 doctor --json printed no JSON (exit ${result.code}): ${result.stdout}${result.stderr}`);
  }
  expect(Object.keys(parsed)).toEqual(['findings']);
  for (const f of parsed.findings) for (const key of Object.keys(f)) expect(['check', 'file', 'field', 'message', 'fix', 'fixed']).toContain(key);
  return { code: result.code, findings: parsed.findings, stderr: result.stderr };
}

/** The finding lines of a text report: those under their check's line, indented four spaces (given without them). */
export function findingLines(stdout: string): string[] {
  return stdout
    .trimEnd()
    .split('\n')
    .filter((line) => line.startsWith('    '))
    .map((line) => line.slice(4));
}

/** A clean text report: every check that ran is `[✓]`, no finding, the summary says so. */
export function expectClean(stdout: string, root: string): void {
  const lines = stdout.trimEnd().split('\n');
  expect(lines[0]).toBe(`doctor: ${root}`);
  expect(lines.at(-1)).toBe(`no problems found in ${root}`);
  expect(lines.filter((line) => !/^\[[✓-]\] /.test(line)).slice(1, -1)).toEqual([]);
}

/** Silences the runtime-history stderr line of closes in a non-git garden, for one test. */
export function quietHistory(): () => void {
  return setRuntimeHistoryListener(() => undefined);
}

/** A goal taken through a whole run to `closed`, its run closed `success`. Returns the ids. */
export async function closedRun(garden: Garden, body = 'look around'): Promise<{ goal: string; run: string }> {
  const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body });
  await transitionGoal(garden.paths, goal.id, 'dispatched');
  const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'command', model: 'scripted' });
  await transitionGoal(garden.paths, goal.id, 'running');
  await closeRun(garden.paths, run.id, goal.type, { status: 'success', cost: { source: 'unknown' } });
  await transitionGoal(garden.paths, goal.id, 'completed');
  await transitionGoal(garden.paths, goal.id, 'closed', { closedReason: 'success' });
  return { goal: goal.id, run: run.id };
}

/** A goal whose run is still `running` (goal status `running`). */
export async function runningRun(garden: Garden, body = 'keep going'): Promise<{ goal: string; run: string }> {
  const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body });
  await transitionGoal(garden.paths, goal.id, 'dispatched');
  const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'command', model: 'scripted' });
  await transitionGoal(garden.paths, goal.id, 'running');
  return { goal: goal.id, run: run.id };
}

/** Every file under `dir` (relative path → bytes). */
export function filesUnder(dir: string, rel = ''): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    const p = rel ? path.join(rel, entry.name) : entry.name;
    if (entry.isDirectory()) for (const [k, v] of filesUnder(dir, p)) out.set(k, v);
    else if (entry.isFile()) out.set(p, fs.readFileSync(path.join(dir, p)));
  }
  return out;
}

const hash = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/**
 * Asserts that nothing of `before` was lost in `after`: each file is still
 * where it was with the same bytes or bytes appended, or its exact bytes are
 * somewhere else (moved or copied aside). `except` names paths that may go
 * (locks); files under a `.cache/` directory are caches, never records.
 */
export function expectNothingLost(before: Map<string, Buffer>, after: Map<string, Buffer>, except: string[] = []): void {
  const hashes = new Set([...after.values()].map(hash));
  for (const [rel, bytes] of before) {
    // `.cache/` holds caches (the goals listing, the ledger record), rewritten as they follow what they cache.
    if (except.includes(rel) || rel.split('/').includes('.cache')) continue;
    const now = after.get(rel);
    const kept = (now && now.subarray(0, bytes.length).equals(bytes)) || hashes.has(hash(bytes));
    expect(kept, `${rel} was lost`).toBe(true);
  }
}

/** The single `<runtime-root>/doctor/<timestamp>` directory a `--fix` made. */
export function asideDir(garden: Garden): string {
  const base = path.join(garden.paths.runtimeRoot, 'doctor');
  const dirs = fs.readdirSync(base);
  expect(dirs).toHaveLength(1);
  return path.join(base, dirs[0]!);
}
