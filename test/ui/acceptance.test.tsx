/**
 * The run pane's acceptance block (docs/workbench/level2.md, "Panes"): a
 * run of a goal with acceptance criteria shows how many were verified, then
 * each criterion with its mark (✓ verified, ✗ failed, ? not verified) and
 * evidence, in its colour; a run without criteria shows none.
 */
import { render } from 'ink-testing-library';
import React from 'react';
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../source/contracts/index.js';
import { acceptanceLines } from '../../source/ui/panes/run-acceptance.js';
import { RunTail } from '../../source/ui/panes/run-tail.js';
import { ago, NOW, plain, run, tailOf } from './fixtures.js';

const ACCEPTANCE: NonNullable<RunRecord['acceptance']> = [
  { item: 'the parser tests pass', verified: true, criterion: true, result: 'verified', verify: 'npm test', evidence: '`npm test` exited 0 in 2.1 s' },
  { item: 'the docs say what changed', verified: false, criterion: true, result: 'failed', verify: 'grep -q parser docs/CHANGES.md', evidence: '`grep -q parser docs/CHANGES.md` exited 1' },
  { item: 'the code reads well', verified: false, criterion: true, result: 'unverified', evidence: 'not verified: the criterion has no verify command' },
  { item: 'agent process exited 0', verified: true, evidence: 'exit code 0' },
];

describe('the run pane: acceptance criteria', () => {
  it('one line of totals, then each criterion with its mark and evidence; a runner\'s own checks are not criteria', () => {
    const lines = acceptanceLines(run('3-fix-the-parser', { status: 'success', completed_at: ago(1), acceptance: ACCEPTANCE }));
    expect(lines).toEqual([
      { text: 'acceptance 1 of 3 criteria verified, 1 failed', tone: 'bad' },
      { text: '✓ the parser tests pass — `npm test` exited 0 in 2.1 s', tone: 'ok' },
      { text: '✗ the docs say what changed — `grep -q parser docs/CHANGES.md` exited 1', tone: 'bad' },
      { text: '? the code reads well — not verified: the criterion has no verify command', tone: 'warn' },
    ]);
    expect(acceptanceLines(run('3-fix-the-parser', { status: 'success', acceptance: [ACCEPTANCE[3]!] }))).toEqual([]);
    expect(acceptanceLines(run('3-fix-the-parser', { status: 'success', acceptance: [ACCEPTANCE[0]!] }))[0]).toEqual({ text: 'acceptance 1 of 1 criteria verified', tone: 'ok' });
  });

  it('RunTail shows the block under its header', () => {
    const r = run('3-fix-the-parser', { status: 'success', completed_at: ago(1), acceptance: ACCEPTANCE });
    const ui = render(<RunTail tail={tailOf('claude-build', r.id)} run={r} scroll={0} width={100} height={16} focused={false} now={NOW} />);
    const text = plain(ui.lastFrame());
    expect(text).toContain('acceptance 1 of 3 criteria verified, 1 failed');
    expect(text).toContain('✗ the docs say what changed — `grep -q parser docs/CHANGES.md` exited 1');
    expect(text).toContain('? the code reads well — not verified');
    const rows = text.split('\n');
    expect(rows.findIndex((l) => l.includes('acceptance 1 of 3'))).toBeLessThan(rows.findIndex((l) => l.includes('? the code reads well')));
  });
});
