/**
 * Guarded runs in the workbench (issue 10, item 8 and the form of item 1):
 * the run pane's compact guard block, the detail view's trace, and the
 * goal form's guard fields submitted through the one submit action.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it, vi } from 'vitest';
import type { GuardView, PlantView, Snapshot } from '../../source/snapshot/index.js';
import type { SubmitGoalInput } from '../../source/submit/index.js';
import { App, type WorkbenchActions } from '../../source/ui/app.js';
import { fixedStore } from '../../source/ui/hooks/use-snapshot.js';
import { RunTail } from '../../source/ui/panes/run-tail.js';
import { envelopeFixture, outcomeFixture, phasesFixture } from '../helpers/guard-fixtures.js';
import { ago, goal, NOW, plain, run, snapshotOf, tailOf, tick } from './fixtures.js';

const TAB = '\t';
const CTRL_S = '\u0013';
const RIGHT = '\u001b[C';

const gardener: PlantView = {
  plant: { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: ago(600) },
  memory: '',
  skills: [],
  knowledge: [],
  threads: [],
};

const GOAL = goal(1, { id: '1-fix-the-parser', type: 'fix', status: 'closed', closed_reason: 'failure', closed_at: ago(1), body: 'Fix the parser', guard: { verify: 'npm test', forbidden_paths: ['.env'] }, task_class: 'simple' });
const RUN = run(GOAL.id, { id: '1-fix-the-parser-r2', status: 'failure', failure_reason: 'scope_violation', completed_at: ago(1), model: 'sonnet', cost: { source: 'provider', usd: 0.4 } });

function guardView(overrides: Partial<GuardView> = {}): GuardView {
  return {
    runId: RUN.id,
    guarded: true,
    envelope: envelopeFixture(RUN.id),
    outcome: outcomeFixture(RUN.id),
    phases: phasesFixture(RUN.id),
    patch: { file: `/work/garden/.runtime/runs/${RUN.id}/rejected.patch`, bytes: 1234 },
    problems: [],
    maxAttempts: 3,
    ...overrides,
  };
}

describe('the run pane of a guarded run', () => {
  it('shows the compact guard block under the header: decision, verify, changes and violations, rollback, routing', async () => {
    const { lastFrame } = render(<RunTail tail={tailOf('claude-build', RUN.id)} run={RUN} guard={guardView()} scroll={0} width={90} height={18} focused now={NOW} />);
    const lines = plain(lastFrame()).split('\n');
    expect(lines[1]).toMatch(/failure \(scope_violation\)/);
    expect(lines[2]).toContain('guard blocked/failed · scope_violation · verify skipped');
    expect(lines[3]).toContain('changes 0 kept · 2 rejected · 1 violation(s):');
    expect(lines[4]).toMatch(/│ {3}forbid \.env +│/);
    expect(lines[5]).toContain('rollback performed · rejected.patch 1.2 KB');
    expect(lines[6]).toContain('routing simple · attempt 2 of 2 · stop blocked_after_escalation');
    await expect(plain(lastFrame())).toMatchFileSnapshot('frames/guard-run-tail.txt');
  });

  it('a kept run says ready and verify ok; a run still going shows its last phase', () => {
    const kept = guardView({
      outcome: outcomeFixture(RUN.id, { state: 'ready', status: 'success', diagnostic_code: 'ready', verify_ok: true, verify_exit_code: 0, verifier_was_skipped: false, mutated_files: ['src/app.ts'], attempted_mutations: ['src/app.ts'], blocked_mutations: [], scope_violations: [], rollback_performed: false }),
      patch: undefined,
      envelope: envelopeFixture(RUN.id, { routing: undefined }),
    });
    const done = render(<RunTail tail={tailOf('claude-build', RUN.id)} run={{ ...RUN, status: 'success', failure_reason: undefined }} guard={kept} scroll={0} width={90} height={18} focused now={NOW} />);
    const frame = plain(done.lastFrame());
    expect(frame).toContain('guard ready/success · ready · verify ok exit 0');
    expect(frame).toContain('changes 1 kept · 0 rejected');
    expect(frame).not.toContain('rollback');
    expect(frame).not.toContain('routing');

    const live = guardView({ envelope: undefined, outcome: undefined, patch: undefined, phases: phasesFixture(RUN.id).slice(0, 2) });
    const going = render(<RunTail tail={tailOf('claude-build', RUN.id)} run={{ ...RUN, status: 'running', completed_at: undefined }} guard={live} scroll={0} width={90} height={18} focused now={NOW} />);
    expect(plain(going.lastFrame())).toContain('guard · executor_start ok');
  });

  it('at 130 columns a violation\'s path has the room: its kind in short (forbid, outside), one a line; a path too long keeps its end', () => {
    const long = 'src/config/credentials/production.env';
    const longer = 'docs/notes/2026/architecture/overview-of-the-parser.md';
    const violations = [
      { kind: 'forbidden_path' as const, path: long, detail: 'matches forbidden_paths src/config/**' },
      { kind: 'outside_allowed' as const, path: longer, detail: 'not in allowed_files' },
      { kind: 'outside_allowed' as const, path: 'a.txt', detail: 'not in allowed_files' },
      { kind: 'outside_allowed' as const, path: 'b.txt', detail: 'not in allowed_files' },
    ];
    const guard = guardView({ outcome: outcomeFixture(RUN.id, { scope_violations: violations, attempted_mutations: [long, longer, 'a.txt', 'b.txt'] }) });
    const snapshot = snapshotOf({ goals: [{ goal: GOAL, run: RUN }], plants: [gardener], tail: tailOf('claude-build', RUN.id), guard, counts: { queued: 0, inFlight: 0, closedShown: 1 } });
    const frame = plain(render(<App store={fixedStore(snapshot)} actions={{ follow: vi.fn(), quit: vi.fn() }} size={{ columns: 130, rows: 40 }} now={NOW} />).lastFrame());
    expect(frame).toContain('changes 0 kept · 4 rejected · 4 violation(s):');
    expect(frame).toMatch(new RegExp(`│ {3}forbid {2}${long.replace(/\./g, '\\.')} +│`));
    expect(frame).toMatch(/│ {3}outside …[\w/-]+\/architecture\/overview-of-the-parser\.md│/);
    expect(frame).toContain(`… 1 more: pak2 trace ${RUN.id}`);
    expect(frame).not.toContain('forbidden_path');
  });

  it('a rejected run says what it left changed; a timed-out verify says so; an escalated attempt names the next run', () => {
    const outcome = outcomeFixture(RUN.id, {
      state: 'blocked',
      diagnostic_code: 'verify_timeout',
      verify_ok: false,
      verify_exit_code: null,
      verifier_was_skipped: false,
      failed_command: 'npm test',
      scope_violations: [],
      blocked_mutations: [],
      mutated_files: ['src/app.ts'],
      verify_timeout_seconds: 30,
    } as never);
    const envelope = envelopeFixture('1-fix-the-parser-r1', {
      routing: { task_class: 'simple', tier_index: 0, escalations: 0, next_tier_index: 1, attempts: [{ run_id: '1-fix-the-parser-r1', tier_index: 0, executor: 'command', model: 'small', diagnostic_code: 'verify_timeout', cost_usd: 0.01 }] } as never,
    });
    const first = { ...RUN, id: '1-fix-the-parser-r1' };
    const guard = guardView({ runId: first.id, outcome, envelope });
    const frame = plain(render(<RunTail tail={tailOf('claude-build', first.id)} run={first} guard={guard} scroll={0} width={90} height={18} focused now={NOW} />).lastFrame());
    expect(frame).toContain('guard blocked/failed · verify_timeout · verify timed out after 30 s');
    expect(frame).toContain('changes 0 kept · 2 rejected · 1 left changed');
    expect(frame).toContain('routing simple · attempt 1 of 3 · escalated to tier 1 → 1-fix-the-parser-r2');
  });

  it('names the problems of malformed guard files; another run\'s record is not shown', () => {
    const bad = guardView({ outcome: undefined, problems: ['/x/task_outcome.json: state: INVALID_SHAPE (bad)'] });
    const shown = plain(render(<RunTail tail={tailOf('claude-build', RUN.id)} run={RUN} guard={bad} scroll={0} width={90} height={18} focused now={NOW} />).lastFrame());
    expect(shown).toContain(`1 problem(s) in the guard files: pak2 trace ${RUN.id}`);
    const other = plain(render(<RunTail tail={tailOf('claude-build', RUN.id)} run={RUN} guard={guardView({ runId: '9-other-r1' })} scroll={0} width={90} height={18} focused now={NOW} />).lastFrame());
    expect(other).not.toContain('guard ');
  });
});

function app(snapshot: Snapshot, actions: Partial<WorkbenchActions> = {}) {
  const all = { follow: vi.fn(), quit: vi.fn(), ...actions } satisfies WorkbenchActions;
  const ui = render(<App store={fixedStore(snapshot)} actions={all} size={{ columns: 100, rows: 40 }} now={NOW} />);
  const press = async (...keys: string[]) => {
    for (const key of keys) {
      ui.stdin.write(key);
      await tick();
    }
  };
  return { ...ui, press, actions: all };
}

describe('the detail of a guarded goal', () => {
  it('shows the guard the goal asked for and the run\'s trace: decision, phases, verify, violations, mutations, rollback, routing', async () => {
    const snapshot = snapshotOf({ goals: [{ goal: GOAL, run: RUN }], plants: [gardener], tail: tailOf('claude-build', RUN.id), guard: guardView(), counts: { queued: 0, inFlight: 0, closedShown: 1 } });
    const { press, lastFrame } = app(snapshot);
    expect(plain(lastFrame())).toContain('guard blocked/failed · scope_violation');
    await press('\r');
    const detail = plain(lastFrame());
    expect(detail).toMatch(/│ Guard +│/);
    expect(detail).toContain('verify npm test');
    expect(detail).toContain('forbid .env');
    expect(detail).toContain('task class simple');
    expect(detail).toContain('Guard · Decision');
    expect(detail).toContain('blocked / failed · scope_violation');
    expect(detail).toContain('Guard · Phases');
    expect(detail).toMatch(/\+112 ms\s+executor_done\s+ok\s+41\.9 s/); // placed at its start: ts less duration_ms
    await expect(detail).toMatchFileSnapshot('frames/guard-detail-100x40.txt');
    await press('G'); // the end: violations, mutations, rollback, routing
    const end = plain(lastFrame());
    expect(end).toContain('Guard · Routing');
    expect(end).toContain('simple · attempt 2 of 2 · tier 1 · 1 escalation(s) · stop blocked_after_escalation');
    expect(end).toContain('total $0.4100 over 2 attempt(s)');
  });
});

/** Shift-tab: the previous field. */
const BACK = '\u001b[Z';

describe('the goal form\'s guard fields', () => {
  it('task class, verify, allow and forbid go to the submit action as a guard and a task class', async () => {
    const submitGoal = vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never }));
    const snapshot = snapshotOf({ plants: [gardener], garden: { ...snapshotOf().garden, taskClasses: ['hard', 'simple'] } });
    const { press, lastFrame } = app(snapshot, { submitGoal });
    await press('n', 'Fix the parser');
    const form = plain(lastFrame());
    for (const label of ['class', 'verify', 'timeout', 'allow', 'forbid', 'pass env', 'contract', 'redact']) expect(form).toMatch(new RegExp(`│ ${label} +`));
    expect(form).toContain('(none)');
    // body → class: shift-tab eight times (redact, contract, pass env, forbid, allow, timeout, verify, class).
    await press(...Array<string>(8).fill(BACK));
    await press(RIGHT, RIGHT);
    expect(plain(lastFrame())).toContain('‹ simple ›');
    expect(plain(lastFrame())).toContain('the tiers of [routing.<class>] in PAK2.toml the goal runs on (--task-class)');
    await press(TAB, 'npm test', TAB, TAB, 'src/** test/*.ts', TAB, '.env  .git/**');
    await press(CTRL_S);
    await tick();
    expect(submitGoal).toHaveBeenCalledWith({
      type: 'build',
      plant: 'gardener',
      body: 'Fix the parser',
      priority: 50,
      guard: { verify: 'npm test', allowedFiles: ['src/**', 'test/*.ts'], forbiddenPaths: ['.env', '.git/**'] },
      taskClass: 'simple',
    });
    expect(plain(lastFrame())).toContain('queued 42-from-the-form');
  });

  it('empty guard fields submit no guard; a refusal of the action stays in the form', async () => {
    const submitGoal = vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never }));
    submitGoal.mockRejectedValueOnce(new Error('verify: a guarded goal needs a git repository; the garden /g: not a git repository (run git init there)'));
    const { press, lastFrame } = app(snapshotOf({ plants: [gardener] }), { submitGoal });
    await press('n', 'do it', ...Array<string>(7).fill(BACK), 'make check', CTRL_S);
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'do it', priority: 50, guard: { verify: 'make check' } });
    expect(plain(lastFrame())).toContain('New goal');
    expect(plain(lastFrame())).toContain('verify: a guarded goal needs a git repository');
    // Clear the verify field (ctrl-u): no guard at all.
    await press('\u0015', CTRL_S);
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'do it', priority: 50 });
  });

  it('verify timeout, pass env, contract and redact off go to the submit action as pak2 submit\'s flags do; a glob with a space is quoted', async () => {
    const submitGoal = vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never }));
    const { press, lastFrame } = app(snapshotOf({ plants: [gardener] }), { submitGoal });
    await press('n', 'Fix the parser', ...Array<string>(7).fill(BACK)); // body → verify
    await press('npm test', TAB, '9', 'x', '0'); // the timeout takes digits only
    expect(plain(lastFrame())).toMatch(/│ timeout +90█/);
    expect(plain(lastFrame())).toContain("verify's limit, whole seconds; empty: [guard]'s, else 600 (--verify-timeout)");
    await press(TAB, 'src/** "docs/my notes/*"', TAB, ".env 'my secrets'/**", TAB, 'API_KEY, OTHER_KEY', TAB, 'contract-123', TAB, RIGHT);
    expect(plain(lastFrame())).toContain('‹ off (--no-redact) ›');
    await press(CTRL_S);
    await tick();
    expect(submitGoal).toHaveBeenCalledWith({
      type: 'build',
      plant: 'gardener',
      body: 'Fix the parser',
      priority: 50,
      guard: {
        verify: 'npm test',
        timeoutSeconds: 90,
        allowedFiles: ['src/**', 'docs/my notes/*'],
        forbiddenPaths: ['.env', 'my secrets/**'],
        envPassthrough: ['API_KEY', 'OTHER_KEY'],
        contractId: 'contract-123',
        redact: false,
      },
    });
  });

  it('redact off alone makes the goal guarded; a quote not closed is a field error', async () => {
    const submitGoal = vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never }));
    const { press, lastFrame } = app(snapshotOf({ plants: [gardener] }), { submitGoal });
    await press('n', 'do it', BACK, RIGHT, CTRL_S); // body → redact: off
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'do it', priority: 50, guard: { redact: false } });
    await press('n', 'again', BACK, BACK, BACK, BACK, '"docs/my notes', CTRL_S); // body → forbid
    expect(plain(lastFrame())).toContain('forbid: a " quote is not closed');
    expect(submitGoal).toHaveBeenCalledTimes(1);
  });
});
