import { RUN_ID_PATTERN, type ExecutionEnvelope, type GoalRecord, type PhaseEvent, type RoutingAttempt, type ScopeViolation, type TaskOutcome } from '../contracts/index.js';
import type { GardenConfig } from '../garden/index.js';
import type { GuardRecord } from './read.js';

/**
 * A guarded run for a person, from its {@link GuardRecord}: the full trace
 * (`pak2 trace`, the workbench's detail view) and the compact block of the
 * run pane. Pure: no file is read here.
 */

/** How many lines of verify stdout / stderr the trace shows. */
export const VERIFY_LINES_SHOWN = 5;
/** How many paths of each mutation list the trace shows. */
export const PATHS_SHOWN = 10;
/** How many violations the trace lists (the compact block: {@link VIOLATIONS_COMPACT}). */
export const VIOLATIONS_SHOWN = 20;
export const VIOLATIONS_COMPACT = 3;

/** `12 ms`, `4.2 s`, `3m 12s`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${s % 60}s`;
}

/** `1.2 KB`, `340 B`, `2.0 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** `$0.0123`, `?` when unknown. */
export function formatUsd(usd: number | null | undefined): string {
  return typeof usd === 'number' ? `$${usd.toFixed(usd < 1 ? 4 : 2)}` : '?';
}

/** One phase of the timeline: when it started after the first phase started, and how long it took. */
export interface TimelineRow {
  phase: string;
  outcome: string;
  /**
   * ms from the earliest phase start to this phase's start (undefined when
   * a `ts` does not parse). A phase is logged when it ends: its start is
   * `ts` less `duration_ms` when that was logged, else `ts` itself.
   */
  offsetMs: number | undefined;
  /** `duration_ms` as logged, else the time from `ts` to the next phase's start (`derived`; undefined under 1 ms: a point in time, not a span). */
  durationMs: number | undefined;
  derived: boolean;
  detail: string | undefined;
}

/**
 * The phase log as a timeline (seed 001: baseline, executor_start,
 * executor_done, scope_check, verify, decision, rollback). Each row is
 * placed at its phase's start, so a row never shows the next phase's time:
 * a phase without `duration_ms` (executor_start, decision) is a point, and
 * its derived span ends where the next phase starts, not where it ends.
 */
export function phaseTimeline(phases: readonly PhaseEvent[]): TimelineRow[] {
  const ends = phases.map((p) => Date.parse(p.ts));
  const starts = phases.map((p, i) => ends[i]! - (p.duration_ms ?? 0));
  const origin = starts.reduce<number | undefined>((min, t) => (Number.isFinite(t) && (min === undefined || t < min) ? t : min), undefined);
  return phases.map((p, i) => {
    const at = ends[i]!;
    const next = starts[i + 1];
    const gap = next !== undefined && Number.isFinite(next) && Number.isFinite(at) ? Math.max(0, next - at) : undefined;
    const span = gap !== undefined && Math.round(gap) > 0 ? gap : undefined;
    return {
      phase: p.phase,
      outcome: p.outcome,
      offsetMs: origin !== undefined && Number.isFinite(starts[i]!) ? starts[i]! - origin : undefined,
      durationMs: p.duration_ms ?? span,
      derived: p.duration_ms === undefined && span !== undefined,
      detail: p.detail,
    };
  });
}

/** The timeline's rows as text, each column as wide as its widest cell (an outcome like `not_started` keeps the columns aligned). */
export function timelineLines(rows: readonly TimelineRow[]): string[] {
  const cells = rows.map((r) => [r.offsetMs !== undefined ? `+${formatMs(r.offsetMs)}` : '?', r.phase, r.outcome, r.durationMs !== undefined ? `${r.derived ? '~' : ''}${formatMs(r.durationMs)}` : '', r.detail ?? '']);
  const widths = [0, 1, 2, 3].map((c) => Math.max(0, ...cells.map((row) => row[c]!.length)));
  return cells.map((row) => row.map((cell, c) => (c < 4 ? cell.padEnd(widths[c]!) : cell)).join('  ').trimEnd());
}

/** How many attempts `[routing.<task_class>]` allows at most: its tiers, bounded by max_escalations + 1. */
export function routingAttemptsMax(routing: GardenConfig['routing'] | undefined, taskClass: string | undefined): number | undefined {
  const r = taskClass ? routing?.[taskClass] : undefined;
  return r ? Math.min(r.tiers.length, r.maxEscalations + 1) : undefined;
}

/** Where this run stands in its routing chain: attempt k of n. */
export function routingPosition(record: GuardRecord, runId: string, maxAttempts?: number): { k: number; n: number } | undefined {
  const routing = record.envelope?.routing;
  if (!routing) return undefined;
  const found = routing.attempts.findIndex((a) => a.run_id === runId);
  const k = found >= 0 ? found + 1 : routing.attempts.length;
  const n = routing.stop_reason ? routing.attempts.length : Math.max(k, maxAttempts ?? routing.attempts.length);
  return { k, n };
}

/** Whether the decision kept the run's work (seed 001: state `ready`). */
export function keptRun(outcome: TaskOutcome): boolean {
  return outcome.state === 'ready';
}

/**
 * What was kept, refused and left behind. A kept run kept `mutated_files`;
 * a rejected run kept nothing: all it attempted was rejected, and its
 * `mutated_files` are what the rollback could not revert (`left`, "left
 * changed"), not kept work.
 */
export function mutationCounts(outcome: TaskOutcome): { kept: number; rejected: number; left: number } {
  const mutated = new Set(outcome.mutated_files);
  const attempted = new Set(outcome.attempted_mutations);
  if (keptRun(outcome)) return { kept: mutated.size, rejected: [...attempted].filter((p) => !mutated.has(p)).length, left: 0 };
  return { kept: 0, rejected: attempted.size, left: mutated.size };
}

/** The counts as words: `0 kept, 2 rejected`, `0 kept, 2 rejected, 1 left changed`. */
function countWords({ kept, rejected, left }: { kept: number; rejected: number; left: number }, sep: string): string {
  return [`${kept} kept`, `${rejected} rejected`, ...(left ? [`${left} left changed`] : [])].join(sep);
}

/** A violation's kind in short (the run pane): `forbid`, `outside`. */
export function violationKindShort(kind: ScopeViolation['kind']): string {
  return kind === 'forbidden_path' ? 'forbid' : kind === 'outside_allowed' ? 'outside' : kind;
}

/** The id of the run after `runId` of the same goal (`N-slug-rK` → `N-slug-rK+1`), where an escalated attempt's chain goes on. */
export function nextRunId(runId: string): string | undefined {
  const m = RUN_ID_PATTERN.exec(runId);
  return m ? `${m[1]}-r${Number(m[2]) + 1}` : undefined;
}

/** pak2's fields of the envelope's `routing` beyond the seed's: the tier the chain goes on with when this attempt escalated. */
function nextTierIndex(routing: NonNullable<ExecutionEnvelope['routing']>): number | undefined {
  const next = (routing as { next_tier_index?: unknown }).next_tier_index;
  return routing.stop_reason === undefined && typeof next === 'number' ? next : undefined;
}

/** How an attempt with no stop reason goes on: `escalated to tier 1 → 3-x-r2`, `tier 0 again → 3-x-r2` (an interrupted attempt). */
function escalationWords(routing: NonNullable<ExecutionEnvelope['routing']>, runId: string, compact = false): string {
  const next = nextTierIndex(routing);
  const nextRun = nextRunId(runId);
  if (next === undefined) return compact ? 'escalated' : 'escalated (no stop reason on this attempt)';
  return `${next > routing.tier_index ? `escalated to tier ${next}` : `tier ${next} again`}${nextRun ? ` → ${nextRun}` : ''}`;
}

function firstLines(text: string, max: number): string[] {
  const lines = text.replace(/\s+$/, '').split('\n');
  if (lines.length === 1 && lines[0] === '') return [];
  return lines.length > max ? [...lines.slice(0, max), `… ${lines.length - max} more line(s)`] : lines;
}

/** A path on one line: a name with a line break (or another control character) cannot forge a trace line. */
export function onePath(p: string): string {
  return p.replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}

function pathList(paths: readonly string[], max = PATHS_SHOWN): string {
  if (!paths.length) return '';
  const shown = paths.map(onePath);
  return shown.length > max ? `${shown.slice(0, max).join(', ')}, … ${shown.length - max} more` : shown.join(', ');
}

const pad = (text: string, width: number) => (text.length >= width ? `${text} ` : text.padEnd(width));

function verifyWords(o: TaskOutcome): string {
  if (o.diagnostic_code === 'verify_timeout') {
    const limit = (o as { verify_timeout_seconds?: unknown }).verify_timeout_seconds;
    return `timed out${typeof limit === 'number' ? ` after ${limit} s` : ''}`;
  }
  if (o.verifier_was_skipped || o.verify_ok === null) return 'skipped';
  return `${o.verify_ok ? 'ok' : 'failed'}${o.verify_exit_code !== null ? ` · exit ${o.verify_exit_code}` : ''}`;
}

function attemptLine(a: RoutingAttempt, i: number, runId: string): string {
  const me = a.run_id === runId ? '▸' : ' ';
  return `${me} ${i + 1}  ${pad(a.run_id, 24)} tier ${a.tier_index}  ${pad(`${a.executor}/${a.model}`, 24)} ${pad(a.diagnostic_code, 18)} ${formatUsd(a.cost_usd)}`;
}

/** What {@link traceSections} knows besides the guard files: the routing class's bound, the run's goal as it is now. */
export interface TraceContext {
  maxAttempts?: number;
  goal?: Pick<GoalRecord, 'id' | 'status' | 'closed_reason'>;
}

/**
 * The next useful step after a guarded run that kept nothing, for a person
 * reading its trace (`pak2 trace RUN`, the workbench detail), never the
 * trace itself: the escalated attempt's trace when routing ran the goal
 * again (`pak2 trace 3-x-r2`); `pak2 retry GOAL` when the goal closed
 * without success (it queues it again); `pak2 show GOAL` while it is open
 * (what it waits for, its runs). Without the goal, the outcome's recorded
 * `next_command` unless it names this very trace. Undefined for a run that
 * kept its work or has no outcome yet.
 */
export function traceNextStep(record: GuardRecord, runId: string, goal?: TraceContext['goal']): string | undefined {
  const o = record.outcome;
  if (!o || o.state === 'ready') return undefined;
  const routing = record.envelope?.routing;
  const escalated = routing && nextTierIndex(routing) !== undefined ? nextRunId(runId) : undefined;
  if (escalated) return `pak2 trace ${escalated}`;
  if (goal?.status === 'closed') return goal.closed_reason === 'success' ? undefined : `pak2 retry ${goal.id}`;
  if (goal) return `pak2 show ${goal.id}`;
  return o.next_command && o.next_command !== `pak2 trace ${runId}` ? o.next_command : undefined;
}

/**
 * The trace of a guarded run, section by section (`pak2 trace RUN`, the
 * workbench detail): decision and diagnostic, executor, baseline, the
 * phase timeline with durations, verify, violations, mutations, rollback,
 * routing with each attempt's cost, and the problems of the files.
 */
export function traceSections(record: GuardRecord, runId: string, options: TraceContext = {}): { heading: string; lines: string[] }[] {
  const sections: { heading: string; lines: string[] }[] = [];
  const { envelope: e, outcome: o } = record;
  const decision: string[] = [];
  if (o) {
    decision.push(`${o.state} / ${o.status} · ${o.diagnostic_code}`);
    const next = traceNextStep(record, runId, options.goal);
    if (next) decision.push(`next ${next}`);
    decision.push(`contract ${o.contract_id ?? '-'} · acceptance ${o.acceptance_state}`);
    decision.push(`wall time ${formatMs(o.wall_time_seconds * 1000)}`);
  } else decision.push(record.phases.length ? `no task_outcome.json yet (last phase: ${record.phases.at(-1)!.phase} ${record.phases.at(-1)!.outcome})` : 'no task_outcome.json');
  sections.push({ heading: 'Decision', lines: decision });

  const executor: string[] = [];
  if (e) {
    const x = e.executor;
    executor.push(`${x.name}${x.kind ? ` (${x.kind})` : ''}${x.model ? ` · model ${x.model}` : ''}${x.version ? ` · version ${x.version}` : ''} · sandbox ${x.sandbox ? 'on' : 'off'}`);
    executor.push(`exit ${e.executor_exit_code ?? '-'} · timeout ${e.timeout_seconds} s${e.env_passthrough.length ? ` · env ${e.env_passthrough.join(', ')}` : ''}`);
    executor.push(`baseline head ${e.baseline.head ? e.baseline.head.slice(0, 12) : '-'} · branch ${e.baseline.branch ?? '-'}`);
    if ((e as { redacted?: unknown }).redacted === false) executor.push("redacted: false (--no-redact or [guard] redact = false: this run's artifacts keep their secrets)");
  }
  if (o) {
    const x = o.executor;
    executor.push(
      [`ran ${formatMs(x.duration_seconds * 1000)}`, x.timed_out ? 'timed out' : '', `cost ${formatUsd(x.cost_usd)}`, x.turns !== null ? `${x.turns} turns` : '', x.self_status ? `self-reported ${x.self_status}` : '']
        .filter(Boolean)
        .join(' · '),
    );
  }
  if (executor.length) sections.push({ heading: 'Executor', lines: executor });

  const timeline = phaseTimeline(record.phases);
  sections.push({ heading: 'Phases', lines: timeline.length ? timelineLines(timeline) : ['no phase_events.jsonl lines'] });

  if (o) {
    const verify = [`${verifyWords(o)}${o.failed_command ? ` · ${o.failed_command}` : ''}`];
    const out = firstLines(o.verify_stdout, VERIFY_LINES_SHOWN);
    const err = firstLines(o.verify_stderr, VERIFY_LINES_SHOWN);
    if (out.length) verify.push('stdout:', ...out.map((l) => `  ${l}`));
    if (err.length) verify.push('stderr:', ...err.map((l) => `  ${l}`));
    sections.push({ heading: 'Verify', lines: verify });

    const v = o.scope_violations;
    sections.push({
      heading: `Violations (${v.length})`,
      lines: v.length
        ? [...v.slice(0, VIOLATIONS_SHOWN).map((x) => `${pad(x.kind, 16)} ${onePath(x.path)}${x.detail ? ` — ${onePath(x.detail)}` : ''}`), ...(v.length > VIOLATIONS_SHOWN ? [`… ${v.length - VIOLATIONS_SHOWN} more`] : [])]
        : ['none'],
    });

    const kept = keptRun(o);
    const lists: [string, string[]][] = [
      // A rejected run kept nothing: its mutated_files are what the rollback left changed.
      [kept ? 'mutated' : 'left changed', o.mutated_files],
      ['attempted', o.attempted_mutations],
      ['accepted', o.accepted_mutations],
      ['blocked', o.blocked_mutations],
      ['unexpected', o.unexpected_mutations],
    ];
    const nameWidth = Math.max(...lists.map(([name]) => name.length)) + 1;
    sections.push({ heading: `Mutations (${countWords(mutationCounts(o), ', ')})`, lines: lists.map(([name, list]) => `${pad(name, nameWidth)} ${pad(String(list.length), 4)} ${pathList(list)}`.trimEnd()) });

    const rollback = [o.rollback_performed ? 'performed' : 'not performed'];
    if (record.patch) rollback.push(`rejected.patch ${record.patch.file} (${formatBytes(record.patch.bytes)})`);
    else if (o.rollback_performed) rollback.push('no rejected.patch');
    for (const [name, text] of [['stdout', o.rollback_stdout], ['stderr', o.rollback_stderr]] as const) {
      const lines = firstLines(text, VERIFY_LINES_SHOWN);
      if (lines.length) rollback.push(`${name}:`, ...lines.map((l) => `  ${l}`));
    }
    sections.push({ heading: 'Rollback', lines: rollback });
  } else if (record.patch) sections.push({ heading: 'Rollback', lines: [`rejected.patch ${record.patch.file} (${formatBytes(record.patch.bytes)})`] });

  const routing = e?.routing;
  if (routing) {
    const pos = routingPosition(record, runId, options.maxAttempts);
    const total = routing.attempts.reduce((sum, a) => sum + (a.cost_usd ?? 0), 0);
    const unknown = routing.attempts.filter((a) => a.cost_usd === null).length;
    const nextRun = nextTierIndex(routing) !== undefined ? nextRunId(runId) : undefined;
    sections.push({
      heading: 'Routing',
      lines: [
        `${routing.task_class} · attempt ${pos?.k ?? '?'} of ${pos?.n ?? '?'} · tier ${routing.tier_index} · ${routing.escalations} escalation(s) · ${routing.stop_reason ? `stop ${routing.stop_reason}` : escalationWords(routing, runId)}`,
        ...routing.attempts.map((a, i) => attemptLine(a, i, runId)),
        `total ${formatUsd(total)} over ${routing.attempts.length} attempt(s)${unknown ? ` (${unknown} of unknown cost)` : ''}`,
        ...(nextRun ? [`next attempt: pak2 trace ${nextRun}`] : []),
      ],
    });
  }
  if (record.problems.length) sections.push({ heading: 'Problems', lines: record.problems });
  return sections;
}

/** The trace as text: a header line, then each section with its lines indented. */
export function traceText(record: GuardRecord, runId: string, options: TraceContext & { status?: string } = {}): string {
  const lines = [`run ${runId} · guarded${options.status ? ` · ${options.status}` : ''}`];
  for (const section of traceSections(record, runId, options)) lines.push('', section.heading.toLowerCase(), ...section.lines.map((l) => `  ${l}`));
  return lines.join('\n');
}

/** One line of the run pane's guard block, with how it reads (the pane colours it). */
export interface GuardLine {
  text: string;
  tone: 'ok' | 'bad' | 'warn' | 'info';
  /** `text` ends with this path: a pane too narrow for the line cuts the path's start, not its end (the file's name stays). */
  path?: string;
}

/**
 * The run pane's compact guard block: the decision (state/status,
 * diagnostic) and verify; changes kept, rejected and left changed, then the
 * first violations one a line (the kind in short, `forbid` / `outside`, so
 * the path has the room); the rollback and its patch; routing attempt k of
 * n and its stop reason (or the run it escalated to); a count of problems.
 * A live run shows its last phase.
 */
export function guardSummaryLines(record: GuardRecord, runId: string, options: { maxAttempts?: number } = {}): GuardLine[] {
  const lines: GuardLine[] = [];
  const o = record.outcome;
  if (o) {
    lines.push({
      text: `guard ${o.state}/${o.status} · ${o.diagnostic_code} · verify ${verifyWords(o).replace(' · ', ' ')}`,
      tone: o.status === 'success' ? 'ok' : o.state === 'degraded' ? 'warn' : 'bad',
    });
    const v = o.scope_violations;
    lines.push({ text: `changes ${countWords(mutationCounts(o), ' · ')}${v.length ? ` · ${v.length} violation(s):` : ''}`, tone: v.length ? 'bad' : 'info' });
    // One violation a line, its kind in short: the path gets the room.
    const kindWidth = Math.max(0, ...v.slice(0, VIOLATIONS_COMPACT).map((x) => violationKindShort(x.kind).length));
    for (const x of v.slice(0, VIOLATIONS_COMPACT)) lines.push({ text: `  ${violationKindShort(x.kind).padEnd(kindWidth)} ${onePath(x.path)}`, tone: 'bad', path: x.path });
    if (v.length > VIOLATIONS_COMPACT) lines.push({ text: `  … ${v.length - VIOLATIONS_COMPACT} more: pak2 trace ${runId}`, tone: 'bad' });
    if (o.rollback_performed || record.patch) {
      lines.push({ text: `rollback ${o.rollback_performed ? 'performed' : 'not performed'}${record.patch ? ` · rejected.patch ${formatBytes(record.patch.bytes)}` : ''}`, tone: 'warn' });
    }
  } else {
    const last = record.phases.at(-1);
    lines.push({ text: last ? `guard · ${last.phase} ${last.outcome}${last.detail ? ` · ${last.detail}` : ''}` : 'guard · no phase yet', tone: 'info' });
  }
  const routing = record.envelope?.routing;
  const pos = routingPosition(record, runId, options.maxAttempts);
  if (routing && pos) lines.push({ text: `routing ${routing.task_class} · attempt ${pos.k} of ${pos.n} · ${routing.stop_reason ? `stop ${routing.stop_reason}` : escalationWords(routing, runId, true)}`, tone: routing.stop_reason === 'kept' ? 'ok' : 'info' });
  if (record.problems.length) lines.push({ text: `${record.problems.length} problem(s) in the guard files: pak2 trace ${runId}`, tone: 'bad' });
  return lines;
}
