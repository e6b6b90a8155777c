/**
 * An agent waiting for the answer to its own blocking question is not
 * silent by fault: the watchdog leaves a blocked goal's run alone, and the
 * silence clock restarts when the answer returns the goal to running
 * (docs/runners/level2.md, "Comments").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile, type DispatchFn } from '../../source/coordinator/index.js';
import { createGoal, readGoal, readRun } from '../../source/store/index.js';
import { answerQuestion, postComment } from '../../source/submit/index.js';
import { makeTestGarden } from '../support/garden.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('the watchdog and a blocking question', () => {
  it('leaves a run whose goal waits on a question, and counts silence again from the answer', async () => {
    const g = await makeTestGarden({ coordinator: { watchdog_seconds: 300 } });
    cleanups.push(g.cleanup);
    const t0 = new Date('2026-06-01T10:00:00Z');
    const at = (s: number) => new Date(t0.getTime() + s * 1000);
    const goal = await createGoal(g.paths, { type: 'spike', plant: 'gardener', body: 'Ask, then wait.' }, t0);
    // A dispatch that never ends: the run stays live and silent (no stream), as an agent waiting on `pak2 comment --wait`.
    const dispatch: DispatchFn = () => new Promise(() => undefined);
    await reconcile({ garden: g, dispatch, now: () => t0 });
    const runId = `${goal.id}-r1`;
    await postComment(g, goal.id, { body: 'Which table?', blocking: true, author: `agent:${runId}`, run: runId }, at(10));
    expect((await readGoal(g.paths, goal.id)).status).toBe('blocked');

    // 400 s of silence while blocked: not killed.
    expect((await reconcile({ garden: g, dispatch, now: () => at(400) })).killed).toEqual([]);
    expect((await readRun(g.paths, runId)).status).toBe('running');

    // Answered at 500 s: running again; 200 s after the answer is within the limit, 310 s is not.
    expect((await answerQuestion(g, goal.id, 'The orders table.', {}, at(500))).goal.status).toBe('running');
    expect((await reconcile({ garden: g, dispatch, now: () => at(700) })).killed).toEqual([]);
    expect((await reconcile({ garden: g, dispatch, now: () => at(810) })).killed).toEqual([runId]);
  });
});
