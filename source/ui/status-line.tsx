import React from 'react';
import { goalStatusText } from '../landing-words.js';
import type { AttachedView, GoalRow, ServerView, Snapshot } from '../snapshot/types.js';
import { hint } from './keymap.js';
import { fit } from './layout.js';
import { Lines } from './lines.js';

/**
 * The latest notice (submitted, cancelled, an error). With a `subject` the
 * status line describes the goal or run as the current snapshot has it
 * (`queued 3-fix` becomes `running 3-fix`, then `closed:success 3-fix`);
 * `text` is shown until the snapshot has news of it.
 */
export interface StatusMessage {
  text: string;
  error: boolean;
  /** `from`: the goal's status (or statuses) when the message was made; the text shows while the goal's is one of them. */
  subject?: { goal: string; run?: string; from?: string | readonly string[] };
}

/** Props of {@link StatusLine}. */
export interface StatusLineProps {
  snapshot: Snapshot;
  message: StatusMessage | undefined;
  width: number;
}

/** `serve 127.0.0.1:7717 · webhooks 2 ok` (or `1 failing`, `1 retrying`) while this session serves HTTP. */
export function serveSegment(server: ServerView | undefined): string | undefined {
  if (!server) return undefined;
  const where = server.url.replace(/^https?:\/\//, '').replace(/\/api\/v1$/, '');
  const w = server.webhooks;
  const hooks = !w || w.subscriptions === 0 ? '' : !w.running ? ' · webhooks by another process' : w.failing ? ` · webhooks ${w.failing} failing` : w.retrying ? ` · webhooks ${w.retrying} retrying` : ` · webhooks ${w.subscriptions} ok`;
  return `serve ${where}${hooks}`;
}

/** Who holds the garden's coordinator lock, in short: `pid 4242 on box`. */
export function holderText(holder: AttachedView['holder']): string {
  return `pid ${holder.pid} on ${holder.host}`;
}

/** The local clock time of an ISO time (`14:02:11`), with its date before it when it is not `now`'s day. */
export function clockTime(iso: string, now: number = Date.now()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  const time = `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  return at.toDateString() === new Date(now).toDateString() ? time : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${time}`;
}

/**
 * The status line's first words for a workbench attached to another
 * process's coordinator (docs/workbench/level2.md, "Attached"): `attached
 * to pid 4242 on box (since 14:02:11) · coordinator idle`; once it stopped,
 * `no coordinator: pid 4242 on box stopped 14:30:05 · T takes over`.
 */
export function attachedSegment(view: AttachedView, now: number = Date.now()): string {
  if (view.goneAt) return `no coordinator: ${holderText(view.holder)} stopped ${clockTime(view.goneAt, now)} · ${hint('coordinator.takeOver', 'takes over')}`;
  return `attached to ${holderText(view.holder)} (since ${clockTime(view.holder.started_at, now)}) · coordinator ${view.state ?? 'starting'}`;
}

/**
 * What the status line says when the attached coordinator changes
 * (docs/workbench/level2.md, "Attached"): it stopped (red: nothing runs
 * the garden now, and what to do), or another one started and the
 * workbench attached to it. Undefined when nothing of that changed.
 */
export function attachmentNews(before: AttachedView | undefined, after: AttachedView | undefined): StatusMessage | undefined {
  if (!before || !after) return undefined;
  if (after.goneAt && !before.goneAt) {
    return { text: `the coordinator stopped (${holderText(after.holder)}, ${after.holder.command}): nothing runs the garden; ${hint('coordinator.takeOver', 'takes over')}, or the workbench attaches to the next one that starts`, error: true };
  }
  if (!after.goneAt && (before.goneAt || before.holder.started_at !== after.holder.started_at || before.holder.pid !== after.holder.pid)) {
    return { text: `attached to ${holderText(after.holder)} (${after.holder.command})`, error: false };
  }
  return undefined;
}

/** `⚠ 2 problems` when the snapshot names any (unreadable files, coordinator errors). */
export function problemsSegment(problems: readonly string[]): string | undefined {
  return problems.length ? `⚠ ${problems.length} problem${problems.length === 1 ? '' : 's'}` : undefined;
}

/**
 * PAK2.toml on disk when it is not all in force (docs/garden/level2.md,
 * "Changing PAK2.toml while pak2 runs"): `⚠ PAK2.toml not applied:
 * drivers.trap.command` (a bad edit; the configuration read last stays),
 * `restart to apply: store.url` (keys read only at start).
 */
export function configSegment(file: Snapshot['garden']['configFile']): string | undefined {
  if (!file) return undefined;
  const parts = [...(file.invalid ? [`⚠ PAK2.toml not applied${file.invalid.length ? `: ${file.invalid.join(', ')}` : ''}`] : []), ...(file.restart?.length ? [`restart to apply: ${file.restart.join(', ')}`] : [])];
  return parts.length ? parts.join(' · ') : undefined;
}

/** `3 need you` (`1 needs you`) when the needs-you list holds items (docs/attention/level2.md); nothing when it is empty. */
export function attentionSegment(items: readonly unknown[] | undefined): string | undefined {
  const n = items?.length ?? 0;
  return n ? `${n} need${n === 1 ? 's' : ''} you` : undefined;
}

/** A goal's status as the queue shows it: its run's landing in words (`awaiting review`, `landed`), else the status, or `closed:<reason>`. */
export function goalStatusCell(row: Pick<GoalRow, 'goal' | 'landing'>): string {
  return goalStatusText(row.goal, row.landing);
}

/**
 * A message's text as of this snapshot. A goal reads as its status now
 * (`closed:cancelled 3-fix`, `landed 3-fix` once accepted work landed); a stopped run, once it has ended, as its
 * status and reason with its goal's (`killed (operator_stopped) 3-fix-r1 ·
 * closed:cancelled 3-fix`). Otherwise, and while the run is still live,
 * the message's own text.
 */
export function messageText(snapshot: Snapshot, message: StatusMessage): string {
  const subject = message.subject;
  if (!subject) return message.text;
  const row = snapshot.goals.find((r) => r.goal.id === subject.goal);
  if (!row) return message.text;
  const goal = goalStatusCell(row);
  if (!subject.run) {
    if (typeof subject.from === 'string' ? goal === subject.from : subject.from?.includes(goal)) return message.text;
    // A status the landing gives (`landed`, `waiting`, `conflict`) comes with what the landing says.
    const said = row.landing?.message && goal !== goalStatusText(row.goal) ? `: ${row.landing.message}` : '';
    return `${goal} ${subject.goal}${said}`;
  }
  const run = row.run?.id === subject.run ? row.run : undefined;
  if (!run || run.status === 'running') return message.text;
  return `${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''} ${run.id} · ${goal} ${subject.goal}`;
}

/** Today's spend: `$0.1234 today`, or against the day's cap `$3.10 of $10.00 today` (docs/budget/level2.md); runs of unknown cost named. */
export function costSegment(cost: Snapshot['costToday']): string {
  const cap = cost.capUsd !== undefined ? ` of $${cost.capUsd.toFixed(2)}` : '';
  return `$${cost.usd.toFixed(cap ? 2 : 4)}${cap} today${cost.unknown ? ` (+${cost.unknown} unknown)` : ''}`;
}

/** The status line: coordinator state, how many items need you, problems, PAK2.toml not in force, live runs (here, or in the dashboard those whose records say running; and on remote runners), queued, blocked and awaiting review goals, cost today, the garden's name, and the latest message. */
export const StatusLine = React.memo(function StatusLine({ snapshot, message, width }: StatusLineProps): React.JSX.Element {
  const s = snapshot;
  const attached = s.coordinator.attached;
  const state = s.garden.readOnly ? 'dashboard (read-only)' : attached ? attachedSegment(attached) : `coordinator ${s.coordinator.state}`;
  const cost = costSegment(s.costToday);
  const serve = serveSegment(s.server);
  const problems = problemsSegment(s.problems);
  const remote = Object.keys(s.leases).length;
  // The dashboard has no coordinator of its own: the runs another process runs are counted from their records; an attached workbench counts what its coordinator says.
  const counted = s.garden.readOnly || attached?.goneAt;
  const running = counted ? s.goals.filter((row) => row.run?.status === 'running' && !row.run.runner).length : attached ? attached.liveRuns.length : s.coordinator.liveRuns.length;
  const needs = attentionSegment(s.attention);
  const config = configSegment(s.garden.configFile);
  const left = [`● ${state}`, ...(needs ? [needs] : []), ...(problems ? [problems] : []), ...(config ? [config] : []), counted ? `${running} running` : `${running} live`, ...(remote ? [`${remote} on runners`] : []), s.unread ? 'goals not read' : `${s.counts.queued} queued`, ...(s.counts.blocked ? [`${s.counts.blocked} blocked`] : []), ...(s.counts.awaitingReview ? [`${s.counts.awaitingReview} awaiting review`] : []), cost, ...(serve ? [serve] : []), s.garden.name].join(' · ');
  // A message goes first, so a narrow terminal cuts the counters, not the news.
  const keys = [...(needs ? [hint('attention', 'needs you')] : []), ...(problems ? [hint('problems', 'problems')] : []), hint('help', 'help')].join(' · ');
  const text = message ? `${messageText(s, message)} │ ${left}` : `${left} │ ${keys}`;
  // No coordinator runs the garden any more: red, as an error is.
  const color = message?.error || attached?.goneAt ? 'red' : running ? 'yellow' : 'green';
  return <Lines lines={[{ text: fit(text, width), color }]} />;
});
