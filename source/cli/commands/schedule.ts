import { InvalidArgumentError, type Command } from 'commander';
import { GOAL_TYPES, PRIORITY_MAX, PRIORITY_MIN, SCHEDULE_OVERLAPS, type ScheduleOverlap } from '../../contracts/index.js';
import { table } from '../../format.js';
import { addSchedule, listSchedules, removeSchedule, type ScheduleInput } from '../../submit/index.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

function parsePriority(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < PRIORITY_MIN || n > PRIORITY_MAX) throw new InvalidArgumentError(`must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`);
  return n;
}

function parseOverlap(value: string): ScheduleOverlap {
  if (!(SCHEDULE_OVERLAPS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be ${SCHEDULE_OVERLAPS.join(' or ')}`);
  return value as ScheduleOverlap;
}

/** An ISO time as the list shows it: `2026-05-01 10:01:00`, or `-`. */
const when = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 19) : '-');

/**
 * `pak2 schedule list|add|remove` (docs/schedules/level2.md): the
 * `[[schedule]]` entries of PAK2.toml with their state; `add` appends one
 * block to PAK2.toml and `remove` takes exactly one out, the rest of the
 * file byte for byte as it was. A bad value is one line naming the key
 * (`PAK2.toml: schedule[N].cron: …`), exit 1, nothing written.
 */
export function registerSchedule(program: Command, io: CliIO): void {
  const schedule = program.command('schedule').description('goals submitted on a cron line ([[schedule]] in PAK2.toml): list, add, remove');

  schedule
    .command('list')
    .description('the schedules: cron line, timezone, next due time, last firing, last goal and whether it is open')
    .option('--json', 'print the schedules as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const views = await listSchedules(garden);
      if (opts.json) return printJson(io, views);
      if (views.length === 0) return io.out(`no schedules in ${garden.paths.configFile}: pak2 schedule add --name NAME --cron "0 6 * * *" --body TEXT`);
      const rows = views.map((v) => [
        v.name + (v.enabled ? '' : ' (disabled)'),
        v.cron,
        v.timezone,
        when(v.next_due_at),
        when(v.last_fired_at),
        v.last_goal ? `${v.last_goal} (${v.last_goal_status})` : '-',
        v.overlap,
      ]);
      io.out(table(['NAME', 'CRON', 'TIMEZONE', 'NEXT DUE (UTC)', 'LAST FIRED (UTC)', 'LAST GOAL', 'OVERLAP'], rows));
    });

  schedule
    .command('add')
    .description('append a [[schedule]] to PAK2.toml (checked as a load checks it); a running coordinator takes it at its next pass')
    .requiredOption('--name <name>', 'the schedule name: lower-case letters, digits and inner hyphens, unique')
    .requiredOption('--cron <line>', 'when it fires: a cron line, e.g. "0 6 * * 1-5" (six fields: seconds first)')
    .requiredOption('--body <text>', 'the task of the goal each firing submits')
    .option('--plant <plant>', 'the plant the goal is assigned to (default gardener)')
    .option('--type <type>', `goal type: ${GOAL_TYPES.join(', ')} (default build)`)
    .option('--timezone <tz>', 'the timezone the cron line is read in, e.g. Europe/Paris (default UTC)')
    .option('--priority <n>', `${PRIORITY_MIN}-${PRIORITY_MAX}, higher first (default 50)`, parsePriority)
    .option('--driver <driver>', 'claude, codex, command or a [drivers.<name>] entry (default: the override chain)')
    .option('--model <model>', 'model for the goal')
    .option('--verify <cmd>', 'guarded goal: a shell command run after the agent; the run succeeds only when it exits 0')
    .option('--overlap <mode>', 'skip (default: no new goal while the last one is open) or allow', parseOverlap)
    .option('--disabled', 'add it disabled (enabled = false)')
    .action(async (opts: Omit<ScheduleInput, 'enabled'> & { disabled?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const { disabled, ...rest } = opts;
      const added = await addSchedule(garden, { ...rest, ...(disabled ? { enabled: false } : {}) });
      io.err(`pak2: schedule ${added.name} added to ${garden.paths.configFile} (${added.cron}, ${added.timezone}); its first goal comes at its first due time after a coordinator next passes`);
    });

  schedule
    .command('remove')
    .description('take one [[schedule]] block out of PAK2.toml, the rest of the file untouched')
    .argument('<name>', 'the schedule name')
    .action(async (name: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      await removeSchedule(garden, name);
      io.err(`pak2: schedule ${name} removed from ${garden.paths.configFile}; goals it submitted stay`);
    });
}
