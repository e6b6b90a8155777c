import type { GoalRecord, GoalStatus } from '../contracts/index.js';
import type { GardenPaths } from '../garden/index.js';
import { readGoal, StoreError } from '../store/index.js';

/**
 * What is known of one goal for the dependency decision: its status, how it
 * closed, and what it depends on itself. `missing`: no goal file of that id
 * (it was removed, or never existed).
 */
export type DependencyFact = { status: GoalStatus; closed_reason?: string; depends_on?: readonly string[] } | { missing: true };

/** The dependency a blocked goal is held by: the root goal that closed failure or cancelled (or is missing), and how. */
export interface BlockedOn {
  goal: string;
  /** `failure`, `cancelled`, or `missing` (no goal file of that id). */
  closed_reason: string;
  /** The goal's own dependency the block came through, when the root is further up the chain. */
  via?: string;
}

/**
 * A goal's readiness (docs/goal/level2.md, "Dependencies"): `ready` when
 * every dependency closed success; `waiting` with the dependencies not yet
 * closed (open, in any status); `blocked` when one closed failure or
 * cancelled, or is missing, directly or anywhere up the chain (the root is
 * named). Blocked wins over waiting.
 */
export type Readiness = { state: 'ready' } | { state: 'waiting'; waiting_for: string[] } | { state: 'blocked'; blocked_on: BlockedOn };

/**
 * Decides a goal's readiness from what is known of the goals it depends on,
 * transitively (pure; docs/goal/level2.md, "Dependencies"). A dependency
 * with no fact counts as `missing`. A chain that loops back (a cycle a
 * hand-edited file made; submit refuses them) counts as waiting, never as
 * ready.
 */
export function decideReadiness(goal: Pick<GoalRecord, 'id' | 'depends_on'>, facts: ReadonlyMap<string, DependencyFact>): Readiness {
  return decide(goal.id, goal.depends_on ?? [], facts, new Set([goal.id]), new Map());
}

function decide(id: string, deps: readonly string[], facts: ReadonlyMap<string, DependencyFact>, path: Set<string>, memo: Map<string, Readiness>): Readiness {
  const known = memo.get(id);
  if (known) return known;
  const waiting: string[] = [];
  let blocked: BlockedOn | undefined;
  for (const dep of deps) {
    const fact = facts.get(dep) ?? { missing: true as const };
    if ('missing' in fact) {
      blocked ??= { goal: dep, closed_reason: 'missing' };
      continue;
    }
    if (fact.status === 'closed') {
      if (fact.closed_reason !== 'success') blocked ??= { goal: dep, closed_reason: fact.closed_reason ?? 'failure' };
      continue;
    }
    waiting.push(dep);
    // An open dependency that is itself blocked blocks this goal by the same root.
    if (!blocked && fact.depends_on?.length && !path.has(dep)) {
      path.add(dep);
      const up = decide(dep, fact.depends_on, facts, path, memo);
      path.delete(dep);
      if (up.state === 'blocked') blocked = { goal: up.blocked_on.goal, closed_reason: up.blocked_on.closed_reason, via: dep };
    }
  }
  const readiness: Readiness = blocked ? { state: 'blocked', blocked_on: blocked } : waiting.length > 0 ? { state: 'waiting', waiting_for: waiting } : { state: 'ready' };
  memo.set(id, readiness);
  return readiness;
}

/**
 * The reason text a blocked goal is reported with (`GoalBlocked`, reason
 * `dependency`; docs/coordinator/level2.md, "Goals that cannot dispatch"):
 * `dependency 3-build-a closed failure`, `… (through 4-build-b)` when the
 * root is further up the chain, `dependency 3-build-a is missing`.
 */
export function dependencyReason(blocked: BlockedOn): string {
  const how = blocked.closed_reason === 'missing' ? 'is missing' : `closed ${blocked.closed_reason}`;
  return `dependency ${blocked.goal} ${how}${blocked.via && blocked.via !== blocked.goal ? ` (through ${blocked.via})` : ''}`;
}

/**
 * Gathers the facts {@link decideReadiness} needs for `goals` (open goals,
 * as a scan lists them): the open goals themselves, and every goal a
 * dependency chain names that is not among them, read from its file
 * (closed goals; their record never changes again, so `closedCache`, when
 * given, keeps them between calls).
 */
export async function dependencyFacts(paths: GardenPaths, goals: readonly GoalRecord[], closedCache?: Map<string, DependencyFact>): Promise<Map<string, DependencyFact>> {
  const facts = new Map<string, DependencyFact>();
  for (const goal of goals) facts.set(goal.id, factOf(goal));
  const todo = goals.flatMap((g) => g.depends_on ?? []);
  while (todo.length > 0) {
    const id = todo.pop()!;
    if (facts.has(id)) continue;
    let fact = closedCache?.get(id);
    if (!fact) {
      try {
        fact = factOf(await readGoal(paths, id));
        if (closedCache && fact && !('missing' in fact) && fact.status === 'closed') closedCache.set(id, fact);
      } catch (error) {
        if (!(error instanceof StoreError && error.code === 'GOAL_NOT_FOUND')) throw error;
        fact = { missing: true };
      }
    }
    facts.set(id, fact);
    if (!('missing' in fact)) todo.push(...(fact.depends_on ?? []));
  }
  return facts;
}

function factOf(goal: GoalRecord): DependencyFact {
  return { status: goal.status, ...(goal.closed_reason ? { closed_reason: goal.closed_reason } : {}), ...(goal.depends_on?.length ? { depends_on: goal.depends_on } : {}) };
}

/**
 * The cycle `depends_on` would make for goal `id` (pure): the ids around it,
 * `[id, …, id]`, or undefined when there is none. `dependsOn` gives each
 * other goal's own dependencies.
 */
export function findCycle(id: string, dependsOn: readonly string[], dependsOnOf: (id: string) => readonly string[] | undefined): string[] | undefined {
  const seen = new Set<string>();
  const walk = (at: string, trail: string[]): string[] | undefined => {
    if (at === id) return [...trail, at];
    if (seen.has(at)) return undefined;
    seen.add(at);
    for (const next of dependsOnOf(at) ?? []) {
      const found = walk(next, [...trail, at]);
      if (found) return found;
    }
    return undefined;
  };
  for (const dep of dependsOn) {
    const found = walk(dep, [id]);
    if (found) return found;
  }
  return undefined;
}

/** What a view shows of a queued goal's dependencies (docs/goal/level2.md, "Dependencies"): absent when it is ready. */
export interface DependencyView {
  /** The dependencies not yet closed (it waits for them). */
  waiting_for?: string[];
  /** The root dependency that closed failure or cancelled (or is missing) and holds it. */
  blocked_on?: BlockedOn;
}

/**
 * The dependency view of each queued goal that depends on others and is
 * not ready (pure): `waiting_for` or `blocked_on`, by goal id.
 */
export function dependencyViews(goals: readonly GoalRecord[], facts: ReadonlyMap<string, DependencyFact>): Map<string, DependencyView> {
  const views = new Map<string, DependencyView>();
  for (const goal of goals) {
    if (goal.status !== 'queued' || !goal.depends_on?.length) continue;
    const readiness = decideReadiness(goal, facts);
    if (readiness.state === 'waiting') views.set(goal.id, { waiting_for: readiness.waiting_for });
    else if (readiness.state === 'blocked') views.set(goal.id, { blocked_on: readiness.blocked_on });
  }
  return views;
}

/**
 * {@link dependencyViews} of open goals, with the facts read
 * ({@link dependencyFacts}); an empty map, with no read, when no queued
 * goal depends on another.
 */
export async function readDependencyViews(paths: GardenPaths, goals: readonly GoalRecord[], closedCache?: Map<string, DependencyFact>): Promise<Map<string, DependencyView>> {
  if (!goals.some((g) => g.status === 'queued' && g.depends_on?.length)) return new Map();
  return dependencyViews(goals, await dependencyFacts(paths, goals, closedCache));
}

/**
 * Orders goals so that each comes after the listed goals it depends on,
 * keeping the given order otherwise (pure; the queue's chain order). A
 * cycle keeps the given order within it.
 */
export function chainOrder<T extends Pick<GoalRecord, 'id' | 'depends_on'>>(goals: readonly T[]): T[] {
  const byId = new Map(goals.map((g) => [g.id, g]));
  const seen = new Set<string>();
  const out: T[] = [];
  const visit = (goal: T) => {
    if (seen.has(goal.id)) return;
    seen.add(goal.id);
    for (const dep of goal.depends_on ?? []) {
      const before = byId.get(dep);
      if (before) visit(before);
    }
    out.push(goal);
  };
  for (const goal of goals) visit(goal);
  return out;
}

/**
 * The blocked chains among dependency views (pure): per root dependency
 * (the goal that closed failure or cancelled), how it closed and the goals
 * it holds, roots in the order first met.
 */
export function blockedChains(views: ReadonlyMap<string, DependencyView>): { root: string; closed_reason: string; goals: string[] }[] {
  const chains = new Map<string, { root: string; closed_reason: string; goals: string[] }>();
  for (const [id, view] of views) {
    if (!view.blocked_on) continue;
    let chain = chains.get(view.blocked_on.goal);
    if (!chain) chains.set(view.blocked_on.goal, (chain = { root: view.blocked_on.goal, closed_reason: view.blocked_on.closed_reason, goals: [] }));
    chain.goals.push(id);
  }
  return [...chains.values()];
}
