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
    // Never the command just run: the goal is still open, so what to look at next is the goal.
    expect(out).not.toContain(`next pak2 trace ${runId}`);
    expect(out).toContain(`next pak2 show ${runId.replace(/-r2$/, '')}`);
    expect(out).toContain('contract contract-123 · acceptance raw_run_not_contract_accepted');
    // The timeline: each phase at its start (ts less duration_ms) from the first one's, logged durations;
    // a phase logged without one (executor_start, decision) is a point: no next phase's time on its row.
    expect(out).toMatch(/\+0 ms\s+baseline\s+ok\s+12 ms\s+HEAD 0123456789ab on main/);
    expect(out).toMatch(/\+112 ms\s+executor_start\s+ok\n/);
    expect(out).toMatch(/\+112 ms\s+executor_done\s+ok\s+41\.9 s\s+exit 0/);
    expect(out).toMatch(/\+42\.1 s\s+scope_check\s+violations\s+80 ms\s+1 violation/);
    expect(out).toMatch(/\+42\.3 s\s+decision\s+rejected\s+scope_violation/);
    expect(out).toMatch(/\+42\.3 s\s+rollback\s+done\s+900 ms/);
    expect(out).not.toContain('~');
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

  it('a gap to the next phase\'s start is shown with ~; an outcome wider than the others (not_started) keeps the columns aligned', async () => {
    const runId = await closedRun(1);
    const at = (s: number) => new Date(Date.UTC(2026, 10, 29, 12, 0, 0) + s * 1000).toISOString();
    const phases = [
      { ts: at(0), run_id: runId, phase: 'baseline', outcome: 'ok', duration_ms: 20, detail: 'HEAD x' },
      { ts: at(0.5), run_id: runId, phase: 'executor_start', outcome: 'ok', detail: 'claude sonnet' },
      { ts: at(2), run_id: runId, phase: 'executor_done', outcome: 'not_started', duration_ms: 1000, detail: 'spawn ENOENT' },
      { ts: at(2), run_id: runId, phase: 'verify', outcome: 'skipped', detail: 'the agent did not start' },
      { ts: at(2.277), run_id: runId, phase: 'decision', outcome: 'blocked', detail: 'launch_failed' },
      { ts: at(2.3), run_id: runId, phase: 'rollback', outcome: 'not_needed', detail: 'nothing changed' },
    ];
    writeGuardFiles(garden.paths, runId, { phases: phases as never, envelope: envelopeFixture(runId, { routing: undefined }), patch: null });
    const r = await runCli(['trace', runId, ...g]);
    expect(r.code).toBe(0);
    const rows = r.stdout.split('\n').slice(r.stdout.split('\n').indexOf('phases') + 1, r.stdout.split('\n').indexOf('phases') + 7);
    expect(rows[1]).toMatch(/^ {2}\+520 ms\s+executor_start\s+ok\s+~500 ms\s+claude sonnet$/); // to executor_done's start (1.5 s), not its end
    expect(rows[2]).toMatch(/^ {2}\+1\.0 s\s+executor_done\s+not_started\s+1\.0 s\s+spawn ENOENT$/);
    expect(rows[4]).toMatch(/^ {2}\+2\.3 s\s+decision\s+blocked\s+~23 ms\s+launch_failed$/);
    // Every column starts at the same place on every row.
    const column = (words: string[]) => rows.map((row, i) => row.indexOf(words[i]!));
    expect(new Set(column(['baseline', 'executor_start', 'executor_done', 'verify', 'decision', 'rollback'])).size).toBe(1);
    expect(new Set(column(['ok', 'ok', 'not_started', 'skipped', 'blocked', 'not_needed'])).size).toBe(1);
    expect(new Set([rows[0]!.indexOf('HEAD x'), rows[2]!.indexOf('spawn'), rows[5]!.indexOf('nothing changed')]).size).toBe(1);
  });

  it('a rejected run with leftovers says "left changed"; a verify past its limit "timed out after N s"; redacted: false; an escalated attempt names the next run', async () => {
    const runId = await closedRun(1);
    const goalId = runId.replace(/-r1$/, '');
    writeGuardFiles(garden.paths, runId, {
      envelope: {
        ...envelopeFixture(runId, {
          routing: { task_class: 'simple', tier_index: 0, escalations: 0, next_tier_index: 1, attempts: [{ run_id: runId, tier_index: 0, executor: 'command', model: 'small', diagnostic_code: 'verify_timeout', cost_usd: 0.02 }] } as never,
        }),
        redacted: false,
      },
      outcome: outcomeFixture(runId, {
        state: 'blocked',
        diagnostic_code: 'verify_timeout',
        verify_ok: false,
        verify_exit_code: null,
        failed_command: 'npm test',
        verifier_was_skipped: false,
        scope_violations: [],
        blocked_mutations: [],
        mutated_files: ['src/app.ts'],
        verify_timeout_seconds: 30,
      } as never),
    });
    const r = await runCli(['trace', runId, ...g]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('verify\n  timed out after 30 s · npm test');
    expect(r.stdout).toContain('mutations (0 kept, 2 rejected, 1 left changed)');
    expect(r.stdout).toMatch(/left changed +1 +src\/app\.ts/);
    expect(r.stdout).not.toMatch(/mutated +1/);
    expect(r.stdout).toContain('redacted: false');
    expect(r.stdout).toContain(`simple · attempt 1 of 3 · tier 0 · 0 escalation(s) · escalated to tier 1 → ${goalId}-r2`);
    expect(r.stdout).toContain(`next attempt: pak2 trace ${goalId}-r2`);
  });

  it('never suggests the trace just run: a goal that closed failure suggests pak2 retry, an escalated attempt its own trace (issue 28)', async () => {
    const runId = await closedRun(1);
    const goalId = runId.replace(/-r1$/, '');
    writeGuardFiles(garden.paths, runId, { envelope: envelopeFixture(runId, { routing: undefined }) });
    const open = await runCli(['trace', runId, ...g]);
    expect(open.code, open.stderr).toBe(0);
    expect(open.stdout).not.toContain(`pak2 trace ${runId}`);
    expect(open.stdout).toContain(`next pak2 show ${goalId}`);
    const { cancelGoal } = await import('../../source/submit/index.js');
    await cancelGoal(garden, goalId);
    const closed = await runCli(['trace', runId, ...g]);
    expect(closed.code, closed.stderr).toBe(0);
    expect(closed.stdout).toContain(`blocked / failed · scope_violation\n  next pak2 retry ${goalId}\n`);
    expect(closed.stdout).not.toContain(`pak2 trace ${runId}`);
  });

  it('a phase line of another run is a problem line, left out of the timeline', async () => {
    const runId = await closedRun();
    const phases = phasesFixture(runId);
    phases[3] = { ...phases[3]!, run_id: '7-other-goal-r1' };
    const dir = writeGuardFiles(garden.paths, runId, { phases });
    const r = await runCli(['trace', runId, ...g]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`problems\n  ${path.join(dir, 'phase_events.jsonl')}: line 4: run_id: "7-other-goal-r1" is another run's (this is ${runId}); the line is left out`);
    expect(r.stdout).not.toMatch(/scope_check\s+violations/);
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

  it('a goal id: says so and suggests pak2 trace for each of its runs, latest first; exit 2', async () => {
    const runId = await closedRun(2);
    const goalId = runId.replace(/-r2$/, '');
    const r = await runCli(['trace', goalId, ...g]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([`pak2: RUN ${goalId}: a goal id, not a run id (N-slug-rN)`, `hint: its runs, latest first: pak2 trace ${goalId}-r2, pak2 trace ${goalId}-r1`]);
    const fresh = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Not run yet' });
    const none = await runCli(['trace', fresh.id, ...g]);
    expect(none.code).toBe(2);
    expect(none.stderr.trim().split('\n')).toEqual([`pak2: RUN ${fresh.id}: a goal id, not a run id (N-slug-rN)`, `hint: goal ${fresh.id} has no run yet`]);
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
