import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import type { GoalRecord, RunRecord } from '../../source/contracts/index.js';
import { EMPTY_SNAPSHOT, renderRawLine, type Snapshot, type TailState, type TailUsage } from '../../source/snapshot/index.js';

/** The fixed clock of every view test: 2026-11-29 12:00 UTC. */
export const NOW = Date.parse('2026-11-29T12:00:00.000Z');
const STREAMS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/streams');

/** An ISO time `minutes` before NOW. */
export function ago(minutes: number): string {
  return new Date(NOW - minutes * 60_000).toISOString();
}

/** A goal record with sensible defaults. */
export function goal(n: number, overrides: Partial<GoalRecord> = {}): GoalRecord {
  return {
    id: `${n}-goal-number-${n}`,
    type: 'build',
    status: 'queued',
    priority: 50,
    assigned_to: 'gardener',
    body: `Do thing number ${n}.`,
    submitted_at: ago(n % 600),
    ...overrides,
  };
}

/** A run record with sensible defaults. */
export function run(goalId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return { id: `${goalId}-r1`, goal: goalId, plant: 'gardener', status: 'running', started_at: ago(3), driver: 'claude', model: 'claude-opus-4-6', ...overrides };
}

/** A complete snapshot from a few overrides (an empty garden by default). */
export function snapshotOf(overrides: Partial<Snapshot> = {}): Snapshot {
  return {
    ...EMPTY_SNAPSHOT,
    version: 1,
    takenAt: new Date(NOW).toISOString(),
    garden: { name: 'demo', root: '/work/garden', runtimeRoot: '/work/garden/.runtime', readOnly: false, drivers: ['claude', 'codex', 'command'] },
    coordinator: { state: 'idle', liveRuns: [] },
    ...overrides,
  };
}

/** The tail state a real captured stream renders to (test/fixtures/streams/<name>.jsonl). */
export function tailOf(name: string, runId: string): TailState {
  const usage: TailUsage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
  const text = fs.readFileSync(path.join(STREAMS, `${name}.jsonl`), 'utf8');
  const lines = text.split('\n').flatMap((raw) => renderRawLine(raw, usage));
  return { runId, file: `/work/garden/.runtime/runs/${runId}/events.jsonl`, lines, usage, bytes: Buffer.byteLength(text), truncated: false };
}

/** A frame without colour codes, trailing spaces trimmed per line (what a person reads). */
export function plain(frame: string | undefined): string {
  return `${stripVTControlCharacters(frame ?? '')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')}\n`;
}

/** Three macrotasks: ink flushes a lone ESC on the next setImmediate, then renders. */
export async function tick(): Promise<void> {
  for (let i = 0; i < 3; i += 1) await new Promise((resolve) => setImmediate(resolve));
}
