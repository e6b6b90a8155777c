import type { Command } from 'commander';
import { EVENT_TYPES, parseEventTypes } from '../../contracts/index.js';
import { UserError } from '../../errors.js';
import { findEventsAfter, isEventId, streamEvents, type EventFilter } from '../../store/index.js';
import { gardenOf } from '../context.js';
import { formatEventLine } from '../headless.js';
import type { CliIO } from '../main.js';

interface EventsOptions {
  since?: string;
  follow?: boolean;
  type?: string[];
  goal?: string;
  json?: boolean;
}

/**
 * `pak2 events [--since ID] [--follow] [--type T…] [--goal G] [--json]`
 * (seed 004, "Catch-up and resumption"): the events after ID, in order, then
 * with --follow the new ones as they are written. Finding the cursor seeks
 * (the ids are sortable); the log is streamed in bounded memory.
 */
export function registerEvents(program: Command, io: CliIO): void {
  program
    .command('events')
    .description('print the event log: everything after --since ID, then (--follow) new events as they come')
    .option('--since <id>', 'the last event id already seen (a ULID): print only what came after it')
    .option('--follow', 'keep printing new events until interrupted')
    .option('--type <type...>', 'only these event types (repeat it, or separate them with commas: GoalClosed,RunClosed)')
    .option('--goal <id>', 'only events of this goal and its runs')
    .option('--json', 'one JSON event per line')
    .action(async (opts: EventsOptions, command: Command) => {
      const garden = gardenOf(command, io);
      if (opts.since !== undefined && !isEventId(opts.since)) throw new UserError(`--since ${opts.since}: not an event id (a ULID, 26 characters, e.g. from \`pak2 events --json\`)`);
      const types = parseEventTypes(opts.type ?? []);
      if ('unknown' in types) throw new UserError(`--type ${types.unknown}: not an event type (${EVENT_TYPES.join(', ')})`);
      const filter: EventFilter = { ...(types.types.length ? { types: types.types } : {}), ...(opts.goal ? { goal: opts.goal } : {}) };
      let offset = opts.since ? (await findEventsAfter(garden.paths, opts.since)).offset : 0;
      const print = (event: Parameters<typeof formatEventLine>[0]) => io.out(formatEventLine(event, opts.json));
      offset = await streamEvents(garden.paths, offset, print, filter);
      if (!opts.follow) return;
      await new Promise<void>((resolve) => {
        let reading = false;
        const timer = setInterval(() => {
          if (reading) return;
          reading = true;
          void streamEvents(garden.paths, offset, print, filter)
            .then((next) => (offset = next))
            .finally(() => (reading = false));
        }, 200);
        const stop = () => {
          clearInterval(timer);
          for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(name, stop);
          resolve();
        };
        for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(name, stop);
      });
    });
}
