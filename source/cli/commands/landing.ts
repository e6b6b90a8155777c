import type { Command } from 'commander';
import { age, table } from '../../format.js';
import { gardenLandings, landRun, rejectRun, runDiff } from '../../submit/index.js';
import { diffHeading, landingWords, patchLineKind, type PatchLineKind } from '../../landing-words.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO, OutputStyle } from '../main.js';

const STYLES = { head: 'head', hunk: 'hunk', add: 'add', del: 'del', context: undefined } as const satisfies Record<PatchLineKind, OutputStyle | undefined>;

/** The colour of one line of a patch, as `git diff --color` gives it, or none ({@link patchLineKind}: the workbench's diff colours the same lines). */
export function patchLineStyle(line: string): OutputStyle | undefined {
  return STYLES[patchLineKind(line)];
}

export { landingWords };

/**
 * `pak2 diff RUN`, `pak2 land RUN`, `pak2 reject RUN [--requeue] [--comment
 * TEXT]`, `pak2 landings [--json]` (docs/landing/level2.md, "Review").
 */
export function registerLandingCommands(program: Command, io: CliIO): void {
  program
    .command('diff')
    .description("a run's work for review: its files and the patch against its base (its landing's commit, what its worktree holds now, or its kept branch)")
    .argument('<run>', 'the run id (N-slug-rN)')
    .option('--stat', 'the files only, with lines added and removed')
    .option('--color', 'colour the patch (default: when stdout is a terminal)')
    .option('--no-color', 'never colour the patch')
    .option('--json', 'print the diff as JSON: run, source, base, head, files, patch, truncatedBytes')
    .action(async (runId: string, opts: { stat?: boolean; color?: boolean; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const diff = await runDiff(garden, runId);
      if (opts.json) return printJson(io, diff);
      const colour = opts.color ?? Boolean(io.isTTY);
      if (diff.source === 'none') return io.out(diffHeading(diff));
      io.out(`${diffHeading(diff)}: ${diff.files.length} file(s)`);
      for (const f of diff.files) io.out(`  ${f.status.padEnd(2)} ${f.path}${f.insertions === null ? '' : `  +${f.insertions} -${f.deletions}`}`);
      if (opts.stat) return;
      io.out('');
      for (const line of diff.patch.replace(/\n$/, '').split('\n')) {
        const style = colour ? patchLineStyle(line) : undefined;
        if (style && io.outStyled) io.outStyled(line, style);
        else io.out(line);
      }
      if (diff.truncatedBytes > 0) io.out(`… ${diff.truncatedBytes} more bytes of the patch left out; see git diff ${diff.base.slice(0, 12)} ${diff.head ?? ''}`.trimEnd());
    });

  program
    .command('land')
    .description('accept a run\'s work for landing (a landing held for review); the coordinator lands it, or this command does when none runs')
    .argument('<run>', 'the run id (N-slug-rN)')
    .action(async (runId: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const result = await landRun(garden, runId);
      io.out(`${runId}: ${result.detail}`);
      if (result.by === 'here' && result.landing.state !== 'landed' && result.landing.state !== 'waiting') io.exitCode = 1;
    });

  program
    .command('reject')
    .description("discard a run's work: its landing ends rejected; its goal closes failure, or goes back to the queue with --requeue")
    .argument('<run>', 'the run id (N-slug-rN)')
    .option('--requeue', 'put the goal back in the queue for another attempt')
    .option('--comment <text>', "why: posted on the goal's thread, so the next attempt's prompt carries it")
    .action(async (runId: string, opts: { requeue?: boolean; comment?: string }, command: Command) => {
      const garden = gardenOf(command, io);
      const result = await rejectRun(garden, runId, { ...(opts.requeue ? { requeue: true } : {}), ...(opts.comment !== undefined ? { comment: opts.comment } : {}) });
      io.out(`${runId}: rejected; goal ${result.landing.goal} ${result.goal === 'queued' ? 'goes back to the queue' : 'closed failure'}; branch ${result.landing.branch} kept`);
    });

  program
    .command('landings')
    .description('the merge queue and what became of each landing: run, goal, state, files, base, age')
    .option('--json', 'print the landing records as JSON')
    .option('--all', 'every landing (default: open ones and the 20 newest ended)')
    .action(async (opts: { json?: boolean; all?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const { landings, problems } = await gardenLandings(garden);
      const open = landings.filter((l) => !['landed', 'conflict', 'rejected', 'failed'].includes(l.state));
      const ended = landings.filter((l) => !open.includes(l));
      const shown = opts.all ? landings : [...open, ...ended.slice(0, 20)];
      if (opts.json) return printJson(io, { landings: shown, problems });
      for (const p of problems) io.err(`pak2: ${p.message}`);
      if (shown.length === 0) return io.out('no landings yet (a run that worked in a worktree of its own is queued when its goal settles)');
      const now = new Date();
      io.out(
        table(
          ['RUN', 'STATE', 'FILES', 'BASE', 'AGE', 'NOTE'],
          shown.map((l) => [l.run, landingWords(l), String(l.files?.length ?? '?'), `${l.base_branch}@${((l.state === 'landed' ? l.result_commit : undefined) ?? l.base_commit).slice(0, 8)}`, age(l.updated_at, now), (l.message ?? (l.conflict ? `conflict: ${l.conflict.paths.join(', ')}` : '')).slice(0, 80)]),
        ),
      );
    });
}
