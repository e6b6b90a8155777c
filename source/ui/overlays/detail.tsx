import type { ScrollLimits } from '../scroll.js';
import { Text } from 'ink';
import React, { useMemo } from 'react';
import type { GoalRecord, LandingRecord, RunRecord, RuntimeHistoryRecord } from '../../contracts/index.js';
import { clipUnits, formatCost, runNoticeLines } from '../../format.js';
import { traceSections } from '../../guard/describe.js';
import type { GuardView } from '../../snapshot/types.js';
import { hint, keyOf } from '../keymap.js';
import { fit, wrapLines } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** One titled block of a detail view. */
export interface DetailSection {
  heading: string;
  lines: string[];
}

/** How much of one text (a goal body, a reflection, a final text, a note) the detail shows, in characters. */
export const DETAIL_TEXT_MAX = 64 * 1024;

/**
 * The lines of `text` for a detail section, cut to {@link DETAIL_TEXT_MAX}
 * characters with a last line saying how many bytes were left out: the
 * detail of a 10 MB body costs what a 64 KB one does (`pak2 show` prints all).
 */
export function textLines(text: string, max = DETAIL_TEXT_MAX): string[] {
  if (text.length <= max) return text.split('\n');
  const shown = clipUnits(text, max);
  const more = Buffer.byteLength(text, 'utf8') - Buffer.byteLength(shown, 'utf8');
  return [...shown.split('\n'), `… ${more.toLocaleString('en-US')} more bytes`];
}

/** How many baseline paths the detail lists before saying how many more there are. */
const BASELINE_PATHS_SHOWN = 10;

/**
 * The provenance of a run: its runtime-history record (authored HEAD and
 * clean/dirty state at close) and its worktree baseline (what was already
 * dirty at start). Empty when the run has neither.
 */
export function provenanceLines(run: RunRecord, provenance: RuntimeHistoryRecord | undefined): string[] {
  const lines: string[] = [];
  if (provenance) {
    lines.push(`authored head ${provenance.authored_head.slice(0, 12)}  authored tree ${provenance.authored_tree} at close`);
    lines.push(`record ${provenance.runtime_root}/history/commits/${provenance.run_id}.json  (pak2 history ${provenance.run_id})`);
  }
  const b = run.worktree_baseline;
  if (b) {
    const roots = b.untracked_dirty_roots.length ? ` in ${b.untracked_dirty_roots.join(', ')}` : '';
    lines.push(`baseline at start: ${b.tracked_dirty_paths.length} tracked dirty, ${b.untracked_dirty_count} untracked${roots}`);
    for (const p of b.tracked_dirty_paths.slice(0, BASELINE_PATHS_SHOWN)) lines.push(`  dirty ${p}`);
    if (b.tracked_dirty_paths.length > BASELINE_PATHS_SHOWN) lines.push(`  … ${b.tracked_dirty_paths.length - BASELINE_PATHS_SHOWN} more`);
  }
  return lines;
}

/**
 * What started an automatic tend goal (its `tend` field, docs/automatic-tend/level2.md):
 * the trigger, and the run or the stuck goals it came from. Undefined for other goals.
 */
export function tendOriginLines(goal: GoalRecord): string[] | undefined {
  const tend = (goal as { tend?: unknown }).tend;
  if (!tend || typeof tend !== 'object') return undefined;
  const t = tend as { trigger?: unknown; key?: unknown; origin?: Record<string, unknown> };
  const o = t.origin ?? {};
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const lines = [`trigger ${text(t.trigger) ?? '?'}  key ${text(t.key) ?? '?'}`];
  if (text(o.goal) || text(o.run)) lines.push(`from goal ${text(o.goal) ?? '-'}  run ${text(o.run) ?? '-'}  ${[text(o.status), text(o.failure_reason) ? `(${text(o.failure_reason)})` : ''].filter(Boolean).join(' ')}`.trimEnd());
  if (text(o.error)) lines.push(`error ${text(o.error)}`);
  if (Array.isArray(o.goals)) for (const g of o.goals as { goal?: unknown; reason?: unknown }[]) lines.push(`stuck ${text(g.goal) ?? '?'}: ${text(g.reason) ?? ''}`);
  return lines;
}

/**
 * The guard of a goal as the detail shows it: what the goal asked for
 * (`guard`, `task_class`); empty for an unguarded goal.
 */
export function goalGuardLines(goal: GoalRecord): string[] {
  const g = goal.guard;
  const lines: string[] = [];
  if (g) {
    lines.push(`verify ${g.verify ?? '([guard] default)'}`);
    if (g.allowed_files) lines.push(`allow ${g.allowed_files.join(' ') || '(any)'}`);
    if (g.forbidden_paths) lines.push(`forbid ${g.forbidden_paths.join(' ') || '(none)'}`);
    const more = [g.timeout_seconds !== undefined ? `verify timeout ${g.timeout_seconds} s` : '', g.env_passthrough?.length ? `env ${g.env_passthrough.join(', ')}` : '', g.contract_id ? `contract ${g.contract_id}` : '', g.redact === false ? 'not redacted' : ''].filter(Boolean);
    if (more.length) lines.push(more.join('  '));
  }
  if (goal.task_class) lines.push(`task class ${goal.task_class}`);
  return lines;
}

/**
 * A run's landing as the detail shows it (docs/landing/level2.md): state,
 * branch and base, the files, what the landing says, the conflict, the
 * verify on the merged result, the review.
 */
export function landingDetailLines(l: LandingRecord): string[] {
  return [
    `state ${l.state}${l.failure_reason ? ` (${l.failure_reason})` : ''}  ${l.branch} → ${l.base_branch}${l.result_commit ? ` at ${l.result_commit.slice(0, 12)}` : ''}${l.attempts ? `  attempts ${l.attempts}` : ''}`,
    ...(l.message ? [l.message] : []),
    ...(l.conflict?.paths.length ? [`conflict in ${l.conflict.paths.join(', ')}`] : []),
    ...(l.verify ? [`verify ${l.verify.command}: ${l.verify.ok ? 'passed' : l.verify.timed_out ? 'timed out' : `failed (exit ${l.verify.exit_code ?? '?'})`}`] : []),
    ...(l.review ? [`${l.review.decision} by ${l.review.by} at ${l.review.at}${l.review.requeue ? ', requeued' : ''}${l.review.comment ? `: ${l.review.comment}` : ''}`] : []),
    `files (${l.files?.length ?? '?'}; ${keyOf('run.diff')} in the queue shows the diff)`,
    ...(l.files ?? []).map((f) => `  ${f.status} ${f.path}`),
  ];
}

/**
 * The sections shown for a goal and its latest run: goal fields, body, run
 * record, cost, provenance, the guarded run's trace (when `guard` is that
 * run's), reflection, final text.
 */
export function goalDetail(goal: GoalRecord, run: RunRecord | undefined, provenance?: RuntimeHistoryRecord, guard?: GuardView, landing?: LandingRecord): DetailSection[] {
  const sections: DetailSection[] = [
    {
      heading: 'Goal',
      lines: [
        `id ${goal.id}  type ${goal.type}  priority ${goal.priority}  plant ${goal.assigned_to ?? '-'}`,
        `status ${goal.status}${goal.closed_reason ? ` (${goal.closed_reason})` : ''}  submitted ${goal.submitted_at}${goal.status === 'closed' && goal.closed_reason !== 'success' ? `  (${keyOf('goal.retry')} in the queue retries it)` : ''}`,
        ...(goal.driver || goal.model ? [`driver ${goal.driver ?? '(default)'}  model ${goal.model ?? '(default)'}`] : []),
        ...(goal.retry_of ? [`retry of ${goal.retry_of}`] : []),
      ],
    },
    { heading: 'Body', lines: textLines(goal.body) },
  ];
  const origin = tendOriginLines(goal);
  if (origin) sections.splice(1, 0, { heading: 'Tend origin', lines: origin });
  const asked = goalGuardLines(goal);
  if (asked.length) sections.splice(1, 0, { heading: 'Guard', lines: asked });
  if (!run) return [...sections, { heading: 'Run', lines: ['not dispatched yet'] }];
  const c = run.cost;
  const tokens = c && (c.input_tokens !== undefined || c.output_tokens !== undefined) ? `  tokens ${c.input_tokens ?? 0} in / ${c.output_tokens ?? 0} out` : '';
  sections.push({
    heading: `Run ${run.id}`,
    lines: [
      `status ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}  driver ${run.driver}  model ${run.model}${run.reasoning_effort ? `  effort ${run.reasoning_effort}` : ''}`,
      `started ${run.started_at}${run.completed_at ? `  completed ${run.completed_at}` : ''}`,
      `cost ${c ? `${formatCost(c)} (${c.source})` : '(running)'}${tokens}`,
      ...(run.outputs?.error ? [`error ${run.outputs.error}`] : []),
      ...runNoticeLines(run),
      ...(run.session_id ? [`session ${run.session_id}`] : []),
      ...(run.num_turns !== undefined ? [`turns ${run.num_turns}`] : []),
    ],
  });
  const provenanceSection = provenanceLines(run, provenance);
  if (provenanceSection.length) sections.push({ heading: 'Provenance', lines: provenanceSection });
  if (guard && guard.runId === run.id) {
    for (const section of traceSections(guard, run.id, { goal, ...(guard.maxAttempts !== undefined ? { maxAttempts: guard.maxAttempts } : {}) })) sections.push({ heading: `Guard · ${section.heading}`, lines: section.lines });
  }
  if (landing && landing.run === run.id) sections.push({ heading: 'Landing', lines: landingDetailLines(landing) });
  if (run.reflection) sections.push({ heading: 'Reflection', lines: textLines(run.reflection) });
  if (run.outputs?.final_text) sections.push({ heading: 'Final text', lines: textLines(run.outputs.final_text) });
  return sections;
}

/** Props of {@link Detail}. */
export interface DetailProps {
  title: string;
  sections: DetailSection[];
  scroll: number;
  /** Where the overlay writes how far down it can scroll, for the dispatcher. */
  limits?: ScrollLimits;
  width: number;
  height: number;
}

/** One row of the detail view. */
export interface DetailRow {
  text: string;
  heading: boolean;
}

/**
 * The rows of the detail shown at `scroll` in `height` rows of `width`
 * columns. Lines are wrapped from the top only as far as the window's last
 * row: the work follows the scroll position and the screen, not the length
 * of the text (scrolling past the end shows the last page).
 */
export function detailRows(sections: readonly DetailSection[], width: number, scroll: number, height: number): DetailRow[] {
  return detailWindow(sections, width, scroll, height).rows;
}

/**
 * {@link detailRows}, and how far down the detail scrolls: exact once the
 * window reached the end of the text, else `Infinity` (not wrapped that far).
 */
export function detailWindow(sections: readonly DetailSection[], width: number, scroll: number, height: number): { rows: DetailRow[]; limit: number } {
  const want = scroll + height;
  const rows: DetailRow[] = [];
  walk: for (const section of sections) {
    rows.push({ text: section.heading, heading: true });
    for (const line of section.lines) {
      if (rows.length >= want) break walk;
      for (const part of wrapLines(line, width - 2, { maxRows: want - rows.length, mark: false })) rows.push({ text: `  ${part}`, heading: false });
    }
    rows.push({ text: '', heading: false });
    if (rows.length >= want) break;
  }
  const start = Math.min(scroll, Math.max(0, rows.length - height));
  return { rows: rows.slice(start, start + height), limit: rows.length < want ? Math.max(0, rows.length - height) : Number.POSITIVE_INFINITY };
}

/** A scrollable full-screen detail view (goal and run, or a reply note). */
export function Detail({ title, sections, scroll, limits, width, height }: DetailProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const { rows: shown, limit } = useMemo(() => detailWindow(sections, w, scroll, h), [sections, w, scroll, h]);
  if (limits) {
    limits.overlay = limit;
    limits.overlayRows = h;
  }
  return (
    <Pane title={title} note={`${hint('back', 'back')} · ${hint(['cursor.up', 'cursor.down'], 'scroll')}`} width={width} height={height} focused>
      {shown.map((line, i) => (
        <Text key={i} bold={line.heading} color={line.heading ? 'cyan' : undefined} wrap="truncate">
          {fit(line.text, w)}
        </Text>
      ))}
    </Pane>
  );
}
