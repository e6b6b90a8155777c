import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reconcile, type DispatchFn } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import { PROMPT_HEADINGS } from '../../source/driver/prompt.js';
import { runDir, type Garden } from '../../source/garden/index.js';
import { createGoal, readGoal } from '../../source/store/index.js';
import { genesis } from '../../source/lifecycle/genesis.js';
import { appendGoalSupplement, sendOperatorMessage, submitPlantCommissionGoal, submitTendGoal } from '../../source/submit/index.js';
import { makeTestGarden } from '../support/garden.js';

/**
 * Prompt assembly (seed 002, "Prompt structure"): for each kind of run, the
 * assembled prompt's section headings and their order, read from the
 * `runs/<id>/prompt.md` a real dispatch wrote.
 */

let garden: Garden & { cleanup: () => void };
afterEach(() => garden?.cleanup());

const realDispatch =
  (g: Garden): DispatchFn =>
  (goal, runId) =>
    dispatch(goal, runId, { garden: g, onStderr: () => undefined });

const pass = (g: Garden) => reconcile({ garden: g, dispatch: realDispatch(g), awaitDispatch: true });

const KNOWN = new Set<string>(Object.values(PROMPT_HEADINGS));
const CLOSING = /^Your working directory is .+\. Begin\.$/;

/** The prompt's section headings in order (only the known ones: motivation, seed and memory text may hold headings of their own), then the closing line. */
function outline(prompt: string): string[] {
  const lines = prompt.trimEnd().split('\n');
  const headings = lines.filter((l) => KNOWN.has(l));
  const last = lines[lines.length - 1]!;
  return [...headings, CLOSING.test(last) ? '<closing>' : `<missing closing line: ${last}>`];
}

function promptOf(g: Garden, runId: string): string {
  return fs.readFileSync(path.join(runDir(g.paths, runId), 'prompt.md'), 'utf8');
}

const H = PROMPT_HEADINGS;

describe('prompt assembly: section headings and order', () => {
  it('(a) first blank-memory run: motivation, seed, current run, task, closing line', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build the first thing.' });
    await pass(garden);
    const prompt = promptOf(garden, `${goal.id}-r1`);
    expect(outline(prompt)).toEqual([H.motivation, H.seed, H.run, H.task, '<closing>']);
    expect(prompt).toContain('You look after the test garden.');
    expect(prompt).not.toContain(H.memory);
  });

  it('(b) normal run: memory in full, skills and knowledge as indexes (names and headings, never bodies)', async () => {
    garden = await makeTestGarden();
    const plantFiles: Record<string, string> = {
      'memory/MEMORY.md': '# Memory\n\nThe build uses tsc.\nRemember the second line too.\n',
      'skills/linting.md': '# Linting\n\n## Before committing\n\nAlways run the secret linter incantation before committing.\n',
      'knowledge/layout.md': '# Garden layout\n\nThe goals live in a hidden vault of JSON.\n',
    };
    for (const [rel, text] of Object.entries(plantFiles)) fs.writeFileSync(path.join(garden.paths.plantsDir, 'gardener', rel), text);
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'Build the second thing.' });
    await pass(garden);
    const prompt = promptOf(garden, `${goal.id}-r1`);
    expect(outline(prompt)).toEqual([H.motivation, H.memory, H.skills, H.knowledge, H.run, H.task, '<closing>']);
    expect(prompt).not.toContain(H.seed);
    expect(prompt).toContain('The build uses tsc.\nRemember the second line too.');
    expect(prompt).toContain('- skills/linting.md — Linting; Before committing');
    expect(prompt).toContain('- knowledge/layout.md — Garden layout');
    expect(prompt).not.toContain('Always run the secret linter incantation');
    expect(prompt).not.toContain('hidden vault of JSON');
  });

  it('(c) tend goal with tend metadata: # Tend Context between the current run and the task', async () => {
    garden = await makeTestGarden();
    const tend = await submitTendGoal(garden, { trigger: 'run_failure', key: 'run_failure:1-broken', origin: { goal: '1-broken', run: '1-broken-r1', status: 'failure', failure_reason: 'nonzero_exit' } });
    await pass(garden);
    const prompt = promptOf(garden, `${tend.id}-r1`);
    expect(outline(prompt)).toEqual([H.motivation, H.seed, H.run, H.tend, H.task, '<closing>']);
    expect(prompt).toContain('Trigger: run_failure');
    expect(prompt).toContain('Origin run: 1-broken-r1');
  });

  it("(c2) genesis's first survey is a tend with tend metadata (trigger genesis): # Tend Context between the current run and the task", async () => {
    garden = await makeTestGarden();
    const report = await genesis(garden, { ...process.env, PATH: process.env.PATH ?? '' });
    expect(report.queued).toEqual(['1-survey-the-garden']);
    const goal = await readGoal(garden.paths, '1-survey-the-garden');
    expect(goal).toMatchObject({ type: 'tend', assigned_to: 'gardener', priority: 60, tend: { trigger: 'genesis', key: 'genesis', origin: {} } });
    await pass(garden);
    const prompt = promptOf(garden, '1-survey-the-garden-r1');
    expect(outline(prompt)).toEqual([H.motivation, H.seed, H.run, H.tend, H.task, '<closing>']);
    const block = prompt.slice(prompt.indexOf(H.tend), prompt.indexOf(H.task));
    expect(block).toContain('Trigger: genesis\nKey: genesis\nOrigin: pak2 genesis queued this first survey of a new garden');
    expect(block).toContain(`- the garden's motivation: ${garden.paths.motivationFile}`);
    expect(block).toContain(`- your plant directory, where your memory starts: ${path.join(garden.paths.plantsDir, 'gardener')}`);
    expect(prompt.slice(prompt.indexOf(H.task))).toContain('Survey this garden and start your memory.');
  });

  it('(d) commission goal: # Plant Commission Context between the current run and the task', async () => {
    garden = await makeTestGarden({ files: { 'seeds/worker.md': '# Seed: worker\n' } });
    const goal = await submitPlantCommissionGoal(garden, { plant: 'helper', seed: 'worker', purpose: 'Keeps the docs tidy.', firstGoal: { type: 'build', body: 'Fix the broken links in docs/.' } });
    await pass(garden);
    const prompt = promptOf(garden, `${goal.id}-r1`);
    expect(outline(prompt)).toEqual([H.motivation, H.seed, H.run, H.commission, H.task, '<closing>']);
    const block = prompt.slice(prompt.indexOf(H.commission), prompt.indexOf(H.task));
    expect(block).toContain('Target plant: helper');
    expect(block).toContain('Seed: worker (seeds/worker.md)');
    expect(block).toContain('Purpose: Keeps the docs tidy.');
    expect(block).toContain('Queue exactly one first goal, for plant helper only, of type build.');
    expect(block).toContain("pak2 submit --plant helper --type build --body 'Fix the broken links in docs/.'");
    expect(block).toMatch(/Report the first goal's id/);
    const task = prompt.slice(prompt.indexOf(H.task));
    expect(task).toContain('pak2 plant commission helper --seed worker');
  });

  it('(e) conversation-origin durable goal with supplements: # Goal Supplements between the current run and the task', async () => {
    garden = await makeTestGarden();
    const { conversationId } = await sendOperatorMessage(garden, 'Please fix the date test');
    const durable = await createGoal(garden.paths, { type: 'fix', plant: 'gardener', body: 'Fix the date test', conversation_id: conversationId, priority: 90 });
    await appendGoalSupplement(garden, durable.id, 'Use UTC everywhere.');
    await pass(garden);
    const prompt = promptOf(garden, `${durable.id}-r1`);
    expect(outline(prompt)).toEqual([H.motivation, H.seed, H.run, H.supplements, H.task, '<closing>']);
    expect(prompt).not.toContain(H.conversation);
    expect(prompt).toContain('Use UTC everywhere.');
  });
});
