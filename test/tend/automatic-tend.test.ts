import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decideTends, LiveRuns, MAX_TENDS_PER_PASS, reconcile, TEND_PRIORITY, type DispatchFn } from '../../source/coordinator/index.js';
import { dispatch } from '../../source/driver/index.js';
import { PROMPT_HEADINGS } from '../../source/driver/prompt.js';
import type { Garden } from '../../source/garden/index.js';
import { archivePlant, closeRun, createGoal, readGoal, readRun } from '../../source/store/index.js';
import { cancelGoal, submitTendGoal } from '../../source/submit/index.js';
import { makeTestGarden, readEventLog } from '../support/garden.js';

let garden: Garden & { cleanup: () => void };
afterEach(() => garden?.cleanup());

const realDispatch =
  (g: Garden, live?: LiveRuns): DispatchFn =>
  (goal, runId) =>
    dispatch(goal, runId, { garden: g, onStderr: () => undefined, ...(live ? { onRunStart: (id, h) => live.add(id, h), onRunEnd: (id) => live.remove(id) } : {}) });

const pass = (g: Garden, extra: Partial<Parameters<typeof reconcile>[0]> = {}) => reconcile({ garden: g, dispatch: realDispatch(g), awaitDispatch: true, ...extra });

function openTends(g: Garden) {
  return fs
    .readdirSync(g.paths.goalsDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(fs.readFileSync(path.join(g.paths.goalsDir, f), 'utf8')) as Record<string, unknown>)
    .filter((r) => r.type === 'tend');
}

describe('automatic tend: run_failure', () => {
  it('a failing run (exit3 → failure / nonzero_exit) queues one tend for the gardener with its trigger metadata', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail please', driver: 'exit3' });
    const summary = await pass(garden);
    expect(summary.closed).toEqual([{ goal: goal.id, reason: 'failure' }]);
    expect(summary.tends).toEqual([{ goal: expect.stringMatching(/^\d+-tend-run-failure/), trigger: 'run_failure', key: `run_failure:${goal.id}` }]);
    expect(summary.tendsWithheld).toEqual([]);
    const tend = await readGoal(garden.paths, summary.tends[0]!.goal);
    expect(tend).toMatchObject({ type: 'tend', status: 'queued', assigned_to: 'gardener', priority: TEND_PRIORITY });
    expect(tend.tend).toEqual({
      trigger: 'run_failure',
      key: `run_failure:${goal.id}`,
      origin: { goal: goal.id, run: `${goal.id}-r1`, status: 'failure', failure_reason: 'nonzero_exit', error: 'exit 3, no result event' },
    });
    // Queued after the pass claimed its work: the tend is not dispatched in the pass that queued it.
    expect(summary.dispatched).toEqual([`${goal.id}-r1`]);
    const submitted = readEventLog(garden).filter((e) => e.type === 'GoalSubmitted').map((e) => e.goal);
    expect(submitted).toEqual([goal.id, tend.id]);
  });

  it('the tend run gets a # Tend Context block between # Your Current Run and # Task; its success queues nothing', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail please', driver: 'error-result' });
    const first = await pass(garden);
    const tendId = first.tends[0]!.goal;
    const second = await pass(garden);
    expect(second.dispatched).toEqual([`${tendId}-r1`]);
    expect(second.closed).toEqual([{ goal: tendId, reason: 'success' }]);
    expect(second.tends).toEqual([]);
    const prompt = fs.readFileSync(path.join(garden.paths.runsDir, `${tendId}-r1`, 'prompt.md'), 'utf8');
    const run = prompt.indexOf(`${PROMPT_HEADINGS.run}\n`);
    const tend = prompt.indexOf(`${PROMPT_HEADINGS.tend}\n`);
    const task = prompt.indexOf(`${PROMPT_HEADINGS.task}\n`);
    expect(run).toBeGreaterThan(-1);
    expect(tend).toBeGreaterThan(run);
    expect(task).toBeGreaterThan(tend);
    const block = prompt.slice(tend, task);
    const originDir = path.join(garden.paths.runsDir, `${goal.id}-r1`);
    expect(block).toContain('Trigger: run_failure');
    expect(block).toContain(`Origin goal: ${goal.id}`);
    expect(block).toContain(`Origin run: ${goal.id}-r1`);
    expect(block).toContain('Origin status: failure');
    expect(block).toContain('Origin failure reason: agent_error');
    expect(block).toContain('Origin error: model refused');
    expect(block).toContain(`the run directory: ${originDir}`);
    for (const file of ['events.jsonl', 'stderr.log', 'prompt.md']) expect(block).toContain(path.join(originDir, file));
    // An ordinary goal has no Tend Context.
    expect(fs.readFileSync(path.join(originDir, 'prompt.md'), 'utf8')).not.toContain(PROMPT_HEADINGS.tend);
  });

  it('a zero-output run triggers run_failure', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'say nothing', driver: 'zero' });
    const summary = await pass(garden);
    expect(summary.tends.map((t) => t.key)).toEqual([`run_failure:${goal.id}`]);
    expect((await readGoal(garden.paths, summary.tends[0]!.goal)).tend).toMatchObject({ origin: { status: 'zero_output', failure_reason: 'zero_output' } });
  });

  it('a run past run_timeout_seconds (timeout) triggers run_failure', async () => {
    garden = await makeTestGarden({ coordinator: { run_timeout_seconds: 1 } });
    const goal = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'stall', driver: 'stall' });
    const summary = await pass(garden);
    expect((await readRun(garden.paths, `${goal.id}-r1`)).status).toBe('timeout');
    expect(summary.tends.map((t) => t.key)).toEqual([`run_failure:${goal.id}`]);
    expect((await readGoal(garden.paths, summary.tends[0]!.goal)).tend).toMatchObject({ origin: { status: 'timeout', failure_reason: 'timeout' } });
  }, 20_000);

  it('a watchdog kill triggers run_failure (killed / killed)', async () => {
    garden = await makeTestGarden({ coordinator: { watchdog_seconds: 300 } });
    const live = new LiveRuns();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'stall', driver: 'stall' });
    const first = await reconcile({ garden, dispatch: realDispatch(garden, live), live });
    expect(first.dispatched).toEqual([`${goal.id}-r1`]);
    await new Promise((r) => setTimeout(r, 300));
    const later = new Date(Date.now() + 400_000);
    const second = await reconcile({ garden, dispatch: realDispatch(garden, live), live, now: () => later });
    expect(second.killed).toEqual([`${goal.id}-r1`]);
    // The watchdog stops the live run; its dispatch closes it from the stream, and the next pass closes the goal.
    await Promise.all(first.pending);
    const third = await reconcile({ garden, dispatch: async () => undefined, live, now: () => later });
    expect(third.closed).toEqual([{ goal: goal.id, reason: 'failure' }]);
    expect(third.tends.map((t) => [t.trigger, t.key])).toEqual([['run_failure', `run_failure:${goal.id}`]]);
    expect((await readGoal(garden.paths, third.tends[0]!.goal)).tend).toMatchObject({ origin: { run: `${goal.id}-r1`, status: 'killed', failure_reason: 'killed' } });
  }, 20_000);
});

describe('automatic tend: non-triggers', () => {
  it('a successful run queues no tend', async () => {
    garden = await makeTestGarden();
    await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fine' });
    const summary = await pass(garden);
    expect(summary.closed.map((c) => c.reason)).toEqual(['success']);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld).toEqual([]);
    expect(openTends(garden)).toEqual([]);
  });

  it('a failed tend goal never triggers a tend (no loops)', async () => {
    garden = await makeTestGarden();
    const tend = await createGoal(garden.paths, { type: 'tend', plant: 'gardener', body: 'tend and fail', driver: 'exit3', tend: { trigger: 'run_failure', key: 'run_failure:1-x', origin: { goal: '1-x' } } });
    const summary = await pass(garden);
    expect(summary.closed).toEqual([{ goal: tend.id, reason: 'failure' }]);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld).toEqual([]);
    // A plain tend goal (no metadata) failing is no trigger either.
    await createGoal(garden.paths, { type: 'tend', plant: 'gardener', body: 'plain tend', driver: 'exit3' });
    expect((await pass(garden)).tends).toEqual([]);
  });

  it('an operator-cancelled goal queues no tend', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'never mind', driver: 'exit3' });
    await cancelGoal(garden, goal.id);
    const summary = await pass(garden);
    expect(summary.dispatched).toEqual([]);
    expect(summary.tends).toEqual([]);
    expect(openTends(garden)).toEqual([]);
  });

  it('a run interrupted by a coordinator shutdown (coordinator_stopped) is requeued, not tended', async () => {
    garden = await makeTestGarden();
    const live = new LiveRuns();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'stall', driver: 'stall' });
    const first = await reconcile({ garden, dispatch: realDispatch(garden, live), live });
    await new Promise((r) => setTimeout(r, 300));
    live.stopAll('coordinator_stopped');
    await Promise.all(first.pending);
    expect(await readRun(garden.paths, `${goal.id}-r1`)).toMatchObject({ status: 'killed', failure_reason: 'coordinator_stopped' });
    const second = await reconcile({ garden, dispatch: async () => undefined });
    expect(second.requeued).toEqual([goal.id]);
    expect(second.tends).toEqual([]);
    expect(openTends(garden)).toEqual([]);
  }, 20_000);
});

describe('automatic tend: queued_attention_needed', () => {
  it('one tend for the set of queued goals that cannot dispatch (unassigned, missing plant), after the dispatch phase', async () => {
    garden = await makeTestGarden();
    const unassigned = await createGoal(garden.paths, { type: 'build', body: 'nobody owns me' });
    const orphan = await createGoal(garden.paths, { type: 'build', plant: 'nobody', body: 'for a missing plant' });
    const ok = await createGoal(garden.paths, { type: 'spike', plant: 'gardener', body: 'ordinary work' });
    const summary = await pass(garden);
    expect(summary.dispatched).toEqual([`${ok.id}-r1`]);
    expect(summary.tends).toEqual([{ goal: expect.any(String), trigger: 'queued_attention_needed', key: 'queued_attention_needed' }]);
    const tend = await readGoal(garden.paths, summary.tends[0]!.goal);
    expect(tend.tend).toEqual({
      trigger: 'queued_attention_needed',
      key: 'queued_attention_needed',
      origin: { goals: [{ goal: unassigned.id, reason: 'no assigned_to' }, { goal: orphan.id, reason: expect.stringContaining('no plant nobody') }] },
    });
    // The tend runs next pass; after it the same stuck set is covered: no second tend, so the loop goes idle.
    const second = await pass(garden);
    expect(second.closed).toEqual([{ goal: tend.id, reason: 'success' }]);
    expect(second.tends).toEqual([]);
    const prompt = fs.readFileSync(path.join(garden.paths.runsDir, `${tend.id}-r1`, 'prompt.md'), 'utf8');
    expect(prompt).toContain('Trigger: queued_attention_needed');
    expect(prompt).toContain(`- ${unassigned.id}: no assigned_to`);
    expect((await pass(garden)).tends).toEqual([]);
    // A newly stuck goal is not covered yet: one more tend.
    const fresh = await createGoal(garden.paths, { type: 'build', body: 'also unowned' });
    const third = await pass(garden);
    expect(third.tends.map((t) => t.key)).toEqual(['queued_attention_needed']);
    expect((await readGoal(garden.paths, third.tends[0]!.goal)).tend).toMatchObject({ origin: { goals: expect.arrayContaining([{ goal: fresh.id, reason: 'no assigned_to' }]) } });
  });

  it('duplicate guard: no second tend while one with the same key is open', async () => {
    garden = await makeTestGarden();
    await createGoal(garden.paths, { type: 'build', body: 'unowned A' });
    const first = await reconcile({ garden, dispatch: async () => undefined });
    expect(first.tends).toHaveLength(1);
    const tendId = first.tends[0]!.goal;
    await createGoal(garden.paths, { type: 'build', body: 'unowned B' });
    // The tend is claimed but its run stays open (the dispatch function does nothing).
    const second = await reconcile({ garden, dispatch: async () => undefined });
    expect(second.dispatched).toEqual([`${tendId}-r1`]);
    expect(second.tends).toEqual([]);
    expect(second.tendsWithheld).toEqual([{ key: 'queued_attention_needed', reason: 'duplicate_open_tend' }]);
    // Once it closes, B is still uncovered: a new tend.
    await closeRun(garden.paths, `${tendId}-r1`, 'tend', { status: 'success', cost: { source: 'unknown' }, reflection: 'ok' });
    const third = await reconcile({ garden, dispatch: async () => undefined });
    expect(third.closed).toEqual([{ goal: tendId, reason: 'success' }]);
    expect(third.tends.map((t) => t.key)).toEqual(['queued_attention_needed']);
  });

  it('duplicate guard: a run_failure with an open tend for the same key queues none', async () => {
    garden = await makeTestGarden();
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: 'fail', driver: 'exit3', priority: 90 });
    const manual = await submitTendGoal(garden, { trigger: 'run_failure', key: `run_failure:${goal.id}`, origin: { goal: goal.id } });
    expect(manual).toMatchObject({ type: 'tend', assigned_to: 'gardener', priority: TEND_PRIORITY, tend: { trigger: 'run_failure', key: `run_failure:${goal.id}`, origin: { goal: goal.id } } });
    // The failing goal (priority 90) runs for real; the manual tend is claimed but its run stays open.
    const real = realDispatch(garden);
    const summary = await reconcile({ garden, dispatch: (g, runId) => (g.type === 'tend' ? Promise.resolve() : real(g, runId)), awaitDispatch: true });
    expect(summary.dispatched).toEqual([`${goal.id}-r1`, `${manual.id}-r1`]);
    expect(summary.closed).toEqual([{ goal: goal.id, reason: 'failure' }]);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld).toEqual([{ key: `run_failure:${goal.id}`, reason: 'duplicate_open_tend' }]);
  });
});

describe('automatic tend: bounds', () => {
  it(`queues at most ${MAX_TENDS_PER_PASS} tends per pass; the rest are reported withheld`, async () => {
    garden = await makeTestGarden({ coordinator: { max_concurrent_runs: 5 } });
    const goals = [];
    for (let i = 0; i < MAX_TENDS_PER_PASS + 1; i += 1) goals.push(await createGoal(garden.paths, { type: 'build', plant: 'gardener', body: `fail ${i}`, driver: 'exit3' }));
    const summary = await pass(garden);
    expect(summary.closed).toHaveLength(goals.length);
    expect(summary.tends).toHaveLength(MAX_TENDS_PER_PASS);
    expect(summary.tendsWithheld).toEqual([{ key: expect.stringMatching(/^run_failure:/), reason: 'per_pass_limit', detail: `at most ${MAX_TENDS_PER_PASS} automatic tends per pass` }]);
    expect(openTends(garden)).toHaveLength(MAX_TENDS_PER_PASS);
  });

  it('no active gardener: no tend, and the summary says why', async () => {
    garden = await makeTestGarden({ files: { 'seeds/worker.md': '# Seed: worker\n' } });
    const { commissionPlant } = await import('../../source/store/index.js');
    await commissionPlant(garden.paths, 'worker', 'worker');
    await archivePlant(garden.paths, 'gardener');
    const goal = await createGoal(garden.paths, { type: 'build', plant: 'worker', body: 'fail', driver: 'exit3' });
    const summary = await pass(garden);
    expect(summary.closed).toEqual([{ goal: goal.id, reason: 'failure' }]);
    expect(summary.tends).toEqual([]);
    expect(summary.tendsWithheld).toEqual([{ key: `run_failure:${goal.id}`, reason: 'gardener_unavailable', detail: 'plant gardener is archived' }]);
    await expect(submitTendGoal(garden, { trigger: 'run_failure', key: 'k', origin: {} })).rejects.toThrow(/gardener/);
  });
});

describe('decideTends (pure)', () => {
  const failed = (id: string, status: string, failure_reason?: string, type = 'build') => ({ goal: { id, type: type as never }, run: { id: `${id}-r1`, status: status as never, ...(failure_reason ? { failure_reason: failure_reason as never } : {}) } });

  it('decides from its input alone', () => {
    const decision = decideTends({
      closed: [failed('1-a', 'failure', 'agent_error'), failed('2-b', 'success'), failed('3-c', 'killed', 'killed'), failed('4-d', 'killed', 'coordinator_stopped'), failed('5-t', 'failure', 'nonzero_exit', 'tend')],
      stuck: [{ goal: '6-e', reason: 'no assigned_to' }],
      open: [],
      attentionCovered: [],
    });
    expect(decision.queue.map((q) => q.key)).toEqual(['run_failure:1-a', 'run_failure:3-c', 'queued_attention_needed']);
    expect(decision.withheld).toEqual([]);
    expect(decision.attentionCovered).toEqual(['6-e']);
  });

  it('covered stuck goals and open keys queue nothing', () => {
    const decision = decideTends({
      closed: [failed('1-a', 'timeout', 'timeout')],
      stuck: [{ goal: '6-e', reason: 'no assigned_to' }],
      open: [{ id: '9-t', type: 'tend', status: 'running', tend: { trigger: 'run_failure', key: 'run_failure:1-a', origin: {} } }],
      attentionCovered: ['6-e', '7-gone'],
    });
    expect(decision.queue).toEqual([]);
    expect(decision.withheld).toEqual([{ key: 'run_failure:1-a', reason: 'duplicate_open_tend' }]);
    expect(decision.attentionCovered).toEqual(['6-e']);
  });

  it('a covered goal that a pass only left waiting for a slot stays covered (no tend after every tend)', () => {
    const waiting = decideTends({ closed: [], stuck: [], open: [{ id: '6-e', type: 'spike', status: 'queued' }], attentionCovered: ['6-e'] });
    expect(waiting).toEqual({ queue: [], withheld: [], attentionCovered: ['6-e'], attentionNoted: [], traces: [] });
    const again = decideTends({ closed: [], stuck: [{ goal: '6-e', reason: 'plant ghost is missing' }], open: [{ id: '6-e', type: 'spike', status: 'queued' }], attentionCovered: ['6-e'] });
    expect(again.queue).toEqual([]);
    // Dispatched since: it drops out, and a later stall is reported again.
    expect(decideTends({ closed: [], stuck: [], open: [{ id: '6-e', type: 'spike', status: 'running' }], attentionCovered: ['6-e'] }).attentionCovered).toEqual([]);
  });
});
