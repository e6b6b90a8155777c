import { GOAL_ID_PATTERN, type GoalRecord } from '../contracts/index.js';
import { findCycle } from '../coordinator/readiness.js';
import { whyNobodyTakes } from '../coordinator/takers.js';
import { UserError } from '../errors.js';
import type { Garden } from '../garden/index.js';
import { appendGoalSupplement, changeGoalDependencies, createGoal, isSupplementEligible, OpenGoalScanner, readGoal, readSupplements, StoreError, type GoalInput } from '../store/index.js';
import { checkGoalDriver } from './driver-check.js';

/**
 * Checks the goals a new or changed goal is to wait for (docs/goal/level2.md,
 * "Dependencies"): each is a goal id of this garden; duplicates are dropped.
 * With `forGoal` (a goal that exists: `pak2 depends --add`), a dependency
 * that would close a cycle is refused naming it.
 *
 * @param key the argument or field the ids came from (`after`, `depends_on`, `add`), named in the error.
 * @returns the ids, each once, in the order given.
 * @throws UserError one line naming `key` and the id: not a goal id, no such
 *   goal, the goal itself, or the cycle (`a → b → a`).
 */
export async function checkDependencies(garden: Garden, ids: readonly string[], key: string, forGoal?: string): Promise<string[]> {
  const unique = [...new Set(ids.map((id) => id.trim()).filter(Boolean))];
  const known = new Map<string, GoalRecord>();
  for (const id of unique) {
    if (!GOAL_ID_PATTERN.test(id)) throw new UserError(`${key} ${id}: not a goal id (N-slug)`);
    if (id === forGoal) throw new UserError(`${key} ${id}: a goal cannot wait for itself`);
    try {
      known.set(id, await readGoal(garden.paths, id));
    } catch (error) {
      if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new UserError(`${key} ${id}: no such goal`, { exitCode: 1 });
      throw error;
    }
  }
  if (forGoal !== undefined && unique.length > 0) {
    // Only open goals can lead back to an open goal: a closed one waits for nothing any more.
    const { goals } = await new OpenGoalScanner(garden.paths).scan();
    const open = new Map(goals.map((g) => [g.id, g.depends_on ?? []]));
    const cycle = findCycle(forGoal, unique, (id) => open.get(id));
    if (cycle) throw new UserError(`${key} ${cycle[1]}: a cycle: ${cycle.join(' → ')}`, { exitCode: 1 });
  }
  return unique;
}

/** What {@link changeDependencies} is asked to do to one goal's `depends_on`. */
export interface DependencyChange {
  add?: string[];
  drop?: string[];
}

/**
 * Adds or drops edges of an open goal's `depends_on` (`pak2 depends GOAL
 * --add ID --drop ID`; docs/goal/level2.md, "Dependencies"). Dropping the
 * edge to a failed or cancelled dependency releases a goal it blocked; an
 * added one is checked as at submit, and a cycle is refused. One
 * `GoalDependencyChanged` event says what changed.
 *
 * @throws UserError naming the argument: `goal` (unknown, not a goal id,
 *   closed, or dispatched and on: only a queued goal's, or a blocked one's,
 *   dependencies change), `add` (not a goal id, no such goal, itself, a cycle), `drop`
 *   (not among its dependencies).
 */
export async function changeDependencies(garden: Garden, goalId: string, change: DependencyChange, now: Date = new Date()): Promise<GoalRecord> {
  if (!GOAL_ID_PATTERN.test(goalId)) throw new UserError(`goal ${goalId}: not a goal id (N-slug)`);
  const add = change.add?.length ? await checkDependencies(garden, change.add, 'add', goalId) : [];
  const drop = [...new Set(change.drop ?? [])];
  try {
    return await changeGoalDependencies(
      garden.paths,
      goalId,
      (goal) => {
        // Dependencies hold a goal back from dispatch: once it is dispatched they no longer matter.
        if (goal.status !== 'queued' && goal.status !== 'blocked') throw new UserError(`goal ${goalId}: the goal is ${goal.status}; only a queued goal's dependencies change`, { exitCode: 1 });
        const before = goal.depends_on ?? [];
        const missing = drop.find((id) => !before.includes(id));
        if (missing) throw new UserError(`drop ${missing}: ${goalId} does not depend on it (depends on: ${before.join(', ') || 'nothing'})`, { exitCode: 1 });
        const after = [...before.filter((id) => !drop.includes(id)), ...add.filter((id) => !before.includes(id))];
        const added = after.filter((id) => !before.includes(id));
        if (drop.length === 0 && added.length === 0) return undefined;
        const words = [...(drop.length ? [`dropped ${drop.join(', ')}`] : []), ...(added.length ? [`added ${added.join(', ')}`] : [])];
        return { depends_on: after, detail: `depends_on: ${words.join('; ')}` };
      },
      now,
    );
  } catch (error) {
    if (error instanceof StoreError) {
      const words = error.code === 'GOAL_NOT_FOUND' ? `goal ${goalId}: no such goal` : error.message.startsWith(`goal ${goalId} `) ? error.message : `goal ${goalId}: ${error.message}`;
      throw new UserError(words, { exitCode: 1 });
    }
    throw error;
  }
}

/** What {@link retryGoal} did: the new goal, and the dependents moved to wait for it. */
export interface RetryResult {
  goal: GoalRecord;
  moved: string[];
}

/** What a retry may change from the goal it retries (`pak2 retry --driver --model`). */
export interface RetryOptions {
  /** The driver the retry runs on; without `model`, a driver other than the old goal's drops its `model` and `reasoning_effort` (they were the old driver's). */
  driver?: string;
  /** The model the retry runs on. */
  model?: string;
}

/**
 * Queues a closed goal again (`pak2 retry GOAL`, the workbench's `r`,
 * `POST /goals/{id}/retry`; docs/goal/level2.md, "Retry"): a closed goal
 * stays closed, so the retry is a new goal with the same type, plant, body,
 * priority, settings, guard, routing class, budget, dependencies,
 * acceptance criteria and type payload (`tend`, `commission`,
 * `retrospective`, `conversation_id`), the old goal's supplements copied,
 * and `retry_of` naming the old one;
 * `options` may change its driver and model. Every open goal that
 * depended on the old one is moved to the new one under its lock
 * (`GoalDependencyChanged`, `depends_on: 3-a → 9-a (retry)`), so a chain a
 * failure blocked waits for the retry, and runs when it succeeds.
 *
 * @throws UserError naming `goal`: not a goal id, no such goal, not closed,
 *   closed success (nothing to retry), or a retry of it still open (exit 1
 *   but the first), or one no one could run (a conversation reply in a
 *   runners-only garden, exit 1); `driver` (not a driver, or it cannot
 *   launch) or `model` (empty).
 */
export async function retryGoal(garden: Garden, goalId: string, options: RetryOptions = {}, now: Date = new Date(), env: NodeJS.ProcessEnv = process.env): Promise<RetryResult> {
  if (!GOAL_ID_PATTERN.test(goalId)) throw new UserError(`goal ${goalId}: not a goal id (N-slug)`);
  if (options.model !== undefined && !options.model.trim()) throw new UserError('model: empty; name a model or leave it out');
  let old: GoalRecord;
  try {
    old = await readGoal(garden.paths, goalId);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new UserError(`goal ${goalId}: no such goal`, { exitCode: 1 });
    throw error;
  }
  if (old.status !== 'closed') throw new UserError(`goal ${goalId}: the goal is ${old.status}; only a closed goal is retried`, { exitCode: 1 });
  if (old.closed_reason === 'success') throw new UserError(`goal ${goalId}: the goal closed success; nothing to retry`, { exitCode: 1 });
  const settings = retrySettings(old, options);
  checkGoalDriver(garden, settings.driver, env);
  // As `pak2 submit` refuses it: a retry no one could ever run would wait in the queue for good.
  const nobody = whyNobodyTakes(old, garden.config);
  if (nobody) throw new UserError(`goal ${goalId}: not retried; nobody could take it: ${nobody}`, { exitCode: 1 });
  // One retry at a time: a second while the first is open would do the same work twice.
  const open = (await new OpenGoalScanner(garden.paths).scan()).goals.find((g) => g.retry_of === old.id);
  if (open) throw new UserError(`goal ${goalId}: its retry ${open.id} is still open (${open.status}); retry that one once it closes`, { exitCode: 1 });
  const payload = old as GoalRecord & Pick<GoalInput, 'tend' | 'commission' | 'retrospective'>;
  const goal = await createGoal(
    garden.paths,
    {
      type: old.type,
      ...(old.assigned_to ? { plant: old.assigned_to } : {}),
      body: old.body,
      priority: old.priority,
      ...settings,
      // The same slug: `3-build-a` is retried as `9-build-a`.
      title: old.id.replace(/^[0-9]+-/, ''),
      ...(old.conversation_id ? { conversation_id: old.conversation_id } : {}),
      ...(old.post_reply_hop ? { post_reply_hop: true } : {}),
      // A tend, a commission or a retrospective is nothing without its payload.
      ...(payload.tend ? { tend: payload.tend } : {}),
      ...(payload.commission ? { commission: payload.commission } : {}),
      ...(payload.retrospective ? { retrospective: payload.retrospective } : {}),
      ...(old.guard ? { guard: old.guard } : {}),
      ...(old.task_class ? { task_class: old.task_class } : {}),
      ...(old.budget_usd !== undefined ? { budget_usd: old.budget_usd } : {}),
      ...(old.depends_on?.length ? { depends_on: old.depends_on } : {}),
      ...(old.acceptance_criteria?.length ? { acceptance_criteria: old.acceptance_criteria } : {}),
      retry_of: old.id,
    },
    now,
  );
  // The operator's supplements were context for this work: the retry's dispatch packet freezes them again.
  if (isSupplementEligible(goal)) {
    for (const supplement of await readSupplements(garden.paths, old.id)) {
      await appendGoalSupplement(garden.paths, goal.id, supplement.text, supplement.source, new Date(supplement.ts));
    }
  }
  const moved: string[] = [];
  const { goals } = await new OpenGoalScanner(garden.paths).scan();
  for (const dependent of goals) {
    if (dependent.id === goal.id || !dependent.depends_on?.includes(old.id)) continue;
    try {
      await changeGoalDependencies(
        garden.paths,
        dependent.id,
        (current) => {
          const deps = current.depends_on ?? [];
          if (!deps.includes(old.id)) return undefined;
          const next = [...new Set(deps.map((id) => (id === old.id ? goal.id : id)))];
          return { depends_on: next, detail: `depends_on: ${old.id} → ${goal.id} (retry)` };
        },
        now,
      );
      moved.push(dependent.id);
    } catch (error) {
      // Closed meanwhile (cancelled, say): it waits for nothing any more.
      if (!(error instanceof StoreError && error.code === 'INVALID_TRANSITION')) throw error;
    }
  }
  return { goal, moved };
}

/** The retry's driver, model and reasoning effort: the old goal's, with `options` over them (a new driver drops the old driver's model and effort). */
export function retrySettings(old: Pick<GoalRecord, 'driver' | 'model' | 'reasoning_effort'>, options: RetryOptions): { driver?: string; model?: string; reasoning_effort?: string } {
  const driver = options.driver ?? old.driver;
  const sameDriver = options.driver === undefined || options.driver === old.driver;
  const model = options.model?.trim() || (sameDriver ? old.model : undefined);
  const effort = sameDriver ? old.reasoning_effort : undefined;
  return { ...(driver ? { driver } : {}), ...(model ? { model } : {}), ...(effort ? { reasoning_effort: effort } : {}) };
}
