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
    expect(lines[3]).toContain('changes 0 kept · 2 rejected · 1 violation(s): forbidden_path .env');
    expect(lines[4]).toContain('rollback performed · rejected.patch 1.2 KB');
    expect(lines[5]).toContain('routing simple · attempt 2 of 2 · stop blocked_after_escalation');
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
    expect(detail).toMatch(/\+42\.0 s\s+executor_done\s+ok\s+41\.9 s/);
    await expect(detail).toMatchFileSnapshot('frames/guard-detail-100x40.txt');
    await press('G'); // the end: violations, mutations, rollback, routing
    const end = plain(lastFrame());
    expect(end).toContain('Guard · Routing');
    expect(end).toContain('simple · attempt 2 of 2 · tier 1 · 1 escalation(s) · stop blocked_after_escalation');
    expect(end).toContain('total $0.4100 over 2 attempt(s)');
  });
});

describe('the goal form\'s guard fields', () => {
  it('task class, verify, allow and forbid go to the submit action as a guard and a task class', async () => {
    const submitGoal = vi.fn(async (input: SubmitGoalInput) => goal(42, { id: '42-from-the-form', type: input.type as never }));
    const snapshot = snapshotOf({ plants: [gardener], garden: { ...snapshotOf().garden, taskClasses: ['hard', 'simple'] } });
    const { press, lastFrame } = app(snapshot, { submitGoal });
    await press('n', 'Fix the parser');
    const form = plain(lastFrame());
    for (const label of ['class', 'verify', 'allow', 'forbid']) expect(form).toMatch(new RegExp(`│ ${label} +`));
    expect(form).toContain('(none)');
    // body → class: shift-tab four times (forbid, allow, verify, class).
    await press('\u001b[Z', '\u001b[Z', '\u001b[Z', '\u001b[Z');
    await press(RIGHT, RIGHT);
    expect(plain(lastFrame())).toContain('‹ simple ›');
    await press(TAB, 'npm test', TAB, 'src/** test/*.ts', TAB, '.env  .git/**');
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
    await press('n', 'do it', '\u001b[Z', '\u001b[Z', '\u001b[Z', 'make check', CTRL_S);
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'do it', priority: 50, guard: { verify: 'make check' } });
    expect(plain(lastFrame())).toContain('New goal');
    expect(plain(lastFrame())).toContain('verify: a guarded goal needs a git repository');
    // Clear the verify field (ctrl-u): no guard at all.
    await press('\u0015', CTRL_S);
    await tick();
    expect(submitGoal).toHaveBeenLastCalledWith({ type: 'build', plant: 'gardener', body: 'do it', priority: 50 });
  });
});
