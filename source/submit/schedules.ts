import fs from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { loadCron, type ScheduleOverlap } from '../contracts/index.js';
import { writeFileAtomic } from '../atomic-write.js';
import { UserError } from '../errors.js';
import { parseConfig, type Garden, type ScheduleConfig } from '../garden/index.js';
import { readGoal, readSchedulesState, StoreError } from '../store/index.js';
import { currentSchedules } from '../coordinator/schedules.js';

/** One schedule as `pak2 schedule list` (and `GET /schedules`) shows it (docs/schedules/level2.md). */
export interface ScheduleView {
  name: string;
  cron: string;
  timezone: string;
  overlap: ScheduleOverlap;
  enabled: boolean;
  /** The next due time after now (ISO 8601 UTC); null when the line fires no more or the schedule is disabled. */
  next_due_at: string | null;
  /** From schedules.json; null before the first goal. */
  last_fired_at: string | null;
  last_due_at: string | null;
  last_goal: string | null;
  /** The last goal's status (`queued`, `running`, `closed`…); null with no last goal, `missing` when its file is gone. */
  last_goal_status: string | null;
  /** Whether the last goal is open: overlap `skip` submits nothing while it is. */
  last_goal_open: boolean;
}

/**
 * Every `[[schedule]]` of PAK2.toml as the file says now (a long-lived
 * server sees `pak2 schedule add` at once), with its
 * state from `<runtime-root>/schedules.json` and its next due time.
 *
 * @throws StoreError INVALID_RECORD when schedules.json is damaged.
 */
export async function listSchedules(garden: Garden, now: Date = new Date()): Promise<ScheduleView[]> {
  const state = await readSchedulesState(garden.paths);
  const Cron = loadCron();
  return Promise.all(
    currentSchedules(garden).schedules.map(async (schedule) => {
      const known = state.schedules[schedule.name];
      const next = schedule.enabled ? new Cron(schedule.cron, { timezone: schedule.timezone, paused: true }).nextRun(now) : null;
      let status: string | null = null;
      if (known?.last_goal) {
        try {
          status = (await readGoal(garden.paths, known.last_goal)).status;
        } catch (error) {
          status = error instanceof StoreError && error.code === 'GOAL_NOT_FOUND' ? 'missing' : 'unreadable';
        }
      }
      return {
        name: schedule.name,
        cron: schedule.cron,
        timezone: schedule.timezone,
        overlap: schedule.overlap,
        enabled: schedule.enabled,
        next_due_at: next ? next.toISOString() : null,
        last_fired_at: known?.last_fired_at ?? null,
        last_due_at: known?.last_due_at ?? null,
        last_goal: known?.last_goal ?? null,
        last_goal_status: status,
        last_goal_open: status !== null && status !== 'closed' && status !== 'missing',
      };
    }),
  );
}

/** What `pak2 schedule add` gives: the entry's keys (absent ones take their defaults). */
export interface ScheduleInput {
  name: string;
  cron: string;
  body: string;
  timezone?: string;
  overlap?: ScheduleOverlap;
  enabled?: boolean;
  type?: string;
  plant?: string;
  priority?: number;
  driver?: string;
  model?: string;
  /** The guard's verify command (a guarded goal). */
  verify?: string;
}

/** The order keys are written in, as PAK2.toml.example shows them. */
const KEY_ORDER = ['name', 'cron', 'timezone', 'overlap', 'enabled', 'type', 'plant', 'priority', 'driver', 'model', 'body'] as const;

/** A TOML value for a string, number or boolean: JSON's string escapes are TOML basic-string escapes. */
function tomlValue(value: string | number | boolean): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** The `[[schedule]]` block of an entry, as appended to PAK2.toml. */
export function scheduleBlock(input: ScheduleInput): string {
  const lines = ['[[schedule]]'];
  for (const key of KEY_ORDER) {
    const value = input[key];
    if (value !== undefined) lines.push(`${key} = ${tomlValue(value)}`);
  }
  if (input.verify !== undefined) lines.push(`guard = { verify = ${tomlValue(input.verify)} }`);
  return `${lines.join('\n')}\n`;
}

/**
 * Adds a `[[schedule]]` to PAK2.toml by appending its block to the text:
 * the rest of the file stays byte for byte as the operator wrote it. The
 * file as it would be is checked as a garden load checks it first; a
 * running coordinator takes the new entry at its next pass.
 *
 * @throws UserError (exit 1) with the one line a load would say
 *   (`PAK2.toml: schedule[N].cron: …`), nothing written.
 */
export async function addSchedule(garden: Garden, input: ScheduleInput): Promise<ScheduleConfig> {
  const file = garden.paths.configFile;
  const text = fs.readFileSync(file, 'utf8');
  const separator = text === '' ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  const next = `${text}${separator}${scheduleBlock(input)}`;
  let config;
  try {
    config = parseConfig(next, 'PAK2.toml');
  } catch (error) {
    if (error instanceof UserError) throw new UserError(error.message, { exitCode: 1 });
    throw error;
  }
  await writeFileAtomic(file, next);
  return config.schedules.at(-1)!;
}

/** A `[[schedule]]` header line (a comment may follow it). */
const ENTRY_HEADER = /^[ \t]*\[\[[ \t]*schedule[ \t]*\]\][ \t]*(?:#.*)?$/;
/** Any table header: it ends the block before it, unless it is a sub-table of the entry (`[schedule.guard]`). */
const ANY_HEADER = /^[ \t]*\[/;
const SUB_TABLE = /^[ \t]*\[[ \t]*schedule[ \t]*\.[^\]]*\][ \t]*(?:#.*)?$/;

/**
 * Removes one `[[schedule]]` from PAK2.toml: exactly the lines of its
 * block (its header to the next table header, less the comments and blank
 * lines that end it, which may introduce what follows), and the blank line
 * before it that `add` wrote. Everything else stays byte for byte. Its state
 * in schedules.json is dropped by the next coordinator pass.
 *
 * @throws UserError (exit 1) `schedule NAME: …` when no block, or more than
 *   one, names it, or when removing the lines found would not leave exactly
 *   the other schedules (the block could not be found exactly); nothing written.
 */
export async function removeSchedule(garden: Garden, name: string): Promise<void> {
  const file = garden.paths.configFile;
  const text = fs.readFileSync(file, 'utf8');
  const before = parseConfig(text, 'PAK2.toml').schedules.map((s) => s.name);
  if (!before.includes(name)) throw new UserError(`schedule ${name}: no [[schedule]] in PAK2.toml has that name (schedules: ${before.join(', ') || 'none'})`, { exitCode: 1 });
  const lines = text.split(/(?<=\n)/);
  const blocks: { start: number; end: number }[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (!ENTRY_HEADER.test(lines[i]!.replace(/\r?\n$/, ''))) continue;
    // The block ends at the first table header after which its lines read as TOML alone (a `[` line inside a multi-line string is no header).
    let end = i + 1;
    let found: string | undefined;
    for (;;) {
      while (end < lines.length) {
        const line = lines[end]!.replace(/\r?\n$/, '');
        if (ANY_HEADER.test(line) && !SUB_TABLE.test(line)) break;
        end += 1;
      }
      found = blockName(lines.slice(i + 1, end).join(''));
      if (found !== undefined || end >= lines.length) break;
      end += 1;
    }
    // Trailing blank and comment lines belong to what follows.
    while (end > i + 1 && /^[ \t]*(?:#.*)?$/.test(lines[end - 1]!.replace(/\r?\n$/, ''))) end -= 1;
    if (found === name) blocks.push({ start: i, end });
  }
  const refuse = (why: string) => new UserError(`schedule ${name}: ${why}; edit PAK2.toml by hand`, { exitCode: 1 });
  if (blocks.length !== 1) throw refuse(blocks.length === 0 ? 'its [[schedule]] block was not found exactly' : `${blocks.length} [[schedule]] blocks carry that name`);
  const { start, end } = blocks[0]!;
  // The blank line add wrote before the block goes with it.
  const from = start > 0 && /^[ \t]*\r?\n$/.test(lines[start - 1]!) ? start - 1 : start;
  const next = [...lines.slice(0, from), ...lines.slice(end)].join('');
  let after: string[];
  try {
    after = parseConfig(next, 'PAK2.toml').schedules.map((s) => s.name);
  } catch {
    throw refuse('removing its block would leave PAK2.toml invalid');
  }
  if (after.join('\n') !== before.filter((n) => n !== name).join('\n')) throw refuse('removing its block would change other schedules');
  await writeFileAtomic(file, next);
}

/** The `name` a block's body sets, read as TOML from its own lines; undefined when the lines do not parse alone. */
function blockName(body: string): string | undefined {
  try {
    const table = parseToml(body) as { name?: unknown };
    return typeof table.name === 'string' ? table.name : undefined;
  } catch {
    return undefined;
  }
}
