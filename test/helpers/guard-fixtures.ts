/**
 * Hand-written guarded-run files (seed 001) for reader, trace and view
 * tests: an envelope with two routing attempts, an outcome of a scope
 * violation that was rolled back, a phase log and a rejected.patch.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ExecutionEnvelope, PhaseEvent, TaskOutcome } from '../../source/contracts/index.js';
import { runDir, type GardenPaths } from '../../source/garden/index.js';

export function envelopeFixture(runId: string, overrides: Partial<ExecutionEnvelope> = {}): ExecutionEnvelope {
  const goal = runId.replace(/-r\d+$/, '');
  return {
    schema_version: '1.0',
    run_id: runId,
    guarded: true,
    contract_id: 'contract-123',
    executor: { name: 'claude', version: '2.1.197', sandbox: false, model: 'sonnet' },
    env_passthrough: ['API_KEY'],
    timeout_seconds: 600,
    baseline: { head: '0123456789abcdef0123456789abcdef01234567', branch: 'main' },
    executor_exit_code: 0,
    routing: {
      task_class: 'simple',
      tier_index: 1,
      escalations: 1,
      stop_reason: 'blocked_after_escalation',
      attempts: [
        { run_id: `${goal}-r1`, tier_index: 0, executor: 'command', model: 'MiniMax-M3', diagnostic_code: 'verify_failed', cost_usd: 0.01 },
        { run_id: runId, tier_index: 1, executor: 'claude', model: 'sonnet', diagnostic_code: 'scope_violation', cost_usd: 0.4 },
      ],
    },
    ...overrides,
  };
}

export function outcomeFixture(runId: string, overrides: Partial<TaskOutcome> = {}): TaskOutcome {
  return {
    schema_version: '1.0',
    guarded: true,
    run_id: runId,
    state: 'blocked',
    status: 'failed',
    diagnostic_code: 'scope_violation',
    next_command: `pak2 trace ${runId}`,
    verify_ok: null,
    verify_exit_code: null,
    verify_stdout: '',
    verify_stderr: '',
    failed_command: null,
    verifier_was_skipped: true,
    mutated_files: [],
    attempted_mutations: ['.env', 'src/app.ts'],
    accepted_mutations: ['src/app.ts'],
    blocked_mutations: ['.env'],
    unexpected_mutations: [],
    rollback_performed: true,
    rollback_stdout: '',
    rollback_stderr: '',
    contract_id: 'contract-123',
    acceptance_state: 'raw_run_not_contract_accepted',
    allowed_files: ['src/**'],
    forbidden_paths: ['.env'],
    executor: { name: 'claude', version: '2.1.197', exit_code: 0, timed_out: false, duration_seconds: 41.9, sandbox: false, self_status: 'success', cost_usd: 0.4, turns: 5 },
    wall_time_seconds: 43.2,
    scope_violations: [{ kind: 'forbidden_path', path: '.env', detail: 'matches forbidden_paths .env' }],
    ...overrides,
  };
}

export function phasesFixture(runId: string): PhaseEvent[] {
  const at = (s: number) => new Date(Date.UTC(2026, 10, 29, 12, 0, 0) + s * 1000).toISOString();
  return [
    { ts: at(0), run_id: runId, phase: 'baseline', outcome: 'ok', duration_ms: 12, detail: 'HEAD 0123456789ab on main' },
    { ts: at(0.1), run_id: runId, phase: 'executor_start', outcome: 'ok' },
    { ts: at(42), run_id: runId, phase: 'executor_done', outcome: 'ok', duration_ms: 41900, detail: 'exit 0' },
    { ts: at(42.2), run_id: runId, phase: 'scope_check', outcome: 'violations', duration_ms: 80, detail: '1 violation' },
    { ts: at(42.3), run_id: runId, phase: 'verify', outcome: 'skipped' },
    { ts: at(42.3), run_id: runId, phase: 'decision', outcome: 'rejected', detail: 'scope_violation' },
    { ts: at(43.2), run_id: runId, phase: 'rollback', outcome: 'done', duration_ms: 900, detail: '2 path(s) reverted; rejected.patch written' },
  ];
}

export const PATCH_TEXT = 'diff --git a/.env b/.env\nnew file mode 100644\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+SECRET=[REDACTED]\n';

/** Writes the guard files into the run's directory; `null` leaves one out, a string writes it as is. */
export function writeGuardFiles(
  paths: GardenPaths,
  runId: string,
  files: { envelope?: unknown; outcome?: unknown; phases?: string | PhaseEvent[] | null; patch?: string | null } = {},
): string {
  const dir = runDir(paths, runId);
  fs.mkdirSync(dir, { recursive: true });
  const json = (v: unknown) => (typeof v === 'string' ? v : `${JSON.stringify(v, null, 2)}\n`);
  const envelope = files.envelope === undefined ? envelopeFixture(runId) : files.envelope;
  const outcome = files.outcome === undefined ? outcomeFixture(runId) : files.outcome;
  const phases = files.phases === undefined ? phasesFixture(runId) : files.phases;
  const patch = files.patch === undefined ? PATCH_TEXT : files.patch;
  if (envelope !== null) fs.writeFileSync(path.join(dir, 'execution_envelope.json'), json(envelope));
  if (outcome !== null) fs.writeFileSync(path.join(dir, 'task_outcome.json'), json(outcome));
  if (phases !== null) fs.writeFileSync(path.join(dir, 'phase_events.jsonl'), typeof phases === 'string' ? phases : phases.map((p) => `${JSON.stringify(p)}\n`).join(''));
  if (patch !== null) fs.writeFileSync(path.join(dir, 'rejected.patch'), patch);
  return dir;
}
