import { z } from 'zod';
import { collectIssues, type ValidationIssue, lazySchema, PLANT_NAME_PATTERN } from './common.js';
import { ENV_NAME_PATTERN, TASK_CLASS_PATTERN } from './guard.js';
import { GOAL_TYPES, MAX_ACCEPTANCE_CRITERIA, MAX_CRITERION_TEXT, MAX_CRITERION_VERIFY, PRIORITY_MAX, PRIORITY_MIN } from './goal.js';
import { SCHEDULE_NAME_PATTERN, SCHEDULE_OVERLAPS } from './schedule.js';

/** A garden name: one safe path segment (it names the reply directory under `inbox/`). */
export const GARDEN_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;

/** The longest time a key may hold, in seconds: Node timers cap at 2^31 - 1 ms (about 24.8 days). */
export const MAX_SECONDS = 2_147_483;
/** The most runs that may be live at once. */
export const MAX_CONCURRENT_RUNS = 64;

/** Allowed ranges of the numeric keys, for error messages. */
export const CONFIG_RANGES: Readonly<Record<string, string>> = {
  'coordinator.interval_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'coordinator.watchdog_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'coordinator.run_timeout_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'coordinator.max_concurrent_runs': `a whole number from 0 to ${MAX_CONCURRENT_RUNS} (0: only remote runners run goals)`,
  'coordinator.tool_silence_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'coordinator.result_grace_seconds': `a whole number of seconds from 0 to ${MAX_SECONDS}`,
  'coordinator.result_grace_cap_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'coordinator.conversation_slots': `a whole number from 0 to ${MAX_CONCURRENT_RUNS} (0: conversation replies share max_concurrent_runs)`,
  'tend.run_failure': 'true or false',
  'tend.queued_attention_needed': 'true or false',
  'tend.priority': `a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`,
  'tend.daily_cap': 'a whole number of automatic tends a day, from 0 to 10000',
  'garden.name': "lower-case letters, digits, '.', '_' and '-'",
  'garden.home': 'a directory relative to the garden root, inside it (e.g. ".pak2")',
  'guard.timeout_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'runners.lease_ttl_seconds': `a whole number of seconds from 3 to ${MAX_SECONDS}`,
  'coordinator.isolation': '"worktree" (a git worktree per run) or "tree" (every run in the garden\'s own tree)',
  'coordinator.sandbox': '"none" or "bubblewrap" (agents run with the runtime root read-only: docs/run/isolation.md)',
  'worktree.setup': 'a command: a string (run by the shell) or an array of the executable and its arguments',
  'worktree.setup_timeout_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'worktree.keep_days': 'a whole number of days from 0 to 3650',
  'merge.mode': '"auto" or "review"',
  'merge.on_conflict': '"requeue" or "fail"',
  'merge.verify': 'a command line as one string, run by the shell in the merged result (e.g. "npm test")',
  'merge.verify_timeout_seconds': `a whole number of seconds from 1 to ${MAX_SECONDS}`,
  'webhooks.allow_link_local': 'true or false',
  'budget.run_usd': 'an amount in USD greater than 0',
  'budget.goal_usd': 'an amount in USD greater than 0',
  'budget.plant_day_usd': 'an amount in USD greater than 0',
  'budget.garden_day_usd': 'an amount in USD greater than 0',
  'budget.garden_month_usd': 'an amount in USD greater than 0',
  'budget.timezone': 'an IANA time zone such as "UTC" or "Europe/Berlin"',
  'budget.warn_ratio': 'a share of a cap between 0 and 1 (e.g. 0.8)',
  'budget.unknown_run_usd': 'an amount in USD, 0 or more',
  // [[schedule]] keys, by their key without the entry's index (docs/schedules/level2.md).
  'schedule.name': 'a name of lower-case letters, digits and inner hyphens, at most 64 characters, unique among the schedules',
  'schedule.cron': 'a cron line such as "*/15 * * * *"',
  'schedule.timezone': 'an IANA timezone such as "UTC" or "Europe/Paris"',
  'schedule.overlap': '"skip" (no new goal while the last one is open) or "allow"',
  'schedule.enabled': 'true or false',
  'schedule.type': `one of ${GOAL_TYPES.join(', ')}`,
  'schedule.plant': 'a plant name',
  'schedule.body': 'the task, a non-empty string',
  'schedule.priority': `a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}`,
  'schedule.driver': 'claude, codex, command or a [drivers.<name>] table',
  'schedule.model': 'a model name',
  'schedule.acceptance_criteria': 'an array of { text = "one line", verify = "a shell command" } tables (verify optional)',
  schedule: 'an array of [[schedule]] tables',
  'notify.terminal': '"bell", "osc9", "osc777", "all" or "off"',
  'notify.command': 'an array of the executable and its arguments (e.g. ["notify-send", "pak2"]); each new item is its stdin as JSON',
};

/** `[notify] terminal` (docs/attention/level2.md, "Notifications"): what the workbench writes for a new item. */
export const NOTIFY_TERMINAL_MODES = ['bell', 'osc9', 'osc777', 'all', 'off'] as const;
export type NotifyTerminalMode = (typeof NOTIFY_TERMINAL_MODES)[number];

const seconds = (min: number, max = MAX_SECONDS) =>
  z
    .number({ error: 'INVALID_CONFIG_VALUE' })
    .int({ error: 'INVALID_CONFIG_VALUE' })
    .min(min, { error: 'INVALID_CONFIG_VALUE' })
    .max(max, { error: 'INVALID_CONFIG_VALUE' });

/** Wrong-typed sections are INVALID_CONFIG_VALUE; unknown keys keep their own code. */
const section = { error: (iss: { code?: string }) => (iss.code === 'unrecognized_keys' ? undefined : 'INVALID_CONFIG_VALUE') };

const text = () => z.string({ error: 'INVALID_CONFIG_VALUE' }).min(1, { error: 'INVALID_CONFIG_VALUE' });

/** `[drivers.<name>]`: `command` is an executable, or an executable plus leading arguments. */
export const DriverConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      command: z.union([text(), z.array(text()).min(1, { error: 'INVALID_CONFIG_VALUE' })], { error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

const textList = () => z.array(text(), { error: 'INVALID_CONFIG_VALUE' });

/**
 * `[guard]`: defaults for guarded goals (seed 001; docs/guarded-runs/level2.md).
 * A goal's own `guard` fields win; lists are not merged.
 */
export const GuardConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      verify: text().optional(),
      allowed_files: textList().optional(),
      forbidden_paths: textList().optional(),
      timeout_seconds: seconds(1).optional(),
      env_passthrough: z.array(z.string({ error: 'INVALID_CONFIG_VALUE' }).regex(ENV_NAME_PATTERN, { error: 'INVALID_CONFIG_VALUE' }), { error: 'INVALID_CONFIG_VALUE' }).optional(),
      redact: z.boolean({ error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

/** A command: a shell line, or an executable and its arguments. */
const commandValue = () => z.union([text(), z.array(text()).min(1, { error: 'INVALID_CONFIG_VALUE' })], { error: 'INVALID_CONFIG_VALUE' });

/**
 * `[worktree]` (docs/landing/level2.md, "Worktrees"): how a run's worktree is
 * made ready: `setup` (a command run in the new worktree before the agent,
 * within `setup_timeout_seconds`), `copy` (globs of untracked files copied
 * in from the garden, never committed), `keep_days` (how long a landed or
 * rejected run's branch is kept).
 */
export const WorktreeConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      setup: commandValue().optional(),
      setup_timeout_seconds: seconds(1).optional(),
      copy: textList().optional(),
      keep_days: z.number({ error: 'INVALID_CONFIG_VALUE' }).int({ error: 'INVALID_CONFIG_VALUE' }).min(0, { error: 'INVALID_CONFIG_VALUE' }).max(3650, { error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

/**
 * `[merge]` (docs/landing/level2.md): the merge queue. `base` (the branch
 * runs start from and land on; default the garden checkout's branch),
 * `mode` (`auto`, or `review`: each landing waits for the operator),
 * `verify` (run on every merged result; a guarded goal's own verify wins),
 * `verify_timeout_seconds`, `on_conflict` (`requeue` the goal on the new
 * base, or `fail` it).
 */
export const MergeConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      base: text().optional(),
      mode: z.enum(['auto', 'review'], { error: 'INVALID_CONFIG_VALUE' }).optional(),
      verify: text().optional(),
      verify_timeout_seconds: seconds(1).optional(),
      on_conflict: z.enum(['requeue', 'fail'], { error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

/** One routing tier: the driver, and optionally its model and reasoning effort. */
export const RoutingTierSchema = lazySchema(() =>
  z.strictObject({ driver: text(), model: text().optional(), effort: text().optional() }, section),
);

/**
 * `[routing.<task_class>]` (seed 001, routing): ordered tiers, how many
 * escalations at most, and an optional budget in USD across the attempts.
 */
export const RoutingClassSchema = lazySchema(() =>
  z.strictObject(
    {
      tiers: z.array(RoutingTierSchema, { error: 'INVALID_CONFIG_VALUE' }).min(1, { error: 'INVALID_CONFIG_VALUE' }),
      max_escalations: z.number({ error: 'INVALID_CONFIG_VALUE' }).int({ error: 'INVALID_CONFIG_VALUE' }).min(0, { error: 'INVALID_CONFIG_VALUE' }).max(100, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      budget_usd: z.number({ error: 'INVALID_CONFIG_VALUE' }).positive({ error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

/** A cap in USD: a positive, finite number. */
const usd = () => z.number({ error: 'INVALID_CONFIG_VALUE' }).positive({ error: 'INVALID_CONFIG_VALUE' }).max(1_000_000, { error: 'INVALID_CONFIG_VALUE' });

/**
 * `[budget]` (docs/budget/level2.md): caps in USD per run, per goal (all its
 * attempts), per plant per day, per garden per day and per month; the
 * timezone days and months follow (IANA name, default UTC, checked at load);
 * `warn_ratio` (default 0.8) the share of a cap that warns once; and
 * `unknown_run_usd`, what a run of unknown cost counts as.
 */
export const BudgetConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      run_usd: usd().optional(),
      goal_usd: usd().optional(),
      plant_day_usd: usd().optional(),
      garden_day_usd: usd().optional(),
      garden_month_usd: usd().optional(),
      timezone: text().optional(),
      warn_ratio: z.number({ error: 'INVALID_CONFIG_VALUE' }).gt(0, { error: 'INVALID_CONFIG_VALUE' }).lt(1, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      unknown_run_usd: z.number({ error: 'INVALID_CONFIG_VALUE' }).min(0, { error: 'INVALID_CONFIG_VALUE' }).max(1_000_000, { error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

/**
 * `[tend]` (docs/automatic-tend/level2.md, "Operator control"): one on/off
 * key per automatic trigger (`run_failure`, `queued_attention_needed`;
 * default on), the `priority` of an automatic tend (default 70), and
 * `daily_cap`, how many automatic tends a day at most (absent: no cap).
 */
export const TendConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      run_failure: z.boolean({ error: 'INVALID_CONFIG_VALUE' }).optional(),
      queued_attention_needed: z.boolean({ error: 'INVALID_CONFIG_VALUE' }).optional(),
      priority: z.number({ error: 'INVALID_CONFIG_VALUE' }).int({ error: 'INVALID_CONFIG_VALUE' }).min(PRIORITY_MIN, { error: 'INVALID_CONFIG_VALUE' }).max(PRIORITY_MAX, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      daily_cap: z.number({ error: 'INVALID_CONFIG_VALUE' }).int({ error: 'INVALID_CONFIG_VALUE' }).min(0, { error: 'INVALID_CONFIG_VALUE' }).max(10_000, { error: 'INVALID_CONFIG_VALUE' }).optional(),
    },
    section,
  ),
);

/** A required key: absent is MISSING_REQUIRED_FIELD, present with the wrong type INVALID_CONFIG_VALUE. */
const missingOrInvalid = (iss: { input?: unknown }) => (iss.input === undefined ? 'MISSING_REQUIRED_FIELD' : 'INVALID_CONFIG_VALUE');

/**
 * One `[[schedule]]` entry (docs/schedules/level2.md): `name`, `cron`,
 * `timezone` (default UTC), `overlap` (`skip` default, or `allow`),
 * `enabled` (default true), and the goal each firing submits: `type`
 * (default `build`), `plant` (default `gardener`), `body`, `priority`,
 * `driver`, `model`, `guard` (a goal's guard: verify, allowed_files,
 * forbidden_paths, timeout_seconds, env_passthrough, redact),
 * `acceptance_criteria` (`{text, verify?}` each). The cron line
 * and timezone are checked beyond their shape at load (garden/config.ts).
 */
export const ScheduleConfigSchema = lazySchema(() =>
  z.strictObject(
    {
      name: z.string({ error: missingOrInvalid }).regex(SCHEDULE_NAME_PATTERN, { error: 'INVALID_CONFIG_VALUE' }),
      cron: z.string({ error: missingOrInvalid }).min(1, { error: 'INVALID_CONFIG_VALUE' }),
      timezone: text().optional(),
      overlap: z.enum(SCHEDULE_OVERLAPS, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      enabled: z.boolean({ error: 'INVALID_CONFIG_VALUE' }).optional(),
      type: z.enum(GOAL_TYPES, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      plant: z.string({ error: 'INVALID_CONFIG_VALUE' }).regex(PLANT_NAME_PATTERN, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      body: z.string({ error: missingOrInvalid }).regex(/\S/, { error: 'INVALID_CONFIG_VALUE' }),
      priority: z.number({ error: 'INVALID_CONFIG_VALUE' }).int({ error: 'INVALID_CONFIG_VALUE' }).min(PRIORITY_MIN, { error: 'INVALID_CONFIG_VALUE' }).max(PRIORITY_MAX, { error: 'INVALID_CONFIG_VALUE' }).optional(),
      driver: text().optional(),
      model: text().optional(),
      guard: GuardConfigSchema.optional(),
      /** The goal's acceptance criteria (docs/goal/level2.md, "Acceptance criteria"). */
      acceptance_criteria: z
        .array(
          z.strictObject(
            {
              text: z.string({ error: missingOrInvalid }).max(MAX_CRITERION_TEXT, { error: 'INVALID_CONFIG_VALUE' }).regex(/^[^\r\n]*\S[^\r\n]*$/, { error: 'INVALID_CONFIG_VALUE' }),
              verify: z.string({ error: 'INVALID_CONFIG_VALUE' }).max(MAX_CRITERION_VERIFY, { error: 'INVALID_CONFIG_VALUE' }).regex(/\S/, { error: 'INVALID_CONFIG_VALUE' }).optional(),
            },
            section,
          ),
          { error: 'INVALID_CONFIG_VALUE' },
        )
        .max(MAX_ACCEPTANCE_CRITERIA, { error: 'INVALID_CONFIG_VALUE' })
        .optional(),
    },
    section,
  ),
);

/**
 * PAK2.toml (seed 002; every key in `PAK2.toml.example`). Unknown keys are
 * refused (UNKNOWN_CONFIG_KEY) so a typo never silently means a default.
 * Times are whole seconds.
 */
export const ConfigSchema = lazySchema(() =>
  z.strictObject({
    runtime: z.strictObject({ root: text().optional() }, section).optional(),
    /** `[store]`: where the garden's state lives (docs/store/level2.md); absent: the seeds' files under the runtime root. */
    store: z.strictObject({ url: text().optional() }, section).optional(),
    garden: z
      .strictObject(
        {
          name: z.string({ error: 'INVALID_CONFIG_VALUE' }).regex(GARDEN_NAME_PATTERN, { error: 'INVALID_CONFIG_VALUE' }).optional(),
          /** pak2's own folder in an adopted repository (`.pak2`): seeds/, plants/, MOTIVATION.md, CHARTER.md… (docs/garden/level2.md). */
          home: text().optional(),
        },
        section,
      )
      .optional(),
    defaults: z
      .strictObject({ driver: text().optional(), model: text().optional(), reasoning_effort: text().optional() }, section)
      .optional(),
    coordinator: z
      .strictObject({
        interval_seconds: seconds(1).optional(),
        watchdog_seconds: seconds(1).optional(),
        run_timeout_seconds: seconds(1).optional(),
        max_concurrent_runs: seconds(0, MAX_CONCURRENT_RUNS).optional(),
        tool_silence_seconds: seconds(1).optional(),
        result_grace_seconds: seconds(0).optional(),
        result_grace_cap_seconds: seconds(1).optional(),
        /** Runs of conversation replies allowed besides `max_concurrent_runs` (docs/coordinator/level2.md, "Conversation slots"). */
        conversation_slots: seconds(0, MAX_CONCURRENT_RUNS).optional(),
        isolation: z.enum(['worktree', 'tree'], { error: 'INVALID_CONFIG_VALUE' }).optional(),
        sandbox: z.enum(['none', 'bubblewrap'], { error: 'INVALID_CONFIG_VALUE' }).optional(),
      }, section)
      .optional(),
    drivers: z.record(z.string(), DriverConfigSchema, section).optional(),
    guard: GuardConfigSchema.optional(),
    worktree: WorktreeConfigSchema.optional(),
    merge: MergeConfigSchema.optional(),
    routing: z.record(z.string().regex(TASK_CLASS_PATTERN, { error: 'INVALID_CONFIG_VALUE' }), RoutingClassSchema, section).optional(),
    /** `[runners]` (seed 004; docs/runners/level2.md): remote runners' leases. */
    runners: z.strictObject({ lease_ttl_seconds: seconds(3).optional() }, section).optional(),
    /** `[webhooks]` (docs/server/level2.md, "Webhooks"): which receivers a subscription may name. */
    webhooks: z.strictObject({ allow_link_local: z.boolean({ error: 'INVALID_CONFIG_VALUE' }).optional() }, section).optional(),
    /** `[budget]` (docs/budget/level2.md): caps that stop spending. */
    budget: BudgetConfigSchema.optional(),
    /** `[[schedule]]` (docs/schedules/level2.md): goals submitted on a cron line. */
    schedule: z.array(ScheduleConfigSchema, { error: 'INVALID_CONFIG_VALUE' }).optional(),
    /** `[tend]` (docs/automatic-tend/level2.md, "Operator control"): which automatic tends are queued, at what priority, how many a day. */
    tend: TendConfigSchema.optional(),
    /** `[notify]` (docs/attention/level2.md, "Notifications"): the workbench's terminal notification and a command run per new item. */
    notify: z
      .strictObject(
        {
          terminal: z.enum(NOTIFY_TERMINAL_MODES, { error: 'INVALID_CONFIG_VALUE' }).optional(),
          command: z.array(text(), { error: 'INVALID_CONFIG_VALUE' }).min(1, { error: 'INVALID_CONFIG_VALUE' }).optional(),
        },
        section,
      )
      .optional(),
  }, section),
);
export type ConfigFile = z.infer<typeof ConfigSchema>;

/**
 * Validates the parsed PAK2.toml table. Never throws.
 *
 * @returns issues with codes UNKNOWN_CONFIG_KEY, INVALID_CONFIG_VALUE,
 *   INVALID_SHAPE; `field` is the dotted key, e.g. `coordinator.watchdog_seconds`.
 */
export function validateConfig(data: unknown): ValidationIssue[] {
  return collectIssues(ConfigSchema, data);
}
