import type { ArtifactRecord, CommentRecord, GoalRecord, LeaseRecord, RunRecord } from '../contracts/index.js';
import { acceptanceLine, acceptanceSummary, sanitize } from '../format.js';
import { formatBytes } from '../guard/describe.js';

/** `2026-11-29 12:00:03` (UTC) of an ISO time. */
function when(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

/**
 * One comment as a block for a person (`pak2 comment GOAL`, `pak2 show
 * GOAL`): a header `<time UTC>  <author>  [blocking, open | blocking,
 * answered | answers <id>]  <id>`, then the body indented two spaces, its
 * lines kept. Control sequences are stripped.
 */
export function describeComment(comment: CommentRecord, open: ReadonlySet<string>): string {
  const marks = comment.blocking ? [`blocking, ${open.has(comment.id) ? 'open' : 'answered'}`] : comment.answers ? [`answers ${comment.answers}`] : [];
  const header = [when(comment.created_at), comment.author, ...marks, comment.id].join('  ');
  const body = comment.body.split('\n').map((line) => `  ${line}`);
  return sanitize([header, ...body].join('\n'));
}

/** A thread as blocks separated by a blank line, oldest first; `open` are the ids of unanswered blocking comments. */
export function describeThread(comments: readonly CommentRecord[], open: readonly CommentRecord[]): string {
  const ids = new Set(open.map((c) => c.id));
  return comments.map((c) => describeComment(c, ids)).join('\n\n');
}

/**
 * Why a blocked goal waits, one line: `blocked on <id> since <time> (it was
 * <from>): <first line of the question>`. Undefined when the goal is not blocked.
 */
export function blockedLine(goal: GoalRecord, open: readonly CommentRecord[]): string | undefined {
  if (goal.status !== 'blocked') return undefined;
  const on = goal.blocked_on;
  const question = open.find((c) => c.id === on?.comment) ?? open[0];
  const text = question ? question.body.split('\n')[0]! : '(no open question found: an answer in the thread should have unblocked it)';
  const more = open.length > 1 ? ` (+${open.length - 1} more open)` : '';
  return sanitize(`blocked on ${on?.comment ?? question?.id ?? '?'}${on ? ` since ${when(on.since)} (it was ${on.from})` : ''}: ${text}${more}`);
}

/**
 * A remote run's runner and what was verified, lines for `pak2 show RUN`:
 * `runner NAME@HOST  lease ID (state, last heartbeat …)`, then, when the
 * goal had acceptance criteria, `acceptance 2 of 3 criteria verified, 1
 * failed`, and one line per acceptance item (`✓`/`✗`/`? item — evidence`:
 * verified, checked and not met, not verified). Empty for a local run without acceptance items.
 */
export function remoteRunLines(run: RunRecord, lease: LeaseRecord | undefined): string[] {
  const lines: string[] = [];
  if (run.runner) {
    const state = lease ? `  (${lease.state}${lease.state === 'active' ? `, last heartbeat ${when(lease.renewed_at)}${lease.progress !== undefined ? `, ${Math.round(lease.progress)}%` : ''}` : lease.ended_at ? ` ${when(lease.ended_at)}` : ''})` : '';
    lines.push(`runner ${run.runner.name}@${run.runner.host}  lease ${run.runner.lease}${state}`);
    if (lease?.state === 'active' && lease.status_line) lines.push(`status ${lease.status_line}`);
  }
  const summary = acceptanceSummary(run.acceptance);
  if (summary) lines.push(`acceptance ${summary}`);
  for (const a of run.acceptance ?? []) lines.push(acceptanceLine(a));
  return lines.map(sanitize);
}

/**
 * A run's attached artifacts for `pak2 show RUN` (docs/runners/level2.md,
 * "An agent's artifacts"): `artifacts (N):`, then one line each in the
 * order attached, `NAME  KIND, SIZE  WHERE`: a diff's or a file's content
 * at `contentAt(name)` (the file on the file store; undefined on a store,
 * which keeps the content itself: `kept in the store`), a link's url.
 * Empty when the run has none (a local run).
 */
export function artifactLines(artifacts: readonly ArtifactRecord[], contentAt: (name: string) => string | undefined): string[] {
  if (artifacts.length === 0) return [];
  const width = Math.min(32, Math.max(...artifacts.map((a) => a.name.length)));
  const lines = artifacts.map((a) => {
    const name = a.name.padEnd(width);
    if (a.kind === 'link') return `  ${name}  link  ${a.url ?? '(no url)'}`;
    const size = a.bytes !== undefined ? `, ${formatBytes(a.bytes)}` : '';
    return `  ${name}  ${a.kind}${size}  ${contentAt(a.name) ?? 'kept in the store'}`;
  });
  return [`artifacts (${artifacts.length}):`, ...lines].map(sanitize);
}
