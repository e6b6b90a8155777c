/**
 * attentionItems (docs/attention/level2.md, "Items"): a pure function of the
 * observed facts. Each kind appears, acknowledged ids are hidden, an
 * answered question is gone, runs the operator ended are not listed.
 */
import { describe, expect, it } from 'vitest';
import { validateAttentionItem, type CommentRecord, type LandingRecord } from '../../source/contracts/index.js';
import { attentionItems, type AttentionFacts } from '../../source/coordinator/index.js';
import { openQuestions } from '../../source/store/index.js';
import { ago, goal, run } from '../ui/fixtures.js';

const question = (id: string, goalId: string, minutes: number, extra: Partial<CommentRecord> = {}): CommentRecord => ({ id, goal: goalId, author: 'agent:x', body: 'Which port?\nmore', blocking: true, created_at: ago(minutes), ...extra });
const landing = (runId: string, goalId: string, state: LandingRecord['state']): LandingRecord => ({
  run: runId,
  goal: goalId,
  plant: 'gardener',
  state,
  branch: `pak2/${runId}`,
  head_commit: 'a'.repeat(40),
  base_branch: 'main',
  base_commit: 'b'.repeat(40),
  queued_at: ago(9),
  updated_at: ago(8),
  attempts: 0,
});

function facts(over: Partial<AttentionFacts> = {}): AttentionFacts {
  const g1 = goal(1, { status: 'blocked' });
  const g2 = goal(2, { status: 'completed' });
  const g3 = goal(3, { status: 'closed', closed_reason: 'failure' });
  const g4 = goal(4, { status: 'queued' });
  const g5 = goal(5, { status: 'queued' });
  const g6 = goal(6, { status: 'closed', closed_reason: 'failure' });
  const g7 = goal(7, { status: 'queued', updated_at: ago(1) });
  return {
    goals: [
      { goal: g1 },
      { goal: g2, run: run(g2.id, { status: 'success', completed_at: ago(10) }), landing: landing(`${g2.id}-r1`, g2.id, 'awaiting_review') },
      { goal: g3, run: run(g3.id, { status: 'failure', failure_reason: 'nonzero_exit', completed_at: ago(5) }) },
      { goal: g4 },
      { goal: g5 },
      { goal: g6, run: run(g6.id, { status: 'killed', failure_reason: 'budget_exceeded' as never, completed_at: ago(4) }) },
      { goal: g7 },
    ],
    questions: [{ goal: g1.id, comment: question('01JAAAAAAAAAAAAAAAAAAAAAAA', g1.id, 2) }],
    blocked: { [g4.id]: 'dependency 3-goal-number-3 closed failure', [g5.id]: 'budget: the garden-day cap is spent', [g7.id]: 'no plant assigned' },
    acked: new Set(),
    ...over,
  };
}

describe('attentionItems', () => {
  it('lists each kind with a stable id, newest first, every item valid', () => {
    const items = attentionItems(facts());
    expect(items.map((i) => [i.kind, i.id])).toEqual([
      ['blocked', 'blocked:7-goal-number-7:plant'],
      ['question', 'question:01JAAAAAAAAAAAAAAAAAAAAAAA'],
      // the same minute: by id
      ['blocked', 'blocked:4-goal-number-4:dependency'],
      ['budget', 'run:6-goal-number-6-r1'],
      ['budget', 'blocked:5-goal-number-5:budget'],
      ['run', 'run:3-goal-number-3-r1'],
      ['landing', 'landing:2-goal-number-2-r1'],
    ]);
    for (const item of items) expect(validateAttentionItem(item)).toEqual([]);
    const byId = new Map(items.map((i) => [i.id, i]));
    expect(byId.get('question:01JAAAAAAAAAAAAAAAAAAAAAAA')).toMatchObject({ summary: '1-goal-number-1 asks: Which port?', goal: '1-goal-number-1', since: ago(2) });
    expect(byId.get('run:3-goal-number-3-r1')).toMatchObject({ summary: '3-goal-number-3: 3-goal-number-3-r1 ended failure (nonzero_exit)', goal: '3-goal-number-3', run: '3-goal-number-3-r1', since: ago(5) });
    expect(byId.get('run:6-goal-number-6-r1')!.summary).toContain('stopped over its budget (budget_exceeded)');
    expect(byId.get('landing:2-goal-number-2-r1')).toMatchObject({ run: '2-goal-number-2-r1', since: ago(8) });
  });

  it('hides acknowledged ids', () => {
    const acked = new Set(['run:3-goal-number-3-r1', 'question:01JAAAAAAAAAAAAAAAAAAAAAAA', 'landing:2-goal-number-2-r1']);
    const ids = attentionItems(facts({ acked })).map((i) => i.id);
    for (const id of acked) expect(ids).not.toContain(id);
    expect(ids).toHaveLength(4);
  });

  it('an answered question is gone; a landing reviewed, a run the operator ended, a goal no longer queued are not listed', () => {
    const asked = question('01JAAAAAAAAAAAAAAAAAAAAAAA', '1-goal-number-1', 2);
    const answer = question('01JBBBBBBBBBBBBBBBBBBBBBBB', '1-goal-number-1', 1, { blocking: false, answers: asked.id, author: 'operator', body: '8080' });
    const open = openQuestions([asked, answer]).map((comment) => ({ goal: comment.goal, comment }));
    expect(open).toEqual([]);
    const g2 = goal(2, { status: 'completed' });
    const g8 = goal(8, { status: 'queued' });
    const items = attentionItems({
      goals: [
        { goal: g2, run: run(g2.id, { status: 'success' }), landing: landing(`${g2.id}-r1`, g2.id, 'queued') },
        { goal: goal(9), run: run('9-goal-number-9', { status: 'killed', failure_reason: 'operator_stopped', completed_at: ago(1) }) },
        { goal: goal(10), run: run('10-goal-number-10', { status: 'killed', failure_reason: 'coordinator_stopped', completed_at: ago(1) }) },
        { goal: goal(11, { status: 'running' }), run: run('11-goal-number-11', { status: 'running' }) },
        { goal: g8 },
      ],
      questions: open,
      blocked: { '12-gone': 'no plant assigned' },
      acked: new Set(),
    });
    expect(items).toEqual([]);
  });
});
