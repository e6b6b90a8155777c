import type { Command } from 'commander';
import { UserError } from '../../errors.js';
import { RETROSPECTIVE_DEFAULT_SINCE, RETROSPECTIVE_PLANT, submitRetrospectiveGoal } from '../../submit/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

interface RetrospectiveOptions {
  since?: string;
  plant?: string;
  focus?: string;
  json?: boolean;
}

/** `pak2 retrospective`: queues a manual retrospective goal and prints its id (docs/retrospective/level2.md). */
export function registerRetrospective(program: Command, io: CliIO): void {
  program
    .command('retrospective')
    .description('queue a retrospective of the goals closed recently; prints the goal id')
    .option('--since <when>', `start of the window: an ISO date or a duration (12h, 7d, 2w); default ${RETROSPECTIVE_DEFAULT_SINCE}`)
    .option('--plant <plant>', `the plant that writes it (default ${RETROSPECTIVE_PLANT})`)
    .option('--focus <text>', 'what to look at especially')
    .option('--json', 'print the goal record as JSON')
    .action(async (opts: RetrospectiveOptions, command: Command) => {
      const garden = gardenOf(command, io);
      let goal;
      try {
        goal = await submitRetrospectiveGoal(garden, {
          ...(opts.since !== undefined ? { since: opts.since } : {}),
          ...(opts.plant !== undefined ? { plant: opts.plant } : {}),
          ...(opts.focus !== undefined ? { focus: opts.focus } : {}),
        });
      } catch (error) {
        // Name the flag, not the field.
        if (error instanceof UserError && /^(since|plant|focus)[ :]/.test(error.message)) throw new UserError(`--${error.message}`, { exitCode: error.exitCode, ...(error.hint ? { hint: error.hint } : {}) });
        throw error;
      }
      if (opts.json) printJson(io, goal);
      else io.out(goal.id);
    });
}
