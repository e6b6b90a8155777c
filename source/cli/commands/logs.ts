import type { Command } from 'commander';
import { GOAL_ID_PATTERN, RUN_ID_PATTERN, type RunRecord } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import type { Garden } from '../../garden/index.js';
import { readRunLog } from '../../snapshot/run-log.js';
import { renderRawLine, runHeaderParts, type TailKind, type TailUsage } from '../../snapshot/stream-lines.js';
import { latestRun, readGoal, readRun, StoreError } from '../../store/index.js';
import { gardenOf } from '../context.js';
import type { CliIO, OutputStyle } from '../main.js';

interface LogsOptions {
  follow?: boolean;
  raw?: boolean;
  color?: boolean;
}

/** The run pane's colour of each kind of line, in the CLI's styles (text keeps the terminal's own). */
const KIND_STYLES: Record<TailKind, OutputStyle | undefined> = { text: undefined, tool: 'tool', result: 'dim', error: 'error', info: 'dim', usage: 'ok' };

/** How often a goal with no run yet is looked at while following, ms. */
const WAIT_MS = 250;

/**
 * `pak2 logs RUN|GOAL [-f] [--raw]` (docs/run/level2.md, "Reading a run's
 * stream"): a run's events.jsonl as the run pane renders it, or its raw
 * lines; `-f` follows a live run until it closes. A goal id means its
 * latest run (with `-f`, the first one it gets).
 */
export function registerLogs(program: Command, io: CliIO): void {
  program
    .command('logs')
    .description("print a run's stream as the run pane shows it (assistant text, tool calls, results, errors, cost), or its raw events.jsonl lines (--raw); -f follows a live run until it closes")
    .argument('<id>', 'a run id (N-slug-rN), or a goal id (N-slug): its latest run')
    .option('-f, --follow', 'keep printing what the run writes until it closes (a goal with no run yet: wait for its first)')
    .option('--raw', "the stream's own lines (JSON as the agent wrote it), nothing added")
    .option('--color', 'colour the lines as the run pane does (default: when stdout is a terminal)')
    .option('--no-color', 'never colour the lines')
    .action(async (id: string, opts: LogsOptions, command: Command) => {
      const garden = gardenOf(command, io);
      const controller = new AbortController();
      const stop = () => controller.abort();
      const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
      for (const name of signals) process.on(name, stop);
      try {
        const run = await runOf(garden, id, opts.follow ? controller.signal : undefined, io);
        if (!run) return;
        await printLog(garden, run, opts, controller.signal, io);
      } finally {
        for (const name of signals) process.off(name, stop);
      }
    });
}

/**
 * The run `id` names: a run, else (a goal id) the goal's latest run. With
 * `waiting`, a goal with no run yet is waited for until it gets one (or
 * closes without one, or the wait is aborted: undefined).
 *
 * @throws UserError naming `id`: not an id (exit 2), no such run or goal,
 *   a goal with no run (exit 1).
 */
async function runOf(garden: Garden, id: string, waiting: AbortSignal | undefined, io: CliIO): Promise<RunRecord | undefined> {
  if (!GOAL_ID_PATTERN.test(id)) throw new UserError(`${id}: not a run id (N-slug-rN) or a goal id (N-slug)`);
  if (RUN_ID_PATTERN.test(id)) {
    try {
      return await readRun(garden.paths, id);
    } catch (error) {
      // `5-deploy-r2` may be a goal's id too.
      if (!(error instanceof StoreError && error.code === 'RUN_NOT_FOUND')) throw error;
    }
  }
  let goal;
  try {
    goal = await readGoal(garden.paths, id);
  } catch (error) {
    if (error instanceof StoreError && error.code === 'GOAL_NOT_FOUND') throw new UserError(`${id}: no such run or goal`, { exitCode: 1 });
    throw error;
  }
  let said = false;
  for (;;) {
    const run = await latestRun(garden.paths, goal.id).catch((error: unknown) => {
      // A run directory made a moment before its record (a run opening): not a run yet.
      if (error instanceof StoreError && error.code === 'RUN_NOT_FOUND') return undefined;
      throw error;
    });
    if (run) return run;
    if (goal.status === 'closed') throw new UserError(`goal ${goal.id} has no run: it closed ${goal.closed_reason ?? 'closed'} without one`, { exitCode: 1 });
    if (!waiting) throw new UserError(`goal ${goal.id} has no run yet (it is ${goal.status}); pak2 logs -f ${goal.id} waits for it`, { exitCode: 1 });
    if (!said) io.err(`pak2: goal ${goal.id} is ${goal.status}: waiting for its first run (ctrl-c stops)`);
    said = true;
    await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
    if (waiting.aborted) return undefined;
    goal = await readGoal(garden.paths, goal.id);
  }
}

/** Prints the run's stream: raw lines, or a header, the rendered lines, and how the run ended (or that it is still running). */
async function printLog(garden: Garden, run: RunRecord, opts: LogsOptions, signal: AbortSignal, io: CliIO): Promise<void> {
  const colour = opts.color ?? Boolean(io.isTTY);
  const say = (text: string, style: OutputStyle | undefined) => (style && colour && io.outStyled ? io.outStyled(text, style) : io.out(text));
  const usage: TailUsage = { inputTokens: 0, outputTokens: 0, costUsd: undefined };
  if (!opts.raw) say(`run ${run.id} · goal ${run.goal} · ${run.driver}/${run.model} · started ${run.started_at}${run.runner ? ` · on ${run.runner}` : ''}`, 'head');
  const result = await readRunLog(garden.paths, run.id, {
    follow: Boolean(opts.follow),
    signal,
    onLine: (raw) => {
      if (opts.raw) return io.out(raw);
      for (const line of renderRawLine(raw, usage)) say(line.text, KIND_STYLES[line.kind]);
    },
  });
  if (opts.raw || result.interrupted) return;
  const ended = runHeaderParts(result.run, usage, Date.now()).join(' · ');
  say(`— ${ended}${result.run.status === 'running' ? ` (pak2 logs -f ${result.run.id} follows it)` : ''}`, 'head');
}
