import type { Command } from 'commander';
import { Coordinator } from '../../coordinator/index.js';
import { onEvent } from '../../store/index.js';
import { gardenOf } from '../context.js';
import { formatEventLine } from '../headless.js';
import type { CliIO } from '../main.js';

interface CycleOptions {
  ui: boolean;
  untilIdle?: boolean;
  json?: boolean;
}

/**
 * `pak2 cycle`: runs the coordinator. Headless (`--no-ui`, or no terminal)
 * prints one line per lifecycle event (JSON with `--json`); `--until-idle`
 * exits once nothing is queued or running. SIGINT / SIGTERM stop it cleanly:
 * live runs are killed and closed `killed` (coordinator_stopped).
 */
export function registerCycle(program: Command, io: CliIO): void {
  program
    .command('cycle')
    .description('run the coordinator: dispatch queued goals, watch runs, close goals')
    .option('--no-ui', 'run headless: print one line per lifecycle event')
    .option('--until-idle', 'exit once nothing is queued or running')
    .option('--json', 'headless lines as JSON events')
    .action(async (opts: CycleOptions, command: Command) => {
      const garden = gardenOf(command, io);
      if (opts.ui && io.isTTY) io.err('pak2: the workbench is not available yet; running headless');
      else if (opts.ui && !io.isTTY) io.err('pak2: not a terminal; running headless');
      const unsubscribe = onEvent((event) => io.out(formatEventLine(event, opts.json)));
      const coordinator = new Coordinator({
        garden,
        command: 'pak2 cycle',
        onError: (error) => io.err(`pak2: reconcile pass failed: ${error.message}`),
        onPass: (summary) => {
          for (const problem of summary.problems) io.err(`pak2: skipped ${problem.message}`);
          for (const rolled of summary.rolledBack) io.err(`pak2: goal ${rolled.goal} stays queued: ${rolled.reason}`);
        },
      });
      await coordinator.start();
      let stopping: Promise<void> | undefined;
      const stop = () => (stopping ??= coordinator.stop());
      const onSignal = () => void stop();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const stopped = new Promise<void>((resolve) => coordinator.on('state', (state) => (state === 'stopping' || state === 'stopped') && resolve()));
        await (opts.untilIdle ? Promise.race([coordinator.untilIdle(), stopped]) : stopped);
      } finally {
        await stop();
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        unsubscribe();
      }
    });
}
