/**
 * `pak2 trace RUN [--json]` on hand-written run directories (issue 10,
 * item 8): a valid guarded run, a malformed outcome, a run that is not
 * guarded, an unknown run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runDir } from '../../source/garden/index.js';
import { closeRun, createGoal, openRun } from '../../source/store/index.js';
import { envelopeFixture, outcomeFixture, PATCH_TEXT, phasesFixture, writeGuardFiles } from '../helpers/guard-fixtures.js';
import { runCli } from '../support/cli.js';
import { makeTestGarden } from '../support/garden.js';

const ROUTING = '[routing.simple]\ntiers = [{ driver = "success" }, { driver = "success", model = "big" }, { driver = "success", model = "bigger" }]\n';

let garden: Awaited<ReturnType<typeof makeTestGarden>>;
let g: string[];
beforeEach(async () => {
  garden = await makeTestGarden({ extraToml: ROUTING });
  g = ['--garden', garden.paths.gardenRoot];
});
afterEach(() => garden.cleanup());

/** A closed run of a goal (attempt `attempt`), its directory holding meta.json. */
async function closedRun(attempt = 2): Promise<string> {
  const goal = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Fix the parser' });
  let id = '';
  for (let i = 0; i < attempt; i += 1) {
    const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'claude', model: 'sonnet' });
    await closeRun(garden.paths, run.id, goal.type, { status: 'failure', failureReason: 'scope_violation', cost: { source: 'provider', usd: 0.4 } });
    id = run.id;
  }
  return id;
}

describe('pak2 trace', () => {
  it('prints the timeline with durations, decision, violations, verify, mutations, rollback and routing with costs', async () => {
    const runId = await closedRun();
    writeGuardFiles(garden.paths, runId);
    const r = await runCli(['trace', runId, ...g]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(out.split('\n')[0]).toBe(`run ${runId} · guarded · failure (scope_violation)`);
    expect(out).toContain('blocked / failed · scope_violation');
    expect(out).toContain(`next pak2 trace ${runId}`);
    expect(out).toContain('contract contract-123 · acceptance raw_run_not_contract_accepted');
    // The timeline: offsets from the first phase, logged durations, and a gap where none was logged.
    expect(out).toMatch(/\+0 ms\s+baseline\s+ok\s+12 ms\s+HEAD 0123456789ab on main/);
    expect(out).toMatch(/\+42\.0 s\s+executor_done\s+ok\s+41\.9 s\s+exit 0/);
    expect(out).toMatch(/\+100 ms\s+executor_start\s+ok\s+~41\.9 s/);
    expect(out).toMatch(/\+43\.2 s\s+rollback\s+done\s+900 ms/);
    expect(out).toContain('verify\n  skipped');
    expect(out).toContain('violations (1)\n  forbidden_path   .env — matches forbidden_paths .env');
    expect(out).toContain('mutations (0 kept, 2 rejected)');
    expect(out).toMatch(/attempted\s+2\s+\.env, src\/app\.ts/);
    expect(out).toMatch(/blocked\s+1\s+\.env/);
    expect(out).toContain(`rejected.patch ${path.join(runDir(garden.paths, runId), 'rejected.patch')} (${Buffer.byteLength(PATCH_TEXT)} B)`);
    expect(out).toContain('simple · attempt 2 of 2 · tier 1 · 1 escalation(s) · stop blocked_after_escalation');
    expect(out).toMatch(/1 {2}1-fix-the-parser-r1\s+tier 0 {2}command\/MiniMax-M3\s+verify_failed\s+\$0\.0100/);
    expect(out).toMatch(/▸ 2 {2}1-fix-the-parser-r2\s+tier 1 {2}claude\/sonnet\s+scope_violation\s+\$0\.4000/);
    expect(out).toContain('total $0.4100 over 2 attempt(s)');
    expect(out).not.toContain('problems');
  });

  it('shows verify output (first lines) and an attempt that escalated, of the tiers [routing] allows', async () => {
    const runId = await closedRun(1);
    const many = Array.from({ length: 8 }, (_, i) => `FAIL case ${i + 1}`).join('\n');
    writeGuardFiles(garden.paths, runId, {
      envelope: envelopeFixture(runId, {
        routing: { task_class: 'simple', tier_index: 0, escalations: 0, attempts: [{ run_id: runId, tier_index: 0, executor: 'command', model: 'small', diagnostic_code: 'verify_failed', cost_usd: null }] },
      }),
      outcome: outcomeFixture(runId, {
        state: 'blocked',
        diagnostic_code: 'verify_failed',
        verify_ok: false,
        verify_exit_code: 1,
        verify_stdout: many,
        verify_stderr: 'npm ERR! Test failed.',
        failed_command: 'npm test',
        verifier_was_skipped: false,
        scope_violations: [],
      }),
      patch: null,
    });
    const r = await runCli(['trace', runId, ...g]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('verify\n  failed · exit 1 · npm test\n  stdout:\n    FAIL case 1');
    expect(r.stdout).toContain('    FAIL case 5\n    … 3 more line(s)\n  stderr:\n    npm ERR! Test failed.');
    expect(r.stdout).toContain('violations (0)\n  none');
    expect(r.stdout).toContain('simple · attempt 1 of 3 · tier 0 · 0 escalation(s) · escalated');
    expect(r.stdout).toContain('total $0.0000 over 1 attempt(s) (1 of unknown cost)');
    expect(r.stdout).toContain('no rejected.patch');
  });

  it('--json prints {envelope, outcome, phases, problems}', async () => {
    const runId = await closedRun();
    writeGuardFiles(garden.paths, runId);
    const r = await runCli(['trace', runId, ...g, '--json']);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(json)).toEqual(['envelope', 'outcome', 'phases', 'problems']);
    expect(json.envelope).toEqual(envelopeFixture(runId));
    expect(json.outcome).toEqual(outcomeFixture(runId));
    expect(json.phases).toEqual(phasesFixture(runId));
    expect(json.problems).toEqual([]);
  });

  it('a malformed outcome: the rest is printed, the file and field are named, exit 1', async () => {
    const runId = await closedRun();
    const bad = { ...outcomeFixture(runId), state: 'finished', mutated_files: 'all of them' };
    const dir = writeGuardFiles(garden.paths, runId, { outcome: bad });
    const r = await runCli(['trace', runId, ...g]);
    expect(r.code).toBe(1);
    const file = path.join(dir, 'task_outcome.json');
    expect(r.stdout).toContain(`problems\n  ${file}: state: `);
    expect(r.stdout).toContain(`${file}: mutated_files: `);
    expect(r.stdout).toContain('no task_outcome.json yet (last phase: rollback done)');
    expect(r.stdout).toContain('simple · attempt 2 of 2'); // the envelope still reads
    expect(r.stderr.trim()).toBe(`pak2: 2 problem(s) in ${runId}'s guard files; the trace is incomplete`);
    const json = await runCli(['trace', runId, ...g, '--json']);
    expect(json.code).toBe(1);
    const parsed = JSON.parse(json.stdout) as { outcome: unknown; problems: string[] };
    expect(parsed.outcome).toBeNull();
    expect(parsed.problems).toHaveLength(2);
  });

  it('outcome not JSON and a bad phase line are problems too', async () => {
    const runId = await closedRun();
    const lines = phasesFixture(runId).map((p) => JSON.stringify(p));
    lines.splice(2, 0, '{"ts":"x","run_id":"a","phase":"lunch","outcome":"ok"}', 'not json');
    const dir = writeGuardFiles(garden.paths, runId, { outcome: '{"state": "ready",', phases: `${lines.join('\n')}\n` });
    const r = await runCli(['trace', runId, ...g, '--json']);
    expect(r.code).toBe(1);
    const parsed = JSON.parse(r.stdout) as { phases: unknown[]; problems: string[] };
    expect(parsed.phases).toHaveLength(7);
    expect(parsed.problems[0]).toMatch(new RegExp(`^${path.join(dir, 'task_outcome.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: \\(document\\): not valid JSON`));
    expect(parsed.problems[1]).toBe(`${path.join(dir, 'phase_events.jsonl')}: line 3: phase: ${parsed.problems[1]!.split(': phase: ')[1]}`);
    expect(parsed.problems[2]).toBe(`${path.join(dir, 'phase_events.jsonl')}: line 4: not valid JSON`);
  });

  it('a run that is not guarded: one line, exit 1', async () => {
    const runId = await closedRun(1);
    const r = await runCli(['trace', runId, ...g]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(`pak2: run ${runId} is not a guarded run (no execution_envelope.json)`);
  });

  it('an unknown run and a bad run id: the show command\'s errors, exit 2', async () => {
    const unknown = await runCli(['trace', '9-nothing-here-r1', ...g]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe(`pak2: no run 9-nothing-here-r1 in ${garden.paths.runtimeRoot}`);
    const bad = await runCli(['trace', 'not-a-run', ...g]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('pak2: RUN not-a-run: not a run id (N-slug-rN)');
  });

  it('a run still going: the phases so far, no outcome yet, no problem', async () => {
    const goal = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Live one' });
    const run = await openRun(garden.paths, goal, { plant: 'gardener', driver: 'claude', model: 'sonnet' });
    writeGuardFiles(garden.paths, run.id, { envelope: null, outcome: null, patch: null, phases: phasesFixture(run.id).slice(0, 2) });
    const r = await runCli(['trace', run.id, ...g]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`run ${run.id} · guarded · running`);
    expect(r.stdout).toContain('no task_outcome.json yet (last phase: executor_start ok)');
    expect(fs.existsSync(path.join(runDir(garden.paths, run.id), 'execution_envelope.json'))).toBe(false);
  });
});
