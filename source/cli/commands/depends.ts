import type { Command } from 'commander';
import { UserError } from '../../errors.js';
import { changeDependencies, retryGoal } from '../../submit/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 depends GOAL [--add ID…] [--drop ID…]` and `pak2 retry GOAL`: the
 * operator's hands on goal dependencies (docs/goal/level2.md, "Dependencies").
 */
export function registerDependencyCommands(program: Command, io: CliIO): void {
  program
    .command('depends')
    .description("change what a queued goal waits for: --drop an edge (a goal a failed dependency blocked is released), --add one (a cycle is refused)")
    .argument('<goal>', 'the goal id (N-slug)')
    .option('--add <goal...>', 'wait for these goals too (repeatable)')
    .option('--drop <goal...>', 'no longer wait for these goals (repeatable)')
    .option('--json', 'print the goal record as JSON')
    .action(async (goalId: string, opts: { add?: string[]; drop?: string[]; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      if (!opts.add?.length && !opts.drop?.length) throw new UserError('give --add GOAL or --drop GOAL');
      let goal;
      try {
        goal = await changeDependencies(garden, goalId, { ...(opts.add ? { add: opts.add } : {}), ...(opts.drop ? { drop: opts.drop } : {}) });
      } catch (error) {
        if (error instanceof UserError && /^(add|drop) /.test(error.message)) throw new UserError(`--${error.message}`, { exitCode: error.exitCode });
        throw error;
      }
      if (opts.json) printJson(io, goal);
      else io.out(`${goal.id} waits for ${goal.depends_on?.join(', ') || 'nothing'}`);
    });
  program
    .command('retry')
    .description('queue a goal that closed failure or cancelled again, as a new goal; the goals that waited for it wait for the new one')
    .argument('<goal>', 'the goal id (N-slug)')
    .option('--driver <driver>', 'run the retry on this driver (without --model, the old goal\'s model is dropped)')
    .option('--model <model>', 'run the retry on this model')
    .option('--json', 'print the new goal record as JSON')
    .action(async (goalId: string, opts: { driver?: string; model?: string; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const result = await retryGoal(garden, goalId, { ...(opts.driver !== undefined ? { driver: opts.driver } : {}), ...(opts.model !== undefined ? { model: opts.model } : {}) });
      if (opts.json) printJson(io, { ...result.goal, moved: result.moved });
      else io.out(`${result.goal.id}${result.moved.length ? ` (now awaited by ${result.moved.join(', ')})` : ''}`);
    });
}
