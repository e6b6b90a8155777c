import { isTerminalLandingState, type GoalRecord, type LandingRecord } from './contracts/index.js';

/**
 * Landings in words, one place for every view (the workbench's queue,
 * status line and run pane, `pak2 goals`, `pak2 landings`;
 * docs/landing/level2.md, docs/workbench/level2.md).
 */

/** A landing's state as a listing of landings says it: `awaiting review`, `landing` (verifying), `queued`, `waiting`, `landed`, … */
export function landingWords(landing: Pick<LandingRecord, 'state'>): string {
  return landing.state === 'awaiting_review' ? 'awaiting review' : landing.state === 'verifying' ? 'landing' : landing.state;
}

/**
 * What a goal's status column says when its latest run has a landing: the
 * landing's state while the goal waits on it (`completed`: `awaiting
 * review`, `landing` for a queued or verifying one, `waiting`, …), and how
 * it ended once the goal closed on it (`landed` for `closed:success`,
 * `rejected`, `conflict`, `land failed` for `closed:failure`). Undefined when
 * the landing says nothing the status does not (a queued goal, a goal
 * closed otherwise).
 */
export function goalLandingWords(goal: Pick<GoalRecord, 'status'>, landing: Pick<LandingRecord, 'state'> | undefined): string | undefined {
  if (!landing) return undefined;
  if (goal.status === 'closed' ? !isTerminalLandingState(landing.state) : goal.status !== 'completed') return undefined;
  switch (landing.state) {
    case 'awaiting_review':
      return 'awaiting review';
    case 'queued':
    case 'verifying':
      return 'landing';
    case 'failed':
      return 'land failed';
    default:
      return landing.state;
  }
}

/** A goal's status as the queue and `pak2 goals` show it: its landing's words ({@link goalLandingWords}), else the status or `closed:<reason>`. */
export function goalStatusText(goal: Pick<GoalRecord, 'status' | 'closed_reason'>, landing?: Pick<LandingRecord, 'state'>): string {
  return goalLandingWords(goal, landing) ?? (goal.status === 'closed' ? `closed:${goal.closed_reason ?? '?'}` : goal.status);
}

/** What a line of a unified diff is, for its colour: a file header (bold), a hunk header (cyan), an added (green) or removed (red) line, or context. */
export type PatchLineKind = 'head' | 'hunk' | 'add' | 'del' | 'context';

const HEADS = ['diff --git', 'index ', '+++', '---', 'new file mode', 'deleted file mode', 'old mode', 'new mode', 'similarity index', 'rename from', 'rename to', 'Binary files'];

/** The kind of one line of a `git diff` patch. */
export function patchLineKind(line: string): PatchLineKind {
  const c = line.charCodeAt(0);
  // The common lines first: a patch of 4 MB is mostly these.
  if (c === 32) return 'context';
  if (c === 64 && line.startsWith('@@')) return 'hunk';
  if ((c === 43 || c === 45) && !line.startsWith('+++') && !line.startsWith('---')) return c === 43 ? 'add' : 'del';
  return HEADS.some((head) => line.startsWith(head)) ? 'head' : 'context';
}

/**
 * What a run's diff (`RunDiff`, source/submit/landing.ts) is, in one line (`pak2 diff`, the workbench's diff):
 * whose work, against which base, from where.
 */
export function diffHeading(diff: { run: string; source: 'landing' | 'worktree' | 'branch' | 'none'; base: string; head?: string }): string {
  const base = diff.base.slice(0, 12);
  if (diff.source === 'none') return `${diff.run}: no work to show: its worktree is removed and its branch is gone (it held nothing beyond its base ${base})`;
  const what =
    diff.source === 'landing'
      ? `the work of ${diff.run}`
      : diff.source === 'branch'
        ? `the branch of ${diff.run} (not landed)`
        : `the worktree of ${diff.run} (what it holds now, committed or not)`;
  return `${what} against ${base}${diff.head ? ` (branch tip ${diff.head.slice(0, 12)})` : ''}`;
}

/** The number part of a goal id (`12` of `12-build-the-api`): what a narrow status column names a dependency by. */
function goalNumberOf(id: string): string {
  return /^[0-9]+/.exec(id)?.[0] ?? id;
}

/** How a blocking dependency closed, as a status column says it. */
const HOW_CLOSED: Record<string, string> = { failure: 'failed', cancelled: 'cancelled', missing: 'missing' };

/**
 * A queued goal's dependencies in a status column's words
 * (docs/goal/level2.md, "Dependencies"): `blocked: 12 failed` when a
 * dependency that closed failure (or cancelled, or is missing) holds it,
 * `waits for 12,13` while some are open; undefined when neither.
 */
export function dependencyStatusText(view: { waiting_for?: readonly string[] | undefined; blocked_on?: { goal: string; closed_reason: string } | undefined }): string | undefined {
  if (view.blocked_on) return `blocked: ${goalNumberOf(view.blocked_on.goal)} ${HOW_CLOSED[view.blocked_on.closed_reason] ?? view.blocked_on.closed_reason}`;
  if (view.waiting_for?.length) return `waits for ${view.waiting_for.map(goalNumberOf).join(',')}`;
  return undefined;
}
