import fs from 'node:fs';
import type { Command } from 'commander';
import { GOAL_ID_PATTERN, RUN_ID_PATTERN, type GoalRecord, type LandingRecord, type LeaseRecord, type RunRecord } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { artifactContentFile, closedEntriesNewestFirst, goalNumber, goalOfEntry, listRuns, OpenGoalScanner, openQuestions, readArtifacts, readComments, readGoal, readLanding, readLease, readRun, runIdsForGoal, storeOf, StoreError, type ClosedEntry } from '../../store/index.js';
import { landingsDir, runDir, type GardenPaths } from '../../garden/index.js';
import { dependencyStatusText, goalStatusText } from '../../landing-words.js';
import { chainOrder, readDependencyViews, type DependencyView } from '../../coordinator/readiness.js';
import { gardenOf, printJson } from '../context.js';
import { artifactLines, blockedLine, describeThread, remoteRunLines } from '../describe-thread.js';
import { acceptanceSummary, age, displayWidth, duration, formatCost, padColumns, runNoticeLines, sanitize, table, truncateColumns } from '../../format.js';
import type { CliIO } from '../main.js';

/** Open goals first: in flight, then blocked (waiting on an answer), then queued; closed last. */
const STATUS_ORDER: Record<string, number> = { running: 0, dispatched: 1, completed: 2, blocked: 3, queued: 4, closed: 5 };

/** How many of the most recently closed goals `pak2 goals` lists after the open ones. */
export const CLOSED_LISTED = 20;

/**
 * Goals for a person: open first (running, then blocked, then queued by
 * dispatch order: priority, age, N), then the newest closed (closed_at, then N, newest
 * first). Ties fall to the goal number N, never to the id as a string
 * (goal 9999 is older than goal 50001).
 */
export function orderGoalsForDisplay(goals: GoalRecord[]): GoalRecord[] {
  return [...goals].sort((a, b) => {
    const s = (STATUS_ORDER[a.status] ?? 9) - (STATUS_ORDER[b.status] ?? 9);
    if (s !== 0) return s;
    if (a.status === 'closed') return (b.closed_at ?? b.submitted_at).localeCompare(a.closed_at ?? a.submitted_at) || goalNumber(b.id) - goalNumber(a.id);
    if (a.priority !== b.priority) return b.priority - a.priority;
    return a.submitted_at.localeCompare(b.submitted_at) || goalNumber(a.id) - goalNumber(b.id);
  });
}

const GOAL_HEADERS = ['ID', 'TYPE', 'PLANT', 'PRI', 'STATUS', 'AGE'];

/** A goal's row; its status as the workbench's queue shows it (`awaiting review`, `landed`, `closed:failure`). */
function goalCells(g: GoalRecord, landing?: LandingRecord): string[] {
  // A queued goal's `blocked_on` is its dependency view's (a blocked goal's names its question).
  const waits = g.status === 'queued' ? dependencyStatusText(g as unknown as DependencyView) : undefined;
  return [truncateColumns(g.id, 40), g.type, g.assigned_to ?? '-', String(g.priority), waits ?? goalStatusText(g, landing), age(g.submitted_at)];
}

/**
 * The landing of a goal's latest run (docs/landing/level2.md), for the
 * STATUS column: one listing of the landings directory, then a probe and
 * a read only for a completed or closed goal that has a landing, so
 * `pak2 goals --all` costs what the garden's landings cost.
 */
class GoalLandings {
  private constructor(
    private readonly paths: GardenPaths,
    /** Goal id → the highest run number with a landing record. */
    private readonly latest: Map<string, number>,
  ) {}

  static async open(paths: GardenPaths): Promise<GoalLandings> {
    const latest = new Map<string, number>();
    const names = await fs.promises.readdir(landingsDir(paths)).catch(() => [] as string[]);
    for (const name of names) {
      const m = /^(.+)-r(\d+)\.json$/.exec(name);
      if (m && Number(m[2]) > (latest.get(m[1]!) ?? 0)) latest.set(m[1]!, Number(m[2]));
    }
    return new GoalLandings(paths, latest);
  }

  /** The landing of the goal's latest run; none when a later run has none, or for an open goal not waiting on one. */
  async of(goal: GoalRecord): Promise<LandingRecord | undefined> {
    const n = this.latest.get(goal.id);
    if (!n || (goal.status !== 'completed' && goal.status !== 'closed')) return undefined;
    if (fs.existsSync(runDir(this.paths, `${goal.id}-r${n + 1}`))) return undefined;
    return readLanding(this.paths, `${goal.id}-r${n}`).catch(() => undefined);
  }

  /** Each goal's row with its landing's words. */
  async cells(goals: GoalRecord[]): Promise<string[][]> {
    return Promise.all(goals.map(async (g) => goalCells(g, await this.of(g))));
  }
}

/**
 * A closed goal as a listing shows it: from its ledger entry alone, or, for
 * a bare-id entry of an old ledger (or with `full`, for --json), from its
 * goal file. Undefined (and a message in `skipped`) when that file does not read.
 */
async function closedGoal(paths: GardenPaths, entry: ClosedEntry, full: boolean, skipped: string[]): Promise<GoalRecord | undefined> {
  const summary = full ? undefined : goalOfEntry(entry);
  if (summary) return summary;
  try {
    return await readGoal(paths, entry.id);
  } catch (error) {
    skipped.push((error as Error).message);
    return undefined;
  }
}

/**
 * A table printed page by page (`pak2 goals --all`): the header and the
 * first page set the column widths; a later, wider cell widens its column
 * from that page on. Memory: one page.
 */
class PagedTable {
  private widths: number[] | undefined;

  constructor(
    private readonly io: CliIO,
    private readonly headers: string[],
  ) {}

  print(rows: string[][]): void {
    rows = rows.map((row) => row.map((cell) => sanitize(cell)));
    const first = this.widths === undefined;
    const widths = (this.widths ??= this.headers.map(displayWidth));
    for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, displayWidth(cell))));
    const line = (cells: string[]) =>
      cells
        .map((cell, i) => (i === cells.length - 1 ? cell : padColumns(cell, widths[i]!)))
        .join('  ')
        .trimEnd();
    const lines = [...(first ? [line(this.headers)] : []), ...rows.map(line)];
    if (lines.length) this.io.out(lines.join('\n'));
  }
}

/** Rows of `pak2 goals --all` held at once. */
const PAGE = 1000;

/**
 * `pak2 goals --all`: the open goals, then every closed goal from the
 * ledger's end, newest first, streamed (a page of rows, or one record, at a
 * time). With --json each closed goal's record is read from its file.
 */
async function listAll(paths: GardenPaths, open: GoalRecord[], json: boolean, io: CliIO, skipped: string[]): Promise<void> {
  const landings = await GoalLandings.open(paths);
  const openIds = new Set(open.map((g) => g.id));
  const closed = async function* (): AsyncGenerator<GoalRecord> {
    for await (const entry of closedEntriesNewestFirst(paths)) {
      if (openIds.has(entry.id)) continue; // the goal file says open: it wins over the ledger
      const goal = await closedGoal(paths, entry, json, skipped);
      if (goal) yield goal;
    }
  };
  if (json) {
    // The same text as printJson of the whole array, one record at a time.
    let pending: GoalRecord | undefined;
    let any = false;
    const emit = (goal: GoalRecord, last: boolean) => {
      if (!any) io.out('[');
      any = true;
      io.out(`  ${sanitize(JSON.stringify(goal, null, 2)).replace(/\n/g, '\n  ')}${last ? '' : ','}`);
    };
    for (const goal of open) {
      if (pending) emit(pending, false);
      pending = goal;
    }
    for await (const goal of closed()) {
      if (pending) emit(pending, false);
      pending = goal;
    }
    if (pending) emit(pending, true);
    io.out(any ? ']' : '[]');
    return;
  }
  const printer = new PagedTable(io, GOAL_HEADERS);
  let page: string[][] = await landings.cells(open);
  let shown = open.length;
  for await (const goal of closed()) {
    page.push(goalCells(goal, await landings.of(goal)));
    shown += 1;
    if (page.length >= PAGE) {
      printer.print(page);
      page = [];
    }
  }
  if (shown === 0) {
    if (skipped.length === 0) io.out('no goals yet: pak2 submit --plant P --type T --body TEXT');
    return;
  }
  printer.print(page);
}

function runDuration(run: RunRecord): string {
  const end = run.completed_at ? Date.parse(run.completed_at) : Date.now();
  return duration((end - Date.parse(run.started_at)) / 1000);
}

/**
 * Names every entry a listing could not read (one line each, at most 20,
 * then a count) and makes the command exit 1: a listing that dropped
 * entries never looks complete.
 */
function reportSkipped(io: CliIO, messages: string[], kind: string): void {
  if (messages.length === 0) return;
  for (const message of messages.slice(0, 20)) io.err(`pak2: skipped ${message}`);
  if (messages.length > 20) io.err(`pak2: … and ${messages.length - 20} more`);
  io.err(`pak2: ${messages.length} ${kind}(s) could not be read; the listing is incomplete (pak2 doctor names the damage)`);
  io.exitCode = 1;
}

/** `pak2 goals`, `pak2 runs`, `pak2 show ID`: read-only views; `--json` for machines. */
export function registerReadCommands(program: Command, io: CliIO): void {
  program
    .command('goals')
    .description('list goals: open ones, then the most recently closed')
    .option('--all', 'include every closed goal')
    .option('--json', 'print the goal records as JSON')
    .action(async (opts: { all?: boolean; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      // Open goals from their files; closed ones from the ledger's end: no closed goal file is opened (but with --json).
      const { goals: open, problems } = await new OpenGoalScanner(garden.paths).scan();
      const skipped = problems.map((p) => p.message);
      // A queued goal's dependencies (docs/goal/level2.md): `waiting_for` or `blocked_on` on its row, listed after what it waits for.
      const views = await readDependencyViews(garden.paths, open);
      const openShown = chainOrder(orderGoalsForDisplay(open)).map((g) => (views.has(g.id) ? ({ ...g, ...views.get(g.id) } as GoalRecord) : g));
      if (opts.all) {
        await listAll(garden.paths, openShown, Boolean(opts.json), io, skipped);
        return reportSkipped(io, skipped, 'goal');
      }
      const openIds = new Set(open.map((g) => g.id));
      const closed: GoalRecord[] = [];
      for await (const entry of closedEntriesNewestFirst(garden.paths)) {
        if (openIds.has(entry.id)) continue; // the goal file says open: it wins over the ledger
        const goal = await closedGoal(garden.paths, entry, Boolean(opts.json), skipped);
        if (goal) closed.push(goal);
        if (closed.length >= CLOSED_LISTED) break;
      }
      reportSkipped(io, skipped, 'goal');
      const shown = [...openShown, ...orderGoalsForDisplay(closed)];
      if (opts.json) return printJson(io, shown);
      if (shown.length === 0 && skipped.length === 0) return io.out('no goals yet: pak2 submit --plant P --type T --body TEXT');
      if (shown.length === 0) return;
      io.out(table(GOAL_HEADERS, await (await GoalLandings.open(garden.paths)).cells(shown)));
    });

  program
    .command('runs')
    .description('list runs, oldest first')
    .option('--goal <id>', 'only the runs of this goal')
    .option('--json', 'print the run records as JSON')
    .action(async (opts: { goal?: string; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      let runs: RunRecord[];
      let problems: string[];
      if (opts.goal !== undefined) {
        if (!GOAL_ID_PATTERN.test(opts.goal)) throw new UserError(`--goal ${opts.goal}: not a goal id (N-slug)`);
        await readGoal(garden.paths, opts.goal);
        runs = [];
        const skipped: string[] = [];
        for (const id of await runIdsForGoal(garden.paths, opts.goal)) {
          try {
            runs.push(await readRun(garden.paths, id));
          } catch (error) {
            skipped.push((error as Error).message);
          }
        }
        problems = skipped;
      } else {
        const listed = await listRuns(garden.paths);
        problems = listed.problems.map((p) => p.message);
        runs = listed.runs;
      }
      reportSkipped(io, problems, 'run');
      if (opts.json) return printJson(io, runs);
      if (runs.length === 0 && problems.length === 0) return io.out('no runs yet');
      if (runs.length === 0) return;
      // The RUNNER column (name@host of a remote run) only when some run had one.
      const remote = runs.some((r) => r.runner);
      io.out(
        table(
          ['RUN', 'STATUS', 'DRIVER', 'MODEL', 'TIME', 'COST', ...(remote ? ['RUNNER'] : []), 'REASON'],
          runs.map((r) => [truncateColumns(r.id, 44), r.status, r.driver, r.model, runDuration(r), formatCost(r.cost), ...(remote ? [r.runner ? truncateColumns(`${r.runner.name}@${r.runner.host}`, 40) : '-'] : []), r.failure_reason ?? '']),
        ),
      );
    });

  program
    .command('show')
    .description('show one goal (with its runs) or one run')
    .argument('<id>', 'a goal id (N-slug) or run id (N-slug-rN)')
    .option('--json', 'print the record(s) as JSON')
    .action(async (id: string, opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const isRun = RUN_ID_PATTERN.test(id);
      if (!isRun && !GOAL_ID_PATTERN.test(id)) throw new UserError(`ID ${id}: not a goal id (N-slug) or run id (N-slug-rN)`);
      if (isRun) {
        let run: RunRecord;
        try {
          run = await readRun(garden.paths, id);
        } catch (error) {
          // `3-fix-r2` may be a goal whose slug ends in r2: fall back to the goal.
          if (!(error instanceof StoreError && error.code === 'RUN_NOT_FOUND')) throw error;
          try {
            return await showGoal(id);
          } catch (goalError) {
            if (goalError instanceof StoreError && goalError.code === 'GOAL_NOT_FOUND') throw new UserError(`no run or goal ${id} in ${garden.paths.runtimeRoot}`);
            throw goalError;
          }
        }
        if (opts.json) return printJson(io, run);
        const lease = run.runner ? await readLease(garden.paths, run.id).catch(() => undefined) : undefined;
        // A runner's artifacts, on the file store or a store; a local run has none.
        const artifacts = artifactLines(await readArtifacts(garden.paths, run.id), (name) => (storeOf(garden.paths) ? undefined : artifactContentFile(garden.paths, run.id, name)));
        return io.out(sanitize(describeRun(run, lease, artifacts)));
      }
      return showGoal(id);

      async function showGoal(goalId: string): Promise<void> {
        const goal = await readGoal(garden.paths, goalId);
        const runs: RunRecord[] = [];
        for (const runId of await runIdsForGoal(garden.paths, goalId)) {
          try {
            runs.push(await readRun(garden.paths, runId));
          } catch (error) {
            io.err(`pak2: skipped ${(error as Error).message}`);
          }
        }
        // The thread of an open goal, or of a closed one shown on its own: one file, read only here.
        const comments = await readComments(garden.paths, goalId);
        const open = openQuestions(comments);
        // A queued goal's dependencies as the queue derives them (docs/goal/level2.md, "Dependencies").
        const waits = goal.status === 'queued' && goal.depends_on?.length ? (await readDependencyViews(garden.paths, [goal])).get(goal.id) : undefined;
        if (opts.json) return printJson(io, { goal, runs, comments, open: open.map((c) => c.id), ...(waits ?? {}) });
        const lines = [
          `goal ${goal.id}`,
          `  type ${goal.type}  priority ${goal.priority}  plant ${goal.assigned_to ?? '-'}  status ${goal.status}${goal.closed_reason ? ` (${goal.closed_reason})` : ''}`,
          `  submitted ${goal.submitted_at}${goal.driver ? `  driver ${goal.driver}` : ''}${goal.model ? `  model ${goal.model}` : ''}`,
          ...(goal.status === 'blocked' ? [`  ${blockedLine(goal, open)}`] : []),
          ...(goal.depends_on?.length ? [`  after ${goal.depends_on.join(', ')}${waits ? `  (${dependencyStatusText(waits)}${waits.blocked_on?.via ? ` through ${waits.blocked_on.via}` : ''})` : ''}`] : []),
          ...(goal.retry_of ? [`  retry of ${goal.retry_of}`] : []),
          ...(goal.guard || goal.task_class ? [`  guarded${goal.guard?.verify ? `  verify ${goal.guard.verify}` : ''}${goal.guard?.allowed_files?.length ? `  allow ${goal.guard.allowed_files.join(' ')}` : ''}${goal.guard?.forbidden_paths?.length ? `  forbid ${goal.guard.forbidden_paths.join(' ')}` : ''}${goal.task_class ? `  task class ${goal.task_class}` : ''}`] : []),
          ...(goal.acceptance_criteria?.length ? ['  acceptance criteria:', ...goal.acceptance_criteria.map((c, n) => `    ${n + 1}. ${c.text}${c.verify ? `  (verify: ${c.verify})` : '  (no verify command: reported not verified)'}`)] : []),
          '',
          ...goal.body.trimEnd().split('\n').map((l) => `  ${l}`),
        ];
        const guarded = Boolean(goal.guard || goal.task_class);
        if (runs.length) lines.push('', ...runs.map((r) => `run ${r.id}: ${r.status}${r.failure_reason ? ` (${r.failure_reason})` : ''}, ${runDuration(r)}, cost ${formatCost(r.cost) || '-'}${r.runner ? `, runner ${r.runner.name}@${r.runner.host}` : ''}${acceptanceSummary(r.acceptance) ? `, ${acceptanceSummary(r.acceptance)}` : ''}${guarded ? `  (pak2 trace ${r.id})` : ''}`));
        if (comments.length) lines.push('', `comments (${comments.length}${open.length ? `, ${open.length} open question${open.length === 1 ? '' : 's'}` : ''}):`, ...describeThread(comments, open).split('\n').map((l) => (l ? `  ${l}` : '')));
        io.out(sanitize(lines.join('\n')));
      }
    });
}

/**
 * A run record for a person: status, driver, times, cost, the runner of a
 * remote run (with its `lease` record when given) and its acceptance items,
 * session, a runner's `artifacts` (the lines of `artifactLines`), reflection, final text.
 */
export function describeRun(run: RunRecord, lease?: LeaseRecord, artifacts: readonly string[] = []): string {
  const lines = [
    `run ${run.id}`,
    `  goal ${run.goal}  plant ${run.plant}  status ${run.status}${run.failure_reason ? ` (${run.failure_reason})` : ''}`,
    `  driver ${run.driver}  model ${run.model}${run.reasoning_effort ? `  effort ${run.reasoning_effort}` : ''}`,
    `  started ${run.started_at}${run.completed_at ? `  completed ${run.completed_at}` : ''}  (${runDuration(run)})`,
  ];
  if (run.cost) {
    const tokens = [run.cost.input_tokens !== undefined ? `${run.cost.input_tokens} in` : '', run.cost.output_tokens !== undefined ? `${run.cost.output_tokens} out` : ''].filter(Boolean).join(', ');
    lines.push(`  cost ${formatCost(run.cost)} (${run.cost.source})${tokens ? `  tokens ${tokens}` : ''}`);
  }
  if (run.outputs?.error) lines.push(`  error ${run.outputs.error}`);
  lines.push(...remoteRunLines(run, lease).map((l) => `  ${l}`));
  lines.push(...runNoticeLines(run).map((l) => `  ${l}`));
  const b = run.worktree_baseline;
  if (b) lines.push(`  baseline ${b.tracked_dirty_paths.length} tracked dirty, ${b.untracked_dirty_count} untracked${b.untracked_dirty_roots.length ? ` in ${b.untracked_dirty_roots.join(', ')}` : ''} at start`);
  if (run.session_id) lines.push(`  session ${run.session_id}`);
  if (run.num_turns !== undefined) lines.push(`  turns ${run.num_turns}`);
  if (artifacts.length) lines.push('', ...artifacts);
  if (run.reflection) lines.push('', 'reflection:', ...run.reflection.trimEnd().split('\n').map((l) => `  ${l}`));
  if (run.outputs?.final_text) lines.push('', 'final text:', ...run.outputs.final_text.trimEnd().split('\n').map((l) => `  ${l}`));
  return lines.join('\n');
}
