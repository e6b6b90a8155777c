import fs from 'node:fs';
import path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { CONFIG_RANGES, cronProblem, GARDEN_NAME_PATTERN, globProblem, SCHEDULE_DEFAULT_TIMEZONE, timezoneProblem, validateConfig, type AcceptanceCriterion, type ConfigFile, type GoalGuard, type GoalType, type NotifyTerminalMode, type ScheduleOverlap } from '../contracts/index.js';
import { UserError, isErrno } from '../errors.js';
import { loadedText } from './loaded.js';
import { gardenPaths, type GardenPaths } from './paths.js';
import { storeUrlProblem } from './store-url.js';

/** Built-in `[coordinator]` defaults, in seconds (seed 002; docs/garden/level2.md). */
export const COORDINATOR_DEFAULTS = {
  interval_seconds: 60,
  watchdog_seconds: 300,
  run_timeout_seconds: 3600,
  max_concurrent_runs: 1,
  tool_silence_seconds: 1800,
  result_grace_seconds: 10,
  result_grace_cap_seconds: 1800,
  conversation_slots: 1,
} as const;

/** `[tend]` defaults (docs/automatic-tend/level2.md): both triggers on, priority 70 (above ordinary work at 50, below chat at 80), no daily cap. */
export const TEND_DEFAULTS = { run_failure: true, queued_attention_needed: true, priority: 70 } as const;

/** `[runners].lease_ttl_seconds` default: a remote run's lease lasts 10 minutes without a heartbeat (docs/runners/level2.md). */
export const LEASE_TTL_DEFAULT_SECONDS = 600;

/** The reply directory name under `<runtime-root>/inbox/` when `[garden].name` is absent. */
export const DEFAULT_GARDEN_NAME = 'garden';

/** The seed's failure code for a malformed garden name (seed 002, "Failure modes": `set_garden_name()`). */
export const INVALID_GARDEN_NAME = 'INVALID_GARDEN_NAME';

/**
 * Checks a name about to become `[garden].name` (seed 002, "Failure modes":
 * `set_garden_name()`; `pak2 init --name`, `pak2 publish --name`): one safe
 * path segment, since it names `<runtime-root>/inbox/<name>/`.
 * `source` names where the name came from in the message (`--name`).
 *
 * @returns the name, unchanged.
 * @throws UserError with code INVALID_GARDEN_NAME (exit 2) for a malformed name.
 */
export function setGardenName(name: string, source = '--name'): string {
  if (GARDEN_NAME_PATTERN.test(name)) return name;
  throw new UserError(`${source} ${JSON.stringify(name)}: ${INVALID_GARDEN_NAME} (a garden name is lower-case letters, digits, '.', '_' and '-', at most 64, starting and ending with a letter or digit: it names the reply directory <runtime-root>/inbox/<name>/)`, { code: INVALID_GARDEN_NAME });
}

/** PAK2.toml with every default filled in. Times are seconds. */
export interface GardenConfig {
  gardenName: string;
  runtimeRoot: string | undefined;
  /** `[garden].home`: pak2's own folder in an adopted repository (`.pak2`); undefined: the garden root (a garden of its own). */
  home: string | undefined;
  /** `[store].url` (a `postgres://` URL; docs/store/level2.md); undefined: the seeds' files. `PAK2_STORE_URL` takes its place when set ({@link storeUrlOf}). */
  storeUrl: string | undefined;
  defaults: { driver?: string; model?: string; reasoning_effort?: string };
  coordinator: {
    intervalSeconds: number;
    watchdogSeconds: number;
    runTimeoutSeconds: number;
    maxConcurrentRuns: number;
    /** Silence allowed while a tool call (claude tool_use, codex command_execution) is open. */
    toolSilenceSeconds: number;
    /** How long an agent may stay after its result, with no work open and no progress, before pak2 ends its group. */
    resultGraceSeconds: number;
    /** How long an agent may stay after its result whatever it does (open background work, endless output) before pak2 ends its group. */
    resultGraceCapSeconds: number;
    /**
     * Runs of conversation replies allowed at once besides `maxConcurrentRuns`
     * (a reply takes one of these first, then an ordinary slot; docs/coordinator/level2.md,
     * "Conversation slots"); 0: replies share the ordinary slots. None with `maxConcurrentRuns` 0.
     */
    conversationSlots: number;
    /** `sandbox = "bubblewrap"`: agents run under bwrap with the runtime root read-only (docs/run/isolation.md); absent: none. */
    sandbox?: 'bubblewrap';
  };
  /** `[drivers.<name>].command`, normalised to argv form. */
  drivers: Record<string, { command?: string[] }>;
  /** `[guard]` defaults for guarded goals (docs/guarded-runs/level2.md); `timeout_seconds` default 600, `redact` default true. */
  guard: {
    verify?: string;
    allowedFiles: string[];
    forbiddenPaths: string[];
    timeoutSeconds: number;
    envPassthrough: string[];
    redact: boolean;
  };
  /** `[routing.<task_class>]`: ordered tiers, max escalations (default: tiers − 1), budget in USD. */
  routing: Record<string, { tiers: { driver: string; model?: string; effort?: string }[]; maxEscalations: number; budgetUsd?: number }>;
  /** `[runners]`: a remote run's lease, seconds without a heartbeat before it is `abandoned`. */
  runners: { leaseTtlSeconds: number };
  /** `[webhooks]`: `allow_link_local` (default false) lets a subscription name a link-local or cloud metadata address. */
  webhooks: { allowLinkLocal: boolean };
  /** `[budget]` (docs/budget/level2.md): caps in USD (absent: no cap), the timezone of days and months, the warning ratio, what a run of unknown cost counts as (USD; default the run cap, else 1). */
  budget: BudgetConfig;
  /**
   * `[notify]` (docs/attention/level2.md, "Notifications"): `terminal`, what the
   * workbench writes once per new item (default `bell`); `command`, argv run once
   * per new item with the item as JSON on stdin. Absent (no `[notify]` table): a bell, no command.
   */
  notify?: { terminal: NotifyTerminalMode; command?: string[] };
  /** `[coordinator].isolation` as written; absent: `worktree` in a git garden with a commit, else `tree` (decided by `isolationOf`). */
  isolation?: 'worktree' | 'tree';
  /** `[worktree]`: setup command (argv, or a shell line as `['sh', '-c', line]`), its limit (s), copied globs, days a branch is kept. */
  worktree: { setup?: string[]; setupTimeoutSeconds: number; copy: string[]; keepDays: number };
  /** `[merge]`: base branch (absent: the garden checkout's), review or auto, verify and its limit (s), what a conflict does. */
  merge: { base?: string; mode: 'auto' | 'review'; verify?: string; verifyTimeoutSeconds: number; onConflict: 'requeue' | 'fail' };
  /** `[[schedule]]` entries in file order (docs/schedules/level2.md); none: `[]`. */
  schedules: ScheduleConfig[];
  /** `[tend]` (docs/automatic-tend/level2.md, "Operator control"); absent: {@link TEND_DEFAULTS}. Read on every pass, never kept. */
  tend: TendConfig;
}

/**
 * `[tend]` as the code uses it: whether each automatic trigger queues tends,
 * the priority of an automatic tend, and at most how many automatic tends a
 * day (the day of `[budget].timezone`; undefined: no cap).
 */
export interface TendConfig {
  triggers: { run_failure: boolean; queued_attention_needed: boolean };
  priority: number;
  dailyCap?: number;
}

/** `[worktree]` and `[merge]` defaults (docs/landing/level2.md). */
export const WORKTREE_DEFAULTS = { setup_timeout_seconds: 600, keep_days: 7 } as const;
export const MERGE_DEFAULTS = { mode: 'auto', verify_timeout_seconds: 600, on_conflict: 'requeue' } as const;

/** The verify command's default limit, seconds. */
export const GUARD_VERIFY_TIMEOUT_DEFAULT = 600;

/** A `[[schedule]]` entry's goal defaults (docs/schedules/level2.md): type `build`, plant `gardener`. */
export const SCHEDULE_DEFAULTS = { type: 'build', plant: 'gardener', overlap: 'skip' } as const;

/**
 * One `[[schedule]]` entry with its defaults filled in (docs/schedules/level2.md):
 * when it fires (`cron` read in `timezone`), whether a firing may add a goal
 * while the last one is open (`overlap`), and the goal it submits.
 */
export interface ScheduleConfig {
  name: string;
  cron: string;
  /** An IANA timezone; default UTC. */
  timezone: string;
  overlap: ScheduleOverlap;
  enabled: boolean;
  goal: { type: GoalType; plant: string; body: string; priority?: number; driver?: string; model?: string; guard?: GoalGuard; acceptance_criteria?: AcceptanceCriterion[] };
}

/**
 * A loaded garden: where it is, and its configuration. `config` is the
 * configuration in force: a long-lived process replaces it when PAK2.toml
 * changes (source/garden/reload.ts), so code reads `garden.config` when it
 * acts, not once at start.
 */
export interface Garden {
  paths: GardenPaths;
  config: GardenConfig;
}

/**
 * PAK2.toml does not load: the one-line message of {@link UserError}, and
 * `where` it went wrong: the dotted keys named (`drivers.trap.command`,
 * `schedule[2].cron`) or, for TOML syntax, `line L, column C`.
 */
export class ConfigError extends UserError {
  constructor(message: string, readonly where: string[], options: { hint?: string } = {}) {
    super(message, options);
  }
}

/**
 * Parses and validates PAK2.toml text. `file` names the file in errors.
 *
 * @throws ConfigError (a UserError) `PAK2.toml: line L, column C: …` for
 *   TOML syntax, or `PAK2.toml: <key>: <CODE> (…)` for each schema issue
 *   (UNKNOWN_CONFIG_KEY, INVALID_CONFIG_VALUE), with the keys in `where`.
 */
export function parseConfig(text: string, file = 'PAK2.toml'): GardenConfig {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split('\n')[0] ?? 'invalid TOML';
      throw new ConfigError(`${file}: line ${error.line}, column ${error.column}: ${first.replace(/^Invalid TOML document: /, '')}`, [`line ${error.line}, column ${error.column}`]);
    }
    throw error;
  }
  const issues = validateConfig(raw);
  if (issues.length > 0) {
    // Every problem at once, each with its key and the value given.
    const described = issues.map((issue) => {
      const value = valueAt(raw, issue.field);
      // A [[schedule]] entry is named as the operator counts its blocks: schedule[1] is the first.
      const entry = /^schedule\.(\d+)(?:\.(.*))?$/.exec(issue.field);
      if (entry) {
        const rest = entry[2];
        const field = `schedule[${Number(entry[1]) + 1}]${rest ? `.${rest}` : ''}`;
        if (issue.code === 'UNKNOWN_CONFIG_KEY') return `${field}: UNKNOWN_CONFIG_KEY (not a [[schedule]] key${describeValue(value)})`;
        const range = rest ? (CONFIG_RANGES[`schedule.${rest}`] ?? CONFIG_RANGES[rest]) : 'a [[schedule]] table';
        const words = issue.code === 'MISSING_REQUIRED_FIELD' ? `required: ${range ?? 'a value'}` : range ? `must be ${range}` : issue.message;
        return `${field}: ${issue.code} (${words}${describeValue(value)})`;
      }
      // TOML's inf and nan are numbers JSON has no word for (JSON.stringify says null): named as the file writes them.
      const got = value === undefined ? '' : `; got ${typeof value === 'number' && !Number.isFinite(value) ? (Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf') : JSON.stringify(value)}`;
      if (issue.code === 'UNKNOWN_CONFIG_KEY') return `${issue.field}: UNKNOWN_CONFIG_KEY (not a PAK2.toml key${got})`;
      const range = CONFIG_RANGES[issue.field] ? `must be ${CONFIG_RANGES[issue.field]}` : issue.message;
      return `${issue.field || '(document)'}: ${issue.code} (${range}${got})`;
    });
    throw new ConfigError(`${file}: ${issues.length === 1 ? '' : `${issues.length} problems: `}${described.join('; ')}`, described.map(keyOf), { hint: 'see PAK2.toml.example for every key' });
  }
  const cfg = raw as ConfigFile;
  // What the schema cannot say: scope globs are relative to the garden, and a routing tier names a driver pak2 can run.
  const semantic: string[] = [];
  for (const key of ['allowed_files', 'forbidden_paths'] as const) {
    (cfg.guard?.[key] ?? []).forEach((glob, i) => {
      const problem = globProblem(glob);
      if (problem) semantic.push(`guard.${key}.${i}: INVALID_CONFIG_VALUE (${problem}; got ${JSON.stringify(glob)})`);
    });
  }
  (cfg.worktree?.copy ?? []).forEach((glob, i) => {
    const problem = globProblem(glob);
    if (problem) semantic.push(`worktree.copy.${i}: INVALID_CONFIG_VALUE (${problem}; got ${JSON.stringify(glob)})`);
  });
  if (cfg.merge?.base !== undefined && !/^(?!-)(?!.*\.\.)(?!.*\/\/)[^\s~^:?*[\\\x00-\x1f\x7f]+(?<![/.]|\.lock)$/.test(cfg.merge.base)) {
    semantic.push(`merge.base: INVALID_CONFIG_VALUE (a git branch name; got ${JSON.stringify(cfg.merge.base)})`);
  }
  const home = cfg.garden?.home;
  schedulesProblems(cfg, semantic);
  if (home !== undefined && homeProblem(home)) semantic.push(`garden.home: INVALID_CONFIG_VALUE (${homeProblem(home)}; got ${JSON.stringify(home)})`);
  const drivers = new Set(['claude', 'codex', 'command', ...Object.keys(cfg.drivers ?? {})]);
  // A misspelled default driver would fail every goal and every tend it calls for (launch_failed): refused here, at load.
  if (cfg.defaults?.driver !== undefined && !drivers.has(cfg.defaults.driver)) semantic.push(`defaults.driver: INVALID_CONFIG_VALUE (claude, codex, command or a [drivers.<name>] table; got ${JSON.stringify(cfg.defaults.driver)})`);
  for (const [name, table] of Object.entries(cfg.routing ?? {})) {
    table.tiers.forEach((tier, i) => {
      if (!drivers.has(tier.driver)) semantic.push(`routing.${name}.tiers.${i}.driver: INVALID_CONFIG_VALUE (claude, codex, command or a [drivers.<name>] table; got ${JSON.stringify(tier.driver)})`);
    });
  }
  const budgetZone = cfg.budget?.timezone !== undefined ? timezoneProblem(cfg.budget.timezone) : undefined;
  if (budgetZone) semantic.push(`budget.timezone: INVALID_CONFIG_VALUE (must be ${budgetZone}; got ${JSON.stringify(cfg.budget!.timezone)})`);
  const urlProblem = cfg.store?.url !== undefined ? storeUrlProblem(cfg.store.url) : undefined;
  if (urlProblem) semantic.push(`store.url: INVALID_CONFIG_VALUE (${urlProblem})`);
  if (semantic.length > 0) throw new ConfigError(`${file}: ${semantic.length === 1 ? '' : `${semantic.length} problems: `}${semantic.join('; ')}`, semantic.map(keyOf), { hint: 'see PAK2.toml.example for every key' });
  const driverCommands: GardenConfig['drivers'] = {};
  for (const [name, entry] of Object.entries(cfg.drivers ?? {})) {
    const command = entry.command;
    driverCommands[name] = command === undefined ? {} : { command: Array.isArray(command) ? command : [command] };
  }
  return {
    gardenName: cfg.garden?.name ?? DEFAULT_GARDEN_NAME,
    runtimeRoot: cfg.runtime?.root,
    home,
    storeUrl: cfg.store?.url,
    defaults: { ...cfg.defaults },
    coordinator: {
      intervalSeconds: cfg.coordinator?.interval_seconds ?? COORDINATOR_DEFAULTS.interval_seconds,
      watchdogSeconds: cfg.coordinator?.watchdog_seconds ?? COORDINATOR_DEFAULTS.watchdog_seconds,
      runTimeoutSeconds: cfg.coordinator?.run_timeout_seconds ?? COORDINATOR_DEFAULTS.run_timeout_seconds,
      maxConcurrentRuns: cfg.coordinator?.max_concurrent_runs ?? COORDINATOR_DEFAULTS.max_concurrent_runs,
      toolSilenceSeconds: cfg.coordinator?.tool_silence_seconds ?? COORDINATOR_DEFAULTS.tool_silence_seconds,
      resultGraceSeconds: cfg.coordinator?.result_grace_seconds ?? COORDINATOR_DEFAULTS.result_grace_seconds,
      resultGraceCapSeconds: cfg.coordinator?.result_grace_cap_seconds ?? COORDINATOR_DEFAULTS.result_grace_cap_seconds,
      conversationSlots: cfg.coordinator?.conversation_slots ?? COORDINATOR_DEFAULTS.conversation_slots,
      ...(cfg.coordinator?.sandbox === 'bubblewrap' ? { sandbox: 'bubblewrap' as const } : {}),
    },
    drivers: driverCommands,
    guard: {
      ...(cfg.guard?.verify ? { verify: cfg.guard.verify } : {}),
      allowedFiles: cfg.guard?.allowed_files ?? [],
      forbiddenPaths: cfg.guard?.forbidden_paths ?? [],
      timeoutSeconds: cfg.guard?.timeout_seconds ?? GUARD_VERIFY_TIMEOUT_DEFAULT,
      envPassthrough: cfg.guard?.env_passthrough ?? [],
      redact: cfg.guard?.redact ?? true,
    },
    routing: Object.fromEntries(
      Object.entries(cfg.routing ?? {}).map(([name, r]) => [
        name,
        { tiers: r.tiers, maxEscalations: r.max_escalations ?? r.tiers.length - 1, ...(r.budget_usd !== undefined ? { budgetUsd: r.budget_usd } : {}) },
      ]),
    ),
    runners: { leaseTtlSeconds: cfg.runners?.lease_ttl_seconds ?? LEASE_TTL_DEFAULT_SECONDS },
    webhooks: { allowLinkLocal: cfg.webhooks?.allow_link_local ?? false },
    budget: budgetConfig(cfg.budget),
    ...(cfg.notify ? { notify: { terminal: cfg.notify.terminal ?? 'bell', ...(cfg.notify.command ? { command: cfg.notify.command } : {}) } } : {}),
    ...(cfg.coordinator?.isolation ? { isolation: cfg.coordinator.isolation } : {}),
    worktree: {
      ...(cfg.worktree?.setup !== undefined ? { setup: Array.isArray(cfg.worktree.setup) ? cfg.worktree.setup : ['sh', '-c', cfg.worktree.setup] } : {}),
      setupTimeoutSeconds: cfg.worktree?.setup_timeout_seconds ?? WORKTREE_DEFAULTS.setup_timeout_seconds,
      copy: cfg.worktree?.copy ?? [],
      keepDays: cfg.worktree?.keep_days ?? WORKTREE_DEFAULTS.keep_days,
    },
    merge: {
      ...(cfg.merge?.base ? { base: cfg.merge.base } : {}),
      mode: cfg.merge?.mode ?? MERGE_DEFAULTS.mode,
      ...(cfg.merge?.verify ? { verify: cfg.merge.verify } : {}),
      verifyTimeoutSeconds: cfg.merge?.verify_timeout_seconds ?? MERGE_DEFAULTS.verify_timeout_seconds,
      onConflict: cfg.merge?.on_conflict ?? MERGE_DEFAULTS.on_conflict,
    },
    tend: {
      triggers: {
        run_failure: cfg.tend?.run_failure ?? TEND_DEFAULTS.run_failure,
        queued_attention_needed: cfg.tend?.queued_attention_needed ?? TEND_DEFAULTS.queued_attention_needed,
      },
      priority: cfg.tend?.priority ?? TEND_DEFAULTS.priority,
      ...(cfg.tend?.daily_cap !== undefined ? { dailyCap: cfg.tend.daily_cap } : {}),
    },
    schedules: (cfg.schedule ?? []).map((entry) => ({
      name: entry.name,
      cron: entry.cron,
      timezone: entry.timezone ?? SCHEDULE_DEFAULT_TIMEZONE,
      overlap: entry.overlap ?? SCHEDULE_DEFAULTS.overlap,
      enabled: entry.enabled ?? true,
      goal: {
        type: entry.type ?? SCHEDULE_DEFAULTS.type,
        plant: entry.plant ?? SCHEDULE_DEFAULTS.plant,
        body: entry.body,
        ...(entry.priority !== undefined ? { priority: entry.priority } : {}),
        ...(entry.driver ? { driver: entry.driver } : {}),
        ...(entry.model ? { model: entry.model } : {}),
        ...(entry.guard ? { guard: { ...entry.guard } } : {}),
        ...(entry.acceptance_criteria?.length ? { acceptance_criteria: entry.acceptance_criteria.map((c) => ({ ...c })) } : {}),
      },
    })),
  };
}

/** The key an error part names: what comes before its first `: `. */
function keyOf(part: string): string {
  return part.slice(0, part.indexOf(': '));
}

/** ` ; got <value>` for an error line (TOML's inf and nan as the file writes them), or nothing for an absent value. */
function describeValue(value: unknown): string {
  if (value === undefined) return '';
  return `; got ${typeof value === 'number' && !Number.isFinite(value) ? (Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf') : JSON.stringify(value)}`;
}

/**
 * What the schema cannot say about `[[schedule]]` entries: a cron line
 * croner reads, a timezone Node knows, a name used once, a driver pak2 can
 * run, scope globs relative to the garden. One line each, naming
 * `schedule[N].<key>` (N counts the blocks from 1).
 */
function schedulesProblems(cfg: ConfigFile, out: string[]): void {
  const drivers = new Set(['claude', 'codex', 'command', ...Object.keys(cfg.drivers ?? {})]);
  const seen = new Map<string, number>();
  (cfg.schedule ?? []).forEach((entry, i) => {
    const key = `schedule[${i + 1}]`;
    const earlier = seen.get(entry.name);
    if (earlier !== undefined) out.push(`${key}.name: INVALID_CONFIG_VALUE (schedule[${earlier}] has the same name; got ${JSON.stringify(entry.name)})`);
    else seen.set(entry.name, i + 1);
    const cron = cronProblem(entry.cron);
    if (cron) out.push(`${key}.cron: INVALID_CONFIG_VALUE (must be ${cron}; got ${JSON.stringify(entry.cron)})`);
    if (entry.timezone !== undefined && timezoneProblem(entry.timezone)) out.push(`${key}.timezone: INVALID_CONFIG_VALUE (must be ${timezoneProblem(entry.timezone)}; got ${JSON.stringify(entry.timezone)})`);
    if (entry.driver !== undefined && !drivers.has(entry.driver)) out.push(`${key}.driver: INVALID_CONFIG_VALUE (claude, codex, command or a [drivers.<name>] table; got ${JSON.stringify(entry.driver)})`);
    for (const list of ['allowed_files', 'forbidden_paths'] as const) {
      (entry.guard?.[list] ?? []).forEach((glob, j) => {
        const problem = globProblem(glob);
        if (problem) out.push(`${key}.guard.${list}.${j}: INVALID_CONFIG_VALUE (${problem}; got ${JSON.stringify(glob)})`);
      });
    }
  });
}

/** Why `[garden].home` cannot be pak2's folder: it must be a relative path inside the garden, below its root. */
function homeProblem(home: string): string | undefined {
  if (path.isAbsolute(home) || /^[a-zA-Z]:/.test(home)) return 'a path relative to the garden root, not an absolute one';
  const segments = home.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (segments.length === 0) return 'a folder below the garden root (leave the key out for the root itself)';
  if (segments.includes('..')) return "a folder inside the garden (no '..' segment)";
  return undefined;
}

/** The value at a dotted key of a parsed TOML table (`coordinator.watchdog_seconds`). */
function valueAt(raw: unknown, dotted: string): unknown {
  let value: unknown = raw;
  for (const part of dotted.split('.').filter(Boolean)) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * Finds the garden for `start`: the nearest ancestor directory (itself
 * included) holding PAK2.toml.
 *
 * @throws UserError when no ancestor holds one.
 */
export function findGardenRoot(start: string): string {
  let dir = path.resolve(start);
  for (;;) {
    if (fs.existsSync(path.join(dir, 'PAK2.toml'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) {
      throw new UserError(`no PAK2.toml in ${path.resolve(start)} or any directory above it`, {
        hint: 'run `pak2 init DIR` to create a garden, or pass --garden DIR',
      });
    }
    dir = parent;
  }
}

/**
 * Loads the garden at `dir` (or, when `search` is true, the nearest ancestor
 * holding PAK2.toml).
 *
 * @throws UserError for a missing directory, a missing or unreadable
 *   PAK2.toml, or an invalid one (see {@link parseConfig}).
 */
export function loadGarden(dir: string, options: { search?: boolean } = {}): Garden {
  const root = options.search ? findGardenRoot(dir) : path.resolve(dir);
  const file = path.join(root, 'PAK2.toml');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) {
      throw new UserError(`--garden ${dir}: no PAK2.toml in ${root}`, { hint: 'run `pak2 init DIR` to create a garden' });
    }
    throw new UserError(`${file}: cannot read (${(error as Error).message})`);
  }
  const config = parseConfig(text, file);
  if (config.runtimeRoot === undefined) {
    // The legacy layout reads goals from the garden root; a runtime under .runtime/ would silently vanish.
    const split = path.join(root, '.runtime', 'goals');
    if (fs.existsSync(split)) {
      const count = fs.readdirSync(split).filter((name) => name.endsWith('.json')).length;
      throw new UserError(
        `${file}: sets no [runtime].root, so the runtime root is the garden root (the legacy layout), but ${path.join(root, '.runtime')} holds a runtime (${count} goal file(s)) that would not be read`,
        { hint: 'add `[runtime]` with `root = ".runtime"` to PAK2.toml (pak2 init writes it), or move .runtime/ aside' },
      );
    }
  }
  const paths = gardenPaths(root, config.runtimeRoot, config.home);
  // A runtime root moved (or mistyped) away from a .runtime/ that holds goals: those goals would silently vanish.
  const usual = path.join(root, '.runtime');
  if (config.runtimeRoot !== undefined && paths.runtimeRoot !== usual && holdsGoalFile(path.join(usual, 'goals')) && !holdsGoalFile(paths.goalsDir)) {
    throw new UserError(`${file}: [runtime].root is ${JSON.stringify(config.runtimeRoot)} (${paths.runtimeRoot}), which holds no goals, but ${usual} holds a runtime with goal files that would not be read`, {
      hint: 'set `root = ".runtime"` under [runtime] in PAK2.toml, or move .runtime/ to the new root (or aside)',
    });
  }
  const garden = { paths, config };
  loadedText.set(paths, text);
  return garden;
}

/** Whether `dir` holds at least one `.json` file (read until the first; false when it is not there). */
function holdsGoalFile(dir: string): boolean {
  let handle: fs.Dir;
  try {
    handle = fs.opendirSync(dir);
  } catch {
    return false;
  }
  try {
    for (let entry = handle.readSync(); entry; entry = handle.readSync()) if (entry.name.endsWith('.json')) return true;
    return false;
  } finally {
    handle.closeSync();
  }
}

/** `[budget]` as the code uses it (docs/budget/level2.md); USD amounts, absent caps undefined. */
export interface BudgetConfig {
  runUsd?: number;
  goalUsd?: number;
  plantDayUsd?: number;
  gardenDayUsd?: number;
  gardenMonthUsd?: number;
  /** IANA time zone of days and months; default `UTC`. */
  timezone: string;
  /** Share of a cap that warns once (BudgetWarning); default 0.8. */
  warnRatio: number;
  /** What a run of unknown cost counts as, in USD: `unknown_run_usd`, else the run cap, else 1. */
  unknownRunUsd: number;
}

/** The `[budget]` table with its defaults (docs/budget/level2.md). */
export function budgetConfig(table: ConfigFile['budget']): BudgetConfig {
  const t = table ?? {};
  return {
    ...(t.run_usd !== undefined ? { runUsd: t.run_usd } : {}),
    ...(t.goal_usd !== undefined ? { goalUsd: t.goal_usd } : {}),
    ...(t.plant_day_usd !== undefined ? { plantDayUsd: t.plant_day_usd } : {}),
    ...(t.garden_day_usd !== undefined ? { gardenDayUsd: t.garden_day_usd } : {}),
    ...(t.garden_month_usd !== undefined ? { gardenMonthUsd: t.garden_month_usd } : {}),
    timezone: t.timezone ?? 'UTC',
    warnRatio: t.warn_ratio ?? 0.8,
    unknownRunUsd: t.unknown_run_usd ?? t.run_usd ?? 1,
  };
}
