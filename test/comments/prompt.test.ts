/**
 * A goal's comment thread reaches the agent (docs/runners/level2.md,
 * "Comments"): a local run after a blocking question was answered has the
 * question and the answer in its prompt's `# Goal Comments` block.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile } from '../../source/coordinator/index.js';
import { dispatch, PROMPT_HEADINGS } from '../../source/driver/index.js';
import { runDir, type Garden } from '../../source/garden/index.js';
import { createGoal, readGoal } from '../../source/store/index.js';
import { answerQuestion, postComment } from '../../source/submit/index.js';
import { makeTestGarden } from '../support/garden.js';

let garden: (Garden & { cleanup: () => void }) | undefined;
afterEach(() => {
  garden?.cleanup();
  garden = undefined;
});

const pass = (g: Garden) => reconcile({ garden: g, dispatch: (goal, runId) => dispatch(goal, runId, { garden: g, onStderr: () => undefined }), awaitDispatch: true });

describe('the comment thread in the prompt', () => {
  it('a blocked queued goal is not dispatched; answered, its run is told the question and the answer, between the supplements and the task', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Paint the button.' });
    const { comment } = await postComment(garden, goal.id, { body: 'Which colour?', blocking: true, author: 'alice' });
    expect((await readGoal(garden.paths, goal.id)).status).toBe('blocked');
    expect((await pass(garden)).dispatched).toEqual([]);

    const answered = await answerQuestion(garden, goal.id, 'Blue.');
    expect(answered.goal.status).toBe('queued');
    expect((await pass(garden)).dispatched).toEqual([`${goal.id}-r1`]);
    const prompt = fs.readFileSync(path.join(runDir(garden.paths, `${goal.id}-r1`), 'prompt.md'), 'utf8');
    const block = prompt.slice(prompt.indexOf(PROMPT_HEADINGS.comments), prompt.indexOf(PROMPT_HEADINGS.task));
    expect(block).toContain(`alice (blocking question) [${comment.id}]:\n  Which colour?`);
    expect(block).toContain(`operator (answers alice's ${comment.id})`);
    expect(block).toContain('  Blue.');
    expect(block).toContain(`pak2 comment ${goal.id} TEXT`);
    expect(prompt.indexOf(PROMPT_HEADINGS.comments)).toBeLessThan(prompt.indexOf(PROMPT_HEADINGS.task));
  });

  it('a goal without comments has no block', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Paint the button.' });
    await pass(garden);
    expect(fs.readFileSync(path.join(runDir(garden.paths, `${goal.id}-r1`), 'prompt.md'), 'utf8')).not.toContain(PROMPT_HEADINGS.comments);
  });
});

describe('answering a closed goal', () => {
  it('a cancelled blocked goal: its question needs no answer, refused in one line (exit 1), nothing written', async () => {
    const g = await makeTestGarden();
    try {
      const goal = await createGoal(g.paths, { type: 'build', plant: 'gardener', body: 'Paint the button.' });
      await postComment(g, goal.id, { body: 'Which colour?', blocking: true });
      const { cancelGoal } = await import('../../source/submit/index.js');
      expect((await cancelGoal(g, goal.id)).goal).toMatchObject({ status: 'closed', closed_reason: 'cancelled' });
      expect((await readGoal(g.paths, goal.id)).blocked_on).toBeUndefined();
      const refused = await answerQuestion(g, goal.id, 'Blue.').catch((error: unknown) => error as { message: string; exitCode: number });
      expect(refused).toMatchObject({ exitCode: 1, message: `GOAL ${goal.id}: the goal is closed (cancelled); its questions need no answer (post a comment without --answer)` });
    } finally {
      g.cleanup();
    }
  });
});
